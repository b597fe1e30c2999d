"""Reviewdog Diagnostic Format, JSON (`reviewdog -f=rdjson`): one DiagnosticResult.

    {"source": {"name": "preflight", "url": …},
     "diagnostics": [{"message": …, "severity": "ERROR",
                      "location": {"path": "train.py",
                                   "range": {"start": {"line": 7, "column": 46}}},
                      "code": {"value": "PF102"}, "related_locations": […]}]}

Lines and columns are 1-based, as reviewdog's format defines them; a finding without a
column has only a line. reviewdog's format counts columns in UTF-8 bytes; preflight's
columns count characters, so a line with non-ASCII text before the column is converted.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Optional

from preflight.plan import Diagnostic
from preflight.report.common import all_diagnostics, display_path
from preflight.report.sarif import information_uri

if TYPE_CHECKING:  # pragma: no cover
    from preflight.result import Report

SEVERITY = {"error": "ERROR", "warning": "WARNING", "info": "INFO"}


def _byte_column(path: Optional[str], line: int, col: int, cache: dict) -> int:
    if path not in cache:
        try:
            with open(path or "", encoding="utf-8", errors="replace") as fh:
                cache[path] = fh.read().splitlines()
        except OSError:
            cache[path] = []
    lines = cache[path]
    if not 0 < line <= len(lines):
        return col
    return len(lines[line - 1][:col - 1].encode("utf-8")) + 1


def _location(path: Optional[str], line: int, col: int, root: Optional[str],
              cache: dict) -> dict[str, Any]:
    loc: dict[str, Any] = {"path": display_path(path, root) or ""}
    if line > 0:
        start: dict[str, int] = {"line": line}
        if col > 0:
            start["column"] = _byte_column(path, line, col, cache)
        loc["range"] = {"start": start}
    return loc


def diagnostic(d: Diagnostic, root: Optional[str], cache: dict) -> dict[str, Any]:
    msg = d.message + (f"\nfix: {d.fix}" if d.fix else "")
    out: dict[str, Any] = {"message": msg, "location": _location(d.path, d.line, d.col, root, cache),
                           "severity": SEVERITY.get(d.severity, "WARNING"),
                           "code": {"value": d.code}}
    if d.related:
        out["related_locations"] = [
            {"message": f"{d.code}: also set here",
             "location": _location(s.path, s.line, s.col, root, cache)} for s in d.related]
    return out


def build(report: "Report", *, root: Optional[str] = None) -> dict[str, Any]:
    cache: dict = {}
    return {"source": {"name": "preflight", "url": information_uri()},
            "diagnostics": [diagnostic(d, root, cache) for d in all_diagnostics(report)]}


def render(report: "Report", *, root: Optional[str] = None) -> str:
    return json.dumps(build(report, root=root), indent=2, ensure_ascii=False) + "\n"
