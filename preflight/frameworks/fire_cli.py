"""Function-parameter CLIs: `fire.Fire(main)` / `fire.Fire(Class)`, `typer`, `jsonargparse`
(`CLI(main)`), and `python -m package.module` entries.

The command line's flags are the function's keyword arguments (`--micro_batch_size 4`
binds `micro_batch_size=4`); the parameters' defaults hold where no flag is given; the
module of `python -m pkg.mod` is found in the repository (`pkg/mod.py` or
`pkg/mod/__main__.py`).
"""

from __future__ import annotations

from typing import Any

from preflight.lang.python import Dotted, Evaluator, FuncVal, V, literal_or_str
from preflight.frameworks import NO_MATCH, Call, Example, Framework, answers

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
        "`fire.Fire(main)`, `typer.run(main)`, `jsonargparse.CLI(main)` / `auto_cli(main)`: "
        "flags (`--micro_batch_size` or `--micro-batch-size`) bound to `main`'s parameters, "
        "their defaults where absent",
        "`python -m package.module` / `torchrun -m` / `accelerate launch -m` entries found in "
        "the repository",
        "a thin entry script (`from pkg.finetuning import main; fire.Fire(main)`) followed "
        "into the module that defines `main`; `main(**kwargs)` gets every flag, and config "
        "dataclasses it updates from them (`update_config(cfg, **kwargs)`, "
        "`--fsdp_config.pure_bf16`) hold the flags' values",
    )
    not_read = (
        "`fire.Fire(Class)` with methods as subcommands: only the constructor's parameters",
        "`typer.Typer()` apps with `@app.command()` subcommands, jsonargparse class CLIs",
    )


ADAPTER = FireCli()
_TYPER = """\
import torch
import typer
from transformers import AutoModelForCausalLM


def main(model_name: str = "gpt2", batch_size: int = 4):
    model = AutoModelForCausalLM.from_pretrained(model_name)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    loader = torch.utils.data.DataLoader(range(100), batch_size=batch_size)


if __name__ == "__main__":
    typer.run(main)
"""

FireCli.EXAMPLES = [
    Example(title="typer.run(main) with dashed flags",
            files={"train.py": _TYPER},
            command="python train.py --batch-size 16 --model-name gpt2-medium",
            facts={"micro_batch": (16, "train.py:6", "cli"), "model": ("gpt2-medium", "train.py:6", "cli"),
                   "optimizer": ("adamw", "train.py:8")}),
    Example(title="jsonargparse CLI(main): defaults where no flag is given",
            files={"train.py": _TYPER.replace("import typer", "from jsonargparse import CLI")
                   .replace("typer.run(main)", "CLI(main)")},
            command="python train.py --model_name gpt2-large",
            facts={"micro_batch": (4, "train.py:6", "default"), "model": ("gpt2-large", "train.py:6", "cli")}),
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


# --------------------------------------------------------------------------- in a script
# `pats` is the script's fact collector, `ev` the evaluator (see `preflight.frameworks.Call`)


@answers("Fire", "run", "CLI", "auto_cli")
def cli_call(pats: Any, ev: Evaluator, c: Call) -> Any:
    """`fire.Fire(fn)`, `typer.run(fn)`, jsonargparse's `CLI(fn)`: `fn` called with the
    command line's flags as its keyword arguments."""
    name, qual, top, args, line, col = c.name, c.qual, c.top, c.args, c.line, c.col
    is_cli = ((name == "Fire" and top == "fire") or (name == "run" and top == "typer") or
              (name in ("CLI", "auto_cli") and (top == "jsonargparse" or qual.startswith("?"))))
    if is_cli and args and args[0].known and isinstance(args[0].value, Dotted):
        # `from pkg.finetuning import main; fire.Fire(main)`: a thin entry script whose
        # function lives in another module of the repository
        ev.follow(args[0].value.name, [], ev.flags_as_kwargs(line, col), line, col)
        ev.used_cli.update(ev.cli_opts)
        return V(None)
    if is_cli and args and args[0].known and isinstance(args[0].value, FuncVal) and \
            args[0].value.node.args.kwarg is not None:
        # `def main(**kwargs)`: every flag is a keyword argument
        ev.call_function(args[0].value, [], ev.flags_as_kwargs(line, col), line, col)
        ev.used_cli.update(ev.cli_opts)
        return V(None)
    if is_cli and args and args[0].known and isinstance(args[0].value, FuncVal):
        # python-fire, typer.run, jsonargparse.CLI: the command line becomes the
        # function's keyword arguments
        fn = args[0].value
        cli: dict[str, V] = {}
        params = [a.arg for a in fn.node.args.args + fn.node.args.kwonlyargs]
        for p_ in params:
            hit = ev.cli_lookup([p_])
            if hit is not None:
                raw = hit[1]
                val = True if raw is None else literal_or_str(raw)
                d = fn.node.args
                cli[p_] = V(val, "cli", fn.node.lineno, fn.node.col_offset + 1,
                            f"--{hit[0]} {raw if raw is not None else ''} on the command line".replace(" on", " on", 1))
                ev.used_cli.add(hit[0])
        ev.call_function(fn, [], cli, line, col)
        return V(None)
    return NO_MATCH
