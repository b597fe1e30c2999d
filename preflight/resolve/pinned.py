"""Facts a job's pinned library releases decide (`preflight.extract.pins` reads the pins).

- `bitsandbytes_version`: what a frozen quantised linear keeps for backward depends on the
  bitsandbytes release (`preflight.physics.bnb`); a job with a 4- or 8-bit base reads the
  release its nearest requirement pin names. A pin that names no one release (a range, a
  bare name) gives no fact, and the estimate assumes the current release and says so.
"""

from __future__ import annotations

import os
from typing import Optional

from preflight.extract.pins import find_pin
from preflight.plan import Fact, Origin, Source, TrainingPlan


def _quantised_bits(plan: TrainingPlan) -> Optional[int]:
    lora = plan.value("lora")
    if hasattr(lora, "model_dump"):
        lora = lora.model_dump()
    bits = lora.get("base_bits") if isinstance(lora, dict) else None
    return bits if bits in (4, 8) else None


def pinned_facts(plan: TrainingPlan, entry: Optional[str]) -> list[tuple[str, Fact]]:
    """The facts the job's pins near `entry` (its script) decide and nothing else gave."""
    if not entry or "bitsandbytes_version" in plan.facts or _quantised_bits(plan) is None:
        return []
    pin = find_pin("bitsandbytes", os.path.dirname(os.path.abspath(entry)))
    if pin is None or pin.version is None:
        return []
    return [("bitsandbytes_version", Fact(
        value=pin.version, origin=Origin.CONFIG, source=Source(path=pin.path, line=pin.line),
        reason=f"{pin.text} in {pin.where}"))]
