"""Findings in notebooks, located at cell and line.

A notebook is read as views of its code cells (`preflight.lang.notebook`): every
location found in it — a fact's source, a finding, a related place — is first a line of
a view (the notebook's script view, or `nb.ipynb#train.py` for the file a `%%writefile`
cell writes). `relocate` turns each into the notebook's path, the 1-based cell and the
line within that cell, once the report is complete (after `--fix` has edited the views'
lines), so every format prints the same place: `nb.ipynb:cell 4:12:5` in text, `"cell":
4, "line": 12` in JSON, a SARIF region in the cell with the cell in the location's
property bag, a GitHub annotation at the cell's line.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Any, Optional

from preflight.lang.notebook import locate
from preflight.plan import Diagnostic, Fact, Source

if TYPE_CHECKING:  # pragma: no cover
    from preflight.result import Report

#: a view's path (absolute) → {"path": the notebook as the user named it, "spans": […]}
Maps = dict[str, dict[str, Any]]


def _where(maps: Maps, path: Optional[str], line: int) -> Optional[tuple[str, int, int]]:
    """(notebook path, cell, line in the cell) of a view's line; None elsewhere."""
    if not path or not line:
        return None
    m = maps.get(os.path.abspath(path))
    if m is None:
        return None
    at = locate(m["spans"], line)
    return None if at is None else (m["path"], at[0], at[1])


def source(maps: Maps, s: Optional[Source]) -> Optional[Source]:
    if s is None or s.cell is not None:
        return s
    at = _where(maps, s.path, s.line)
    return s if at is None else Source(path=at[0], cell=at[1], line=at[2], col=s.col)


def diagnostic(maps: Maps, d: Diagnostic) -> None:
    """`d` located at cell and line, in place (once: a finding already placed is left)."""
    if d.cell is None:
        at = _where(maps, d.path, d.line)
        if at is not None:
            d.message = reason(maps, d.message, d.path) or d.message
            d.path, d.cell, d.line = at
    if d.related:
        d.related = [source(maps, s) or s for s in d.related]


#: a view's location written into a reason: `nb.ipynb:9:9`, or `line 19` of the same view
_AT_PATH = re.compile(r"(?P<path>[^\s()'\"]+\.ipynb(?:#[^\s:()]+)?):(?P<line>\d+)(?::(?P<col>\d+))?")
_AT_LINE = re.compile(r"\b(?P<word>lines?) (?P<line>\d+)\b")


def reason(maps: Maps, text: Optional[str], view: Optional[str]) -> Optional[str]:
    """A reason's locations in a notebook's view, said at cell and line: `nb.ipynb:9:9` →
    `nb.ipynb:cell 4:5:9`; `line 19` of the view the fact lies in (`view`) → `cell 6
    line 3`."""
    if not text:
        return text

    def at_path(m: re.Match) -> str:
        at = _where(maps, m["path"], int(m["line"]))
        if at is None:
            return m[0]
        return f"{at[0]}:cell {at[1]}:{at[2]}" + (f":{m['col']}" if m["col"] else "")

    out = text
    for view, mp in maps.items():
        # each notebook by the name it is given (which may hold brackets: `Llama3.1_(8B).ipynb`)
        for name in {mp["path"], view}:
            if name in out:
                out = re.sub(re.escape(name) + r":(?P<line>\d+)(?::(?P<col>\d+))?(?!\d)",
                             lambda m, v=view: _at_view(maps, v, m), out)
    out = _AT_PATH.sub(at_path, out)
    if view is None or os.path.abspath(view) not in maps:
        return out

    def at_line(m: re.Match) -> str:
        at = _where(maps, view, int(m["line"]))
        return m[0] if at is None else f"cell {at[1]} line {at[2]}"

    return _AT_LINE.sub(at_line, out)


def _at_view(maps: Maps, view: str, m: re.Match) -> str:
    at = _where(maps, view, int(m["line"]))
    if at is None:
        return m[0]
    return f"{at[0]}:cell {at[1]}:{at[2]}" + (f":{m['col']}" if m["col"] else "")


def _fact(maps: Maps, f: Optional[Fact]) -> Optional[Fact]:
    if f is None or f.source is None or f.source.cell is not None:
        return f
    s = source(maps, f.source)
    if s is f.source:
        return f
    return f.model_copy(update={"source": s, "reason": reason(maps, f.reason, f.source.path)})


def maps_of(report: "Report") -> Maps:
    maps: Maps = {}
    for jr in report.jobs:
        for e in jr.job.extractions:
            m = e.extras.get("notebook")
            if isinstance(m, dict):
                maps[os.path.abspath(e.path)] = m
    return maps


def relocate(report: "Report") -> None:
    """Every location of the report that lies in a notebook's view, at cell and line."""
    maps = maps_of(report)
    if not maps:
        return
    for d in report.diagnostics:
        diagnostic(maps, d)
    for jr in report.jobs:
        for d in list(jr.diagnostics) + list(jr.job.diagnostics):
            diagnostic(maps, d)
        plan = jr.job.plan
        plan.facts = {k: _fact(maps, f) for k, f in plan.facts.items()}
        plan.candidates = {k: [_fact(maps, f) for f in fs] for k, fs in plan.candidates.items()}
