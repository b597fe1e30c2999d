"""GitHub Actions workflow commands: one annotation per finding on the diff.

`::error file=train.py,line=12,col=5,title=PF101::message` — warning and notice by severity.
In a notebook the line is the line within the cell and the title names the cell:
`::warning file=nb.ipynb,line=12,col=5,title=PF101 (cell 4)::message`.
Escaping follows the Actions runner: in the message (data) `%`, CR and LF; in property
values additionally `:` and `,`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from preflight.report.common import all_diagnostics, display_path

if TYPE_CHECKING:  # pragma: no cover
    from preflight.result import Report

LEVEL = {"error": "error", "warning": "warning", "info": "notice"}


def escape_data(s: str) -> str:
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(s: str) -> str:
    return escape_data(s).replace(":", "%3A").replace(",", "%2C")


def command(level: str, message: str, *, file: Optional[str] = None, line: int = 0,
            col: int = 0, title: Optional[str] = None) -> str:
    props = []
    if file:
        props.append(f"file={escape_property(file)}")
        if line:
            props.append(f"line={line}")
            if col:
                props.append(f"col={col}")
    if title:
        props.append(f"title={escape_property(title)}")
    head = f"::{level}" + (" " + ",".join(props) if props else "")
    return f"{head}::{escape_data(message)}"


def render(report: "Report", *, root: Optional[str] = None) -> str:
    out = []
    for d in all_diagnostics(report):
        msg = d.message + (f"\nfix: {d.fix}" if d.fix else "")
        out.append(command(LEVEL.get(d.severity, "warning"), msg,
                           file=display_path(d.path, root), line=d.line, col=d.col,
                           title=d.code if d.cell is None else f"{d.code} (cell {d.cell})"))
    return "".join(ln + "\n" for ln in out)
