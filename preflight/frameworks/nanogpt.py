"""nanoGPT's configurator: `python train.py config/train_gpt2.py --batch_size=8`.

The script's module-level settings (`batch_size`, `block_size`, `gradient_accumulation_steps`,
`n_layer`, `n_head`, `n_embd`, `dtype`, `compile`) are overridden by
`exec(open('configurator.py').read())`: a Python config file given as an argument is run
over the globals, then `--key=value` flags replace single values. `GPTConfig(...)` built
from those globals gives the model's shape.
"""

from __future__ import annotations

from preflight.frameworks import Example, Framework

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


class NanoGPT(Framework):
    name = "nanogpt"
    title = "nanoGPT configurator"
    reads = (
        "module-level settings of the script, a Python config file given as an argument and "
        "run by `exec(open('configurator.py').read())`, then `--key=value` overrides",
        "`GPTConfig(...)` / model classes built from those globals (shape from the "
        "repository's own model module)",
    )
    not_read = ("config files that compute values from the environment",)


ADAPTER = NanoGPT()
NanoGPT.EXAMPLES = [
    Example(title="a config file and a --key=value override over the script's globals",
            files={"train.py": _TRAIN, "config/small.py": _CONFIG, "configurator.py": "# applies overrides\n"},
            command="python train.py config/small.py --batch_size=4",
            facts={"micro_batch": (4, "train.py:11", "cli"),
                   "seq_len": (256, "config/small.py:2", "config"),
                   "grad_accum": (1, "config/small.py:3", "config"),
                   "optimizer": ("adamw", "train.py:14")}),
]
