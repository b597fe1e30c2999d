"""The examples of the Python command-line languages the evaluator reads (argparse,
dataclass command lines, function CLIs): each a small job in the idiom and the facts it
must yield, with their value, `path:line` and origin. `tests/test_lang_python_cli.py` runs
every one through the real pipeline, as the framework adapters' examples are run.

Each example is a dict with the fields of `preflight.frameworks.Example` (`title`,
`files`, `command`, `facts`); a fact is `(value, "path:line", origin)`.
"""

from __future__ import annotations

from typing import Any

#: expected value of a fact that must be an explicit unknown (`preflight.frameworks.UNKNOWN`
#: stands for it in the tests)
UNKNOWN = "<unknown>"


_GALORE = """\
import argparse
import os

import torch
from transformers import AutoConfig, AutoModelForCausalLM


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model_config", type=str, required=True)
    parser.add_argument("--batch_size", type=int, required=True)
    parser.add_argument("--gradient_accumulation", type=int, default=None)
    parser.add_argument("--total_batch_size", type=int, default=None)
    parser.add_argument("--max_length", type=int, default=256)
    return parser.parse_args()


def main(args):
    world_size = int(os.environ["WORLD_SIZE"])
    if args.total_batch_size is not None:
        if args.gradient_accumulation is None:
            args.gradient_accumulation = args.total_batch_size // (args.batch_size * world_size)
    config = AutoConfig.from_pretrained(args.model_config)
    model = AutoModelForCausalLM.from_config(config)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for step, batch in enumerate(range(10)):
        loss = model(batch).loss / args.gradient_accumulation
        loss.backward()
        if step % args.gradient_accumulation == 0:
            optimizer.step()


if __name__ == "__main__":
    main(parse_args())
"""

_TINY_JSON = """\
{"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 256, "intermediate_size": 688,
 "num_attention_heads": 4, "num_hidden_layers": 2, "vocab_size": 1000}
"""

_COND = """\
import argparse

import torch
from transformers import AutoModelForCausalLM

parser = argparse.ArgumentParser()
parser.add_argument("--batch_size", type=int, default=8)
parser.add_argument("--gradient_accumulation_steps", type=int, default=1)
parser.add_argument("--global_batch", type=int, default=None)
args, _ = parser.parse_known_args()
if args.global_batch:
    args.gradient_accumulation_steps = args.global_batch // args.batch_size
if torch.cuda.device_count() > 1:
    args.gradient_accumulation_steps = 1
model = AutoModelForCausalLM.from_pretrained("gpt2")
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
loader = torch.utils.data.DataLoader(range(10), batch_size=args.batch_size)
"""

_TYRO = """\
from dataclasses import dataclass, field

import torch
import tyro
from transformers import AutoModelForCausalLM


@dataclass
class OptimConfig:
    lr: float = 3e-4
    grad_accum_steps: int = 4


@dataclass
class TrainConfig:
    model_name: str = "gpt2"
    batch_size: int = 8
    seq_len: int = 1024
    gradient_checkpointing: bool = False
    optim: OptimConfig = field(default_factory=OptimConfig)


def main(cfg: TrainConfig):
    model = AutoModelForCausalLM.from_pretrained(cfg.model_name)
    if cfg.gradient_checkpointing:
        model.gradient_checkpointing_enable()
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.optim.lr)
    loader = torch.utils.data.DataLoader(range(100), batch_size=cfg.batch_size)
    for step, batch in enumerate(loader):
        loss = model(batch).loss / cfg.optim.grad_accum_steps
        loss.backward()
        if step % cfg.optim.grad_accum_steps == 0:
            optimizer.step()


if __name__ == "__main__":
    main(tyro.cli(TrainConfig))
"""

_DRACCUS = """\
from dataclasses import dataclass, field

import draccus
import torch
from transformers import AutoModelForCausalLM


@dataclass
class DataConfig:
    seq_length: int = 2048
    micro_batch_size: int = 2


@dataclass
class TrainConfig:
    model: str = "EleutherAI/pythia-160m"
    data: DataConfig = field(default_factory=DataConfig)
    gradient_accumulation_steps: int = 1


@draccus.wrap()
def train(cfg: TrainConfig):
    model = AutoModelForCausalLM.from_pretrained(cfg.model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    loader = torch.utils.data.DataLoader(range(10), batch_size=cfg.data.micro_batch_size)


if __name__ == "__main__":
    train()
"""

_DRACCUS_YAML = """\
model: EleutherAI/pythia-410m
data:
  seq_length: 4096
  micro_batch_size: 8
"""

_SIMPLE_PARSING = """\
import argparse
from dataclasses import dataclass

import simple_parsing
import torch
from transformers import AutoModelForCausalLM


@dataclass
class HParams:
    model_name: str = "gpt2"
    batch_size: int = 16
    block_size: int = 512


def main():
    parser = simple_parsing.ArgumentParser()
    parser.add_arguments(HParams, dest="hparams")
    parser.add_argument("--gradient_accumulation_steps", type=int, default=1)
    parser.set_defaults(gradient_accumulation_steps=4)
    args = parser.parse_args()
    hp = args.hparams
    model = AutoModelForCausalLM.from_pretrained(hp.model_name)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    loader = torch.utils.data.DataLoader(range(10), batch_size=hp.batch_size)
    for step, batch in enumerate(loader):
        loss = model(batch).loss / args.gradient_accumulation_steps
        loss.backward()
        if (step + 1) % args.gradient_accumulation_steps == 0:
            optimizer.step()


if __name__ == "__main__":
    main()
"""

_FIRE_ENTRY = """\
import fire
from pkg.finetuning import main

if __name__ == "__main__":
    fire.Fire(main)
"""

_FIRE_CONFIGS_INIT = """\
from pkg.configs.training import train_config
from pkg.configs.sharding import fsdp_config
"""

_FIRE_TRAINING = """\
from dataclasses import dataclass


@dataclass
class train_config:
    model_name: str = "PATH/to/model"
    enable_fsdp: bool = False
    batch_size_training: int = 4
    context_length: int = 4096
    gradient_accumulation_steps: int = 1
"""

_FIRE_SHARDING = """\
from dataclasses import dataclass


@dataclass
class fsdp_config:
    pure_bf16: bool = False
    activation_checkpointing: bool = True
"""

_FIRE_UTILS = """\
def update_config(config, **kwargs):
    if isinstance(config, (tuple, list)):
        for c in config:
            update_config(c, **kwargs)
    else:
        for k, v in kwargs.items():
            if hasattr(config, k):
                setattr(config, k, v)
            elif "." in k:
                config_name, param_name = k.split(".")
                if type(config).__name__ == config_name:
                    setattr(config, param_name, v)
"""

_FIRE_MAIN = """\
import torch
from transformers import AutoModelForCausalLM

from pkg.configs import fsdp_config as FSDP_CONFIG, train_config as TRAIN_CONFIG
from pkg.config_utils import update_config


def main(**kwargs):
    train_config, fsdp_config = TRAIN_CONFIG(), FSDP_CONFIG()
    update_config((train_config, fsdp_config), **kwargs)
    model = AutoModelForCausalLM.from_pretrained(train_config.model_name)
    if train_config.enable_fsdp and fsdp_config.pure_bf16:
        model.to(torch.bfloat16)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    loader = torch.utils.data.DataLoader(range(10), batch_size=train_config.batch_size_training)
"""
_SUBCOMMANDS = """\
import argparse

import torch
from transformers import AutoModelForCausalLM

parser = argparse.ArgumentParser()
sub = parser.add_subparsers(dest="command")
train_p = sub.add_parser("train")
train_p.add_argument("--batch_size", type=int, default=16)
eval_p = sub.add_parser("eval")
eval_p.add_argument("--batch_size", type=int, default=64)
args = parser.parse_args()
model = AutoModelForCausalLM.from_pretrained("gpt2")
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
loader = torch.utils.data.DataLoader(range(10), batch_size=args.batch_size)
"""
_FIRE_LOCAL = """\
from dataclasses import dataclass

import fire
import torch
from transformers import AutoModelForCausalLM


@dataclass
class TrainSettings:
    model_name: str = "gpt2"
    micro_batch_size: int = 4
    max_seq_len: int = 2048


def apply_overrides(cfg, **kwargs):
    for key, value in kwargs.items():
        if hasattr(cfg, key):
            setattr(cfg, key, value)


def main(**kwargs):
    cfg = TrainSettings()
    apply_overrides(cfg, **kwargs)
    model = AutoModelForCausalLM.from_pretrained(cfg.model_name)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    loader = torch.utils.data.DataLoader(range(10), batch_size=cfg.micro_batch_size)


if __name__ == "__main__":
    fire.Fire(main)
"""
_YAML_LOADER = """\
import argparse

import torch
import yaml
from transformers import AutoModelForCausalLM

parser = argparse.ArgumentParser()
parser.add_argument("--config", type=str, default="configs/base.yaml")
args = parser.parse_args()
with open(args.config) as f:
    cfg = yaml.safe_load(f)
model = AutoModelForCausalLM.from_pretrained(cfg["model"]["name"])
optimizer = torch.optim.AdamW(model.parameters(), lr=cfg["optim"]["lr"])
loader = torch.utils.data.DataLoader(range(10), batch_size=cfg["data"]["batch_size"])
"""
_BASE_YAML = """\
model:
  name: gpt2
optim:
  lr: 3.0e-4
data:
  batch_size: 16
"""
_BIG_YAML = """\
model:
  name: gpt2-xl
optim:
  lr: 1.0e-4
data:
  batch_size: 2
"""
_SETATTR = """\
import argparse

import torch
from transformers import AutoModelForCausalLM

parser = argparse.ArgumentParser()
parser.add_argument("--batch_size", type=int, default=8)
parser.add_argument("--global_batch_size", type=int, default=256)
args = parser.parse_args()
setattr(args, "gradient_accumulation_steps", args.global_batch_size // args.batch_size)
micro = getattr(args, "batch_size", 1)
model = AutoModelForCausalLM.from_pretrained("gpt2")
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
loader = torch.utils.data.DataLoader(range(10), batch_size=micro)
"""
_TYRO_FUNCTION = """\
from dataclasses import dataclass, field

import torch
import tyro
from transformers import AutoModelForCausalLM


@dataclass
class OptimConfig:
    lr: float = 3e-4
    grad_accum_steps: int = 4


@dataclass
class TrainConfig:
    model_name: str = "gpt2"
    batch_size: int = 8
    seq_len: int = 1024
    gradient_checkpointing: bool = False
    optim: OptimConfig = field(default_factory=OptimConfig)


def main(cfg: TrainConfig, seed: int = 0):
    model = AutoModelForCausalLM.from_pretrained(cfg.model_name)
    if cfg.gradient_checkpointing:
        model.gradient_checkpointing_enable()
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.optim.lr)
    loader = torch.utils.data.DataLoader(range(100), batch_size=cfg.batch_size)
    for step, batch in enumerate(loader):
        loss = model(batch).loss / cfg.optim.grad_accum_steps
        loss.backward()
        if step % cfg.optim.grad_accum_steps == 0:
            optimizer.step()


if __name__ == "__main__":
    tyro.cli(main)
"""
_PARSER_SUBCLASS = """\
from transformers import HfArgumentParser


class ParserPlus(HfArgumentParser):
    def parse_yaml_and_args(self, yaml_arg, other_args=None):
        return self.parse_yaml_file(yaml_arg)
"""
_PARSER_SUBCLASS_TRAIN = """\
from dataclasses import dataclass, field

from transformers import AutoModelForCausalLM, Trainer, TrainingArguments

from utils import ParserPlus


@dataclass
class ScriptArguments:
    model_name_or_path: str = field(default="gpt2")
    use_qlora: bool = field(default=False)


def main():
    parser = ParserPlus((ScriptArguments, TrainingArguments))
    script_args, training_args = parser.parse_args_into_dataclasses()
    model = AutoModelForCausalLM.from_pretrained(script_args.model_name_or_path)
    Trainer(model=model, args=training_args).train()


if __name__ == "__main__":
    main()
"""
_SPLIT_BASES = """\
from dataclasses import dataclass

DEFAULT_MODEL = "gpt2"


@dataclass(kw_only=True)
class ModelConfig:
    model_name_or_path: str = DEFAULT_MODEL
    config_name: str | None = None


@dataclass
class TrainingConfig:
    per_device_train_batch_size: int = 8
    gradient_accumulation_steps: int = 1
"""

_SPLIT_EXPERIMENT = """\
from dataclasses import dataclass, field

from .base import ModelConfig, TrainingConfig


@dataclass
class ExperimentConfig(ModelConfig, TrainingConfig):
    max_seq_length: int = field(default=2048)
"""

_SPLIT_TRAIN = """\
import torch
from torch.utils.data import DataLoader
from transformers import AutoModelForCausalLM, HfArgumentParser

from cfgs import experiment


def main(args: experiment.ExperimentConfig):
    model = AutoModelForCausalLM.from_pretrained(args.model_name_or_path)
    loader = DataLoader([], batch_size=args.per_device_train_batch_size)
    optimizer = torch.optim.AdamW(model.parameters())
    for step, batch in enumerate(loader):
        loss = model(**batch).loss / args.gradient_accumulation_steps
        loss.backward()
        if (step + 1) % args.gradient_accumulation_steps == 0:
            optimizer.step()


if __name__ == "__main__":
    (args,) = HfArgumentParser((experiment.ExperimentConfig,)).parse_args_into_dataclasses()
    main(args)
"""

_OMEGA_DATA = """\
from dataclasses import dataclass


@dataclass
class DataArgs:
    batch_size: int = 8
    seq_len: int = 1024
"""

_OMEGA_TRAIN = """\
from dataclasses import dataclass, field

import torch
from omegaconf import OmegaConf
from torch.utils.data import DataLoader
from transformers import AutoModelForCausalLM

from lib.data import DataArgs


@dataclass
class TrainArgs:
    model_name: str = "gpt2"
    grad_acc_steps: int = 1
    data: DataArgs = field(default_factory=DataArgs)


def train(args: TrainArgs):
    model = AutoModelForCausalLM.from_pretrained(args.model_name)
    loader = DataLoader([], batch_size=args.data.batch_size)
    optimizer = torch.optim.AdamW(model.parameters())
    for step, batch in enumerate(loader):
        loss = model(**batch).loss / args.grad_acc_steps
        loss.backward()
        if (step + 1) % args.grad_acc_steps == 0:
            optimizer.step()


if __name__ == "__main__":
    cli_args = OmegaConf.from_cli()
    file_cfg = OmegaConf.load(cli_args.config)
    del cli_args.config
    default_cfg = OmegaConf.structured(TrainArgs())
    cfg = OmegaConf.to_object(OmegaConf.merge(default_cfg, file_cfg, cli_args))
    train(cfg)
"""

_OMEGA_YAML = """\
model_name: gpt2-medium
data:
  batch_size: 4
"""

_VARS_TRAIN = """\
import argparse
import os

import torch
from torch.utils.data import DataLoader
from transformers import AutoModelForCausalLM


def get_args():
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="gpt2")
    p.add_argument("--batch_size", type=int, default=int(os.environ.get("BS", 8)))
    p.add_argument("--accum", type=int, default=1)
    return p.parse_args()


def main():
    args = get_args()
    config = vars(args)
    model = AutoModelForCausalLM.from_pretrained(config["model"], torch_dtype=torch.bfloat16)
    loader = DataLoader([], batch_size=config["batch_size"])
    opt = torch.optim.AdamW(model.parameters())
    for i, batch in enumerate(loader):
        (model(**batch).loss / args.accum).backward()
        if (i + 1) % args.accum == 0 or i == len(loader) - 1:
            opt.step()
            opt.zero_grad()


if __name__ == "__main__":
    main()
"""

_VARS_RUN = """\
#!/bin/bash
BS=${BS:-4}
ACCUM=${ACCUM:-16}
NGPU=$(nvidia-smi -L | wc -l)
torchrun --nproc_per_node=${NGPU} train.py --model gpt2-medium --batch_size $BS --accum ${ACCUM}
"""

_HYDRA_TRAIN = """\
import hydra
import torch
from omegaconf import DictConfig
from torch.utils.data import DataLoader
from transformers import AutoModelForCausalLM


@hydra.main(version_base=None, config_path="conf", config_name="config")
def main(cfg: DictConfig):
    model = AutoModelForCausalLM.from_pretrained(cfg.model.name, torch_dtype=torch.bfloat16)
    loader = DataLoader([], batch_size=cfg.trainer.batch_size)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.trainer.lr)
    for i, batch in enumerate(loader):
        (model(**batch).loss / cfg.trainer.accum).backward()
        if (i + 1) % cfg.trainer.accum == 0:
            opt.step()


if __name__ == "__main__":
    main()
"""

_HYDRA_FILES = {
    "conf/config.yaml": "defaults:\n  - model: llama\n  - trainer: base\n  - _self_\nseed: 1\n",
    "conf/model/llama.yaml": "name: meta-llama/Llama-2-7b-hf\n",
    "conf/model/mistral.yaml": "name: mistralai/Mistral-7B-v0.1\n",
    # a YAML merge key: the anchor's keys merged into the mapping
    "conf/trainer/base.yaml": "common: &common\n  lr: 1e-4\n  accum: 2\nbatch_size: 8\n"
                              "<<: *common\n",
}

_EASYDICT_TRAIN = """\
import torch
import yaml
from easydict import EasyDict
from torch.utils.data import DataLoader
from transformers import AutoModelForCausalLM


def main():
    with open("cfg.yaml") as f:
        cfg = EasyDict(yaml.safe_load(f))
    model = AutoModelForCausalLM.from_pretrained(cfg.model.name)
    loader = DataLoader([], batch_size=cfg.train.batch_size)
    opt = torch.optim.AdamW(model.parameters())
    for i, batch in enumerate(loader):
        model(**batch).loss.backward()
        if (i + 1) % cfg.train.accum == 0:
            opt.step()


if __name__ == "__main__":
    main()
"""

_SET_DEFAULTS_FILE = """\
import argparse

import torch
import yaml
from torch.utils.data import DataLoader
from transformers import AutoModelForCausalLM


def parse():
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--config", default=None)
    known, _ = pre.parse_known_args()
    parser = argparse.ArgumentParser(parents=[pre])
    group = parser.add_argument_group("train")
    group.add_argument("--batch_size", type=int, default=8)
    group.add_argument("--model", default="gpt2")
    if known.config:
        with open(known.config) as f:
            parser.set_defaults(**yaml.safe_load(f))
    return parser.parse_args()


args = parse()
model = AutoModelForCausalLM.from_pretrained(args.model)
loader = DataLoader([], batch_size=args.batch_size)
optimizer = torch.optim.AdamW(model.parameters())
optimizer.step()
"""

_PARSE_LIST = """\
import argparse
import sys

import torch
from torch.utils.data import DataLoader
from transformers import AutoModelForCausalLM

parser = argparse.ArgumentParser()
parser.add_argument("--model", default="gpt2")
parser.add_argument("--batch_size", type=int, default=8)
args = parser.parse_args(ARGV)
model = AutoModelForCausalLM.from_pretrained(args.model)
loader = DataLoader([], batch_size=args.batch_size)
optimizer = torch.optim.AdamW(model.parameters())
optimizer.step()
"""

_IMPORTED_CONFIG = """\
import argparse
import importlib
import runpy

import torch
from torch.utils.data import DataLoader
from transformers import AutoModelForCausalLM

parser = argparse.ArgumentParser()
parser.add_argument("--config", default="configs.base")
args = parser.parse_args()
cfg = LOAD
model = AutoModelForCausalLM.from_pretrained(cfg.model_name)
loader = DataLoader([], batch_size=cfg.batch_size)
optimizer = torch.optim.AdamW(model.parameters())
for batch in loader:
    model(**batch).loss.backward()
    optimizer.step()
"""
_CONFIG_MODULES = {"configs/__init__.py": "",
                   "configs/base.py": "batch_size = 8\nseq_len = 1024\nmodel_name = \"gpt2\"\n",
                   "configs/large.py": "from configs.base import *\nbatch_size = 4\n"
                                       "model_name = \"gpt2-large\"\n"}

_CLICK = """\
import click
import torch
from torch.utils.data import DataLoader
from transformers import AutoModelForCausalLM


@click.command()
@click.option("--model", default="gpt2", help="checkpoint")
@click.option("--batch-size", "batch_size", type=int, default=8)
@click.option("--accum", type=int, default=1)
@click.option("--bf16/--no-bf16", default=False)
def main(model, batch_size, accum, bf16):
    net = AutoModelForCausalLM.from_pretrained(
        model, torch_dtype=torch.bfloat16 if bf16 else torch.float32)
    loader = DataLoader([], batch_size=batch_size)
    opt = torch.optim.AdamW(net.parameters())
    for i, batch in enumerate(loader):
        net(**batch).loss.backward()
        if (i + 1) % accum == 0:
            opt.step()


if __name__ == "__main__":
    main()
"""

_ENV_SETTINGS = """\
import os

import torch
from torch.utils.data import DataLoader
from transformers import AutoModelForCausalLM

MODEL = os.getenv("MODEL_NAME", "gpt2")
BATCH = int(os.environ.get("BATCH_SIZE", 4))
ACC = int(os.environ["GRAD_ACC"]) if "GRAD_ACC" in os.environ else 1
model = AutoModelForCausalLM.from_pretrained(MODEL)
loader = DataLoader([], batch_size=BATCH)
opt = torch.optim.AdamW(model.parameters())
for i, batch in enumerate(loader):
    model(**batch).loss.backward()
    if (i + 1) % ACC == 0:
        opt.step()
"""

_MERGED_FLAGS = """\
import argparse

import torch
import yaml
from torch.utils.data import DataLoader
from transformers import AutoModelForCausalLM

parser = argparse.ArgumentParser()
parser.add_argument("--config", default="cfg.yaml")
parser.add_argument("--batch_size", type=int, default=None)
args = parser.parse_args()
cfg = yaml.safe_load(open(args.config))
for k, v in vars(args).items():
    if v is not None:
        cfg[k] = v
model = AutoModelForCausalLM.from_pretrained(cfg["model"])
loader = DataLoader([], batch_size=cfg["batch_size"])
optimizer = torch.optim.AdamW(model.parameters())
optimizer.step()
"""

_GETATTR_OPTIM = """\
import argparse

import torch
from torch.utils.data import DataLoader
from transformers import AutoModelForCausalLM

parser = argparse.ArgumentParser()
parser.add_argument("--optim", default="AdamW")
args = parser.parse_args()
model = AutoModelForCausalLM.from_pretrained("gpt2")
optim_cls = getattr(torch.optim, args.optim)
optimizer = optim_cls(model.parameters(), lr=1e-4)
loader = DataLoader([], batch_size=4)
for batch in loader:
    model(**batch).loss.backward()
    optimizer.step()
"""

_ARCH_BRANCHES = """\
import argparse

import torch
from transformers import GPT2LMHeadModel, LlamaForCausalLM

parser = argparse.ArgumentParser()
parser.add_argument("--arch", default="gpt2")
parser.add_argument("--batch-size", type=int, default=32)
args = parser.parse_args()
if args.arch == "llama":
    model = LlamaForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf")
    micro = 4
else:
    model = GPT2LMHeadModel.from_pretrained("gpt2")
    micro = args.batch_size
optimizer = torch.optim.AdamW(model.parameters())
for batch in loader:
    model(batch[:micro]).loss.backward()
    optimizer.step()
"""

_HELPER_BUILT = """\
import torch
from pkg.model import Net
from pkg.util import log


def build(width):
    with torch.device("meta"):
        net = Net(width)
    return net


model = build(1024)
model = torch.compile(model, dynamic=False)
""" + "log('step')\n" * 40 + """\
optimizer = model.setup_optimizer(lr=1e-3)
for x in loader:
    model(x).sum().backward()
    optimizer.step()
"""
_HELPER_MODEL = """\
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.fc = nn.Linear(width, width)

    def setup_optimizer(self, lr=0.02):
        return torch.optim.AdamW(self.parameters(), lr=lr)
"""

_H4_CONFIGS = """\
import os
import sys
from dataclasses import dataclass, field

from transformers import HfArgumentParser


class RecipeParser(HfArgumentParser):
    def parse(self):
        if len(sys.argv) == 2 and sys.argv[1].endswith(".yaml"):
            output = self.parse_yaml_file(os.path.abspath(sys.argv[1]))
        else:
            output = self.parse_args_into_dataclasses()
        return output


@dataclass
class ModelArguments:
    model_name_or_path: str = field(default=None)
    use_peft: bool = field(default=False)
    lora_r: int = field(default=16)
"""
_H4_TRAIN = """\
from peft import LoraConfig
from transformers import AutoModelForCausalLM, Trainer, TrainingArguments

from recipes.configs import ModelArguments, RecipeParser


def get_peft_config(model_args):
    if model_args.use_peft is False:
        return None
    return LoraConfig(r=model_args.lora_r, target_modules=["q_proj", "v_proj"])


def main():
    parser = RecipeParser((ModelArguments, TrainingArguments))
    model_args, training_args = parser.parse()
    model = AutoModelForCausalLM.from_pretrained(model_args.model_name_or_path)
    Trainer(model=model, args=training_args, peft_config=get_peft_config(model_args)).train()


if __name__ == "__main__":
    main()
"""
_H4_RECIPE = """\
model_name_or_path: meta-llama/Llama-2-7b-hf
per_device_train_batch_size: 2
gradient_accumulation_steps: 16
output_dir: out
"""

_WRAPPER = """\
from mypkg.train import main

if __name__ == "__main__":
    main()
"""
_WRAPPED_TRAIN = """\
import argparse

import torch
from transformers import AutoModelForCausalLM


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="gpt2")
    parser.add_argument("--batch_size", type=int, default=16)
    parser.add_argument("--seq_len", type=int, default=512)
    args = parser.parse_args()
    model = AutoModelForCausalLM.from_pretrained(args.model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    loader = torch.utils.data.DataLoader(range(10), batch_size=args.batch_size)
"""

_PART_CASTS = """\
import torch
from transformers import AutoModelForCausalLM

model = AutoModelForCausalLM.from_pretrained("gpt2", torch_dtype=torch.bfloat16)
vision_tower = model.get_vision_tower()
vision_tower.to(dtype=torch.float16, device="cuda")
model.lm_head.float()
model.get_model().mm_projector.to(torch.float16)
opt = torch.optim.AdamW(model.parameters())
for b in range(3):
    model(b).loss.backward()
    opt.step()
"""

#: the wrapper above, calling a package's `train()` that freezes the model by hand
_FREEZE_ENTRY = _WRAPPER.replace("main", "train")
_FREEZE_TRAIN = _WRAPPED_TRAIN.split("def main():")[0] + """\
def train():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tune_projector_only", action="store_true")
    args = parser.parse_args()
    model = AutoModelForCausalLM.from_pretrained("gpt2")
    if args.tune_projector_only:
        model.requires_grad_(False)
        for p in model.get_model().mm_projector.parameters():
            p.requires_grad = True
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for batch in range(10):
        model(batch).loss.backward()
        optimizer.step()
"""

_BASE_LOADER = """\
import argparse, os, yaml, torch
from transformers import AutoModelForCausalLM


def load_config(path):
    with open(path) as f:
        cfg = yaml.safe_load(f)
    if "base" in cfg:
        base = load_config(os.path.join(os.path.dirname(path), cfg.pop("base")))
        base.update(cfg)
        cfg = base
    return cfg


def forever(n):
    return forever(n + 1)


p = argparse.ArgumentParser()
p.add_argument("--config")
a = p.parse_args()
cfg = load_config(a.config)
steps = forever(0)
model = AutoModelForCausalLM.from_pretrained(cfg["model_name"])
opt = torch.optim.AdamW(model.parameters())
loader = torch.utils.data.DataLoader(range(100), batch_size=cfg["batch_size"])
for b in loader:
    model(b).loss.backward()
    opt.step()
"""

_PRIVATE_CKPT = """\
import argparse

import torch
from transformers import AutoModelForCausalLM

p = argparse.ArgumentParser()
p.add_argument("--grad_checkpoint", type=bool, default=False)
args = p.parse_args()
model = AutoModelForCausalLM.from_pretrained("gpt2")
if args.grad_checkpoint:
    model.transformer._set_gradient_checkpointing()
opt = torch.optim.AdamW(model.parameters())
for b in torch.utils.data.DataLoader(range(8), batch_size=2):
    model(b).loss.backward()
    opt.step()
"""

_OWN_WRAP = """\
import argparse

import torch
from mymodel import MultiModal

p = argparse.ArgumentParser()
p.add_argument("--use_llm_lora", type=int, default=0)
args = p.parse_args()
model = MultiModal.from_pretrained("org/multimodal-1b")
if args.use_llm_lora:
    model.wrap_llm_lora(r=args.use_llm_lora, lora_alpha=2 * args.use_llm_lora)
opt = torch.optim.AdamW(model.parameters())
for b in torch.utils.data.DataLoader(range(8), batch_size=2):
    model(b).loss.backward()
    opt.step()
"""

_DEEP_MERGE = """\
import argparse, yaml, torch
from transformers import AutoModelForCausalLM


def deep_update(d, u):
    for k, v in u.items():
        if isinstance(v, dict):
            d[k] = deep_update(d.get(k, {}), v)
        else:
            d[k] = v
    return d


p = argparse.ArgumentParser()
p.add_argument("--config")
a = p.parse_args()
cfg = yaml.safe_load(open("configs/defaults.yaml"))
cfg = deep_update(cfg, yaml.safe_load(open(a.config)))
model = AutoModelForCausalLM.from_pretrained(cfg["model"]["name"])
opt = torch.optim.AdamW(model.parameters())
loader = torch.utils.data.DataLoader(range(100), batch_size=cfg["train"]["batch_size"])
for b in loader:
    model(b).loss.backward()
    opt.step()
"""

EXAMPLES: list[dict[str, Any]] = [
    dict(title="a run's YAML merged key by key over the defaults by a recursive `deep_update` "
               "(`isinstance(v, dict)` decided on the documents' values)",
         files={"train.py": _DEEP_MERGE,
                "configs/defaults.yaml": "model:\n  name: gpt2\ntrain:\n  batch_size: 8\n  lr: 1.0e-4\n",
                "configs/run.yaml": "train:\n  lr: 3.0e-4\nmodel:\n  name: gpt2-medium\n"},
         command="python train.py --config configs/run.yaml",
         facts={"model": ("gpt2-medium", "configs/run.yaml:4", "config"),
                "micro_batch": (8, "configs/defaults.yaml:4", "config")}),
    dict(title="a model's own method named for LoRA (`model.wrap_llm_lora(r=…)`) only in an arm "
               "the launch does not take: no adapter",
         files={"train.py": _OWN_WRAP},
         command="python train.py",
         facts={"lora": (False, "train.py:11", "default")}),
    dict(title="checkpointing switched on through transformers' private "
               "`_set_gradient_checkpointing()` (on a multimodal model's language model), under "
               "the script's own flag",
         files={"train.py": _PRIVATE_CKPT},
         command="python train.py --grad_checkpoint True",
         facts={"activation_checkpointing": ("full", "train.py:11", "literal")}),
    dict(title="a config loader that reads its `base:` file first, by calling itself: the "
               "chain of files is read, the later file's keys over the base's (a recursion "
               "that never ends stops after a few levels, unknown)",
         files={"train.py": _BASE_LOADER, "configs/base.yaml": "model_name: gpt2\nbatch_size: 8\n",
                "configs/run.yaml": "base: base.yaml\nmodel_name: gpt2-medium\n"},
         command="python train.py --config configs/run.yaml",
         facts={"model": ("gpt2-medium", "configs/run.yaml:2", "config"),
                "micro_batch": (8, "configs/base.yaml:2", "config")}),
    dict(title="the trained model frozen by hand (`model.requires_grad_(False)`, then a part "
               "switched back on) in a module the entry calls, in the arm the flag takes: "
               "which parameters train is not known",
         files={"train_mem.py": _FREEZE_ENTRY, "mypkg/__init__.py": "",
                "mypkg/train.py": _FREEZE_TRAIN},
         command="python train_mem.py --tune_projector_only",
         facts={"params": (124439808, "mypkg/train.py:11", "catalog"),
                "trainable_params": (UNKNOWN, "mypkg/train.py:13", "unknown")}),
    dict(title="the same module with the flag off: every parameter trains",
         files={"train_mem.py": _FREEZE_ENTRY, "mypkg/__init__.py": "",
                "mypkg/train.py": _FREEZE_TRAIN},
         command="python train_mem.py",
         facts={"trainable_params": (124439808, "mypkg/train.py:11", "default")}),
    dict(title="a cast of a part of the model (`vision_tower = model.get_vision_tower(); "
               "vision_tower.to(…)`, `model.lm_head.float()`) is not the weights' dtype",
         files={"train.py": _PART_CASTS},
         command="python train.py",
         facts={"param_dtype": ("bf16", "train.py:4", "literal")}),
    dict(title="argparse: a later `args.x = a // (b * world_size)` is derived from the flags "
               "and the launcher's world size; a model config named by its .json file",
         files={"train.py": _GALORE, "configs/tiny.json": _TINY_JSON},
         command="torchrun --nproc_per_node 4 train.py --model_config configs/tiny.json "
                 "--batch_size 8 --total_batch_size 256",
         facts={"micro_batch": (8, "train.py:11", "cli"),
                "grad_accum": (8, "train.py:22", "derived"),
                "seq_len": (256, "train.py:14", "default"),
                "layers": (2, "train.py:23", "catalog"),
                "hidden": (256, "train.py:23", "catalog")}),
    dict(title="argparse: `args.x = ...` under a condition the launch cannot decide is unknown, "
               "never the flag's default",
         files={"train.py": _COND},
         command="python train.py --global_batch 64",
         facts={"micro_batch": (8, "train.py:7", "default"),
                "grad_accum": (UNKNOWN, "train.py:14", "unknown")}),
    dict(title="tyro.cli(Config): dashed flags, a nested `--optim.grad-accum-steps`, a bare "
               "boolean flag, defaults where no flag is given",
         files={"train.py": _TYRO},
         command="python train.py --batch-size 4 --optim.grad-accum-steps 16 "
                 "--gradient-checkpointing --model-name gpt2-medium",
         facts={"model": ("gpt2-medium", "train.py:16", "cli"),
                "micro_batch": (4, "train.py:17", "cli"),
                "seq_len": (1024, "train.py:18", "default"),
                "grad_accum": (16, "train.py:11", "cli")}),
    dict(title="@draccus.wrap(): --config_path YAML over the defaults, flags over the file",
         files={"train.py": _DRACCUS, "configs/run.yaml": _DRACCUS_YAML},
         command="python train.py --config_path configs/run.yaml --data.micro_batch_size 4",
         facts={"model": ("EleutherAI/pythia-410m", "configs/run.yaml:1", "config"),
                "micro_batch": (4, "train.py:11", "cli"),
                "seq_len": (4096, "configs/run.yaml:3", "config"),
                "grad_accum": (1, "train.py:18", "default")}),
    dict(title="simple_parsing add_arguments(HParams, dest=...) and parser.set_defaults over "
               "an argument's default=",
         files={"train.py": _SIMPLE_PARSING},
         command="python train.py --batch_size 2",
         facts={"model": ("gpt2", "train.py:11", "default"),
                "micro_batch": (2, "train.py:12", "cli"),
                "seq_len": (512, "train.py:13", "default"),
                "grad_accum": (4, "train.py:20", "default")}),
    dict(title="fire.Fire(main) of another module: main(**kwargs) updates config dataclasses "
               "by field name, `--fsdp_config.pure_bf16` the nested one",
         files={"finetune.py": _FIRE_ENTRY, "pkg/__init__.py": "",
                "pkg/configs/__init__.py": _FIRE_CONFIGS_INIT,
                "pkg/configs/training.py": _FIRE_TRAINING,
                "pkg/configs/sharding.py": _FIRE_SHARDING,
                "pkg/config_utils.py": _FIRE_UTILS, "pkg/finetuning.py": _FIRE_MAIN},
         command="torchrun --nproc_per_node 8 finetune.py --enable_fsdp --model_name /models/8B "
                 "--fsdp_config.pure_bf16 --batch_size_training 2",
         facts={"model": ("/models/8B", "pkg/configs/training.py:6", "cli"),
                "micro_batch": (2, "pkg/configs/training.py:8", "cli"),
                "seq_len": (4096, "pkg/configs/training.py:9", "default"),
                "grad_accum": (1, "pkg/configs/training.py:10", "default"),
                "param_dtype": ("bf16", "pkg/finetuning.py:13", "literal")}),
    dict(title="fire.Fire(main) of another module: a nested flag whose guard is not given "
               "changes nothing",
         files={"finetune.py": _FIRE_ENTRY, "pkg/__init__.py": "",
                "pkg/configs/__init__.py": _FIRE_CONFIGS_INIT,
                "pkg/configs/training.py": _FIRE_TRAINING,
                "pkg/configs/sharding.py": _FIRE_SHARDING,
                "pkg/config_utils.py": _FIRE_UTILS, "pkg/finetuning.py": _FIRE_MAIN},
         command="python finetune.py --fsdp_config.pure_bf16 --model_name gpt2",
         facts={"model": ("gpt2", "pkg/configs/training.py:6", "cli"),
                "micro_batch": (4, "pkg/configs/training.py:8", "default")}),
    dict(title="argparse sub-commands: the command's word chooses whose default holds",
         files={"main.py": _SUBCOMMANDS},
         command="python main.py eval",
         facts={"micro_batch": (64, "main.py:11", "default")}),
    dict(title="argparse sub-commands: no word given, an option two of them declare is unknown",
         files={"main.py": _SUBCOMMANDS},
         command="python main.py",
         facts={"micro_batch": (UNKNOWN, "main.py:9", "unknown")}),
    dict(title="fire.Fire(main) with main(**kwargs): a dataclass of the file updated from "
               "every flag by an updater of its own",
         files={"train.py": _FIRE_LOCAL},
         command="python train.py --micro_batch_size 2 --model_name gpt2-large",
         facts={"model": ("gpt2-large", "train.py:10", "cli"),
                "micro_batch": (2, "train.py:11", "cli"),
                "seq_len": (2048, "train.py:12", "default")}),
    dict(title="a YAML file the script loads itself, named by a --config flag",
         files={"train.py": _YAML_LOADER, "configs/base.yaml": _BASE_YAML,
                "configs/big.yaml": _BIG_YAML},
         command="python train.py --config configs/big.yaml",
         facts={"model": ("gpt2-xl", "configs/big.yaml:2", "config"),
                "micro_batch": (2, "configs/big.yaml:6", "config")}),
    dict(title="a YAML file the script loads itself: the flag's default path when not given",
         files={"train.py": _YAML_LOADER, "configs/base.yaml": _BASE_YAML,
                "configs/big.yaml": _BIG_YAML},
         command="python train.py",
         facts={"micro_batch": (16, "configs/base.yaml:6", "config")}),
    dict(title="argparse: setattr / getattr with a constant name are the attribute's "
               "assignment and read",
         files={"train.py": _SETATTR},
         command="python train.py --batch_size 4",
         facts={"micro_batch": (4, "train.py:7", "cli"),
                "grad_accum": (64, "train.py:10", "derived")}),
    dict(title="tyro.cli(main): a dataclass parameter filled from `--cfg.field` flags",
         files={"train.py": _TYRO_FUNCTION},
         command="python train.py --cfg.batch-size 4 --cfg.optim.grad-accum-steps 16",
         facts={"model": ("gpt2", "train.py:16", "default"),
                "micro_batch": (4, "train.py:17", "cli"),
                "grad_accum": (16, "train.py:11", "cli")}),
    dict(title="the repository's subclass of HfArgumentParser (in another module) parses as "
               "HfArgumentParser: TrainingArguments' defaults where no flag is given",
         files={"train.py": _PARSER_SUBCLASS_TRAIN, "utils.py": _PARSER_SUBCLASS},
         command="python train.py --model_name_or_path gpt2-medium --output_dir out",
         facts={"model": ("gpt2-medium", "<command>:1", "cli"),
                "grad_accum": (1, "train.py:16", "default")}),
    dict(title="a thin entry script calling main() of another module: that module's argparse "
               "declarations, their defaults and the flags",
         files={"run.py": _WRAPPER, "mypkg/__init__.py": "", "mypkg/train.py": _WRAPPED_TRAIN},
         command="python run.py --batch_size 4",
         facts={"model": ("gpt2", "mypkg/train.py:9", "default"),
                "micro_batch": (4, "mypkg/train.py:10", "cli"),
                "seq_len": (512, "mypkg/train.py:11", "default")}),
    dict(title="HfArgumentParser over a dataclass of another module whose fields come from "
               "bases of a third module: each default read where it is declared",
         files={"train.py": _SPLIT_TRAIN, "cfgs/__init__.py": "", "cfgs/base.py": _SPLIT_BASES,
                "cfgs/experiment.py": _SPLIT_EXPERIMENT},
         command="python train.py",
         facts={"model": ("gpt2", "cfgs/base.py:8", "default"),
                "micro_batch": (8, "cfgs/base.py:14", "default"),
                "grad_accum": (1, "cfgs/base.py:15", "default")}),
    dict(title="HfArgumentParser over bases of another module: the flags set the inherited "
               "fields",
         files={"train.py": _SPLIT_TRAIN, "cfgs/__init__.py": "", "cfgs/base.py": _SPLIT_BASES,
                "cfgs/experiment.py": _SPLIT_EXPERIMENT},
         command="python train.py --model_name_or_path gpt2-medium "
                 "--per_device_train_batch_size 2 --gradient_accumulation_steps 4",
         facts={"model": ("gpt2-medium", "<command>:1", "cli"),
                "micro_batch": (2, "<command>:1", "cli"),
                "grad_accum": (4, "<command>:1", "cli")}),
    dict(title="OmegaConf structured config: the dataclass's defaults (a nested one by its "
               "default_factory, in another module), a YAML file and the command line's "
               "key=value words merged, the later winning",
         files={"train.py": _OMEGA_TRAIN, "lib/__init__.py": "", "lib/data.py": _OMEGA_DATA,
                "cfg.yaml": _OMEGA_YAML},
         command="python train.py config=cfg.yaml grad_acc_steps=4",
         facts={"model": ("gpt2-medium", "cfg.yaml:1", "config"),
                "micro_batch": (4, "cfg.yaml:3", "config"),
                "seq_len": (1024, "lib/data.py:7", "default"),
                "grad_accum": (4, "train.py:30", "cli")}),
    dict(title="OmegaConf structured config: a file whose path is not known makes every key "
               "it could set unknown",
         files={"train.py": _OMEGA_TRAIN, "lib/__init__.py": "", "lib/data.py": _OMEGA_DATA},
         command="python train.py",
         facts={"model": (UNKNOWN, "train.py:19"),
                "micro_batch": (UNKNOWN, "lib/data.py:6"),
                "seq_len": (UNKNOWN, "lib/data.py:7"),
                "grad_accum": (UNKNOWN, "train.py:14")}),
    dict(title="vars(args) as a dict, an optimizer stepped once every N batches "
               "(`if (i + 1) % args.accum == 0 or …`) and a GPU count the shell computes",
         files={"train.py": _VARS_TRAIN, "run.sh": _VARS_RUN},
         command="bash run.sh",
         facts={"model": ("gpt2-medium", "train.py:11", "cli"),
                "micro_batch": (4, "train.py:12", "cli"),
                "grad_accum": (16, "train.py:13", "cli"),
                "gpus_per_node": (UNKNOWN, "run.sh:5"),
                "world_size": (UNKNOWN, "run.sh:5")}),
    dict(title="an optimizer stepped once every N batches, N the flag's default",
         files={"train.py": _VARS_TRAIN.replace('default=1)', 'default=4)')},
         command="python train.py",
         facts={"grad_accum": (4, "train.py:13", "default")}),
    dict(title="@hydra.main(config_path, config_name): the function's config composed from the "
               "defaults list and the command line's overrides (a group choice, a value)",
         files={"train.py": _HYDRA_TRAIN, **_HYDRA_FILES},
         command="python train.py model=mistral trainer.batch_size=2",
         facts={"model": ("mistralai/Mistral-7B-v0.1", "conf/model/mistral.yaml:1", "config"),
                "micro_batch": (2, "train.py:20", "cli"),
                "grad_accum": (2, "conf/trainer/base.yaml:3", "config")}),
    dict(title="@hydra.main without overrides: the defaults list's choices",
         files={"train.py": _HYDRA_TRAIN, **_HYDRA_FILES},
         command="python train.py",
         facts={"model": ("meta-llama/Llama-2-7b-hf", "conf/model/llama.yaml:1", "config"),
                "micro_batch": (8, "conf/trainer/base.yaml:4", "config")}),
    dict(title="EasyDict (Munch, addict, ConfigDict) over a YAML document: its nested keys by "
               "attribute",
         files={"train.py": _EASYDICT_TRAIN,
                "cfg.yaml": "model:\n  name: gpt2-medium\ntrain:\n  batch_size: 6\n  accum: 3\n"},
         command="python train.py",
         facts={"model": ("gpt2-medium", "cfg.yaml:2", "config"),
                "micro_batch": (6, "cfg.yaml:4", "config"),
                "grad_accum": (3, "cfg.yaml:5", "config")}),
    dict(title="an optimizer stepped once every N batches, N not a number statically: unknown, "
               "never 1",
         files={"train.py": _EASYDICT_TRAIN.replace("EasyDict(yaml.safe_load(f))",
                                                    "load_config(f)")},
         command="python train.py",
         facts={"grad_accum": (UNKNOWN, "train.py:16")}),
    dict(title="argparse defaults replaced by a YAML file: parser.set_defaults(**yaml.safe_load(f)) "
               "when --config names one (parse_known_args, parents, argument groups)",
         files={"train.py": _SET_DEFAULTS_FILE, "cfg.yaml": "batch_size: 12\nmodel: gpt2-large\n"},
         command="python train.py --config cfg.yaml",
         facts={"model": ("gpt2-large", "cfg.yaml:2", "config"),
                "micro_batch": (12, "cfg.yaml:1", "config")}),
    dict(title="argparse defaults replaced by a YAML file, a flag over both",
         files={"train.py": _SET_DEFAULTS_FILE, "cfg.yaml": "batch_size: 12\nmodel: gpt2-large\n"},
         command="python train.py --config cfg.yaml --batch_size 3",
         facts={"micro_batch": (3, "train.py:15", "cli")}),
    dict(title="argparse defaults a YAML file would replace, no --config given: the declared ones",
         files={"train.py": _SET_DEFAULTS_FILE, "cfg.yaml": "batch_size: 12\nmodel: gpt2-large\n"},
         command="python train.py",
         facts={"model": ("gpt2", "train.py:16", "default"),
                "micro_batch": (8, "train.py:15", "default")}),
    dict(title="argparse defaults replaced by a file whose path is not known: unknown, the "
               "declared default its alternative",
         files={"train.py": _SET_DEFAULTS_FILE.replace("if known.config:", "if True:")},
         command="python train.py",
         facts={"micro_batch": (UNKNOWN, "train.py:19")}),
    dict(title="parse_args(args=[...]) written in the script (a notebook's habit): the list is "
               "the command line argparse reads, not the launch's",
         files={"train.py": _PARSE_LIST.replace(
             "ARGV", 'args=["--model", "gpt2-medium", "--batch_size", "4"]')},
         command="python train.py --batch_size 2",
         facts={"model": ("gpt2-medium", "train.py:9", "literal"),
                "micro_batch": (4, "train.py:10", "literal")}),
    dict(title="parse_args([]): the launch's flags are not read, the defaults hold",
         files={"train.py": _PARSE_LIST.replace("ARGV", "[]")},
         command="python train.py --batch_size 2",
         facts={"micro_batch": (8, "train.py:10", "default")}),
    dict(title="parse_args(sys.argv[1:]) is the launch's command line",
         files={"train.py": _PARSE_LIST.replace("ARGV", "sys.argv[1:]")},
         command="python train.py --batch_size 2",
         facts={"micro_batch": (2, "train.py:10", "cli")}),
    dict(title="parse_args(args) in a helper called with None: the launch's command line",
         files={"train.py": _PARSE_LIST.replace(
             "args = parser.parse_args(ARGV)",
             "def parse(argv):\n    return parser.parse_args(argv)\n\n\nargs = parse(None)")},
         command="python train.py --batch_size 2",
         facts={"micro_batch": (2, "train.py:10", "cli")}),
    dict(title="parse_args(a list built at run time): every argument unknown, the default "
               "its alternative",
         files={"train.py": _PARSE_LIST.replace("ARGV", "load_argv()")},
         command="python train.py --batch_size 2",
         facts={"micro_batch": (UNKNOWN, "train.py:10")}),
    dict(title="a config module picked by name: importlib.import_module(args.config), its "
               "constants (a star import of its base included) by attribute and by name",
         files={"train.py": _IMPORTED_CONFIG.replace("LOAD", "importlib.import_module(args.config)"),
                **_CONFIG_MODULES},
         command="python train.py --config configs.large",
         facts={"model": ("gpt2-large", "configs/large.py:3", "literal"),
                "micro_batch": (4, "configs/large.py:2", "literal"),
                "seq_len": (1024, "configs/base.py:2", "literal")}),
    dict(title="a config file run for its globals: runpy.run_path(path)",
         files={"train.py": _IMPORTED_CONFIG.replace("LOAD", "runpy.run_path(args.config)")
                .replace("cfg.model_name", 'cfg["model_name"]').replace("cfg.batch_size",
                                                                       'cfg["batch_size"]'),
                **_CONFIG_MODULES},
         command="python train.py --config configs/large.py",
         facts={"model": ("gpt2-large", "configs/large.py:3", "literal"),
                "micro_batch": (4, "configs/large.py:2", "literal")}),
    dict(title="click: @click.command() with @click.option parameters from the command line "
               "(a dashed option, an explicit parameter name, a --flag/--no-flag pair)",
         files={"train.py": _CLICK},
         command="python train.py --model gpt2-medium --batch-size 2 --accum 4 --bf16",
         facts={"model": ("gpt2-medium", "train.py:8", "cli"),
                "micro_batch": (2, "train.py:9", "cli"),
                "grad_accum": (4, "train.py:10", "cli"),
                "param_dtype": ("bf16", "train.py:14", "literal")}),
    dict(title="click: the options' defaults when the line gives none",
         files={"train.py": _CLICK},
         command="python train.py",
         facts={"model": ("gpt2", "train.py:8", "default"),
                "micro_batch": (8, "train.py:9", "default"),
                "param_dtype": ("fp32", "train.py:14", "literal")}),
    dict(title="settings from the environment the launcher exports: os.getenv, "
               "os.environ.get, `\"X\" in os.environ`",
         files={"train.py": _ENV_SETTINGS,
                "run.sh": "export MODEL_NAME=gpt2-medium\nexport GRAD_ACC=8\n"
                          "BATCH_SIZE=16 torchrun --nproc_per_node 2 train.py\n"},
         command="bash run.sh",
         facts={"model": ("gpt2-medium", "train.py:7", "derived"),
                "micro_batch": (16, "train.py:8", "derived"),
                "grad_accum": (8, "train.py:9", "derived")}),
    dict(title="`\"X\" in os.environ` with no launcher: not known, never the else arm",
         files={"train.py": _ENV_SETTINGS},
         command="python train.py",
         facts={"grad_accum": (UNKNOWN, "train.py:9")}),
    dict(title="flags merged over a YAML document by a loop (`for k, v in vars(args).items(): "
               "if v is not None: cfg[k] = v`), run item by item",
         files={"train.py": _MERGED_FLAGS, "cfg.yaml": "batch_size: 6\nmodel: gpt2-medium\n"},
         command="python train.py --batch_size 3",
         facts={"model": ("gpt2-medium", "cfg.yaml:2", "config"),
                "micro_batch": (3, "train.py:10", "cli")}),
    dict(title="flags merged over a YAML document, none given: the document's values",
         files={"train.py": _MERGED_FLAGS, "cfg.yaml": "batch_size: 6\nmodel: gpt2-medium\n"},
         command="python train.py",
         facts={"micro_batch": (6, "cfg.yaml:1", "config")}),
    dict(title="a dict written with a key not known statically: any of its keys may be the "
               "one set, so each is unknown (never the value before the write)",
         files={"train.py": _MERGED_FLAGS.replace("for k, v in vars(args).items():",
                                                  "for k, v in overrides():"),
                "cfg.yaml": "batch_size: 6\nmodel: gpt2-medium\n"},
         command="python train.py",
         facts={"micro_batch": (UNKNOWN, "cfg.yaml:1")}),
    dict(title="an optimizer class picked by name: getattr(torch.optim, args.optim), said "
               "at the flag's default that picked it",
         files={"train.py": _GETATTR_OPTIM},
         command="python train.py",
         facts={"optimizer": ("adamw", "train.py:8", "default")}),
    dict(title="an optimizer class picked by name, the flag given",
         files={"train.py": _GETATTR_OPTIM},
         command="python train.py --optim SGD",
         facts={"optimizer": ("sgd", "<command>:1", "cli")}),
    dict(title="a model picked by a flag's default in an if / else: the arm that runs",
         files={"train.py": _ARCH_BRANCHES},
         command="python train.py",
         facts={"model": ("gpt2", "train.py:14"),
                "micro_batch": (32, "train.py:8", "default")}),
    dict(title="the other arm: a flag read only in the arm that does not run sizes "
               "nothing (the batch flag is not the job's)",
         files={"train.py": _ARCH_BRANCHES},
         command="python train.py --arch llama",
         facts={"model": ("meta-llama/Llama-2-7b-hf", "train.py:11"),
                "params": (6_738_415_616, "train.py:11", "catalog")}),
    dict(title="an arm picked by a launch word the shell reading cannot know (--arch \"$1\"): "
               "each arm's model is an alternative, the batch flag read in one arm unknown",
         files={"train.py": _ARCH_BRANCHES, "run.sh": "python train.py --arch \"$1\"\n"},
         facts={"model": (UNKNOWN, "train.py:14"),
                "params": (UNKNOWN, "train.py:14"),
                "micro_batch": (UNKNOWN, "train.py:8")}),
    dict(title="the model built by a helper that returns it, compiled, its optimizer made by "
               "its own method after forty calls of a logging helper of another module",
         files={"train.py": _HELPER_BUILT, "pkg/__init__.py": "", "pkg/model.py": _HELPER_MODEL,
                "pkg/util.py": "def log(msg):\n    print(msg)\n"},
         command="python train.py",
         facts={"model": ("Net", "train.py:8", "derived"),
                "params": (1_049_600, "train.py:8", "derived"),
                "optimizer": ("adamw", "pkg/model.py:11")}),
    dict(title="the repository's parser subclass reads the recipe in its own method "
               "(self.parse_yaml_file(os.path.abspath(sys.argv[1]))): the adapter its "
               "use_peft default turns off is not built",
         files={"train.py": _H4_TRAIN, "recipes/__init__.py": "",
                "recipes/configs.py": _H4_CONFIGS, "recipe.yaml": _H4_RECIPE},
         command="python train.py recipe.yaml",
         facts={"model": ("meta-llama/Llama-2-7b-hf", "recipe.yaml:1", "config"),
                "micro_batch": (2, "recipe.yaml:2", "config"),
                "trainable_params": (6_738_415_616, "train.py:16", "default")}),
    dict(title="an adapter built only where an undecided condition holds "
               "(if os.environ.get('USE_LORA')): the adapter and the job's size unknown",
         files={"train.py": "import os, torch\nfrom transformers import AutoModelForCausalLM\n"
                            "from peft import LoraConfig, get_peft_model\n"
                            "model = AutoModelForCausalLM.from_pretrained('gpt2')\n"
                            "if os.environ.get('USE_LORA'):\n"
                            "    model = get_peft_model(model, LoraConfig(r=8, "
                            "target_modules=['c_attn']))\n"
                            "opt = torch.optim.AdamW(model.parameters())\nopt.step()\n"},
         command="python train.py",
         facts={"lora": (UNKNOWN, "train.py:6"), "trainable_params": (UNKNOWN, "train.py:6")}),
    dict(title="a quantisation config built only under an undecided condition: the base's "
               "bits, the adapter and the weights' dtype unknown (never the loader's default)",
         files={"train.py": "import os, torch\n"
                            "from transformers import AutoModelForCausalLM, BitsAndBytesConfig\n"
                            "from peft import LoraConfig, get_peft_model\nq = None\n"
                            "if os.environ.get('QLORA'):\n"
                            "    q = BitsAndBytesConfig(load_in_4bit=True)\n"
                            "model = AutoModelForCausalLM.from_pretrained('gpt2', "
                            "quantization_config=q)\n"
                            "model = get_peft_model(model, LoraConfig(r=8, "
                            "target_modules=['c_attn']))\n"
                            "opt = torch.optim.AdamW(model.parameters())\nopt.step()\n"},
         command="python train.py",
         facts={"lora": (UNKNOWN, "train.py:8"), "param_dtype": (UNKNOWN, "train.py:6")}),
    dict(title="a two-line entry calling the training function of a package of the "
               "repository with a keyword (LLaVA's train_mem.py): followed, the keyword "
               "said where the entry writes it",
         files={"train_mem.py": "from pkg.train import train\n\nif __name__ == \"__main__\":\n"
                                "    train(attn_implementation=\"flash_attention_2\")\n",
                "pkg/__init__.py": "",
                "pkg/train.py": "import torch\nfrom transformers import AutoModelForCausalLM\n\n\n"
                                "def train(attn_implementation=None):\n"
                                "    model = AutoModelForCausalLM.from_pretrained(\n"
                                "        \"gpt2\", attn_implementation=attn_implementation)\n"
                                "    opt = torch.optim.AdamW(model.parameters())\n"
                                "    opt.step()\n"},
         command="python train_mem.py",
         facts={"attention": ("flash", "train_mem.py:4"), "model": ("gpt2", "pkg/train.py:7")}),
    dict(title="a config class whose __init__ sets its fields from **kwargs defaults and "
               "math (MiniMind's PretrainedConfig subclass): counted with those fields",
         files={"train.py": "import torch\nfrom pkg.model import TinyConfig, TinyLM\n\n"
                            "config = TinyConfig(hidden_size=256)\nmodel = TinyLM(config)\n"
                            "opt = torch.optim.AdamW(model.parameters())\nopt.step()\n",
                "pkg/__init__.py": "",
                "pkg/model.py": "import math\n\nimport torch.nn as nn\n"
                                "from transformers import PretrainedConfig\n\n\n"
                                "class TinyConfig(PretrainedConfig):\n"
                                "    def __init__(self, hidden_size=128, **kwargs):\n"
                                "        super().__init__(**kwargs)\n"
                                "        self.hidden_size = hidden_size\n"
                                "        self.vocab_size = kwargs.get(\"vocab_size\", 1000)\n"
                                "        self.intermediate_size = kwargs.get(\n"
                                "            \"intermediate_size\", math.ceil(hidden_size * math.pi / 64) * 64)\n"
                                "\n\nclass TinyLM(nn.Module):\n"
                                "    def __init__(self, config):\n"
                                "        super().__init__()\n"
                                "        self.embed = nn.Embedding(config.vocab_size, config.hidden_size)\n"
                                "        self.up = nn.Linear(config.hidden_size, config.intermediate_size, "
                                "bias=False)\n"},
         command="python train.py",
         # 1000 × 256 + 256 × 832 (ceil(256π / 64) × 64)
         facts={"params": (468_992, "train.py:5", "derived")}),
    dict(title="an adapter of the repository's own applied to the model (apply_lora(model), "
               "not peft): the adapter and the trainable count unknown, never 'no adapter, "
               "every parameter trains'",
         files={"train.py": "import torch\nfrom transformers import AutoModelForCausalLM\n"
                            "from lora_utils import apply_lora, save_lora\n\n"
                            "model = AutoModelForCausalLM.from_pretrained('gpt2')\n"
                            "apply_lora(model)\n"
                            "for name, p in model.named_parameters():\n"
                            "    p.requires_grad = 'lora' in name\n"
                            "opt = torch.optim.AdamW(p for p in model.parameters() "
                            "if p.requires_grad)\nopt.step()\nsave_lora(model, 'out.pth')\n",
                "lora_utils.py": "def apply_lora(model, rank=8):\n    pass\n\n\n"
                                 "def save_lora(model, path):\n    pass\n"},
         command="python train.py",
         facts={"lora": (UNKNOWN, "train.py:6"), "trainable_params": (UNKNOWN, "train.py:6")}),
    dict(title="parameters frozen by hand (a loop over the embeddings' parameters): not every "
               "parameter trains, the trainable count unknown",
         files={"train.py": "import torch\nfrom transformers import AutoModelForCausalLM\n"
                            "model = AutoModelForCausalLM.from_pretrained('gpt2')\n"
                            "for p in model.transformer.wte.parameters():\n"
                            "    p.requires_grad = False\n"
                            "opt = torch.optim.AdamW(p for p in model.parameters() "
                            "if p.requires_grad)\nopt.step()\n"},
         command="python train.py",
         facts={"trainable_params": (UNKNOWN, "train.py:5")}),
    dict(title="a frozen reference model beside the trained one: every parameter of the "
               "trained one trains",
         files={"train.py": "import torch\nfrom transformers import AutoModelForCausalLM\n"
                            "model = AutoModelForCausalLM.from_pretrained('gpt2')\n"
                            "ref_model = AutoModelForCausalLM.from_pretrained('gpt2')\n"
                            "ref_model.requires_grad_(False)\n"
                            "opt = torch.optim.AdamW(model.parameters())\nopt.step()\n"},
         command="python train.py",
         facts={"trainable_params": (124_439_808, "train.py:3", "default")}),
    dict(title="a config loaded by name and changed before the model is built from it "
               "(config.n_layer = 6): the shape the script sets, counted",
         files={"train.py": "import torch\nfrom transformers import AutoConfig, "
                            "AutoModelForCausalLM\n\nconfig = AutoConfig.from_pretrained("
                            "\"gpt2\")\nconfig.n_layer = 6\nconfig.n_embd = 512\n"
                            "config.n_head = 8\nmodel = AutoModelForCausalLM.from_config(config)\n"
                            "opt = torch.optim.AdamW(model.parameters())\nopt.step()\n"},
         command="python train.py",
         facts={"params": (45_171_200, "train.py:4", "derived"),
                "layers": (6, "train.py:4", "derived")}),
]
