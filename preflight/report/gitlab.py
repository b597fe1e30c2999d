"""GitLab Code Quality: the JSON array a job's `artifacts:reports:codequality` uploads.

Each finding is one issue with the fields GitLab reads: `description`, `check_name`,
`fingerprint` (unique; the same finding keeps it across runs, so merge requests show
what is new and what was fixed), `severity` (info | minor | major | critical | blocker)
and `location.path` (relative to the repository root) with `location.lines.begin`.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any, Optional

from preflight.report.common import all_diagnostics, display_path, fingerprints

if TYPE_CHECKING:  # pragma: no cover
    from preflight.result import Report

#: preflight severity → Code Quality severity
SEVERITY = {"error": "critical", "warning": "major", "info": "info"}
CATEGORY = {"0": "Bug Risk", "1": "Performance", "2": "Bug Risk", "3": "Performance",
            "4": "Bug Risk"}


def issues(report: "Report", root: Optional[str] = None) -> list[dict[str, Any]]:
    diags = all_diagnostics(report)
    out = []
    for d, fp in zip(diags, fingerprints(diags, root)):
        text = " ".join(d.message.split())
        issue: dict[str, Any] = {
            "type": "issue",
            "check_name": d.code,
            "description": f"{d.code} {text}" + (f" [{d.name}]" if d.name else "")
                           + (f" (cell {d.cell}, line {d.line})" if d.cell is not None else ""),
            "categories": [CATEGORY.get(d.code[2:3], "Bug Risk")],
            "severity": SEVERITY.get(d.severity, "major"),
            # GitLab wants an opaque unique string; an MD5 of ours keeps it short
            "fingerprint": hashlib.md5(fp.encode()).hexdigest(),
            "location": {"path": display_path(d.path, root) or ".",
                         "lines": {"begin": max(d.line, 1)}},
        }
        if d.fix:
            issue["content"] = {"body": f"Fix: {d.fix}"}
        out.append(issue)
    return out


def render(report: "Report", *, root: Optional[str] = None) -> str:
    return json.dumps(issues(report, root), indent=2) + "\n"
