"""Merge the facts of a job's files into one TrainingPlan (DESIGN.md precedence)."""

from __future__ import annotations

from typing import Optional

from preflight.extract import extract_file
from preflight.plan import Extraction, Job, JobSpec, merge


def assemble(spec: JobSpec, cache: Optional[dict[str, Extraction]] = None) -> Job:
    cache = {} if cache is None else cache
    exts: list[Extraction] = []
    for path in spec.files:
        args = spec.invocation.args if spec.invocation and path == spec.entry else None
        key = f"{path}\0{args}"
        if key not in cache:
            cache[key] = extract_file(path, args=args)
        exts.append(cache[key])
    pairs = [p for e in exts for p in e.facts]
    if spec.invocation:
        pairs += spec.invocation.facts
    plan = merge(pairs)
    diags = [d for e in exts for d in e.diagnostics]
    return Job(entry=spec.entry, files=spec.files, plan=plan, diagnostics=diags, extractions=exts)
