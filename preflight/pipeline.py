"""discover → extract/assemble → estimate → rules, for `preflight check`."""

from __future__ import annotations

from typing import Any, Optional

from pydantic import BaseModel, ConfigDict, Field

from preflight.assemble import assemble
from preflight.discover import discover
from preflight.estimate import Estimate, estimate
from preflight.plan import Diagnostic, Job


class JobResult(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    job: Job
    estimate: Optional[Estimate] = None
    diagnostics: list[Diagnostic] = Field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"entry": self.job.entry, "files": self.job.files,
                               "facts": self.job.plan.to_json()}
        if self.estimate is not None:
            out.update(self.estimate.to_json())
        out["diagnostics"] = [d.to_json() for d in self.diagnostics]
        return out


class Report(BaseModel):
    jobs: list[JobResult] = Field(default_factory=list)
    diagnostics: list[Diagnostic] = Field(default_factory=list)   # not tied to a job

    def to_json(self) -> dict[str, Any]:
        return {"version": 1, "jobs": [j.to_json() for j in self.jobs],
                "diagnostics": [d.to_json() for d in self.diagnostics]}


def run(paths: list[str], command: Optional[list[str]] = None, gpu=None,
        headroom: float = 0.2) -> Report:
    specs, diags = discover(paths, command)
    report = Report(diagnostics=diags)
    cache: dict = {}
    for spec in specs:
        job = assemble(spec, cache)
        est = estimate(job.plan, gpu, headroom)
        report.jobs.append(JobResult(job=job, estimate=est, diagnostics=list(job.diagnostics)))
    return report
