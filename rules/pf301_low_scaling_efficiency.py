"""PF301: predicted scaling efficiency below 0.5 (misconception 5)."""

import math

from preflight.engine import Example, Rule, count
from preflight.rules._common import hf_script, line_of

_TINY = hf_script("gpt2", mb=1, seq=512, attn="sdpa")
_OK = hf_script("gpt2", mb=16, accum=4, seq=1024, attn="sdpa")

THRESHOLD = 0.5


class LowScalingEfficiency(Rule):
    """
    ## What it does
    Fires when the predicted scaling efficiency E (step time on one GPU over step time on
    k GPUs, per GPU, at equal global batch) is below 0.5, from the configuration alone:
    compute per GPU (≈ 6·N·tokens) against the gradient communication of the chosen
    sharding.

    ## Why is this bad
    "50 % efficiency means bad hardware" is misconception 5: it is almost always the
    configuration — a per-GPU batch too small to hide the all-reduce, too many GPUs for
    the model size, no overlap, the wrong topology. t1 = 2.0 s and t8 = 3.2 s at equal
    global batch is S = 0.625 and E = 0.078: seven of eight GPUs are wasted.

    ## Example
    ```bash
    torchrun --nnodes 8 --nproc_per_node 8 train.py   # 125M params, micro-batch 1
    ```

    ## Use instead
    Give each GPU more work per synchronisation: a larger micro-batch or gradient
    accumulation (DDP all-reduces once per optimizer step), or fewer GPUs for a small
    model.
    """

    code = "PF301"
    name = "low-scaling-efficiency"
    summary = "Predicted scaling efficiency below 0.5 — a configuration problem, not hardware"
    severity = "warning"
    misconception = 5
    case = None

    INVALID = [Example(files={"train.py": _TINY},
                       command="torchrun --nnodes 8 --nproc_per_node 8 train.py",
                       expect=[("PF301", "train.py", line_of(_TINY, "per_device_train_batch_size"))])]
    VALID = [Example(files={"train.py": _OK}, command="torchrun --nproc_per_node 8 train.py")]

    def check(self, ctx):
        w = ctx.walls
        eff = getattr(w, "efficiency", None)
        if eff is None or eff >= THRESHOLD or ctx.world <= 1:
            return
        mb, seq, ga = ctx.v("micro_batch"), ctx.v("seq_len"), ctx.v("grad_accum") or 1
        comp, comm = getattr(w, "compute_s", None), getattr(w, "comm_s", None)
        times = (f": communication {_s(comm)} against compute {_s(comp)} per step"
                 if comp is not None and comm is not None else "")
        tokens = f", {mb * seq * ga:,} tokens per GPU per step" if mb and seq else ""
        small_batch = bool(mb) and (mb * (seq or 1) * ga) < 8192
        anchor = (ctx.src("micro_batch", "grad_accum") if small_batch
                  else ctx.src("world_size", "gpus_per_node", "nodes", "micro_batch"))
        if comp and comm:
            f = math.ceil(max(1.0, 4 * comm / comp))
            fix = (f"give each GPU ≈ {f}× the tokens per optimizer step (micro-batch or "
                   f"gradient accumulation) or use fewer GPUs")
        else:
            fix = "raise the per-GPU batch (micro-batch or gradient accumulation) or use fewer GPUs"
        yield self.diagnostic(
            f"predicted scaling efficiency {eff:.2f} on {ctx.world} GPUs{times} "
            f"({count(ctx.n)} params{tokens}) — a configuration problem, not the hardware",
            anchor, fix=fix, data={"efficiency": eff, "world_size": ctx.world})


def _s(t: float) -> str:
    return f"{t * 1000:.1f} ms" if t < 0.1 else f"{t:.2f} s"
