"""nanoGPT's configurator: `python train.py config/train_gpt2.py --batch_size=8`.

The script's module-level settings (`batch_size`, `block_size`, `gradient_accumulation_steps`,
`n_layer`, `n_head`, `n_embd`, `dtype`, `compile`) are overridden by
`exec(open('configurator.py').read())`: a Python config file given as an argument is run
over the globals, then `--key=value` flags replace single values. `GPTConfig(...)` built
from those globals gives the model's shape.
"""

from __future__ import annotations

import ast
from typing import Any

from preflight.lang.python import Evaluator, V, literal_or_str, resolve_path
from preflight.frameworks import UNKNOWN, Example, Framework

_TRAIN = """\
import torch
from model import GPTConfig, GPT

batch_size = 12
block_size = 1024
gradient_accumulation_steps = 40
n_layer = 12
n_head = 12
n_embd = 768
dtype = 'bfloat16'
exec(open('configurator.py').read())
model = GPT(GPTConfig(n_layer=n_layer, n_head=n_head, n_embd=n_embd, block_size=block_size,
                      vocab_size=50304))
optimizer = torch.optim.AdamW(model.parameters(), lr=6e-4)
ctx = torch.amp.autocast(device_type='cuda', dtype=torch.bfloat16)
"""
_CONFIG = """\
batch_size = 8
block_size = 256
gradient_accumulation_steps = 1
"""

_MODEL = """\
from dataclasses import dataclass

import torch
import torch.nn as nn


@dataclass
class GPTConfig:
    block_size: int = 1024
    vocab_size: int = 50304
    n_layer: int = 12
    n_embd: int = 768


class GPT(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.wpe = nn.Embedding(config.block_size, config.n_embd)
        self.h = nn.ModuleList([nn.Linear(config.n_embd, config.n_embd)
                                for _ in range(config.n_layer)])
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)

    @classmethod
    def from_pretrained(cls, name):
        return cls(GPTConfig())

    def configure_optimizers(self, lr):
        return torch.optim.AdamW(self.parameters(), lr=lr)
"""
_DATA_TRAIN = """\
import os
import pickle

import torch
from model import GPTConfig, GPT

dataset = 'web'
batch_size = 12
block_size = 1024
n_layer = 12
n_embd = 768
init_from = 'scratch'
exec(open('configurator.py').read())
data_dir = os.path.join('data', dataset)
meta_path = os.path.join(data_dir, 'meta.pkl')
meta_vocab_size = None
if os.path.exists(meta_path):
    with open(meta_path, 'rb') as f:
        meta_vocab_size = pickle.load(f)['vocab_size']
model_args = dict(n_layer=n_layer, n_embd=n_embd, block_size=block_size)
if init_from == 'scratch':
    model_args['vocab_size'] = meta_vocab_size if meta_vocab_size is not None else 50304
    model = GPT(GPTConfig(**model_args))
else:
    model = GPT.from_pretrained(init_from)
optimizer = model.configure_optimizers(6e-4)
ctx = torch.amp.autocast(device_type='cuda', dtype=torch.bfloat16)
"""
_PREP_WEB = "# tokenises the corpus into train.bin and val.bin\n"
_PREP_CHARS = """\
import pickle

chars = sorted(set(open('input.txt').read()))
with open('meta.pkl', 'wb') as f:
    pickle.dump({'vocab_size': len(chars)}, f)
"""


class NanoGPT(Framework):
    name = "nanogpt"
    title = "nanoGPT configurator"
    reads = (
        "module-level settings of the script, a Python config file given as an argument and "
        "run by `exec(open('configurator.py').read())`, then `--key=value` overrides",
        "`GPTConfig(...)` / model classes built from those globals (shape from the "
        "repository's own model module)",
    )
    not_read = ("config files that compute values from the environment",
                "a vocabulary read from a data-preparation output (`meta.pkl` written by "
                "`prepare.py` at run time): unknown, with the script's fallback as the "
                "alternative",)


ADAPTER = NanoGPT()
NanoGPT.EXAMPLES = [
    Example(title="a config file and a --key=value override over the script's globals",
            files={"train.py": _TRAIN, "config/small.py": _CONFIG, "configurator.py": "# applies overrides\n"},
            command="python train.py config/small.py --batch_size=4",
            facts={"micro_batch": (4, "train.py:11", "cli"),
                   "seq_len": (256, "config/small.py:2", "config"),
                   "grad_accum": (1, "config/small.py:3", "config"),
                   "optimizer": ("adamw", "train.py:14")}),
    Example(title="vocabulary from meta.pkl when a data step writes it, else the script's "
                  "fallback; autocast over fp32 weights; the optimizer from the model's method",
            files={"train.py": _DATA_TRAIN, "model.py": _MODEL,
                   "configurator.py": "# applies overrides\n", "data/web/prepare.py": _PREP_WEB},
            command="python train.py",
            facts={"vocab": (50304, "train.py:23", "derived"),
                   "params": (85_140_480, "train.py:23", "derived"),
                   "param_dtype": ("fp32", "train.py:27", "default"),
                   "optimizer": ("adamw", "model.py:29")}),
    Example(title="a dataset whose prepare.py writes meta.pkl: its vocabulary is only known "
                  "once the data step has run",
            files={"train.py": _DATA_TRAIN, "model.py": _MODEL,
                   "configurator.py": "# applies overrides\n", "config/chars.py": "dataset = 'chars'\n",
                   "data/chars/prepare.py": _PREP_CHARS},
            command="python train.py config/chars.py",
            facts={"params": (UNKNOWN, "train.py:23")}),
    Example(title="a model built by a class method (GPT.from_pretrained): its methods are the "
                  "class's",
            files={"train.py": _DATA_TRAIN, "model.py": _MODEL,
                   "configurator.py": "# applies overrides\n", "data/web/prepare.py": _PREP_WEB},
            command="python train.py --init_from=gpt2",
            facts={"optimizer": ("adamw", "model.py:29")}),
]


# --------------------------------------------------------------------------- in a script
# `pats` is the script's fact collector, `ev` the evaluator (see `preflight.frameworks.Call`)


def configurator_exec(pats: Any, ev: Evaluator, arg: V, node: ast.Call) -> None:
    """nanoGPT: `exec(open('configurator.py').read())` — a Python config file given as a
    positional argument is applied to the globals, then `--key=value` overrides."""
    text = ev.src(node)
    if "open(" not in text:
        return
    if ev.frames:
        return
    for a in ev.argv:
        if not a.startswith("--"):
            if ev.read_file is None:
                continue
            found = resolve_path(ev.path, a)
            ev.references.append(a)
            if found is None:
                ev.notes.append((node.lineno, node.col_offset + 1,
                                 f"config file {a} named on the command line was not found"))
                continue
            ctext = ev.read_file(found)
            if ctext is None:
                continue
            try:
                ctree = ast.parse(ctext)
            except SyntaxError as e:
                ev.notes.append((node.lineno, node.col_offset + 1,
                                 f"config file {a}: syntax error at line {e.lineno}"))
                continue
            saved = ev.lines
            ev.lines = ctext.splitlines()
            before = dict(ev.globals)
            try:
                ev.exec_block(ctree.body)
            finally:
                ev.lines = saved
            for k, val in list(ev.globals.items()):
                if isinstance(val, V) and before.get(k) is not val:
                    val.origin = "config" if val.known else val.origin
                    val.path = found
                    val.reason = f"set in {a}"
        else:
            body = a[2:]
            if "=" not in body:
                continue
            k, raw = body.split("=", 1)
            old = ev.globals.get(k)
            if not isinstance(old, V):
                continue
            val = literal_or_str(raw)
            line, col = (old.line, old.col) if old.path is None else (node.lineno, node.col_offset + 1)
            ev.globals[k] = V(val, "cli", line, col, f"--{k}={raw} on the command line")
            ev.used_cli.add(k)
