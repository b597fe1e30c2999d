"""The result types of a check: one `JobResult` per job (its plan, ledger, findings) and
the `Report` of a run. The pipeline produces them, the report writers and the CLI read
them; this module depends on neither."""

from __future__ import annotations

from typing import Any, Optional

from pydantic import BaseModel, ConfigDict, Field

from preflight.estimate.result import Estimate
from preflight.plan import Diagnostic, Job


class JobResult(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    job: Job
    estimate: Optional[Estimate] = None
    diagnostics: list[Diagnostic] = Field(default_factory=list)
    gpu: Optional[str] = None            # the GPU this job was checked against
    dryrun: Optional[dict[str, Any]] = None   # `check --dry-run`: measured vs predicted

    @property
    def analysed(self) -> bool:
        """False when the job's entry file could not be read or parsed (PF001 / PF002 on
        it): its missing facts then say nothing about the job."""
        entry = self.job.entry
        return not (entry and any(d.code in ("PF001", "PF002") and d.path == entry
                                  for d in self.diagnostics))

    @property
    def fits(self) -> Optional[bool]:
        """True when the predicted per-GPU peak fits with the headroom margin kept; False
        when it does not (or only inside the margin); None when that is unknown (no GPU,
        a sizing fact missing, the entry not analysed)."""
        if self.estimate is None or not self.analysed:
            return None
        return self.estimate.fits

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"entry": self.job.entry, "files": self.job.files,
                               "facts": self.job.plan.to_json()}
        if self.gpu:
            out["gpu"] = self.gpu
        if self.estimate is not None:
            out.update(self.estimate.to_json())
        out["diagnostics"] = [d.to_json() for d in self.diagnostics]
        if self.dryrun is not None:
            out["dryrun"] = self.dryrun
        return out


class Report(BaseModel):
    jobs: list[JobResult] = Field(default_factory=list)
    diagnostics: list[Diagnostic] = Field(default_factory=list)   # not tied to a job

    def all_diagnostics(self) -> list[Diagnostic]:
        return list(self.diagnostics) + [d for j in self.jobs for d in j.diagnostics]

    def to_json(self) -> dict[str, Any]:
        return {"version": 1, "jobs": [j.to_json() for j in self.jobs],
                "diagnostics": [d.to_json() for d in self.diagnostics]}
