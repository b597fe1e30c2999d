"""TRL: `SFTConfig` / `DPOConfig` / `GRPOConfig` / `RewardConfig` … (TrainingArguments
subclasses), `ModelConfig`'s model and PEFT options, and `TrlParser` with
`--config recipe.yaml` merged with command-line flags (the flags win).

Defaults that differ from TrainingArguments (TRL ≥ 0.20): gradient checkpointing on;
`bf16` on unless `fp16` is set; `max_length` 1024 (SFT, DPO, reward, KTO, ORPO, CPO, BCO,
GKD; older releases
spelled it `max_seq_length`); `packing` off; `ModelConfig.use_peft` off, `lora_r` 16,
`lora_alpha` 32. `model_init_kwargs` (a dict: `torch_dtype`, `attn_implementation`) and
`use_liger_kernel` (fused, chunked loss) are read from a recipe.
"""

from __future__ import annotations

from typing import Any

from preflight.facts import spellings
from preflight.frameworks import ConfigOut, Example, Framework
from preflight.frameworks._hf_common import DEFAULTS as TA_DEFAULTS
from preflight.frameworks._hf_common import read_arguments
from preflight.plan import Fact, Invocation, Origin

_BASE = dict(TA_DEFAULTS, gradient_checkpointing=True, bf16=None, logging_steps=10)
#: TRL config classes and the defaults this package relies on
DEFAULTS: dict[str, dict[str, Any]] = {
    "SFTConfig": dict(_BASE, max_length=1024, learning_rate=2e-5, packing=False),
    "DPOConfig": dict(_BASE, max_length=1024, learning_rate=1e-6),
    "GRPOConfig": dict(_BASE, learning_rate=1e-6),
    "RewardConfig": dict(_BASE, max_length=1024),
    # prompt + completion cut to max_length (TRL's KTO / ORPO / CPO / BCO configs)
    **{c: dict(_BASE, max_length=1024) for c in ("KTOConfig", "ORPOConfig", "CPOConfig",
                                                 "BCOConfig")},
    # GKD derives from SFTConfig
    "GKDConfig": dict(_BASE, max_length=1024, learning_rate=2e-5, packing=False),
    "ModelConfig": {"model_name_or_path": None, "dtype": None, "attn_implementation": None,
                    "use_peft": False, "lora_r": 16, "lora_alpha": 32, "lora_dropout": 0.05,
                    "lora_target_modules": None, "lora_modules_to_save": None,
                    "load_in_8bit": False, "load_in_4bit": False},
    "ScriptArguments": {"dataset_name": None},
}
#: TRL's TrainingArguments subclasses (each with the defaults of `_BASE` at least)
CONFIGS = frozenset({"SFTConfig", "DPOConfig", "GRPOConfig", "RewardConfig", "ORPOConfig", "KTOConfig",
                     "CPOConfig", "GKDConfig", "BCOConfig", "OnlineDPOConfig", "PPOConfig"})
BASE_DEFAULTS = _BASE

#: recipe keys only TRL's dataclasses define (with a TrainingArguments key they mark a TRL recipe)
_KEYS = ("use_peft", "lora_r", "lora_target_modules", "packing", "max_length", "max_seq_length",
         "dataset_name", "dataset_mixture", "beta", "num_generations", "max_prompt_length",
         "max_completion_length", "model_init_kwargs", "use_liger_kernel", "torch_dtype", "dtype")


def read_recipe(cfg: dict, o: ConfigOut) -> None:
    read_arguments(cfg, o)
    mik = cfg.get("model_init_kwargs")
    if isinstance(mik, dict):
        dt = mik.get("torch_dtype", mik.get("dtype"))
        if isinstance(dt, str) and spellings.dtype(dt) in ("bf16", "fp16"):
            o.put("param_dtype", spellings.dtype(dt), ("model_init_kwargs", "torch_dtype" if "torch_dtype" in mik else "dtype"))
        ai = mik.get("attn_implementation")
        if isinstance(ai, str) and spellings.attention(ai):
            o.put("attention", spellings.attention(ai), ("model_init_kwargs", "attn_implementation"))


class Trl(Framework):
    name = "trl"
    title = "TRL"
    programs = ("trl",)
    reads = (
        "`SFTConfig` / `DPOConfig` / `GRPOConfig` / `RewardConfig` / … keywords and their "
        "TRL defaults (checkpointing on, bf16 unless fp16, max_length 1024)",
        "`TrlParser(...).parse_args_and_config()` with `--config recipe.yaml`: the recipe's "
        "keys, then the command line's flags over them",
        "`ModelConfig` / recipe: `model_name_or_path`, `torch_dtype` / `dtype`, "
        "`attn_implementation`, `use_peft`, `lora_r`, `lora_alpha`, `lora_target_modules` "
        "(`all-linear`, lists, `'[q_proj,v_proj]'`), `load_in_4bit` / `load_in_8bit`, "
        "`model_init_kwargs`, `use_liger_kernel`, `max_length` / `max_seq_length`, `packing`",
        "`trl dpo | kto` and `DPOTrainer` / `KTOTrainer` / `BCOTrainer` without `ref_model`: the frozen copy of "
        "the model they keep as the reference (none with a PEFT adapter), sharded by ZeRO-3 "
        "and FSDP full sharding; `DPOTrainer` / `CPOTrainer` / `ORPOTrainer` / "
        "`RewardTrainer`: a pair's chosen and rejected sequences in one forward (twice the "
        "per-device batch's activations)",
    )
    not_read = (
        "GRPO's generation batch (`num_generations`, `max_completion_length`) and a vLLM "
        "colocated engine's memory",
        "a `ref_model` given to the trainer (its size), `precompute_ref_log_probs`, and "
        "GRPO's / PPO's reference model",
    )

    def claims(self, cfg: dict, path: str) -> bool:
        return any(k in cfg for k in ("model_name_or_path", "per_device_train_batch_size", "output_dir",
                                      "gradient_accumulation_steps", "bf16")) and any(k in cfg for k in _KEYS)

    def read_config(self, cfg: dict, o: ConfigOut) -> None:
        read_recipe(cfg, o)

    def launch(self, prog, rest, line, cwd: str = ""):
        # `trl sft --config recipe.yaml [flags]` runs TRL's own script for the subcommand
        if not rest or rest[0] not in ("sft", "dpo", "grpo", "kto", "reward", "rloo", "ppo"):
            return None
        args = rest[1:]
        cfgs = []
        for i, a in enumerate(args):
            if a == "--config" and i + 1 < len(args):
                cfgs.append(args[i + 1])
            elif a.startswith("--config="):
                cfgs.append(a.split("=", 1)[1])
        facts = list(line.facts)
        if rest[0] in ("dpo", "kto"):
            # TRL's DPOTrainer / KTOTrainer, given no ref_model: a frozen copy of the model
            # (none with --use_peft: the ledger drops it under an adapter)
            facts.append(("reference_copies", Fact(
                value=1, origin=Origin.DEFAULT, source=line.source,
                reason=f"trl {rest[0]} copies the model as its frozen reference (unless a "
                       f"PEFT adapter is used)")))
        if rest[0] in ("dpo", "reward"):
            facts.append(("sequences_per_sample", Fact(
                value=2, origin=Origin.DEFAULT, source=line.source,
                reason=f"trl {rest[0]} scores each pair's chosen and rejected sequences in one "
                       f"forward")))
        return Invocation(script=cfgs[0] if cfgs else f"trl {rest[0]}", args=args, source=line.source,
                          module=f"trl {rest[0]}", facts=facts, configs=cfgs)


_RECIPE = """\
model_name_or_path: Qwen/Qwen2.5-1.5B
model_init_kwargs:
  torch_dtype: bfloat16
  attn_implementation: flash_attention_2
dataset_name: trl-lib/Capybara
per_device_train_batch_size: 4
gradient_accumulation_steps: 8
max_length: 2048
packing: true
use_peft: true
lora_r: 32
lora_alpha: 16
lora_target_modules: all-linear
use_liger_kernel: true
output_dir: out
"""
_SCRIPT = """\
from datasets import load_dataset
from trl import ModelConfig, ScriptArguments, SFTConfig, SFTTrainer, TrlParser, get_peft_config

parser = TrlParser((ScriptArguments, SFTConfig, ModelConfig))
script_args, training_args, model_args = parser.parse_args_and_config()
dataset = load_dataset(script_args.dataset_name)
trainer = SFTTrainer(model=model_args.model_name_or_path, args=training_args,
                     train_dataset=dataset["train"], peft_config=get_peft_config(model_args))
trainer.train()
"""

_KTO_SCRIPT = """\
from transformers import AutoModelForCausalLM
from trl import KTOConfig, KTOTrainer

model = AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-0.5B")
args = KTOConfig(output_dir="out", per_device_train_batch_size=2)
KTOTrainer(model=model, args=args, train_dataset=None).train()
"""

ADAPTER = Trl()
Trl.EXAMPLES = [
    Example(title="TrlParser with --config recipe.yaml; a flag overrides the recipe",
            files={"recipe.yaml": _RECIPE, "sft.py": _SCRIPT},
            command="accelerate launch --num_processes 8 sft.py --config recipe.yaml "
                    "--per_device_train_batch_size 2",
            facts={"model": ("Qwen/Qwen2.5-1.5B", "recipe.yaml:1"),
                   "param_dtype": ("bf16", "recipe.yaml:3"),
                   "attention": ("flash", "recipe.yaml:4"),
                   "micro_batch": (2, "<command>:1", "cli"),
                   "grad_accum": (8, "recipe.yaml:7"),
                   "seq_len": (2048, "recipe.yaml:8"),
                   "lora": ({"r": 32, "alpha": 16.0, "targets": ["all-linear"], "base_bits": 16},
                            "recipe.yaml:11"),
                   "activation_checkpointing": ("full", "sft.py:5", "default"),
                   "world_size": (8, "<command>:1", "cli")}),
    Example(title="`trl sft --config recipe.yaml` with a flag over the recipe",
            files={"recipe.yaml": _RECIPE},
            command="trl sft --config recipe.yaml --gradient_accumulation_steps 2",
            facts={"model": ("Qwen/Qwen2.5-1.5B", "recipe.yaml:1"), "micro_batch": (4, "recipe.yaml:6"),
                   "grad_accum": (2, "<command>:1", "cli"), "seq_len": (2048, "recipe.yaml:8")}),
    Example(title="KTOConfig in a script: TRL's max_length default (prompt + completion)",
            files={"kto.py": _KTO_SCRIPT},
            command="python kto.py",
            facts={"seq_len": (1024, "kto.py:5", "default"),
                   "activation_checkpointing": ("full", "kto.py:5", "default"),
                   "micro_batch": (2, "kto.py:5")}),
]


# --------------------------------------------------------------------------- in a script
# `pats` is the script's fact collector, `ev` the evaluator (see `preflight.frameworks.Call`)


def bf16_default(pats: Any, inst: Any) -> None:
    """A TRL config (a `DCInst`) leaving `bf16` unset: bf16 is on unless fp16 is."""
    bf = inst.fields.get("bf16")
    fp = inst.fields.get("fp16")
    if bf is not None and bf.known and bf.value is None:
        if fp is not None and fp.known and not fp.value:
            pats.emit("mixed_precision", bf, value="bf16", origin="default",
                      reason=f"{inst.lib}: bf16 defaults to True when fp16 is not set")

Trl.EXAMPLES += [
    Example(title="`trl dpo` runs TRL's DPOTrainer: a frozen reference copy of the model and "
                  "each pair's chosen and rejected in one forward",
            files={"dpo.yaml": "model_name_or_path: Qwen/Qwen2-0.5B-Instruct\n"
                               "per_device_train_batch_size: 2\nmax_length: 1024\n"},
            command="trl dpo --config dpo.yaml",
            facts={"reference_copies": (1, "<command>:1", "default"),
                   "sequences_per_sample": (2, "<command>:1", "default"),
                   "micro_batch": (2, "dpo.yaml:2")}),
]
