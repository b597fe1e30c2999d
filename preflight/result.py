"""The result types of a check: one `JobResult` per job (its plan, ledger, findings) and
the `Report` of a run. The pipeline produces them, the report writers and the CLI read
them; this module depends on neither."""

from __future__ import annotations

from typing import Any, Optional

from pydantic import BaseModel, ConfigDict, Field

from preflight.physics.result import Estimate
from preflight.plan import Diagnostic, Job


class JobResult(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    job: Job
    estimate: Optional[Estimate] = None
    diagnostics: list[Diagnostic] = Field(default_factory=list)
    gpu: Optional[str] = None            # the GPU this job was checked against
    dryrun: Optional[dict[str, Any]] = None   # `check --dry-run`: measured vs predicted
    #: why the job was not sized (None: sized against a known GPU); see preflight.sizing
    unsized: Optional[Any] = None
    hardware: Any = Field(default=None, exclude=True)   # the card the estimate is sized on
    fit: Any = None                      # preflight.plan_fit.FitPlan: what would fit
    fix: Any = None                      # preflight.fix.JobFix: the first fit, as file edits

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
        if self.unsized is not None:
            out["sized"] = False
            out["not_sized"] = {"missing": [m.fact for m in self.unsized.missing],
                                "reason": self.unsized.text()}
        if self.fit is not None:
            out["fit"] = self.fit.to_json()
        if self.fix is not None:
            out["fix"] = self.fix.to_json()
        return out


class Report(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    jobs: list[JobResult] = Field(default_factory=list)
    diagnostics: list[Diagnostic] = Field(default_factory=list)   # not tied to a job
    #: `--diff-base REF`: per touched job, the memory change since REF
    #: (preflight.report.deltas.JobDelta)
    deltas: Optional[list[Any]] = None
    delta_base: Optional[str] = None

    def unsized_jobs(self) -> list[JobResult]:
        """The jobs that were not sized against a known GPU (preflight.sizing)."""
        return [j for j in self.jobs if j.unsized is not None]

    def all_diagnostics(self) -> list[Diagnostic]:
        return list(self.diagnostics) + [d for j in self.jobs for d in j.diagnostics]

    def to_json(self) -> dict[str, Any]:
        out = {"version": 1, "jobs": [j.to_json() for j in self.jobs],
               "diagnostics": [d.to_json() for d in self.diagnostics]}
        if self.deltas is not None:
            out["deltas"] = {"base": self.delta_base,
                             "jobs": [d.to_json() for d in self.deltas]}
        return out
