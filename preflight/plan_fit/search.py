"""The search: turn knobs in the diagnosis order, re-estimate each changed plan with the
estimator, keep the plans that fit and break no scaling rule, rank them.

A node of the search is the job's plan with a sequence of changes applied, one knob at a
time, knobs in `KNOBS` order (a later knob sees the plan the earlier ones made). Every
node is sized by `preflight.physics.estimate` — the planner has no physics of its own.

Rank: fewer knobs first; then the diagnosis order of the knobs turned (case A's sharding
before case B's micro-batch before more hardware); then the predicted step time; then each
knob's own order of proposals. Tensor / pipeline parallelism is searched only when
no plan without it fits, another GPU only when nothing on the job's own GPUs fits.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from preflight.physics import Estimate, estimate, resolve_gpu
from preflight.physics.inputs import Inputs
from preflight.plan import Fact, Origin, TrainingPlan
from preflight.plan_fit.knobs import KNOB_CASE, KNOB_ORDER, KNOBS, Change

#: rules a proposal must not newly break (scaling: efficiency, TP across nodes, bubble)
GUARD_RULES = ("PF301", "PF302", "PF303")
#: knobs searched only when nothing else fits
LAST_RESORT = ("model_parallel", "other_gpu")
MAX_CHANGES = 3
#: re-estimates one search may make (a job nothing fixes stops here, and says so)
BUDGET = 600


def tier_peaks(ledger: Any) -> dict[str, Optional[int]]:
    """The predicted peak of each tier the ledger has (tensors ⊂ reserved ⊂ process) and
    `peak`, the one the verdict judges."""
    out = {t: getattr(ledger, f"{t}_peak") for t in ("tensors", "reserved", "process")
           if hasattr(ledger, f"{t}_peak")}
    return out | {"peak": ledger.peak}


@dataclass
class Sized:
    """A plan with its estimate and what a table shows of it."""

    plan: TrainingPlan
    estimate: Estimate
    verdict: str                        # fits | tight | does not fit | unknown
    peak: Optional[int]
    capacity: Optional[int]
    step_s: Optional[float]
    efficiency: Optional[float]
    global_batch: Optional[int]
    guards: tuple[str, ...] = ()        # GUARD_RULES codes the plan triggers

    @property
    def fraction(self) -> Optional[float]:
        return None if self.peak is None or not self.capacity else self.peak / self.capacity

    def tiers(self) -> dict[str, Optional[int]]:
        """Bytes per ledger key and the peak of every tier (tensors, reserved, process)."""
        return self.estimate.ledger.per_gpu_bytes() | tier_peaks(self.estimate.ledger)


@dataclass
class Alternative:
    changes: list[Change]
    sized: Sized
    reason: str = ""

    @property
    def facts(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for c in self.changes:
            out.update(c.as_dict())
        return out

    @property
    def label(self) -> str:
        return " + ".join(c.label for c in self.changes)

    @property
    def knobs(self) -> list[str]:
        return [c.knob for c in self.changes]

    def rank_key(self) -> tuple:
        """Fewer changes; then the knobs turned, in the diagnosis order; then the faster
        step; then each knob's own order of proposals (ZeRO-1 before ZeRO-3)."""
        return (len(self.changes), [KNOB_ORDER[c.knob] for c in self.changes],
                self.sized.step_s if self.sized.step_s is not None else float("inf"),
                [c.order for c in self.changes])

    def to_json(self) -> dict[str, Any]:
        s = self.sized
        return {"change": self.label, "facts": self.facts, "knobs": self.knobs,
                "cases": sorted({KNOB_CASE[k] for k in self.knobs}),
                "peak_bytes": s.peak, "capacity_bytes": s.capacity,
                "fraction": None if s.fraction is None else round(s.fraction, 4),
                "verdict": s.verdict, "step_s": s.step_s, "efficiency": s.efficiency,
                "global_batch": s.global_batch, "per_gpu_bytes": s.tiers(),
                "reason": self.reason}


@dataclass
class Limit:
    """'largest micro-batch that fits' and friends: the value or why there is none."""

    name: str
    value: Optional[int] = None
    peak: Optional[int] = None
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"value": self.value, "peak_bytes": self.peak, "note": self.note}


@dataclass
class FitPlan:
    baseline: Sized
    alternatives: list[Alternative] = field(default_factory=list)
    limits: list[Limit] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    gpu: Optional[str] = None

    @property
    def first(self) -> Optional[Alternative]:
        return self.alternatives[0] if self.alternatives else None

    @property
    def needed(self) -> bool:
        """Whether the job as written misses its target (fit, no scaling finding)."""
        return self.baseline.verdict != "fits" or bool(self.baseline.guards)

    def to_json(self) -> dict[str, Any]:
        b = self.baseline
        return {"gpu": self.gpu,
                "baseline": {"verdict": b.verdict, "peak_bytes": b.peak,
                             "capacity_bytes": b.capacity, "step_s": b.step_s,
                             "efficiency": b.efficiency, "global_batch": b.global_batch,
                             "findings": list(b.guards)},
                "alternatives": [a.to_json() for a in self.alternatives],
                "limits": {lim.name: lim.to_json() for lim in self.limits},
                "notes": self.notes}


# --------------------------------------------------------------------------- sizing

def changed_plan(plan: TrainingPlan, facts: dict[str, Any]) -> TrainingPlan:
    """The plan with `facts` changed (the estimator's what-if plan; the writer reads the
    sources of the facts from the job's own plan)."""
    return plan.with_values("proposed by the planner", **facts)


def global_batch(plan: TrainingPlan, gpus_per_node_hint: int = 8) -> Optional[int]:
    """micro_batch × grad_accum × data-parallel degree (None when the micro-batch is unknown)."""
    x = Inputs.from_plan(plan, gpus_per_node_hint=gpus_per_node_hint)
    if not x.micro_batch:
        return None
    return x.micro_batch * x.grad_accum * x.dp


def size(plan: TrainingPlan, gpu: Any, headroom: float, *, mfu: Optional[float] = None,
         gpu_name: Optional[str] = None, basis: Optional[Estimate] = None) -> Sized:
    """Re-estimate a plan and run the guard rules on it: `basis.replan(plan)` (the
    estimator's what-if on the basis's GPU and headroom) when a basis is given, else
    `estimate(plan, gpu, headroom)`."""
    est = basis.replan(plan) if basis is not None else None
    if est is None:
        est = estimate(plan, gpu, headroom, mfu=mfu)
    led = est.ledger
    guards: tuple[str, ...] = ()
    # a plan that does not fit is never proposed: its scaling findings are not needed,
    # except the job's own (the baseline, sized without a basis)
    if led.capacity_bytes and (basis is None or led.verdict() == "fits"):
        from preflight import engine

        ctx = engine.RuleContext(plan=plan, estimate=est, gpu_name=gpu_name or led.gpu,
                                 headroom=headroom)
        guards = tuple(sorted({d.code for d in engine.run_rules(ctx, select=GUARD_RULES)}))
    verdict = led.verdict()
    gb = (global_batch(plan, getattr(gpu, "gpus_per_node", 8) or 8)
          if basis is None or verdict == "fits" else None)      # only a fit is compared
    return Sized(plan=plan, estimate=est, verdict=verdict, peak=led.peak,
                 capacity=led.capacity_bytes, step_s=est.walls.step_s,
                 efficiency=est.walls.efficiency, global_batch=gb, guards=guards)


# --------------------------------------------------------------------------- search

def framework(plan: TrainingPlan) -> str:
    """'deepspeed' when the job configures DeepSpeed ZeRO, else 'fsdp' (the sharding a
    job without either can switch on in its own training arguments)."""
    f = plan.facts.get("zero_stage")
    if f is not None and f.known and f.origin not in (Origin.ASSUMED, Origin.DEFAULT):
        return "deepspeed"
    return "fsdp"


def plan_fit(plan: TrainingPlan, gpu: Any = None, headroom: float = 0.2, *,
             mfu: Optional[float] = None, limit: int = 5,
             max_changes: int = MAX_CHANGES, explore: bool = True,
             with_limits: bool = True) -> FitPlan:
    """Ranked alternatives that fit `gpu` with `headroom` kept, keep the global batch and
    break none of GUARD_RULES the job does not already break. Pure: reads nothing but
    its arguments.

    explore: also search one change past the first fit (alternatives to compare; a report
    that only needs the first one leaves it off). with_limits: the largest micro-batch,
    fewest GPUs and longest sequence that fit (a few dozen more re-estimates)."""
    hw, _ = resolve_gpu(plan, gpu)
    name = getattr(hw, "name", None)
    base = size(plan, hw, headroom, mfu=mfu, gpu_name=name)
    out = FitPlan(baseline=base, gpu=name)
    if hw is None:
        out.notes.append("no GPU given: capacity unknown, nothing to fit against")
        return out
    if base.verdict == "unknown" or base.peak is None:
        missing = ", ".join(base.estimate.ledger.unknown) or "some inputs"
        out.notes.append(f"not sized (missing: {missing}): no alternative can be judged")
        return out
    from preflight.plan_fit.limits import limits
    if not out.needed:
        out.notes.append(f"fits {name} as written with {headroom:.0%} headroom kept")
        if with_limits:
            out.limits = limits(plan, hw, headroom, base, mfu=mfu)
        return out
    uses = framework(plan)
    target_guards = set(base.guards)

    def accept(s: Sized) -> bool:
        if s.verdict != "fits" or s.global_batch != base.global_batch:
            return False
        new = set(s.guards)
        if not new <= target_guards:
            return False
        # a job that already fits is searched for its scaling findings: fewer of them
        return base.verdict != "fits" or len(new) < len(target_guards)

    found: list[Alternative] = []
    seen: set[tuple] = set()
    spent = [0]

    def expand(node_plan: TrainingPlan, chain: list[Change], start: int,
               allowed: tuple[str, ...]) -> list[tuple[TrainingPlan, list[Change], int]]:
        """Children of a node: one more change from a knob after the last one turned."""
        x = Inputs.from_plan(node_plan, gpus_per_node_hint=getattr(hw, "gpus_per_node", 8) or 8)
        nxt: list[tuple[TrainingPlan, list[Change], int]] = []
        for k in range(start, len(KNOBS)):
            knob, _, propose = KNOBS[k]
            if knob not in allowed:
                continue
            cur_hw = hw if "gpu" not in _facts(chain) else resolve_gpu(node_plan)[0]
            props = list(propose(x, uses, cur_hw) if knob == "other_gpu" else propose(x, uses))
            first_fit_taken = False
            for ch in props:
                key = tuple(sorted((_facts(chain) | ch.as_dict()).items(), key=str))
                if key in seen:
                    continue
                seen.add(key)
                if spent[0] >= BUDGET:
                    return nxt
                spent[0] += 1
                p2 = changed_plan(node_plan, ch.as_dict())
                other = knob == "other_gpu" or "gpu" in _facts(chain)
                s = size(p2, resolve_gpu(p2)[0] if other else cur_hw, headroom, mfu=mfu,
                         gpu_name=name, basis=None if other else base.estimate)
                alt = Alternative(changes=chain + [ch], sized=s)
                if accept(s):
                    if knob == "micro_batch" and first_fit_taken:
                        continue        # the largest micro-batch that fits is the proposal
                    found.append(alt)
                    first_fit_taken = first_fit_taken or knob == "micro_batch"
                else:
                    nxt.append((p2, chain + [ch], k + 1))
        return nxt

    ordinary = tuple(k for k, _, _ in KNOBS if k not in LAST_RESORT
                     and (k != "fewer_gpus" or (base.verdict == "fits" and target_guards)))
    for allowed in (ordinary, ordinary + ("model_parallel",),
                    ordinary + ("model_parallel", "other_gpu")):
        frontier = [(plan, [], 0)]
        depth_found = None
        for depth in range(max_changes):
            nxt = []
            for p, chain, start in frontier:
                nxt += expand(p, chain, start, allowed)
            frontier = nxt
            if found and depth_found is None:
                depth_found = depth
            if depth_found is not None and (depth > depth_found or not explore):
                break           # one level past the first fit: alternatives to compare
        if found:
            break
        seen.clear()
        if allowed == ordinary:
            out.notes.append("no change of sharding, optimizer, batch or checkpointing fits: "
                             "model parallelism searched")
        elif "other_gpu" not in allowed:
            out.notes.append(f"nothing on {name} fits: other GPUs of the catalogue searched")
    found.sort(key=Alternative.rank_key)
    out.alternatives = _dedupe(found)[:limit]
    for i, a in enumerate(out.alternatives):
        a.reason = _reason(a, i, out.alternatives)
    if not out.alternatives and out.needed:
        out.notes.append("no alternative within "
                         f"{max_changes} changes fits and keeps the global batch"
                         + (f" (search stopped after {BUDGET} re-estimates)"
                            if spent[0] >= BUDGET else ""))
    if with_limits:
        out.limits = limits(plan, hw, headroom, base, mfu=mfu)
    return out


def _facts(chain: list[Change]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for c in chain:
        out.update(c.as_dict())
    return out


def _dedupe(alts: list[Alternative]) -> list[Alternative]:
    """A plan reached by two routes is kept once (its best-ranked route); a plan that
    merely adds a change to one already found is not an alternative of its own."""
    out: list[Alternative] = []
    keys: list[dict[str, Any]] = []
    for a in alts:
        f = a.facts
        if any(all(f.get(k) == v for k, v in prev.items()) for prev in keys):
            continue
        keys.append(f)
        out.append(a)
    return out


def _reason(a: Alternative, i: int, alts: list[Alternative]) -> str:
    cases = {"A": "case A (model states)", "B": "case B (activations)",
             "C": "case C (split the model)", "scaling": "scaling",
             "hardware": "more hardware"}
    what = ", ".join(dict.fromkeys(cases[KNOB_CASE[k]] for k in a.knobs))
    n = len(a.changes)
    head = f"{n} change{'s' if n > 1 else ''}, {what}"
    if i == 0:
        return f"first: {head}; the fewest changes, earliest in the diagnosis order"
    prev = alts[i - 1]
    if len(prev.changes) < n:
        return f"{head}; more changes than the ones above"
    if prev.rank_key()[1] != a.rank_key()[1]:
        return f"{head}; later in the diagnosis order than the ones above"
    return f"{head}; slower step than the ones above"
