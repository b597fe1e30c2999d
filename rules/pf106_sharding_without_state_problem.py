"""PF106: ZeRO-3 / FSDP full shard where the states fit without it or the OOM is
activations (misconception 4)."""

from preflight.engine import Example, Rule, gib
from preflight.rules._common import (activation_fix, ds_config, hf_cli_launch,
                                     hf_cli_script, line_of)

_ACT = hf_cli_script("facebook/opt-1.3b", seq=16384, attn="sdpa")
_SMALL = hf_cli_script("facebook/opt-1.3b", seq=2048, attn="sdpa")
_7B = hf_cli_script("meta-llama/Llama-2-7b-hf", attn="sdpa")
_LAUNCH = hf_cli_launch("deepspeed --num_gpus 8", "--bf16 True --deepspeed ds_zero3.json")
_DS3 = ds_config(3)


class ShardingWithoutStateProblem(Rule):
    """
    ## What it does
    Fires when the job shards its parameters (ZeRO-3, FSDP `FULL_SHARD` / `HYBRID_SHARD`)
    although (a) the predicted peak exceeds the GPU and the excess is activations, which
    sharding does not touch, or (b) the unsharded model states fit with the activations
    inside the headroom, so the sharding buys nothing.

    ## Why is this bad
    "OOM means the model is too big and must be split" is misconception 4. Activations
    grow with micro-batch × sequence × layers and are not sharded by ZeRO: a 1.3B model
    has 20.8 GB of states (2.6 GB per GPU under ZeRO-3 over 8), but at micro-batch 4 ×
    16,384 tokens its activations are ~110 GB per GPU. Sharding also costs: ZeRO-3
    gathers every layer's parameters in forward and backward, ≈ 1.5× the communication
    of DDP.

    ## Example
    ```json
    {"zero_optimization": {"stage": 3}}   // 1.3B model, micro-batch 4 × 16k tokens
    ```

    ## Use instead
    Treat the activations (case B): gradient accumulation with a smaller micro-batch,
    activation checkpointing, sequence parallelism for long sequences. Drop to DDP or
    ZeRO-1/2 when the states fit.
    """

    code = "PF106"
    name = "sharding-without-state-problem"
    summary = "Parameters sharded (ZeRO-3 / FSDP full shard) where the states fit or the OOM is activations"
    severity = "warning"
    misconception = 4
    case = None

    INVALID = [
        Example(files={"train.py": _ACT, "launch.sh": _LAUNCH, "ds_zero3.json": _DS3},
                paths=["launch.sh"], expect=[("PF106", "ds_zero3.json", line_of(_DS3, '"stage"'))]),
        Example(files={"train.py": _SMALL, "launch.sh": _LAUNCH, "ds_zero3.json": _DS3},
                paths=["launch.sh"], expect=[("PF106", "ds_zero3.json", line_of(_DS3, '"stage"'))]),
    ]
    VALID = [Example(files={"train.py": _7B, "launch.sh": _LAUNCH, "ds_zero3.json": _DS3},
                     paths=["launch.sh"])]

    def check(self, ctx):
        if ctx.stage < 3 or ctx.dp <= 1 or not ctx.has_ledger or not ctx.capacity:
            return
        # the activations alive at the peak's phase, not every activation line added up
        cap, st, act, peak = ctx.capacity, ctx.states, ctx.activations_at_peak, ctx.peak
        anchor = ctx.src("zero_stage", "fsdp")
        label = ctx.sharding_label()
        if peak is not None and act is not None and peak > cap:
            if act >= st and st <= cap:
                yield self.diagnostic(
                    f"{label} shards the model states to {gib(st)} per GPU, but the OOM is "
                    f"activations: {gib(act)} per GPU of a {gib(peak)} peak "
                    f"({ctx.peak_phase or 'step'}), which no sharding of the model reduces; "
                    f"{ctx.capacity_text()}",
                    anchor, fix=_case_b_fix(ctx),
                    data={"states_bytes": st, "activations_bytes": act, "peak_bytes": peak,
                          "peak_phase": ctx.peak_phase, "case": "B"})
            return
        ddp = ctx.what_if("plain DDP", zero_stage=0, fsdp=None)
        if ddp is None or peak is None:
            return
        full, ddp_peak = ddp.ledger.states_bytes, ddp.ledger.peak
        if full is not None and ddp_peak is not None and ddp.ledger.fits():
            yield self.diagnostic(
                f"{label} shards states that fit unsharded: plain DDP would hold {gib(full)} "
                f"of states and peak at {gib(ddp_peak)} per GPU, inside {ctx.gpu}'s "
                f"{gib(ctx.limit)} budget; ZeRO-3 adds ≈ 1.5× the "
                f"communication of DDP for nothing",
                anchor, fix="use DDP (or ZeRO-1/2 if you need the optimizer memory)",
                data={"ddp_peak_bytes": ddp_peak, "capacity_bytes": cap})


def _case_b_fix(ctx) -> str:
    return f"treat the activations, not the model states: {activation_fix(ctx)}"
