"""What overflows: the model states (case A), the activations kept for backward (case B)
or the logits of the loss — the test of the diagnosis order (LEDGER.md §4) on the job's
own ledger. The planner prefers the knobs that shrink the part that overflows.

    states       the step without its activations — params, gradients, optimizer state,
                 master weights after the job's sharding, with the optimizer's temporaries,
                 the communication buffers and the process overhead, at the busiest phase
                 (the estimator's own phases) — exceeds the limit (capacity less
                 headroom) on its own: case A
    activations  the states fit; of the rest, the saved activations of the layers (and
                 the attention scores) are the larger part: case B
    logits       the states fit; the logits the loss keeps (and their gradient) are the
                 larger part: case B, but checkpointing keeps them, fewer tokens per
                 micro-batch (or vocab-parallel tensor parallelism) shrink them
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from preflight.physics.phases import step_phases

GIB = 2 ** 30

#: the knobs that remedy each part (LEDGER.md §4's prescriptions)
ADDRESSES: dict[str, tuple[str, ...]] = {
    "states": ("sharding", "offload", "optimizer", "more_gpus", "model_parallel"),
    "activations": ("checkpointing", "attention"),
    "logits": ("micro_batch", "model_parallel"),
}
#: the knobs that only spread a part over more micro-batches (the same tokens per step)
SPREADS: dict[str, tuple[str, ...]] = {"states": (), "activations": ("micro_batch",),
                                       "logits": ()}
CAUSE_TEXT = {"states": "the model states (case A)",
              "activations": "the saved activations (case B)",
              "logits": "the logits of the loss (case B)"}
#: ledger lifetimes of each part that is not a state
_ACTIVATIONS = ("saved", "recompute")
_LOGITS = ("logits",)
_LOGITS_TRANSIENT = ("head", "loss")        # alive one at a time, with the kept logits


@dataclass(frozen=True)
class Diagnosis:
    cause: Optional[str]            # states | activations | logits | None (fits, or not known)
    states: Optional[int] = None
    activations: Optional[int] = None
    logits: Optional[int] = None
    limit: Optional[float] = None
    why: str = ""
    micro_batch: Optional[int] = None   # the job's: fewer tokens per micro-batch shrink logits

    def remedy(self, knob: str, facts: Optional[dict] = None) -> int:
        """How turning `knob` (setting `facts`) treats what overflows: 2 remedies it (also
        when nothing is diagnosed), 1 spreads it over more micro-batches, 0 leaves it. A
        knob that lowers the micro-batch to keep the global batch (more GPUs, model
        parallelism) remedies the logits and spreads the activations."""
        if self.cause is None or knob in ADDRESSES[self.cause]:
            return 2
        mb = (facts or {}).get("micro_batch")
        lower = mb is not None and self.micro_batch is not None and mb < self.micro_batch
        if self.cause == "logits" and lower:
            return 2
        return 1 if knob in SPREADS[self.cause] or (self.cause == "activations" and lower) \
            else 0


def _sum(ledger: Any, lifetimes: tuple[str, ...]) -> Optional[int]:
    vals = [ln.bytes for ln in ledger.lines if ln.key == "activations"
            and ln.lifetime in lifetimes and not ln.margin]
    return None if any(v is None for v in vals) else sum(vals)


def states_side(ledger: Any, x: Any) -> Optional[int]:
    """The peak of the step with every activation line left out: the largest phase of
    the other tensor lines plus the process tier (CUDA context, NCCL; not the margin)."""
    rest = [ln for ln in ledger.lines if ln.key != "activations"]
    phases, _ = step_phases(x, rest)
    vals = [p.bytes for p in phases]
    extra = [ln.bytes for ln in rest if ln.lifetime == "process" and not ln.margin]
    if any(v is None for v in vals + extra):
        return None
    return max(vals, default=0) + sum(extra)


def diagnose(ledger: Any, x: Any = None) -> Diagnosis:
    """The part of `ledger` (a `preflight.physics` Ledger) that makes it miss its limit;
    `x`: the job's `Inputs` (the phases of its step; without them the model states alone
    are compared with the limit)."""
    limit = ledger.limit
    micro_batch = getattr(x, "samples_per_forward", None)   # as the job writes it
    states = ledger.states_bytes if x is None else states_side(ledger, x)
    acts = _sum(ledger, _ACTIVATIONS)
    kept = _sum(ledger, _LOGITS)
    trans = [ln.bytes for ln in ledger.lines if ln.key == "activations"
             and ln.lifetime in _LOGITS_TRANSIENT]
    logits = None if kept is None or any(v is None for v in trans) else \
        kept + max(trans, default=0)
    d = dict(states=states, activations=acts, logits=logits, limit=limit,
             micro_batch=micro_batch)
    if limit is None or states is None or ledger.verdict() == "fits":
        return Diagnosis(cause=None, **d)
    if states > limit:
        return Diagnosis(cause="states", **d, why=(
            f"the model states ({states / GIB:.1f} GiB with their gradients, optimizer "
            f"temporaries and buffers) exceed the {limit / GIB:.1f} GiB limit before any "
            "activation"))
    if acts is None and logits is None:
        return Diagnosis(cause=None, **d)
    if logits is None or (acts is not None and acts >= logits):
        return Diagnosis(cause="activations", **d, why=(
            f"the states fit ({states / GIB:.1f} GiB with their buffers); the saved activations "
            f"({acts / GIB:.1f} GiB) take the step past the {limit / GIB:.1f} GiB limit"))
    return Diagnosis(cause="logits", **d, why=(
        f"the states fit ({states / GIB:.1f} GiB with their buffers); the logits of the loss "
        f"({logits / GIB:.1f} GiB) are the largest of the rest and take the step past the "
        f"{limit / GIB:.1f} GiB limit"))
