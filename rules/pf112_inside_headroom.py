"""PF112: the predicted peak fits but sits inside the headroom margin (misconception 6)."""

from preflight.engine import Example, Rule, gib, pct
from preflight.rules._common import hf_script, line_of, micro_batch_that_fits

_TIGHT = hf_script("Qwen/Qwen2.5-1.5B", mb=4, seq=2048, attn="sdpa")
_ROOMY = hf_script("Qwen/Qwen2.5-1.5B", mb=2, accum=2, seq=2048, attn="sdpa")


class InsideHeadroom(Rule):
    """
    ## What it does
    Fires when the predicted peak fits the GPU but leaves less than the headroom margin
    free (default 20 %, `--headroom` / `[tool.preflight] headroom`).

    ## Why is this bad
    A finer ledger is not an exact one: it is a lower bound. The CUDA context (hundreds
    of MB to GBs), NCCL buffers, allocator caching and fragmentation come on top; in
    practice 15–30 % of the card goes to them. A job predicted at 90 % of an H100-80GB
    (71.6 GiB of 79.6 GiB) is likely to OOM after a few hundred steps when fragmentation
    builds up.

    ## Example
    ```python
    args = TrainingArguments(per_device_train_batch_size=4)   # peak at 90 % of capacity
    ```

    ## Use instead
    Keep the peak under 80 % of capacity: a smaller micro-batch with gradient
    accumulation, or activation checkpointing; set
    `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True` to reduce fragmentation.
    """

    code = "PF112"
    name = "inside-headroom"
    summary = "Predicted peak fits but leaves less than the headroom margin (default 20 %)"
    severity = "warning"
    misconception = 6
    case = None

    INVALID = [Example(files={"train.py": _TIGHT}, command="torchrun --nproc_per_node 8 train.py",
                       expect=[("PF112", "train.py", line_of(_TIGHT, "per_device_train_batch_size"))])]
    VALID = [Example(files={"train.py": _ROOMY}, command="torchrun --nproc_per_node 8 train.py")]

    def check(self, ctx):
        peak, cap, h = ctx.peak, ctx.capacity, ctx.headroom
        if peak is None or not cap or peak > cap or peak <= ctx.limit:
            return
        fit = micro_batch_that_fits(ctx)
        mb = ctx.v("micro_batch")
        if fit and mb and fit < mb:
            fix = (f"micro-batch {fit} (with gradient accumulation for the same global batch) "
                   f"brings the peak under {pct(1 - h)}; set "
                   "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True")
        else:
            fix = (f"free ≥ {gib(peak - ctx.limit)} (activation checkpointing, smaller "
                   "micro-batch) and set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True")
        yield self.diagnostic(
            f"predicted peak {gib(peak)} is {pct(peak / cap)} of {ctx.gpu}'s {gib(cap)}, inside "
            f"the {pct(h)} headroom: the ledger is a lower bound (CUDA context, NCCL buffers, "
            f"allocator fragmentation come on top)",
            ctx.src("micro_batch", "seq_len", "model"), fix=fix,
            data={"peak_bytes": peak, "capacity_bytes": cap, "headroom": h})
