"""PF402: one setting given two ways."""

from preflight.engine import Example, Rule
from preflight.plan import Origin
from preflight.rules._common import hf_cli_script

#: facts whose explicit sources must agree
CHECKED = ("mixed_precision", "micro_batch", "grad_accum", "zero_stage", "seq_len", "world_size",
           "nodes", "fsdp", "offload", "tp", "pp")
#: the sources that are the user's own explicit choice
EXPLICIT = (Origin.CLI, Origin.CONFIG)

_SCRIPT = hf_cli_script("gpt2")
_DS = ('{\n  "train_micro_batch_size_per_gpu": 8,\n  "gradient_accumulation_steps": "auto",\n'
       '  "zero_optimization": {"stage": 2}\n}\n')
_LAUNCH = ("#!/bin/bash\ndeepspeed --num_gpus 8 train.py --deepspeed ds.json --output_dir out "
           "--per_device_train_batch_size 4 --bf16 True\n")


def _fmt(value) -> str:
    return "not used" if value is None else str(value)


class ConflictingSettings(Rule):
    """
    ## What it does
    Reports a setting (micro-batch, accumulation, precision, ZeRO stage, world size,
    parallel sizes…) given explicitly in two places with different values — a launcher
    flag and a config file, two config files — pointing at both. The command line wins,
    as the frameworks decide; the finding says which value preflight used.

    ## Why is this bad
    Which value a framework takes depends on its precedence rules, and the DeepSpeed
    integration of the Trainer refuses to start when its arguments and the JSON disagree.
    A reader of either file is misled about the job: a micro-batch of 8 in the JSON and 4
    on the command line is a 2× difference in activation memory.

    ## Example
    ```bash
    deepspeed train.py --deepspeed ds.json --per_device_train_batch_size 4
    ```
    with `"train_micro_batch_size_per_gpu": 8` in `ds.json`.

    ## Use instead
    Set it in one place: `"train_micro_batch_size_per_gpu": "auto"` lets the Trainer's
    argument decide.
    """

    code = "PF402"
    name = "conflicting-settings"
    summary = "A setting is given two ways with different values"
    severity = "warning"

    INVALID = [Example(files={"train.py": _SCRIPT, "ds.json": _DS, "run.sh": _LAUNCH},
                       expect=[("PF402", "run.sh", 2)])]
    VALID = [Example(files={"train.py": _SCRIPT, "ds.json": _DS.replace("8,", '"auto",'),
                            "run.sh": _LAUNCH})]

    def check(self, ctx):
        for name in CHECKED:
            cands = [f for f in ctx.plan.candidates.get(name, [])
                     if f.known and f.origin in EXPLICIT and f.source]
            if len(cands) < 2:
                continue
            win = cands[0]
            for other in cands[1:]:
                if other.value == win.value or other.source.path == win.source.path:
                    continue
                yield self.diagnostic(
                    f"{name} is set two ways: {_fmt(win.value)} at {win.source} "
                    f"({win.reason or win.origin.value}) and {_fmt(other.value)} at "
                    f"{other.source} ({other.reason or other.origin.value}); "
                    f"{_fmt(win.value)} wins ({win.origin.value} over {other.origin.value})",
                    win.source, related=[other.source], fix=f"set {name} in one place",
                    data={"fact": name, "values": [win.value, other.value]})
                break
