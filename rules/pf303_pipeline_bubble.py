"""PF303: too few micro-batches for the pipeline depth."""

from preflight.engine import Example, Rule, pct
from preflight.rules._common import line_of
from preflight.rules.pf108_model_parallel_for_states import titan

_FEW = titan(tp=1, pp=4, dp_shard=8, batch=8, micro=2).replace('flavor = "8B"', 'flavor = "70B"')
_MANY = titan(tp=1, pp=4, dp_shard=8, batch=16, micro=1).replace('flavor = "8B"', 'flavor = "70B"')
_LAUNCH = "torchrun --nnodes 4 --nproc_per_node 8 -m torchtitan.train --job.config_file pp.toml"


class PipelineBubble(Rule):
    """
    ## What it does
    Fires when a pipeline-parallel job feeds fewer than 4·P micro-batches per step through
    its P stages.

    ## Why is this bad
    With m micro-batches and P stages, each GPU idles for the pipeline bubble, a fraction
    (P − 1) / (m + P − 1) of the step (GPipe / 1F1B schedules). At P = 4 and m = 4 that is
    3/7 = 43 % of the step doing nothing; at m = 16 it is 16 %.

    ## Example
    ```toml
    [parallelism]
    pipeline_parallel_degree = 4
    pipeline_parallel_microbatch_size = 2   # local batch 8 → 4 micro-batches
    ```

    ## Use instead
    At least 4·P micro-batches per step: a smaller micro-batch, more gradient
    accumulation, or fewer stages (an interleaved schedule also shrinks the bubble).
    """

    code = "PF303"
    name = "pipeline-bubble"
    summary = "Pipeline micro-batches < 4 × stages: the bubble idles a large share of each step"
    severity = "warning"
    misconception = 5
    case = None

    INVALID = [Example(files={"pp.toml": _FEW}, command=_LAUNCH,
                       expect=[("PF303", "pp.toml", line_of(_FEW, "pipeline_parallel_microbatch_size"))])]
    VALID = [Example(files={"pp.toml": _MANY}, command=_LAUNCH)]

    def check(self, ctx):
        pp = ctx.v("pp") or 1
        if pp <= 1:
            return
        m, anchor = _titan_microbatches(ctx)
        if m is None:
            m, anchor = ctx.v("grad_accum"), ctx.src("grad_accum", "pp")
        if not m or m >= 4 * pp:
            return
        bubble = (pp - 1) / (m + pp - 1)
        yield self.diagnostic(
            f"{m} micro-batches through {pp} pipeline stages: the bubble idles "
            f"{pct(bubble)} of every step ((P−1)/(m+P−1) = {pp - 1}/{m + pp - 1})",
            anchor,
            fix=f"feed ≥ {4 * pp} micro-batches per step (smaller micro-batch, more "
                f"accumulation) or use fewer stages",
            data={"pp": pp, "micro_batches": m, "bubble": bubble})


def _titan_microbatches(ctx):
    """torchtitan: micro-batches = local batch / pipeline_parallel_microbatch_size, as the
    TOML extractor read it."""
    if ctx.job is None:
        return None, None
    for ext in ctx.job.extractions:
        m = ext.extras.get("pipeline_microbatches")
        if isinstance(m, dict):
            return m["value"], m["source"]
    return None, None
