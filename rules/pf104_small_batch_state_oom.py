"""PF104: the batch was cut to fight a state OOM (misconception 2)."""

from preflight.engine import Example, Rule, gib
from preflight.rules._common import (ds_config, hf_cli_launch, hf_cli_script, hf_script, line_of,
                                     state_fix)

_BS1 = hf_script("meta-llama/Llama-2-7b-hf", mb=1, accum=16)
_OK = hf_cli_script("meta-llama/Llama-2-7b-hf")
_OK_LAUNCH = hf_cli_launch("deepspeed --num_gpus 8", "--bf16 True --deepspeed ds_zero3.json")


class SmallBatchStateOOM(Rule):
    """
    ## What it does
    Fires when model states exceed the GPU while the micro-batch is already 1 or the
    batch has been split with gradient accumulation — the change people make after an
    OOM, believing a smaller batch shrinks the optimizer.

    ## Why is this bad
    A smaller batch shrinks activations only. Optimizer state (8 B/param for Adam),
    gradients and master weights depend on the parameter count, not the batch: a 7B
    model's 112 GB of states are 112 GB at batch 1 and at batch 64. Cutting the batch
    only makes each step slower and noisier.

    ## Example
    ```python
    args = TrainingArguments(per_device_train_batch_size=1, gradient_accumulation_steps=16)
    ```

    ## Use instead
    Restore a useful micro-batch and shrink the states: ZeRO-3 / FSDP sharding, then an
    8-bit optimizer (docs/ledger.md, case A).
    """

    code = "PF104"
    name = "small-batch-state-oom"
    summary = "Micro-batch cut to 1 (or split by accumulation) while the OOM is model states"
    severity = "warning"
    misconception = 2
    case = "A"

    INVALID = [Example(files={"train.py": _BS1}, command="torchrun --nproc_per_node 8 train.py",
                       expect=[("PF104", "train.py", line_of(_BS1, "per_device_train_batch_size"))])]
    VALID = [Example(files={"train.py": _OK, "launch.sh": _OK_LAUNCH, "ds_zero3.json": ds_config(3)},
                     paths=["launch.sh"])]

    def check(self, ctx):
        st, cap = ctx.states, ctx.capacity
        if st is None or not cap or st <= cap:
            return
        mb, ga = ctx.v("micro_batch"), ctx.v("grad_accum")
        if mb == 1:
            what, anchor = "the micro-batch is already 1", ctx.src("micro_batch")
        elif ga and ga > 1:
            what, anchor = (f"the batch is split into {ga} accumulation steps of {mb or '?'}",
                            ctx.src("grad_accum"))
        else:
            return
        act = ctx.activations_at_peak
        acts = f": {gib(act)} at the peak ({ctx.peak_phase or 'step'})" if act else ""
        yield self.diagnostic(
            f"{what}, but the OOM is model states: {gib(st)} per GPU that no batch size "
            f"changes (batch size moves activations only{acts}); {ctx.capacity_text()}",
            anchor, fix=state_fix(ctx), data={"states_bytes": st, "micro_batch": mb})
