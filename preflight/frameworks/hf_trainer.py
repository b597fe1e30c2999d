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

from typing import Optional

from preflight.frameworks import ConfigOut, Example, Framework
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
        "how many are new depends on the tokenizer (the vocabulary is left as loaded)",
        "`auto_find_batch_size` (the batch is found at run time: the stated one is used)",
        "`torch_compile`, `tf32` (no memory effect counted)",
    )

    FLAGS = FLAGS
    flags_fallback = True

    def flag_lora(self, flags: dict[str, Optional[str]], script: str) -> Optional[dict]:
        return lora_from_args(flags, script)

    def claims(self, cfg: dict, path: str) -> bool:
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
                   "gpus_per_node": (2, "<command>:1", "cli")}),
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

HfTrainer.EXAMPLES += [
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
