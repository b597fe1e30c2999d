"""Pure physics: a TrainingPlan in, a per-GPU ledger and the scaling walls out.

Nothing here reads files or knows of libcst or click.
"""

from __future__ import annotations

from typing import Optional

from preflight.estimate.result import Estimate, Ledger, LedgerLine, Walls
from preflight.plan import TrainingPlan

__all__ = ["estimate", "Estimate", "Ledger", "LedgerLine", "Walls"]


def estimate(plan: TrainingPlan, gpu=None, headroom: float = 0.2) -> Estimate:
    """Placeholder until the ledger lands: an empty ledger."""
    cap: Optional[int] = getattr(gpu, "usable_bytes", None)
    return Estimate(ledger=Ledger(capacity_bytes=cap, headroom=headroom), walls=Walls())
