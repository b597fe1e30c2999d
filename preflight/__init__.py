"""preflight — a static pre-flight checker for PyTorch training jobs.

    import preflight
    report = preflight.check(["train.py"], gpu="H100-80GB")
    est = preflight.estimate(params=7e9, optimizer="adamw", precision="bf16-mixed",
                             world_size=8, zero_stage=3, gpu="H100-80GB")

Both are imported on first use, so `import preflight` stays cheap (docs/api.md).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from preflight.version import DISTRIBUTION, __version__

# The rules live one per file in the checkout's top-level rules/ folder and are installed as
# preflight.rules. Run from a checkout (the source tree shadowing an installed copy, or no
# install at all), `import preflight.rules` finds them there.
_HERE = os.path.dirname(os.path.abspath(__file__))
if not os.path.isdir(os.path.join(_HERE, "rules")) and \
        os.path.isfile(os.path.join(os.path.dirname(_HERE), "rules", "__init__.py")):
    __path__.append(os.path.dirname(_HERE))  # type: ignore[name-defined]  # noqa: F821

__all__ = ["check", "estimate", "Report", "JobResult", "Estimate", "DISTRIBUTION",
           "__version__"]

if TYPE_CHECKING:  # pragma: no cover
    from preflight.api import Estimate, JobResult, Report, check, estimate


def __getattr__(name: str) -> Any:
    if name in ("check", "estimate", "Report", "JobResult", "Estimate"):
        # not lazy(): the dry run's child imports this package, then torch, which loads it
        from preflight import api
        return getattr(api, name)
    raise AttributeError(f"module 'preflight' has no attribute {name!r}")
