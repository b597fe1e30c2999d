"""Group the given paths (and an optional launch command) into jobs."""

from __future__ import annotations

import os
from typing import Optional

from preflight.plan import Diagnostic, Invocation, JobSpec


def discover(paths: list[str], command: Optional[list[str]] = None,
             root: Optional[str] = None) -> tuple[list[JobSpec], list[Diagnostic]]:
    specs: list[JobSpec] = []
    diags: list[Diagnostic] = []
    if command:
        script = next((t for t in command if t.endswith(".py")), None)
        if script:
            i = command.index(script)
            specs.append(JobSpec(entry=script, files=[script],
                                 invocation=Invocation(script=script, args=command[i + 1:])))
    for p in paths:
        if not os.path.exists(p):
            diags.append(Diagnostic(code="PF001", name="unreadable-file",
                                    message="no such file or directory", path=p))
            continue
        specs.append(JobSpec(entry=p, files=[p]))
    return specs, diags
