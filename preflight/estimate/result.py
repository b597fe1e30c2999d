"""The estimator's output types: a ledger of labelled lines and the scaling walls.

Every line carries the formula with its numbers substituted, so a reader sees the
arithmetic next to the number it produced.
"""

from __future__ import annotations

from typing import Optional

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from preflight.facts.layout import Layout

#: Keys of `per_gpu_bytes` in the JSON contract, in order.
LEDGER_KEYS = ("params", "grads", "optimizer", "master", "activations", "comm", "overhead")


class LedgerLine(BaseModel):
    key: str                       # one of LEDGER_KEYS (several lines may share a key)
    label: str                     # "optimizer state (AdamW m, v fp32)"
    bytes: Optional[int] = None    # None = unknown (see `note`)
    formula: str = ""              # "8 B × 7,000,000,000 / 1"
    note: str = ""                 # assumption or reason for unknown
    margin: bool = False           # the headroom margin line (not a predicted allocation)


class Ledger(BaseModel):
    lines: list[LedgerLine] = Field(default_factory=list)
    capacity_bytes: Optional[int] = None
    headroom: float = 0.2
    unknown: list[str] = Field(default_factory=list)   # which inputs were missing
    assumptions: list[str] = Field(default_factory=list)   # what was assumed, in words
    gpu: Optional[str] = None                           # the card the capacity is of
    #: the largest single tensors (case C), biggest first; not part of the sums
    largest: list[LedgerLine] = Field(default_factory=list)

    def bytes_of(self, key: str) -> Optional[int]:
        vals = [ln.bytes for ln in self.lines if ln.key == key]
        if not vals:
            return 0
        if any(v is None for v in vals):
            return None
        return sum(vals)  # type: ignore[arg-type]

    @property
    def states_bytes(self) -> Optional[int]:
        parts = [self.bytes_of(k) for k in ("params", "grads", "optimizer", "master")]
        return None if any(p is None for p in parts) else sum(parts)  # type: ignore[arg-type]

    @property
    def total(self) -> Optional[int]:
        parts = [self.bytes_of(k) for k in LEDGER_KEYS]
        return None if any(p is None for p in parts) else sum(parts)  # type: ignore[arg-type]

    @property
    def margin_bytes(self) -> Optional[int]:
        vals = [ln.bytes for ln in self.lines if ln.margin]
        return None if any(v is None for v in vals) else sum(vals)  # type: ignore[arg-type]

    @property
    def peak(self) -> Optional[int]:
        """The predicted peak allocation: the total without the headroom margin
        (docs/ledger.md, "The predicted peak and the headroom margin")."""
        t, m = self.total, self.margin_bytes
        return None if t is None or m is None else t - m

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
        """Sum of the lines that are known: a lower bound on the total."""
        return sum(ln.bytes for ln in self.lines if ln.bytes is not None)

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
        out = {k: self.bytes_of(k) for k in LEDGER_KEYS}
        out["total"] = self.total
        return out


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
    """The ledger and the walls of one job (what `preflight.estimate(...)` returns)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    ledger: Ledger
    walls: Walls
    #: how the job was split over its GPUs when it was sized (not part of the JSON)
    layout: Optional[Layout] = Field(default=None, exclude=True)
    #: what it was sized against (plan, GPU, headroom, MFU, family): `replan` reuses it
    _basis: Optional[dict] = PrivateAttr(default=None)

    def replan(self, plan) -> Optional["Estimate"]:
        """The estimate of another plan (a what-if) on the same GPU, headroom and
        assumptions; None when this estimate was not made by `estimate()`."""
        if self._basis is None:
            return None
        from preflight.estimate import estimate
        b = self._basis
        return estimate(plan, b["gpu"], b["headroom"], mfu=b["mfu"], family=b["family"])

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
        """The predicted per-GPU peak (every line but the headroom margin); None if a line
        is unknown."""
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

    def suggest(self) -> list:
        """Configurations that would fit, cheapest first. Not available yet: preflight has
        no planner; the findings' `fix` says the cheapest change in words."""
        raise NotImplementedError("Estimate.suggest() needs the planner, which this version "
                                  "of preflight does not have yet; see each finding's fix")

    def to_json(self) -> dict:
        return {
            "ledger": {"per_gpu_bytes": self.ledger.per_gpu_bytes(),
                       "capacity_bytes": self.ledger.capacity_bytes,
                       "gpu": self.ledger.gpu,
                       "headroom": self.ledger.headroom,
                       "peak_bytes": self.ledger.peak,
                       "verdict": self.ledger.verdict(),
                       "unknown": self.ledger.unknown,
                       "assumptions": self.ledger.assumptions,
                       "lines": [ln.model_dump() for ln in self.ledger.lines],
                       "largest": [ln.model_dump() for ln in self.ledger.largest]},
            "walls": self.walls.model_dump(exclude={"lines"}) | {
                "lines": [ln.model_dump() for ln in self.walls.lines]},
        }
