"""The estimator's output types: a ledger of labelled lines and the scaling walls.

Every line carries the formula with its numbers substituted, so a reader sees the
arithmetic next to the number it produced.

The lines are not all alive at once. Each line says when it lives (`lifetime`), and the
ledger adds them up per phase of a training step (`phases`): the peak is the largest
phase, not the sum of the lines. Three tiers stack on it: *tensors* (what
`torch.cuda.max_memory_allocated` sees: the largest phase), *reserved* (plus the caching
allocator's rounding and segment slack) and *process* (plus the CUDA context, library
workspaces and NCCL buffers: what nvidia-smi sees). The verdict judges the process tier.
"""

from __future__ import annotations

from typing import Optional

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from preflight.facts.layout import Layout

#: Keys of `per_gpu_bytes` in the JSON contract, in order.
LEDGER_KEYS = ("params", "grads", "optimizer", "master", "activations", "comm", "overhead")

#: When a line's bytes are alive during a step (see `phases.py`):
#:   resident   the whole step (weights, optimizer state, master weights, buffers)
#:   gradients  from the backward that creates them to `zero_grad` (kept through the
#:              forward under accumulation, `set_to_none=False`, sharded partitions)
#:   saved      saved for backward: alive at the end of the forward, freed during backward
#:   logits     saved for the loss: alive at the end of the forward, freed by the loss's
#:              backward (before any layer is recomputed)
#:   head       the end of the forward only: the logits while the loss is computed
#:   loss       the first backward ops only (the fp32 logit gradients)
#:   recompute  one checkpointed layer being recomputed and back-propagated (its working
#:              set and temporaries, the kept inputs, the gradients made so far)
#:   layer      the last layer's backward at its MLP activation, without full
#:              checkpointing (its temporaries and the gradients made before it)
#:   backward   the end of backward (a tied embedding's dense gradient)
#:   step       inside the optimizer step (foreach temporaries)
#:   reserved   the caching allocator's rounding and segment slack (tier 2)
#:   process    outside the allocator: CUDA context, library workspaces, NCCL (tier 3)
LIFETIMES = ("resident", "gradients", "saved", "logits", "head", "loss", "recompute",
             "layer", "backward", "step", "reserved", "process")
TENSOR_LIFETIMES = LIFETIMES[:10]


def _counted(ln: "LedgerLine") -> bool:
    """Whether a line adds to its key: not the optimizer step's or the last layer's
    backward temporaries (a phase's, not a key's) nor the gradients already made at a
    recompute (a part of the gradients line, not more of them)."""
    return ln.lifetime not in ("step", "layer") and not (ln.key == "grads"
                                                         and ln.lifetime == "recompute")


class LedgerLine(BaseModel):
    key: str                       # one of LEDGER_KEYS (several lines may share a key)
    label: str                     # "optimizer state (AdamW m, v fp32)"
    bytes: Optional[int] = None    # None = unknown (see `note`)
    formula: str = ""              # "8 B × 7,000,000,000 / 1"
    note: str = ""                 # assumption or reason for unknown
    margin: bool = False           # the headroom margin line (not a predicted allocation)
    lifetime: str = "resident"     # one of LIFETIMES: the phases the bytes are alive in


class Phase(BaseModel):
    """The tensor bytes alive at one moment of a step, and the lines that make them."""

    name: str                      # "forward", "loss backward", "optimizer step", …
    bytes: Optional[int] = None    # None = a line alive in this phase is unknown
    formula: str = ""              # which lifetimes add up: "resident + saved + loss"
    known: int = 0                 # the known lines of the phase alone (a lower bound)
    #: the lifetimes alive in this phase (what `formula` names, present or not)
    lifetimes: list[str] = Field(default_factory=list, exclude=True)


class StageLedger(BaseModel):
    """One pipeline-parallel stage's own ledger, in short (preflight.physics.stages)."""

    index: int                                   # 0-based stage
    layers: Optional[int] = None                 # transformer layers it holds
    in_flight: int = 1                           # micro-batches whose activations it holds
    holds: str = ""                              # "embeddings", "… logits and loss"
    params: Optional[int] = None                 # its parameters (None: the even split n / pp)
    states_bytes: Optional[int] = None
    tensors_peak: Optional[int] = None           # its largest phase
    peak_phase: Optional[str] = None
    phases: dict[str, Optional[int]] = Field(default_factory=dict)


class Ledger(BaseModel):
    lines: list[LedgerLine] = Field(default_factory=list)
    capacity_bytes: Optional[int] = None
    headroom: float = 0.2
    unknown: list[str] = Field(default_factory=list)   # which inputs were missing
    #: the inputs the memory lines lacked (`unknown` adds what the step-time walls lacked)
    memory_unknown: Optional[list[str]] = None
    assumptions: list[str] = Field(default_factory=list)   # what was assumed, in words
    gpu: Optional[str] = None                           # the card the capacity is of
    #: the largest single tensors (case C), biggest first; not part of the sums
    largest: list[LedgerLine] = Field(default_factory=list)
    #: tensor bytes per phase of a step (the tensors tier); the peak is the largest
    phases: list[Phase] = Field(default_factory=list)
    #: what the phases assume about gradients, accumulation and the optimizer, in words
    behaviour: list[str] = Field(default_factory=list)
    #: pipeline parallelism: every stage's ledger; `lines` and `phases` are the busiest's
    stages: list[StageLedger] = Field(default_factory=list)
    busiest_stage: Optional[int] = None

    def bytes_of(self, key: str) -> Optional[int]:
        """The lines of `key` added up; the optimizer step's temporaries (lifetime "step")
        are a phase's, not a key's: they show in `phases`."""
        vals = [ln.bytes for ln in self.lines if ln.key == key and _counted(ln)]
        if not vals:
            return 0
        if any(v is None for v in vals):
            return None
        return sum(vals)  # type: ignore[arg-type]

    @property
    def states_bytes(self) -> Optional[int]:
        """Weights, gradients, optimizer state and master weights (the step's temporaries,
        lifetime "step", are not states)."""
        vals = [ln.bytes for ln in self.lines
                if ln.key in ("params", "grads", "optimizer", "master") and _counted(ln)]
        return None if any(v is None for v in vals) else sum(vals)  # type: ignore[arg-type]

    @property
    def lines_sum(self) -> Optional[int]:
        """Every line added up, as if all were alive at once (an upper bound on the peak)."""
        parts = [self.bytes_of(k) for k in LEDGER_KEYS]
        return None if any(p is None for p in parts) else sum(parts)  # type: ignore[arg-type]

    @property
    def total(self) -> Optional[int]:
        """The process-tier peak plus the headroom margin."""
        p, m = self.peak, self.margin_bytes
        return None if p is None or m is None else p + m

    @property
    def margin_bytes(self) -> Optional[int]:
        vals = [ln.bytes for ln in self.lines if ln.margin]
        return None if any(v is None for v in vals) else sum(vals)  # type: ignore[arg-type]

    @property
    def peak_phase(self) -> Optional[str]:
        """The phase of the step that sets the peak (None when a phase is unknown)."""
        if not self.phases or any(p.bytes is None for p in self.phases):
            return None
        return max(self.phases, key=lambda p: p.bytes).name     # type: ignore[arg-type, return-value]

    @property
    def tensors_peak(self) -> Optional[int]:
        """Tier 1: the largest phase of live tensors (`max_memory_allocated`). A ledger built
        without phases adds up its tensor lines (every line alive at once)."""
        if not self.phases:
            return self._tier_lines(*TENSOR_LIFETIMES)
        vals = [p.bytes for p in self.phases]
        return None if any(v is None for v in vals) else max(vals)  # type: ignore[type-var]

    def _tier_lines(self, *lifetimes: str) -> Optional[int]:
        vals = [ln.bytes for ln in self.lines if ln.lifetime in lifetimes and not ln.margin]
        return None if any(v is None for v in vals) else sum(vals)  # type: ignore[arg-type]

    @property
    def reserved_peak(self) -> Optional[int]:
        """Tier 2: the tensors peak plus the caching allocator's slack (`max_memory_reserved`)."""
        t, r = self.tensors_peak, self._tier_lines("reserved")
        return None if t is None or r is None else t + r

    @property
    def process_peak(self) -> Optional[int]:
        """Tier 3: reserved plus CUDA context, library workspaces and NCCL buffers."""
        t, r = self.tensors_peak, self._tier_lines("reserved", "process")
        return None if t is None or r is None else t + r

    @property
    def peak(self) -> Optional[int]:
        """The predicted peak per GPU: the process tier, which the verdict judges
        (docs/ledger.md, "The predicted peak and the headroom margin")."""
        return self.process_peak

    @property
    def limit(self) -> Optional[float]:
        """The most the predicted peak may be: capacity less the headroom margin."""
        cap = self.capacity_bytes
        return None if not cap else cap * (1 - self.headroom)

    def fits(self) -> Optional[bool]:
        """Whether the predicted peak stays within the limit (None: not known)."""
        peak, limit = self.peak, self.limit
        return None if peak is None or limit is None else peak <= limit

    @property
    def known_bytes(self) -> int:
        """The known lines of the largest phase and the process tier: a lower bound on the
        peak (lines alive in different phases are not added)."""
        tensors = max((p.known for p in self.phases), default=0) if self.phases else sum(
            ln.bytes for ln in self.lines if ln.lifetime in TENSOR_LIFETIMES
            and not ln.margin and ln.bytes is not None)
        return tensors + sum(ln.bytes for ln in self.lines if ln.lifetime in
                             ("reserved", "process") and not ln.margin and ln.bytes is not None)

    def verdict(self) -> str:
        """fits | tight (fits only inside the headroom margin) | does not fit | unknown.

        With unknown lines the verdict is still "does not fit" when the known lines alone
        exceed the capacity (they are a lower bound)."""
        cap = self.capacity_bytes
        if cap is None:
            return "unknown"
        total = self.total
        if total is None:
            return "does not fit" if self.known_bytes > cap else "unknown"
        if total <= cap:
            return "fits"
        peak = self.peak
        if peak is not None and peak <= cap:
            return "tight"
        return "does not fit"

    def per_gpu_bytes(self) -> dict[str, Optional[int]]:
        """Bytes per key (each key's lines added up) and `total`: the phased peak plus the
        margin — the keys do not add up to it, since not every line is alive at once."""
        out = {k: self.bytes_of(k) for k in LEDGER_KEYS}
        out["total"] = self.total
        return out

    def phase_bytes(self) -> dict[str, Optional[int]]:
        return {p.name: p.bytes for p in self.phases}

    def at_peak(self, key: str) -> Optional[int]:
        """The lines of `key` alive at the phase that sets the peak, with the allocator and
        process tiers above it (the margin left out): the keys' values add up to the
        predicted peak, where `bytes_of` adds every line of a key whenever it lives. A
        ledger without phases (or with an unknown one) gives `bytes_of`."""
        top = self.peak_phase
        phase = next((p for p in self.phases if p.name == top), None)
        if phase is None or not phase.lifetimes:
            return self.bytes_of(key)
        alive = set(phase.lifetimes) | {"reserved", "process"}
        vals = [ln.bytes for ln in self.lines
                if ln.key == key and ln.lifetime in alive and not ln.margin]
        return None if any(v is None for v in vals) else sum(vals)  # type: ignore[arg-type]

    def at_peak_bytes(self) -> dict[str, Optional[int]]:
        """`at_peak` for every key: what each holds at the peak phase."""
        return {k: self.at_peak(k) for k in LEDGER_KEYS}


class Walls(BaseModel):
    compute_s: Optional[float] = None
    comm_s: Optional[float] = None
    step_s: Optional[float] = None
    efficiency: Optional[float] = None      # predicted E at equal global batch
    mfu: Optional[float] = None             # assumption used for compute time
    measured_efficiency: Optional[float] = None   # E = (t1/tk)/k from --t1/--tk/--k
    measured: str = ""                      # the measurement it came from
    lines: list[LedgerLine] = Field(default_factory=list)   # formulas, same shape as ledger
    notes: list[str] = Field(default_factory=list)


class Estimate(BaseModel):
    """The ledger and the walls of one job (what `preflight.physics.estimate` returns;
    `preflight.estimate(...)` returns it with the planner's `suggest()` added)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    ledger: Ledger
    walls: Walls
    #: how the job was split over its GPUs when it was sized (not part of the JSON)
    layout: Optional[Layout] = Field(default=None, exclude=True)
    #: what it was sized against (plan, GPU, headroom, MFU, family): `physics.replan`
    #: reuses it
    _basis: Optional[dict] = PrivateAttr(default=None)

    @property
    def basis(self) -> Optional[dict]:
        """What it was sized against (plan, gpu, headroom, mfu, family); None when this
        estimate was not made by `preflight.physics.estimate`."""
        return self._basis

    @property
    def verdict(self) -> str:
        """fits | tight | does not fit | unknown (see `Ledger.verdict`)."""
        return self.ledger.verdict()

    @property
    def fits(self) -> Optional[bool]:
        """True when the peak fits with the headroom margin kept; False when it does not
        fit or fits only by eating into the margin ("tight"); None when unknown."""
        v = self.ledger.verdict()
        return None if v == "unknown" else v == "fits"

    @property
    def peak_bytes(self) -> Optional[int]:
        """The predicted per-GPU peak: the busiest phase of the step, in the process tier
        (`Ledger.peak`); None if a line is unknown."""
        return self.ledger.peak

    @property
    def capacity_bytes(self) -> Optional[int]:
        return self.ledger.capacity_bytes

    @property
    def lines(self) -> list[LedgerLine]:
        """The ledger lines, each with its formula and its bytes."""
        return list(self.ledger.lines)

    @property
    def unknown(self) -> list[str]:
        """The facts that were missing (the lines that need them are unknown)."""
        return list(self.ledger.unknown)

    def to_json(self) -> dict:
        return {
            "ledger": {"per_gpu_bytes": self.ledger.per_gpu_bytes(),
                       "capacity_bytes": self.ledger.capacity_bytes,
                       "gpu": self.ledger.gpu,
                       "headroom": self.ledger.headroom,
                       "peak_bytes": self.ledger.peak,
                       "peak_phase": self.ledger.peak_phase,
                       "phases": self.ledger.phase_bytes(),
                       "at_peak_bytes": self.ledger.at_peak_bytes(),
                       "tiers": {"tensors": self.ledger.tensors_peak,
                                 "reserved": self.ledger.reserved_peak,
                                 "process": self.ledger.process_peak},
                       "behaviour": self.ledger.behaviour,
                       "stages": [st.model_dump() for st in self.ledger.stages],
                       "busiest_stage": self.ledger.busiest_stage,
                       "verdict": self.ledger.verdict(),
                       "unknown": self.ledger.unknown,
                       "assumptions": self.ledger.assumptions,
                       "lines": [ln.model_dump() for ln in self.ledger.lines],
                       "largest": [ln.model_dump() for ln in self.ledger.largest]},
            "walls": self.walls.model_dump(exclude={"lines"}) | {
                "lines": [ln.model_dump() for ln in self.walls.lines]},
        }
