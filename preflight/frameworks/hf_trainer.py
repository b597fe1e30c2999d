"""Hugging Face Trainer: `TrainingArguments` however it is filled.

In a script: `TrainingArguments(...)` / `Seq2SeqTrainingArguments(...)` keywords, and the
dataclasses `HfArgumentParser` fills from the command line (`parse_args_into_dataclasses`),
from a YAML or JSON arguments file (`parse_yaml_file`, `parse_json_file`, a lone
`.yaml` / `.json` argument), or from a dict. On a launch line: the same names as flags
(`--per_device_train_batch_size 4 --bf16 --gradient_checkpointing`). An arguments file given
to the script is read here: its keys are the flags' names.

Library defaults (transformers ≥ 4.0; unchanged through 4.5x): per-device batch 8,
accumulation 1, `optim` adamw_torch (adamw_torch_fused where torch ≥ 2.8 — the same AdamW
states), no gradient checkpointing, fp32 unless `bf16` / `fp16` (the table, with the flags and the
arguments-file reader TRL shares, is `_hf_common`'s).
"""

from __future__ import annotations

import ast
from typing import Any, Optional

from preflight.lang.python import (UNK, ClassVal, DCInst, Dotted, Evaluator, Obj, V, plain,
                                   resolve_path, unk)
from preflight.facts import spellings
from preflight.frameworks import NO_MATCH, UNKNOWN, Call, ConfigOut, Example, Framework, answers
from preflight.frameworks._hf_common import FLAGS, lora_from_args, read_arguments


#: names only TrainingArguments defines: a file or a line with them configures a Trainer
MARKERS = ("per_device_train_batch_size", "per_device_eval_batch_size", "num_train_epochs",
           "save_strategy", "evaluation_strategy", "eval_strategy", "logging_steps", "warmup_ratio",
           "lr_scheduler_type", "save_total_limit")


class HfTrainer(Framework):
    name = "hf_trainer"
    title = "Hugging Face Trainer"
    reads = (
        "`TrainingArguments(...)` keywords and the fields `HfArgumentParser` fills from the "
        "command line, `parse_yaml_file` / `parse_json_file` / `parse_dict`, or a lone "
        "`.yaml` / `.json` argument",
        "flags and arguments-file keys: `per_device_train_batch_size`, "
        "`gradient_accumulation_steps`, `bf16` / `fp16`, `gradient_checkpointing`, `optim`, "
        "`max_seq_length` / `max_length` / `model_max_length` / `block_size`, "
        "`model_name_or_path`, `deepspeed`, `fsdp` (strategy words, `offload`), "
        "`attn_implementation`, `torch_dtype`, 4/8-bit loading",
        "library defaults: batch 8, accumulation 1, adamw_torch, no checkpointing",
        "`model.resize_token_embeddings(len(tokenizer), pad_to_multiple_of=M)` (or "
        "`M * math.ceil(len(tokenizer) / M)`) after tokens are added (`add_special_tokens`, "
        "`add_tokens`, a tokenizer loaded with `pad_token=`): the vocabulary rounded up to M; "
        "platform probes (`torch.xpu.is_available()` false, `torch.cuda.is_available()` true "
        "on the GPUs preflight sizes for)",
    )
    not_read = (
        "`resize_token_embeddings(len(tokenizer))` without a multiple after tokens are added: "
        "how many are new depends on the tokenizer (the vocabulary is unknown; the parameter "
        "count is the loaded model's, the reason says so)",
        "`auto_find_batch_size` (the batch is found at run time: the stated one is used)",
        "`torch_compile`, `tf32` (no memory effect counted)",
    )

    FLAGS = FLAGS
    flags_fallback = True

    def flag_lora(self, flags: dict[str, Optional[str]], script: str) -> Optional[dict]:
        return lora_from_args(flags, script)

    def claims(self, cfg: dict, path: str) -> bool:
        if path.endswith(".py") and any(isinstance(v, dict) and "type" in v for v in cfg.values()):
            # a registry config (`model = dict(type=...)`): its `warmup_ratio` or
            # `save_total_limit` are variables its own runner reads, not TrainingArguments
            return False
        return sum(k in cfg for k in MARKERS + ("gradient_accumulation_steps", "output_dir",
                                                "learning_rate")) >= 2

    def read_config(self, cfg: dict, o: ConfigOut) -> None:
        read_arguments(cfg, o)


_SCRIPT = """\
import sys
from dataclasses import dataclass, field

from transformers import (AutoModelForCausalLM, HfArgumentParser, Trainer,
                          TrainingArguments)


@dataclass
class ModelArguments:
    model_name_or_path: str = field(default="gpt2")


parser = HfArgumentParser((ModelArguments, TrainingArguments))
if len(sys.argv) == 2 and sys.argv[1].endswith(".json"):
    model_args, training_args = parser.parse_json_file(json_file=sys.argv[1])
else:
    model_args, training_args = parser.parse_args_into_dataclasses()
model = AutoModelForCausalLM.from_pretrained(model_args.model_name_or_path)
trainer = Trainer(model=model, args=training_args)
trainer.train()
"""
_ARGS = """\
{
  "model_name_or_path": "facebook/opt-1.3b",
  "output_dir": "out",
  "per_device_train_batch_size": 4,
  "gradient_accumulation_steps": 16,
  "bf16": true,
  "gradient_checkpointing": true,
  "optim": "adafactor",
  "learning_rate": 2e-5
}
"""
_KW = """\
from transformers import AutoModelForCausalLM, Trainer, TrainingArguments

model = AutoModelForCausalLM.from_pretrained("EleutherAI/pythia-1b")
args = TrainingArguments(
    output_dir="out",
    per_device_train_batch_size=16,
    fp16=True,
)
Trainer(model=model, args=args).train()
"""

_YAML_SCRIPT = """\
import os
import sys

from transformers import AutoModelForCausalLM, HfArgumentParser, Trainer, TrainingArguments

parser = HfArgumentParser(TrainingArguments)
if len(sys.argv) == 2 and sys.argv[1].endswith(".yaml"):
    (training_args,) = parser.parse_yaml_file(yaml_file=os.path.abspath(sys.argv[1]))
else:
    (training_args,) = parser.parse_args_into_dataclasses()
model = AutoModelForCausalLM.from_pretrained("EleutherAI/pythia-1.4b")
Trainer(model=model, args=training_args).train()
"""
_YAML_ARGS = """\
output_dir: out
per_device_train_batch_size: 2
gradient_accumulation_steps: 4
fp16: true
optim: adamw_bnb_8bit
"""

_RESIZE = """\
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, Trainer, TrainingArguments

name = "meta-llama/Llama-2-7b-hf"
attn = "eager" if torch.xpu.is_available() else "flash_attention_2"
model = AutoModelForCausalLM.from_pretrained(name, attn_implementation=attn)
tokenizer = AutoTokenizer.from_pretrained(name)
tokenizer.add_special_tokens({"pad_token": "<pad>"})
model.resize_token_embeddings(len(tokenizer), pad_to_multiple_of=8)
args = TrainingArguments(output_dir="out", per_device_train_batch_size=4, bf16=True)
Trainer(model=model, args=args, processing_class=tokenizer).train()
"""
_RESIZE_MAIN = """\
import argparse

from transformers import Trainer, TrainingArguments

from helpers import load_model, load_tokenizer

p = argparse.ArgumentParser()
p.add_argument("--model", default="meta-llama/Llama-2-7b-hf")
args = p.parse_args()
tokenizer = load_tokenizer(args.model)
model = load_model(args.model, tokenizer)
Trainer(model=model, args=TrainingArguments(output_dir="out")).train()
"""
_RESIZE_HELPERS = """\
import math

from transformers import AutoModelForCausalLM, AutoTokenizer


def load_tokenizer(name):
    tok = AutoTokenizer.from_pretrained(name)
    if tok.pad_token is None:
        tok.add_special_tokens({"pad_token": "[PAD]"})
    return tok


def load_model(name, tok):
    model = AutoModelForCausalLM.from_pretrained(name)
    model.resize_token_embeddings(int(8 * math.ceil(len(tok) / 8.0)))
    return model
"""
_ROUNDED = """\
from transformers import AutoModelForCausalLM, AutoTokenizer, Trainer, TrainingArguments

model = AutoModelForCausalLM.from_pretrained("gpt2")
tokenizer = AutoTokenizer.from_pretrained("gpt2")
tokenizer.pad_token = tokenizer.eos_token
model.resize_token_embeddings(len(tokenizer), pad_to_multiple_of=64)
Trainer(model=model, args=TrainingArguments(output_dir="out")).train()
"""

ADAPTER = HfTrainer()
HfTrainer.EXAMPLES = [
    Example(title="HfArgumentParser.parse_yaml_file on a lone .yaml argument",
            files={"train.py": _YAML_SCRIPT, "args.yaml": _YAML_ARGS},
            command="python train.py args.yaml",
            facts={"micro_batch": (2, "args.yaml:2"), "grad_accum": (4, "args.yaml:3"),
                   "mixed_precision": ("fp16", "args.yaml:4"), "optimizer": ("adamw_8bit", "args.yaml:5"),
                   "model": ("EleutherAI/pythia-1.4b", "train.py:11")}),
    Example(title="HfArgumentParser reading a lone JSON arguments file",
            files={"train.py": _SCRIPT, "args.json": _ARGS},
            command="torchrun --nproc_per_node 2 train.py args.json",
            facts={"model": ("facebook/opt-1.3b", "args.json:2"),
                   "micro_batch": (4, "args.json:4"), "grad_accum": (16, "args.json:5"),
                   "mixed_precision": ("bf16", "args.json:6"),
                   "activation_checkpointing": ("full", "args.json:7"),
                   "optimizer": ("adafactor", "args.json:8"),
                   "gpus_per_node": (2, "<command>:1", "cli"),
                   # torchrun and no fsdp argument: the Trainer does not shard with FSDP
                   "fsdp": (None, "train.py:15", "default")}),
    Example(title="the same script with flags: the library defaults fill the rest",
            files={"train.py": _SCRIPT},
            command="python train.py --output_dir out --model_name_or_path gpt2-medium --bf16",
            facts={"model": ("gpt2-medium", "<command>:1", "cli"),
                   "mixed_precision": ("bf16", "<command>:1", "cli"),
                   "micro_batch": (8, "train.py:17", "default"),
                   "grad_accum": (1, "train.py:17", "default"),
                   "optimizer": ("adamw", "train.py:17", "default")}),
    Example(title="TrainingArguments keywords in the script",
            files={"train.py": _KW},
            command="python train.py",
            facts={"model": ("EleutherAI/pythia-1b", "train.py:3"),
                   "micro_batch": (16, "train.py:6"), "mixed_precision": ("fp16", "train.py:7")}),
]

_DTYPE_NONE = """\
from dataclasses import dataclass, field
from typing import Optional

from transformers import AutoModelForCausalLM, HfArgumentParser, Trainer, TrainingArguments


@dataclass
class ModelArguments:
    dtype: Optional[str] = field(default=None)


model_args, args = HfArgumentParser((ModelArguments, TrainingArguments)).parse_args_into_dataclasses()
dtype = model_args.dtype if model_args.dtype in ["auto", None] else model_args.dtype
model = AutoModelForCausalLM.from_pretrained("gpt2", dtype=dtype)
Trainer(model=model, args=args).train()
"""

#: a checkpoint loaded with its own modelling code: its attention is its code's choice
_REMOTE = """\
from transformers import AutoModelForCausalLM, Trainer, TrainingArguments

model = AutoModelForCausalLM.from_pretrained("Qwen/Qwen-7B", trust_remote_code=True)
native = AutoModelForCausalLM.from_pretrained("gpt2", trust_remote_code=False)
Trainer(model=model, args=TrainingArguments("out")).train()
"""

#: TRL's DPO trainer without a reference model or an adapter: a frozen copy of the policy
_DPO = """\
from transformers import AutoModelForCausalLM
from trl import DPOConfig, DPOTrainer

model = AutoModelForCausalLM.from_pretrained("Qwen/Qwen2-0.5B-Instruct")
args = DPOConfig(output_dir="out", per_device_train_batch_size=2)
DPOTrainer(model=model, args=args, train_dataset=None).train()
"""
_DPO_REF = _DPO.replace("args=args,", "ref_model=AutoModelForCausalLM.from_pretrained('org/ref'), args=args,")

HfTrainer.EXAMPLES += [
    Example(title="TRL's DPOTrainer: each pair's chosen and rejected go through one forward, and "
                  "without ref_model it keeps a frozen copy of the model as its "
                  "reference (the ledger counts its weights)",
            files={"train.py": _DPO}, command="python train.py",
            facts={"reference_copies": (1, "train.py:6", "default"),
                   "sequences_per_sample": (2, "train.py:6", "default"),
                   "micro_batch": (2, "train.py:5")}),
    Example(title="a reference model given to DPOTrainer is one whose size is not read",
            files={"train.py": _DPO_REF}, command="python train.py",
            facts={"reference_copies": (UNKNOWN, "train.py:6")}),
    Example(title="trust_remote_code=True: the checkpoint's own code picks its attention, so "
                  "transformers' sdpa default is not assumed",
            files={"train.py": _REMOTE}, command="python train.py",
            facts={"attention": (UNKNOWN, "train.py:3")}),
    Example(title="a pad token added, embeddings resized to a multiple of 8 (any 1 to 8 new "
                  "tokens give 32008); a platform probe that is false on CUDA GPUs",
            files={"train.py": _RESIZE}, command="python train.py",
            facts={"vocab": (32008, "train.py:6", "catalog"), "attention": ("flash", "train.py:5")}),
    Example(title="the same in helper modules, written 8 * math.ceil(len(tokenizer) / 8)",
            files={"main.py": _RESIZE_MAIN, "helpers.py": _RESIZE_HELPERS},
            command="python main.py",
            facts={"vocab": (32008, "helpers.py:14", "catalog")}),
    Example(title="no token added (the pad token is an existing one): the vocabulary rounded "
                  "up to a multiple of 64",
            files={"train.py": _ROUNDED}, command="python train.py",
            facts={"vocab": (50304, "train.py:3", "catalog")}),
    Example(title="a dtype argument whose default is None: float32 weights",
            files={"train.py": _DTYPE_NONE}, command="python train.py --output_dir out",
            facts={"param_dtype": ("fp32", "train.py:14", "default")}),
]


# --------------------------------------------------------------------------- in a script
# `pats` is the script's fact collector, `ev` the evaluator (see `preflight.frameworks.Call`)


def training_fields(pats: Any, ev: Evaluator, inst: DCInst) -> None:
    """Every field of a `TrainingArguments` (or subclass) instance, as the facts it sets."""
    for k in list(inst.fields):
        training_field(pats, ev, inst, k, inst.fields[k])


def deepspeed_weights(pats: Any, inst: DCInst) -> None:
    """`bf16=True` / `fp16=True` with `deepspeed=`: the weights DeepSpeed keeps."""
    ds = inst.fields.get("deepspeed")
    if ds is not None and ds.known and ds.value:
        for k in ("bf16", "fp16"):
            f = inst.fields.get(k)
            if f is not None and f.known and f.value is True:
                pats.emit("param_dtype", f, value=k, origin="derived",
                          reason=f"{k}=True with DeepSpeed ({plain(ds)}): DeepSpeed "
                                 f"keeps {k} weights, fp32 master copies in the "
                                 "optimizer")


def training_field(pats: Any, ev: Evaluator, inst: DCInst, k: str, v: V) -> None:
    """One `TrainingArguments` field (set at construction, parsed, or assigned later)."""
    if not isinstance(v, V):
        return
    if k == "per_device_train_batch_size":
        pats.emit("micro_batch", v)
    elif k == "gradient_accumulation_steps":
        pats.emit("grad_accum", v)
    elif k in ("bf16", "fp16"):
        pats.saw_precision = True
        if v.known and v.value is True:
            pats.emit("mixed_precision", v, value=k)
        elif v.known and v.value is False:
            other = inst.fields.get("fp16" if k == "bf16" else "bf16")
            if other is None or (other.known and other.value is False):
                if k == "bf16" or other is None:
                    pats.emit("mixed_precision", v, value="none",
                              reason=(v.reason or "") + "; neither bf16 nor fp16 set")
        elif not v.known:
            pats.emit("mixed_precision", v)
    elif k == "optim":
        pats.optim_string(v)
    elif k == "use_liger_kernel" and v.known and v.value is True:
        # Liger's fused linear cross-entropy: the full logits are never materialised
        pats.fused_loss = {"line": v.line, "what": f"use_liger_kernel=True ({v.origin})"}
        # the Trainer patches the loaded model with Liger's defaults for its model_type
        # (transformers/integrations/liger.py: `_apply_liger_kernel_to_instance`)
        pats.emit("loss_kernel", v, value="liger",
                  reason="use_liger_kernel=True: Liger-Kernel's fused linear cross-entropy "
                         "and layer kernels")
    elif k == "gradient_checkpointing":
        if v.known and v.value is False and v.origin == "default" and any(
                n == "activation_checkpointing" for n, *_ in pats.facts):
            # the field's default does not turn off what the script already turned on
            # (`prepare_model_for_kbit_training`, `model.gradient_checkpointing_enable()`)
            return
        if v.known:
            pats.emit("activation_checkpointing", v, value="full" if v.value else "none")
        else:
            pats.emit("activation_checkpointing", v)
    elif k in ("max_seq_length", "max_length", "model_max_length", "max_seq_len"):
        if v.known and v.value is not None:
            pats.emit("seq_len", v, tier="api")
    elif k == "deepspeed":
        if v.known and isinstance(v.value, str) and v.value:
            ev.references.append(v.value)
        elif v.known and isinstance(v.value, dict):
            pats.deepspeed_dict(v)
    elif k == "fsdp":
        if v.known and isinstance(v.value, str):
            words = v.value.split()
            fs = next((spellings.fsdp_strategy(w) for w in words
                       if not w.isdigit() and spellings.fsdp_strategy(w)), None)
            if fs:
                pats.emit("fsdp", v, value=fs)
            elif not words:
                # fsdp="" (the default): the Trainer does not shard with FSDP unless an
                # accelerate launch config turns it on (assemble decides that case)
                pats.emit("fsdp", v, value=None,
                          reason=(v.reason or "fsdp") + ": fsdp='' (no FSDP)")
            if "offload" in words:
                pats.emit("offload", v, value="optimizer+params")
    elif k == "attn_implementation":
        if v.known and isinstance(v.value, str) and spellings.attention(v.value):
            pats.emit("attention", v, value=spellings.attention(v.value))


@answers("parse_args_into_dataclasses", "parse_args_and_config", "parse_dict",
         "parse_yaml_file", "parse_json_file")
def parser_call(pats: Any, ev: Evaluator, c: Call) -> Any:
    """`HfArgumentParser` / `TrlParser` filling its dataclasses: from the command line
    (`parse_args_into_dataclasses`, TRL's `parse_args_and_config`), or from an arguments file
    or dict (`parse_yaml_file`, `parse_json_file`, `parse_dict`)."""
    name, args, kwargs, node, line, col = c.name, c.args, c.kwargs, c.node, c.line, c.col
    if name in ("parse_args_into_dataclasses", "parse_args_and_config", "parse_dict",
                "parse_yaml_file", "parse_json_file"):
        recv_v = ev.ev(node.func.value) if isinstance(node.func, ast.Attribute) else None
        classes = parser_classes(recv_v)
        if classes is None:
            return None
        from_cli = name in ("parse_args_into_dataclasses", "parse_args_and_config")
        if name in ("parse_yaml_file", "parse_json_file", "parse_dict"):
            values = args_file(ev, name, args, kwargs, node)
            if values is None:
                return V(tuple(unk(f"arguments read from a file at run time ({name})",
                                   line, col) for _ in classes), "derived", line, col)
            insts = []
            for dc in classes:
                inst = ev.dc_instance(dc, line, col, from_cli=False)
                for k, v in values.items():
                    if k in inst.fields or inst.lib:
                        inst.fields[k] = v
                pats.on_dataclass(ev, inst, node)
                insts.append(V(inst, "derived", line, col))
            return V(tuple(insts), "derived", line, col)
        insts = []
        for dc in classes:
            inst = ev.dc_instance(dc, line, col, from_cli=from_cli)
            pats.on_dataclass(ev, inst, node)
            if inst.lib is None and not ev.unbound:
                # the script's own arguments dataclass: its fields are read by name
                # (`gradient_accumulation_steps`, `max_seq_length`) as any config's are
                ev.config_instances.append(inst)
            insts.append(V(inst, "derived", line, col))
        rest = kwargs.get("return_remaining_strings")
        if rest is not None and rest.known and rest.value is True:
            # `model_args, training_args, extra = parser.parse_args_into_dataclasses(
            # return_remaining_strings=True)`: the words no dataclass takes come last
            insts.append(unk("the command-line words no dataclass takes", line, col))
        return V(tuple(insts), "derived", line, col)
    return NO_MATCH


def args_file(ev: Evaluator, meth: str, args: list, kwargs: dict,
              node: ast.AST) -> Optional[dict[str, V]]:
    """`parser.parse_json_file(sys.argv[1])`: read the JSON/YAML arguments file (never
    run anything) → {field: V(origin config, pointing into that file)}."""
    a = args[0] if args else (kwargs.get("json_file") or kwargs.get("yaml_file")
                              or kwargs.get("args"))
    if a is None or not a.known:
        return None
    if meth == "parse_dict":
        if isinstance(a.value, dict):
            return {k: v for k, v in a.value.items() if isinstance(k, str)}
        return None
    if not isinstance(a.value, str):
        return None
    rel = a.value
    ev.references.append(rel)
    found = resolve_path(ev.path, rel)
    if found is None or ev.read_file is None:
        ev.notes.append((node.lineno, node.col_offset + 1,
                         f"arguments file {rel} was not found; its values are unknown"))
        return None
    text = ev.read_file(found)
    if text is None:
        return None
    try:
        if meth == "parse_json_file":
            import json
            data = json.loads(text)
        else:
            import yaml
            data = yaml.safe_load(text)
    except Exception as e:  # noqa: BLE001 - a malformed file is reported, not raised
        ev.notes.append((node.lineno, node.col_offset + 1,
                         f"arguments file {rel} could not be read: {type(e).__name__}"))
        return None
    if not isinstance(data, dict):
        return None
    lines = text.splitlines()
    out: dict[str, V] = {}
    for k, v in data.items():
        ln, cl = 1, 1
        for i, s in enumerate(lines, 1):
            j = s.find(f'"{k}"')
            if j < 0 and s.lstrip().startswith(f"{k}:"):
                j = s.find(str(k))
            if j >= 0:
                ln, cl = i, j + 1
                break
        out[str(k)] = V(v, "config", ln, cl, f"{k} in {rel}", None, found)
    return out


def parser_classes(recv_v: Optional[V]) -> Optional[list]:
    if recv_v is None or not recv_v.known or not isinstance(recv_v.value, Obj):
        return None
    o = recv_v.value
    a = o.args[0] if o.args else o.kwargs.get("dataclass_types")
    if a is None or not a.known:
        return None
    items = a.value if isinstance(a.value, (list, tuple)) else [a]
    base = o.attrs.get("\0base")            # the repository's subclass of the parser
    base_short = base.value.rsplit(".", 1)[-1] if base is not None else o.short
    if o.short not in ("HfArgumentParser", "TrlParser") and "add_parser" not in o.qual and \
            base_short not in ("HfArgumentParser", "TrlParser") and \
            not (o.short.endswith(("Parser", "ParserPlus")) and isinstance(a.value, (list, tuple))
                 and all(isinstance(getattr(it, "value", it), (ClassVal, Dotted)) for it in items)
                 and any(isinstance(getattr(it, "value", it), ClassVal) for it in items)):
        # a repository's own subclass of HfArgumentParser (`ArgumentParserPlus((Args,
        # TokenizerConfig))`) is built the same way: a parser given the script's dataclasses
        return None
    out = []
    for it in items:
        x = it.value if isinstance(it, V) else it
        if isinstance(x, (ClassVal, Dotted)):
            out.append(x)
        else:
            return None
    return out


#: TRL's trainers that score the policy against a frozen reference model
REFERENCE_TRAINERS = frozenset({"DPOTrainer", "KTOTrainer", "BCOTrainer"})
#: TRL's trainers whose samples are preference pairs put through the model together
PAIRED_TRAINERS = frozenset({"DPOTrainer", "CPOTrainer", "ORPOTrainer", "RewardTrainer"})


def reference_model(pats: Any, c: Call) -> None:
    """The reference model a DPO-style trainer keeps beside the policy: without `ref_model`
    it makes a frozen copy of the model (with a PEFT adapter, none: the base with the adapter
    switched off is the reference, which the ledger applies); a model given as `ref_model`
    is one whose size is not read."""
    ref = c.kwargs.get("ref_model")
    if ref is None or (ref.known and ref.value is None):
        pats.emit("reference_copies", V(1, "default", c.line, c.col,
                                        f"{c.name} without ref_model copies the model as its "
                                        f"frozen reference (unless a PEFT adapter is used)"))
    else:
        pats.emit("reference_copies", V(UNK, "unknown", c.line, c.col,
                                        f"{c.name}(ref_model=…): the reference model given "
                                        f"is not sized"))


@answers(suffixes=("Trainer",))
def trainer_call(pats: Any, ev: Evaluator, c: Call) -> Any:
    """A `Trainer` (or a library's `...Trainer`: TRL's `SFTTrainer`, …): the model it is
    given by name, the quantization it loads with."""
    name, qual, kwargs, node = c.name, c.qual, c.kwargs, c.node
    if name == "Trainer" or name.endswith("Trainer"):
        pats.seen_training_api = True
        pats.trainers += 1
        m = kwargs.get("model")
        if m is not None and m.known and (isinstance(m.value, str) or
                                          (m.value is None and m.origin != "literal")):
            # a checkpoint name (TRL's trainers load it), or one left at its None default
            pats.hub_model(ev, qual, m, {}, node)
        pc = kwargs.get("peft_config")
        if pc is not None and pc.known and isinstance(pc.value, Obj) and pc.value.short == "LoraConfig":
            pass
        q = kwargs.get("quantization_config")
        if q is not None and q.known and isinstance(q.value, Obj):
            pats.bnb(q.value, q)
        if name in REFERENCE_TRAINERS:
            reference_model(pats, c)
        if name in PAIRED_TRAINERS:
            pats.emit("sequences_per_sample", V(2, "default", c.line, c.col,
                                                f"{name} scores each pair's chosen and "
                                                f"rejected sequences in one forward"))
        opts = kwargs.get("optimizers")
        if opts is not None and opts.known and isinstance(opts.value, (tuple, list)) and opts.value:
            # `optimizers=(optimizer, scheduler)`: the script's own optimizer, not `optim`
            first = opts.value[0]
            pats.given_optimizer(first if isinstance(first, V) else V(first), c.line, c.col)
        return None
    return NO_MATCH

_LIGER = """\
from transformers import AutoModelForCausalLM, Trainer, TrainingArguments

model = AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-0.5B")
args = TrainingArguments(output_dir="out", per_device_train_batch_size=4,
                         use_liger_kernel=True)
Trainer(model=model, args=args).train()
"""

HfTrainer.EXAMPLES += [
    Example(title="use_liger_kernel=True: Liger-Kernel's fused loss and layer kernels",
            files={"train.py": _LIGER},
            command="python train.py",
            facts={"loss_kernel": ("liger", "train.py:5"),
                   "micro_batch": (4, "train.py:4")}),
]
