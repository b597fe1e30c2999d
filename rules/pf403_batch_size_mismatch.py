"""PF403: DeepSpeed's train_batch_size disagrees with its factors."""

from preflight.engine import Example, Rule
from preflight.rules._common import hf_cli_script

_SCRIPT = hf_cli_script("gpt2")
_DS = ('{\n  "train_micro_batch_size_per_gpu": "auto",\n  "train_batch_size": 64,\n'
       '  "gradient_accumulation_steps": "auto",\n  "zero_optimization": {"stage": 2}\n}\n')
_LAUNCH = ("#!/bin/bash\ndeepspeed --num_gpus 8 train.py --deepspeed ds.json --output_dir out "
           "--per_device_train_batch_size 4 --bf16 True\n")


class BatchSizeMismatch(Rule):
    """
    ## What it does
    Checks DeepSpeed's `train_batch_size` against micro-batch × gradient accumulation ×
    data-parallel size, where all of them are known.

    ## Why is this bad
    DeepSpeed asserts `train_batch_size == micro × accumulation × world / (tp × pp)` at
    start-up and refuses to run otherwise (64 ≠ 4 × 1 × 8) — after the job has waited in
    the queue.

    ## Example
    `"train_batch_size": 64` with `--per_device_train_batch_size 4` on 8 GPUs and no
    accumulation (4 × 1 × 8 = 32).

    ## Use instead
    `"train_batch_size": "auto"` (the Trainer fills it) or the product, 32.
    """

    code = "PF403"
    name = "batch-size-mismatch"
    summary = "train_batch_size ≠ micro-batch × accumulation × data-parallel size"
    severity = "error"

    INVALID = [Example(files={"train.py": _SCRIPT, "ds.json": _DS, "run.sh": _LAUNCH},
                       expect=[("PF403", "ds.json", 3)])]
    VALID = [Example(files={"train.py": _SCRIPT, "ds.json": _DS.replace("64", "32"),
                            "run.sh": _LAUNCH})]

    def check(self, ctx):
        ws, mb, ga = ctx.v("world_size"), ctx.v("micro_batch"), ctx.v("grad_accum")
        tp, pp = ctx.v("tp", 1) or 1, ctx.v("pp", 1) or 1
        if ctx.job is None or not all(isinstance(x, int) for x in (ws, mb, ga, tp, pp)):
            return
        dp = ws // (tp * pp) if tp * pp and ws % (tp * pp) == 0 else None
        for e in ctx.job.extractions:
            tb = e.extras.get("train_batch_size")
            if not isinstance(tb, dict) or not dp or tb["value"] == mb * ga * dp:
                continue
            rel = list(dict.fromkeys(s for s in (ctx.plan.source("micro_batch"),
                                                 ctx.plan.source("grad_accum"),
                                                 ctx.plan.source("world_size")) if s))
            yield self.diagnostic(
                f"train_batch_size {tb['value']} ≠ micro_batch {mb} × grad_accum {ga} × "
                f"data-parallel {dp} = {mb * ga * dp}; DeepSpeed refuses to start",
                tb["source"], related=rel,
                fix=f'set "train_batch_size" to {mb * ga * dp} or to "auto"',
                data={"train_batch_size": tb["value"], "product": mb * ga * dp})
