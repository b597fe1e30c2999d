"""Fixes for a checked report: each job that does not fit (or breaks a scaling rule) gets
the planner's alternatives (`JobResult.fit`) and the first one as file edits
(`JobResult.fix`), with the findings that edit resolves — re-checked by running every
rule on the changed plan."""

from __future__ import annotations

from typing import Any, Optional

from preflight import engine
from preflight.fix import first_fix
from preflight.plan_fit import changed_plan, plan_fit
from preflight.plan_fit.search import GUARD_RULES

# The planner (preflight.plan_fit) is imported in the functions, only when asked: lazy()
# would not do for a package that imports its submodules, since one imported by its full
# name while the package is pending (pipeline imports plan_fit.search) would run twice.


def wants_fit(jr: Any) -> bool:
    est = jr.estimate
    if est is None or not est.ledger.lines or not est.ledger.capacity_bytes:
        return False
    if est.ledger.verdict() != "fits":
        return True
    return any(d.code in GUARD_RULES for d in jr.diagnostics)


def attach_fix(jr: Any, headroom: Optional[float] = None, *, config: Any = None,
               full: bool = False) -> None:
    """Give checked job `jr` the planner's alternatives (`jr.fit`) and the first as file
    edits (`jr.fix`) when it does not fit or breaks a scaling rule. full: every
    alternative and the limits (for --suggest); otherwise the search stops at the first
    depth that fits, which is all a finding's fix needs."""
    if not wants_fit(jr):
        return
    led = jr.estimate.ledger
    hr = led.headroom if headroom is None else headroom
    hw = jr.hardware if jr.hardware is not None else jr.gpu
    jr.fit = plan_fit(jr.job.plan, hw, hr, explore=full, with_limits=full)
    fx = first_fix(jr.job, jr.fit)
    if fx is None:
        return
    alt = next(a for a in jr.fit.alternatives if a.label == fx.label)
    ctx = engine.RuleContext(plan=changed_plan(jr.job.plan, fx.facts), estimate=alt.sized.estimate,
                             job=jr.job, config=config, gpu_name=jr.gpu, headroom=hr)
    after = {d.code for d in engine.run_rules(ctx)}
    fx.resolves = sorted({d.code for d in jr.diagnostics} - after)
    jr.fix = fx


def fix_for(report: Any, diag: Any) -> Optional[Any]:
    """The job fix that resolves finding `diag` (None when none does)."""
    for jr in report.jobs:
        fx = getattr(jr, "fix", None)
        if fx is not None and diag.code in fx.resolves and any(d is diag or (
                d.code == diag.code and d.path == diag.path and d.line == diag.line)
                for d in jr.diagnostics):
            return fx
    return None
