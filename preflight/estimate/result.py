"""The estimator's output types: a ledger of labelled lines and the scaling walls.

Every line carries the formula with its numbers substituted, so a reader sees the
arithmetic next to the number it produced.
"""

from __future__ import annotations

from typing import Optional

from pydantic import BaseModel, Field

#: Keys of `per_gpu_bytes` in the JSON contract, in order.
LEDGER_KEYS = ("params", "grads", "optimizer", "master", "activations", "comm", "overhead")


class LedgerLine(BaseModel):
    key: str                       # one of LEDGER_KEYS (several lines may share a key)
    label: str                     # "optimizer state (AdamW m, v fp32)"
    bytes: Optional[int] = None    # None = unknown (see `note`)
    formula: str = ""              # "8 B × 7,000,000,000 / 1"
    note: str = ""                 # assumption or reason for unknown


class Ledger(BaseModel):
    lines: list[LedgerLine] = Field(default_factory=list)
    capacity_bytes: Optional[int] = None
    headroom: float = 0.2
    unknown: list[str] = Field(default_factory=list)   # which inputs were missing

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
    lines: list[LedgerLine] = Field(default_factory=list)   # formulas, same shape as ledger
    notes: list[str] = Field(default_factory=list)


class Estimate(BaseModel):
    ledger: Ledger
    walls: Walls

    def to_json(self) -> dict:
        return {
            "ledger": {"per_gpu_bytes": self.ledger.per_gpu_bytes(),
                       "capacity_bytes": self.ledger.capacity_bytes,
                       "lines": [ln.model_dump() for ln in self.ledger.lines]},
            "walls": self.walls.model_dump(exclude={"lines"}) | {
                "lines": [ln.model_dump() for ln in self.walls.lines]},
        }
