"""The search: turn knobs in the diagnosis order, re-estimate each changed plan with the
estimator, keep the plans that fit and break no scaling rule, rank them.

A node of the search is the job's plan with a sequence of changes applied, one knob at a
time, knobs in `KNOBS` order (a later knob sees the plan the earlier ones made). Every
node is sized by `preflight.physics.estimate` — the planner has no physics of its own.

Rank, for a job that does not fit: first the changes of the job's own settings, then more
GPUs, model parallelism, another GPU (`HARDWARE_TIER`); then the alternatives that shrink
what overflows (`diagnose`: the model states, the saved activations or the logits) before
those that do not; then fewer changes; then the faster step; then the diagnosis order of
the knobs and each knob's own order of proposals. A job that fits but breaks a scaling
rule has nothing that overflows: fewer changes, the diagnosis order, the faster step.
Tensor / pipeline parallelism is searched only when no plan without it fits, another GPU
only when nothing on the job's own GPUs fits.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from preflight.physics import Estimate, estimate, replan, resolve_gpu
from preflight.physics.inputs import Inputs
from preflight.plan import Origin, TrainingPlan
from preflight.plan_fit.diagnose import ADDRESSES, CAUSE_TEXT, Diagnosis, diagnose
from preflight.plan_fit.knobs import KNOB_CASE, KNOB_ORDER, KNOBS, Change, changed_plan
from preflight.plan_fit.limits import Limit, limits

#: rules a proposal must not newly break (scaling: efficiency, TP across nodes, bubble)
GUARD_RULES = ("PF301", "PF302", "PF303")
#: knobs searched only when nothing else fits
LAST_RESORT = ("model_parallel", "other_gpu")
MAX_CHANGES = 3
#: re-estimates one search may make (a job nothing fixes stops here, and says so)
BUDGET = 600
#: the cost of a knob beyond an edit of the job's settings: more GPUs, a model rewrite,
#: another GPU (0: an edit of the job's own settings)
HARDWARE_TIER = {"more_gpus": 1, "model_parallel": 2, "other_gpu": 3}


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
    diagnosis: Diagnosis = field(default_factory=lambda: Diagnosis(cause=None))

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

    @property
    def tier(self) -> int:
        return max((HARDWARE_TIER.get(k, 0) for k in self.knobs), default=0)

    @property
    def remedy(self) -> int:
        """2: a knob turned remedies what overflows (or nothing overflows); 1: one only
        spreads it over more micro-batches; 0: none touches it (`Diagnosis.remedy`)."""
        return max((self.diagnosis.remedy(c.knob, c.as_dict()) for c in self.changes),
                   default=0)

    @property
    def addresses(self) -> bool:
        return self.remedy == 2

    def rank_key(self) -> tuple:
        """Edits of the job's settings before more hardware; then the alternatives that
        shrink what overflows; then fewer changes; then the faster step (for a job that
        fits: the diagnosis order first); then each knob's own order (ZeRO-1 before 3)."""
        step = self.sized.step_s if self.sized.step_s is not None else float("inf")
        order = [KNOB_ORDER[c.knob] for c in self.changes]
        if self.diagnosis.cause is None:
            return (len(self.changes), order, step, [c.order for c in self.changes])
        return (self.tier, 2 - self.remedy, len(self.changes), step, order,
                [c.order for c in self.changes])

    def to_json(self) -> dict[str, Any]:
        s = self.sized
        return {"change": self.label, "facts": self.facts, "knobs": self.knobs,
                "cases": sorted({KNOB_CASE[k] for k in self.knobs}),
                "peak_bytes": s.peak, "capacity_bytes": s.capacity,
                "fraction": None if s.fraction is None else round(s.fraction, 4),
                "verdict": s.verdict, "step_s": s.step_s, "efficiency": s.efficiency,
                "global_batch": s.global_batch, "per_gpu_bytes": s.tiers(),
                "addresses": self.diagnosis.cause if self.addresses and
                self.diagnosis.cause else None,
                "reason": self.reason}


@dataclass
class FitPlan:
    baseline: Sized
    alternatives: list[Alternative] = field(default_factory=list)
    limits: list[Limit] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    gpu: Optional[str] = None
    diagnosis: Diagnosis = field(default_factory=lambda: Diagnosis(cause=None))

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
                             "findings": list(b.guards),
                             "overflows": self.diagnosis.cause,
                             "diagnosis": self.diagnosis.why or None},
                "alternatives": [a.to_json() for a in self.alternatives],
                "limits": {lim.name: lim.to_json() for lim in self.limits},
                "notes": self.notes}


# --------------------------------------------------------------------------- sizing

def global_batch(plan: TrainingPlan, gpus_per_node_hint: int = 8) -> Optional[int]:
    """micro_batch × grad_accum × data-parallel degree (None when the micro-batch is unknown)."""
    x = Inputs.from_plan(plan, gpus_per_node_hint=gpus_per_node_hint)
    if not x.micro_batch:
        return None
    return x.samples_per_forward * x.grad_accum * x.dp


def size(plan: TrainingPlan, gpu: Any, headroom: float, *, mfu: Optional[float] = None,
         gpu_name: Optional[str] = None, basis: Optional[Estimate] = None,
         known: Optional[Estimate] = None) -> Sized:
    """Re-estimate a plan and run the guard rules on it: `replan(basis, plan)` (the
    estimator's what-if on the basis's GPU and headroom) when a basis is given, else
    `estimate(plan, gpu, headroom)`; `known`: the plan's estimate, already made."""
    est = known if known is not None else replan(basis, plan) if basis is not None else None
    if est is None:
        est = estimate(plan, gpu, headroom, mfu=mfu)
    led = est.ledger
    guards: tuple[str, ...] = ()
    # a plan that does not fit is never proposed: its scaling findings are not needed,
    # except the job's own (the baseline, sized without a basis)
    if led.capacity_bytes and (basis is None or led.verdict() == "fits"):
        # here: `preflight estimate` loads the planner, never the rules; and not lazy(): the
        # pipeline's own import of the engine would then run only after the walk's fork
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
             mfu: Optional[float] = None, limit: int = 5, explore: bool = True,
             with_limits: bool = True, basis: Optional[Estimate] = None) -> FitPlan:
    """Ranked alternatives that fit `gpu` with `headroom` kept, keep the global batch and
    break none of GUARD_RULES the job does not already break, within MAX_CHANGES changes.
    Pure: reads nothing but its arguments.

    explore: also search one change past the first fit (alternatives to compare; a report
    that only needs the first one leaves it off). with_limits: the largest micro-batch,
    fewest GPUs and longest sequence that fit (a few dozen more re-estimates). basis: the
    job's estimate on `gpu`, already made (its what-ifs keep its assumptions)."""
    hw, _ = resolve_gpu(plan, gpu)
    name = getattr(hw, "name", None)
    base = size(plan, hw, headroom, mfu=mfu, gpu_name=name, known=basis)
    out = FitPlan(baseline=base, gpu=name)
    if hw is None:
        out.notes.append("no GPU given: capacity unknown, nothing to fit against")
        return out
    if base.verdict == "unknown" or base.peak is None:
        missing = ", ".join(base.estimate.ledger.unknown) or "some inputs"
        out.notes.append(f"not sized (missing: {missing}): no alternative can be judged")
        return out
    if not out.needed:
        out.notes.append(f"fits {name} as written with {headroom:.0%} headroom kept")
        if with_limits:
            out.limits = limits(plan, hw, headroom, base, mfu=mfu)
        return out
    uses = framework(plan)
    target_guards = set(base.guards)
    x0 = Inputs.from_plan(plan, gpus_per_node_hint=getattr(hw, "gpus_per_node", 8) or 8)
    diag = out.diagnosis = diagnose(base.estimate.ledger, x0)
    # whether a remedy of what overflows can be proposed at all (checkpointing already
    # full and attention already memory-efficient leave none for the activations)
    remedies = diag.cause is None or any(
        next(iter(propose(x0, uses)), None) is not None for k, _, propose in KNOBS
        if k in ADDRESSES[diag.cause] and k not in LAST_RESORT)
    if not remedies:
        out.notes.append(f"nothing in the job's settings remedies {CAUSE_TEXT[diag.cause]} "
                         f"further ({', '.join(ADDRESSES[diag.cause])} already as far as "
                         "they go)")

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
                alt = Alternative(changes=chain + [ch], sized=s, diagnosis=diag)
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
        for depth in range(MAX_CHANGES):
            nxt = []
            for p, chain, start in frontier:
                nxt += expand(p, chain, start, allowed)
            frontier = nxt
            # the first depth with a fit that remedies what overflows (any fit where no
            # remedy can be proposed, or at the last depth)
            if depth_found is None and found and (
                    any(a.addresses for a in found) or not remedies
                    or depth == MAX_CHANGES - 1):
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
                         f"{MAX_CHANGES} changes fits and keeps the global batch"
                         + (f" (search stopped after {BUDGET} re-estimates)"
                            if spent[0] >= BUDGET else ""))
    if with_limits:
        out.limits = limits(plan, hw, headroom, base, mfu=mfu)
    return out


def suggest(est: Estimate, limit: int = 5) -> list[Alternative]:
    """What would fit, best first: the planner's ranked alternatives (`Alternative`:
    `label`, `facts`, `sized` with the predicted peak, step time and efficiency, `reason`),
    each keeping the global batch and the GPU and headroom `est` was made for. Empty when
    the job fits as it is (and breaks no scaling rule), when nothing within three changes
    fits, or when no GPU was given. Raises ValueError for an estimate not made by
    `estimate()`. `preflight.estimate(...).suggest()` calls it."""
    b = est.basis
    if b is None:
        raise ValueError("suggest(): this estimate was not made by preflight.estimate()")
    return plan_fit(b["plan"], b["gpu"], b["headroom"], mfu=b["mfu"], limit=limit,
                    with_limits=False, basis=est).alternatives


def _facts(chain: list[Change]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for c in chain:
        out.update(c.as_dict())
    return out


def _dedupe(alts: list[Alternative]) -> list[Alternative]:
    """A plan reached by two routes is kept once (its best-ranked route); a plan that
    merely adds a change to another one found is not an alternative of its own (the
    added change is not needed), wherever the two rank."""
    out: list[Alternative] = []
    keys: list[dict[str, Any]] = []
    facts = [a.facts for a in alts]
    for a, f in zip(alts, facts):
        if f in keys or any(len(o) < len(f) and all(f.get(k) == v for k, v in o.items())
                            for o in facts):
            continue
        keys.append(f)
        out.append(a)
    return out


def _reason(a: Alternative, i: int, alts: list[Alternative]) -> str:
    """Why `a` ranks where it does: what it does about the diagnosed overflow, and the
    first rank criterion that puts it after the one above."""
    cases = {"A": "case A (model states)", "B": "case B (activations)",
             "C": "case C (split the model)", "scaling": "scaling",
             "hardware": "more hardware"}
    n = len(a.changes)
    head = f"{n} change{'s' if n > 1 else ''}"
    d = a.diagnosis
    if d.cause is not None:
        what = {2: f"remedies {CAUSE_TEXT[d.cause]}",
                1: f"spreads {CAUSE_TEXT[d.cause]} over more micro-batches",
                0: f"leaves {CAUSE_TEXT[d.cause]} as they are"}[a.remedy]
    else:
        what = ", ".join(dict.fromkeys(cases[KNOB_CASE[k]] for k in a.knobs))
    if a.tier:
        what += "; needs " + {1: "more GPUs", 2: "the model split (tensor / pipeline parallel)",
                              3: "another GPU"}[a.tier]
    if i == 0:
        return f"first: {what}, {head}" + (f" — {d.why}" if d.why else "")
    prev = alts[i - 1]
    names = (("tier", "remedy", "changes", "step", "order", "own")
             if d.cause is not None else ("changes", "order", "step", "own"))
    first = next((n for n, x, y in zip(names, prev.rank_key(), a.rank_key()) if x != y), "own")
    why = {"tier": "more hardware than the ones above",
           "remedy": "treats what overflows less directly than the ones above",
           "changes": "more changes than the ones above",
           "step": "slower step than the ones above",
           "order": "later in the diagnosis order than the ones above",
           "own": "as fast as the one above, later among the knob's own proposals"}[first]
    return f"{what}, {head}; {why}"
