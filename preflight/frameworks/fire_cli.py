"""Function-parameter CLIs: `fire.Fire(main)` / `fire.Fire(Class)`, `typer`, `jsonargparse`
(`CLI(main)`), and `python -m package.module` entries.

The command line's flags are the function's keyword arguments (`--micro_batch_size 4`
binds `micro_batch_size=4`); the parameters' defaults hold where no flag is given; the
module of `python -m pkg.mod` is found in the repository (`pkg/mod.py` or
`pkg/mod/__main__.py`).
"""

from __future__ import annotations

from preflight.frameworks import Example, Framework

_FIRE = """\
import fire
import torch
from transformers import AutoModelForCausalLM, Trainer, TrainingArguments


def train(base_model: str = "huggyllama/llama-7b", micro_batch_size: int = 4,
          gradient_accumulation_steps: int = 8, cutoff_len: int = 256):
    model = AutoModelForCausalLM.from_pretrained(base_model, torch_dtype=torch.float16)
    args = TrainingArguments(output_dir="out", per_device_train_batch_size=micro_batch_size,
                             gradient_accumulation_steps=gradient_accumulation_steps, fp16=True)
    Trainer(model=model, args=args).train()


if __name__ == "__main__":
    fire.Fire(train)
"""
_MODULE = """\
import torch
from transformers import AutoModelForCausalLM


def main():
    model = AutoModelForCausalLM.from_pretrained("EleutherAI/pythia-160m")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)


if __name__ == "__main__":
    main()
"""


class FireCli(Framework):
    name = "fire_cli"
    title = "fire / typer / jsonargparse CLIs"
    reads = (
        "`fire.Fire(main)`: flags bound to `main`'s parameters (defaults where absent)",
        "`python -m package.module` / `torchrun -m` / `accelerate launch -m` entries found in "
        "the repository",
    )
    not_read = (
        "`fire.Fire(Class)` with methods as subcommands: only the constructor's parameters",
        "`typer` / `jsonargparse` parameters: the defaults are read, flags are not bound yet",
    )


ADAPTER = FireCli()
FireCli.EXAMPLES = [
    Example(title="fire.Fire(train): flags are the function's keyword arguments",
            files={"finetune.py": _FIRE},
            command="torchrun --nproc_per_node 2 finetune.py --micro_batch_size 2 --base_model gpt2-xl",
            facts={"micro_batch": (2, "finetune.py:6", "cli"), "model": ("gpt2-xl", "finetune.py:6", "cli"),
                   "grad_accum": (8, "finetune.py:7", "default"),
                   "mixed_precision": ("fp16", "finetune.py:10")}),
    Example(title="python -m package.module",
            files={"pkg/__init__.py": "", "pkg/train.py": _MODULE},
            command="python -m pkg.train",
            facts={"model": ("EleutherAI/pythia-160m", "pkg/train.py:6"),
                   "optimizer": ("sgd_momentum", "pkg/train.py:7")}),
]
