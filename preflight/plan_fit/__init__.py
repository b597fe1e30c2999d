"""What would fit: a plan in, ranked alternatives out.

    from preflight.plan_fit import plan_fit, suggest
    fit = plan_fit(job.plan, "H100-80GB", headroom=0.2)
    fit.first.label      # 'FSDP full_shard over 8 GPUs'
    fit.first.facts      # {'fsdp': 'full_shard'}
    suggest(est)         # an estimate's alternatives (`preflight.estimate(...).suggest()`)

Modules:
    knobs    the changes each knob proposes, in the diagnosis order (no physics), and the
             changed plan a proposal is estimated on
    search   re-estimates changed plans with `preflight.physics.estimate`, keeps those that fit
             and keep the global batch, ranks them
    limits   largest micro-batch, fewest GPUs, longest sequence that fit
"""

from preflight.plan_fit.knobs import KNOBS, Change, changed_plan
from preflight.plan_fit.limits import Limit
from preflight.plan_fit.search import Alternative, FitPlan, Sized, global_batch, plan_fit, suggest

__all__ = ["plan_fit", "FitPlan", "Alternative", "Limit", "Sized", "Change", "KNOBS",
           "changed_plan", "global_batch", "suggest"]
