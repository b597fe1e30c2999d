"""How far one setting can go with everything else as written: the largest micro-batch,
the fewest GPUs and the longest sequence that fit. Each probe is a re-estimate of the
changed plan; the searches are bisections over the estimator's verdict (memory grows
monotonically with micro-batch and sequence, and falls with more sharding GPUs)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional

from preflight.physics import estimate, replan
from preflight.physics.inputs import Inputs
from preflight.plan import TrainingPlan
from preflight.plan_fit.knobs import changed_plan

#: longest sequence probed: 1M tokens
MAX_SEQ = 1 << 20
MAX_MICRO_BATCH = 4096
SEQ_STEP = 256


@dataclass
class Limit:
    """'largest micro-batch that fits' and friends: the value or why there is none."""

    name: str
    value: Optional[int] = None
    peak: Optional[int] = None
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"value": self.value, "peak_bytes": self.peak, "note": self.note}


def _fits(plan: TrainingPlan, gpu: Any, headroom: float, mfu: Optional[float],
          basis: Any = None) -> tuple[bool, Optional[int]]:
    est = replan(basis, plan) if basis is not None else None
    led = (est if est is not None else estimate(plan, gpu, headroom, mfu=mfu)).ledger
    return led.verdict() == "fits", led.peak


def _largest(lo: int, hi: int, ok: Callable[[int], tuple[bool, Optional[int]]]
             ) -> tuple[Optional[int], Optional[int]]:
    """Largest n in [lo, hi] with ok(n) true, assuming ok is true up to a point."""
    good, peak = ok(lo)
    if not good:
        return None, None
    best, best_peak = lo, peak
    # grow geometrically, then bisect
    n = lo
    while n < hi:
        m = min(hi, n * 2)
        g, p = ok(m)
        if not g:
            hi = m - 1
            break
        best, best_peak, n = m, p, m
    lo2 = best
    while lo2 < hi:
        mid = (lo2 + hi + 1) // 2
        g, p = ok(mid)
        if g:
            lo2, best, best_peak = mid, mid, p
        else:
            hi = mid - 1
    return best, best_peak


def limits(plan: TrainingPlan, gpu: Any, headroom: float, base: Any, *,
           mfu: Optional[float] = None) -> list:

    out: list[Limit] = []
    x = Inputs.from_plan(plan, gpus_per_node_hint=getattr(gpu, "gpus_per_node", 8) or 8)

    def probe(facts: dict[str, Any]) -> tuple[bool, Optional[int]]:
        return _fits(changed_plan(plan, facts), gpu, headroom, mfu, base.estimate)

    # largest micro-batch, accumulation as written
    if x.micro_batch:
        v, p = _largest(1, MAX_MICRO_BATCH, lambda n: probe({"micro_batch": n}))
        out.append(Limit("largest_micro_batch", v, p,
                         "gradient accumulation as written" if v else
                         "micro-batch 1 does not fit"))
    else:
        out.append(Limit("largest_micro_batch", note="micro-batch unknown"))

    # longest sequence (in steps of 256 tokens)
    if x.seq_len:
        v, p = _largest(1, MAX_SEQ // SEQ_STEP, lambda n: probe({"seq_len": n * SEQ_STEP}))
        out.append(Limit("longest_seq_len", None if v is None else v * SEQ_STEP, p,
                         "in steps of 256 tokens, micro-batch as written" if v else
                         f"{SEQ_STEP} tokens do not fit"))
    else:
        out.append(Limit("longest_seq_len", note="sequence length unknown"))

    # fewest GPUs: same micro-batch, accumulation rescaled for the same global batch
    gb = base.global_batch
    if not (gb and x.micro_batch):
        out.append(Limit("fewest_gpus", note="global batch unknown"))
        return out
    gpn = max(1, x.gpus_per_node)
    sizes = sorted({n for n in [1, 2, 4] + [gpn * k for k in range(1, 129)]
                    if n % x.mp == 0})
    for ws in sizes:
        dp = ws // x.mp
        if gb % (x.samples_per_forward * dp):
            continue
        facts = {"world_size": ws, "nodes": max(1, -(-ws // gpn)),
                 "gpus_per_node": min(ws, gpn), "grad_accum": gb // (x.samples_per_forward * dp)}
        ok, p = probe(facts)
        if ok:
            out.append(Limit("fewest_gpus", ws, p,
                             f"micro-batch {x.samples_per_forward} × {facts['grad_accum']} accumulation "
                             f"keeps the global batch of {gb}; sharding as written"))
            break
    else:
        out.append(Limit("fewest_gpus", note="no GPU count up to "
                         f"{sizes[-1] if sizes else 0} fits with the sharding as written"))
    return out
