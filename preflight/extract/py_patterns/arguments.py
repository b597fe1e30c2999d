"""The library argument dataclasses: which classes' defaults and field types the evaluator
knows (Hugging Face `TrainingArguments` and TRL's configs, whose adapters own their classes
and defaults), and what an instance of one hands to those adapters.

The evaluator builds the instances (`Evaluator.dc_instance`, which reads `LIB_DATACLASSES`,
`LIB_FIELD_TYPES` and `library_defaults` here); the Trainer's adapter reads their fields.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from preflight.lang.python import DCInst, Dotted, Evaluator, V
from preflight.frameworks import NO_MATCH, Call, answers, hf_trainer, trl
from preflight.frameworks._hf_common import CLASSES as HF_CLASSES
from preflight.frameworks._hf_common import DEFAULTS as HF_DEFAULTS
from preflight.frameworks.trl import BASE_DEFAULTS as TRL_BASE
from preflight.frameworks.trl import CONFIGS as TRL_CONFIGS
from preflight.frameworks.trl import DEFAULTS as TRL_DEFAULTS

if TYPE_CHECKING:
    from preflight.extract.py_patterns.collector import Patterns

#: library dataclasses whose defaults we know (and whose fields carry training facts): the
#: Hugging Face Trainer's and TRL's adapters own their classes and defaults
TRAINING_ARGS = HF_CLASSES | TRL_CONFIGS | {"_BaseConfig", "BaseConfig"}
LIB_DATACLASSES = TRAINING_ARGS | {"ModelConfig", "ScriptArguments", "DatasetMixtureConfig",
                                   "ModelArguments"}
LIB_FIELD_TYPES = {"per_device_train_batch_size": "int", "per_device_eval_batch_size": "int",
                   "gradient_accumulation_steps": "int", "bf16": "bool", "fp16": "bool",
                   "gradient_checkpointing": "bool", "tf32": "bool", "optim": "str",
                   "use_liger_kernel": "bool",
                   "use_peft": "bool", "lora_r": "int", "lora_alpha": "int",
                   "load_in_4bit": "bool", "load_in_8bit": "bool", "packing": "bool",
                   "max_length": "int", "max_seq_length": "int", "learning_rate": "float",
                   "lora_target_modules": "list", "lora_modules_to_save": "list",
                   "lora_dropout": "float",
                   "deepspeed": "str", "fsdp": "str", "model_name_or_path": "str",
                   "attn_implementation": "str", "dtype": "str", "torch_dtype": "str"}


def library_defaults(cls: str) -> dict[str, Any]:
    if cls in TRL_DEFAULTS:
        return TRL_DEFAULTS[cls]
    if cls in TRAINING_ARGS:
        return TRL_BASE if cls in TRL_CONFIGS else HF_DEFAULTS
    return {}


def on_field_set(pats: Patterns, ev: Evaluator, inst: DCInst, attr: str, val: V) -> None:
    """`training_args.bf16 = True` after the instance is built."""
    if inst.lib in TRAINING_ARGS:
        hf_trainer.training_field(pats, ev, inst, attr, val)


def on_dataclass(pats: Patterns, ev: Evaluator, inst: DCInst) -> None:
    """An arguments dataclass built (by keywords, a parser, a file): a `TrainingArguments`
    family instance's fields become facts."""
    pats.seen_training_api = True
    if inst.lib in TRAINING_ARGS:
        pats.saw_training_args = True
        hf_trainer.training_fields(pats, ev, inst)
        if inst.lib in TRL_CONFIGS:
            trl.bf16_default(pats, inst)
        hf_trainer.deepspeed_weights(pats, inst)


@answers(*TRAINING_ARGS)
def training_args_call(pats: Patterns, ev: Evaluator, c: Call) -> Any:
    """`TrainingArguments(...)` / `SFTConfig(...)` … built with keywords."""
    name, qual, line, col, kwargs = c.name, c.qual, c.line, c.col, c.kwargs
    if name in TRAINING_ARGS and not qual.startswith("?"):
        inst = ev.dc_instance(Dotted(qual), line, col, from_cli=False,
                              kwargs={k: v for k, v in kwargs.items() if not k.startswith("\0")})
        on_dataclass(pats, ev, inst)
        return V(inst, "derived", line, col)
    return NO_MATCH
