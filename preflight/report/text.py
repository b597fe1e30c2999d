"""Terminal output: findings in ruff's shape, a ledger bar per job, one summary line.

Colour (plain ANSI) only when stdout is a terminal and NO_COLOR is unset or empty
(https://no-color.org); `concise` is one line per finding and never coloured.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Optional

from preflight.report.common import (Verdict, all_diagnostics, gib, gpu_name, is_margin,
                                     job_diagnostics, job_label, peak_bytes, plural,
                                     shown_jobs, summary_counts, unsized_summary, verdict)

if TYPE_CHECKING:  # pragma: no cover
    from preflight.result import JobResult, Report

BAR_WIDTH = 30

RESET = "\033[0m"
BOLD = "\033[1m"
DIM = "\033[2m"
RED = "\033[31m"
GREEN = "\033[32m"
YELLOW = "\033[33m"
CYAN = "\033[36m"

SEVERITY_COLOUR = {"error": RED, "warning": YELLOW, "info": CYAN}
STATUS_COLOUR = {"fits": GREEN, "tight": YELLOW, "over": RED, "unknown": DIM}


def use_color(stream=None) -> bool:
    """Colour when `stream` (stdout by default) is a terminal and NO_COLOR is not set."""
    if os.environ.get("NO_COLOR"):
        return False
    stream = sys.stdout if stream is None else stream
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def _unicode_ok(stream=None) -> bool:
    enc = getattr(sys.stdout if stream is None else stream, "encoding", None) or ""
    return enc.lower().replace("-", "") in ("utf8", "utf16", "utf32")


class _Paint:
    def __init__(self, on: bool):
        self.on = on

    def __call__(self, s: str, *codes: str) -> str:
        if not self.on or not codes or not s:
            return s
        return "".join(codes) + s + RESET


def location(path: Optional[str], line: int, col: int) -> str:
    if not path:
        return "preflight"
    if line and col:
        return f"{path}:{line}:{col}"
    if line:
        return f"{path}:{line}"
    return path


def render_concise(report: "Report") -> str:
    """`path:line:col: CODE message`, one finding a line (as `ruff --output-format concise`)."""
    lines = [f"{location(d.path, d.line, d.col)}: {d.code} {_one_line(d.message)}"
             for d in all_diagnostics(report)]
    return "".join(ln + "\n" for ln in lines)


def _one_line(s: str) -> str:
    return " ".join(s.split())


def bar(v: Verdict, width: int = BAR_WIDTH, unicode: bool = True,
        paint: Optional[_Paint] = None) -> str:
    """`[██████████████░░░░░░│░░░░░]`: the peak against capacity; `│` marks where the
    headroom margin starts. Over capacity the bar is full and ends in `▶`."""
    paint = paint or _Paint(False)
    full, empty, mark, over = ("█", "░", "│", "▶") if unicode else ("#", ".", "|", ">")
    frac = v.fraction
    if frac is None:
        return "[" + paint(empty * width, "\033[2m") + "]"
    filled = min(width, int(round(frac * width)))
    if frac > 0 and filled == 0:
        filled = 1
    margin_at = int(round((1.0 - v.headroom) * width)) if 0 < v.headroom < 1 else None
    cells = []
    for i in range(width):
        if i < filled:
            cells.append(full)
        elif margin_at is not None and i == margin_at:
            cells.append(mark)
        else:
            cells.append(empty)
    if frac > 1.0:
        cells[-1] = over
    colour = STATUS_COLOUR[v.status]
    body = paint("".join(cells[:filled]), colour) + paint("".join(cells[filled:]), DIM)
    return f"[{body}]"


def render_text(report: "Report", *, color: Optional[bool] = None,
                show_ledger: bool = False) -> str:
    paint = _Paint(use_color() if color is None else color)
    uni = _unicode_ok()
    out: list[str] = []
    diags = all_diagnostics(report)
    shown_edits: dict[int, str] = {}
    for d in diags:
        loc = paint(location(d.path, d.line, d.col), BOLD)
        code = paint(d.code, SEVERITY_COLOUR.get(d.severity, ""), BOLD)
        name = f" [{d.name}]" if d.name else ""
        msg = d.message.replace("\n", "\n    ")
        out.append(f"{loc}: {code} {msg}{paint(name, DIM)}")
        if d.fix:
            out.append(f"  {paint('fix:', CYAN)} {d.fix}")
        out += _edit_lines(report, d, paint, shown_edits)
        for r in d.related:
            out.append(f"  {paint('see:', DIM)} {r}")
    if diags:
        out.append("")
    jobs = shown_jobs(report)
    for job in jobs:
        # a job without a ledger has nothing to draw: its findings are listed above
        if show_ledger or (job.estimate is not None and job.estimate.ledger.lines):
            out.extend(_job_block(job, paint, uni, show_ledger))
            out.append("")
    drawn = {id(k) for k in jobs}
    quiet = [job_label(j) for j in report.jobs
             if id(j) not in drawn]
    if quiet:
        out += [paint(f"No training settings found in {', '.join(quiet)}.", DIM), ""]
    unsized = unsized_summary(report)
    if diags:
        n_err = sum(1 for d in diags if d.severity == "error")
        colour = RED if n_err else YELLOW
        out.append(paint(f"Found {summary_counts(diags)} in {plural(len(report.jobs), 'job')}.",
                         colour, BOLD))
    if unsized:
        out.append(paint(f"{unsized}.", YELLOW, BOLD))
    elif not diags:
        out.append(paint(f"All checks passed ({plural(len(report.jobs), 'job')}).", GREEN, BOLD))
    return "\n".join(out) + "\n"


def _edit_lines(report: "Report", d, paint: _Paint, shown: dict[int, str]) -> list[str]:
    """The file edit that resolves finding `d` (check --fix writes it): in full under the
    first finding it resolves, by reference under the others."""
    from preflight.fix.attach import fix_for

    fx = fix_for(report, d)
    if fx is None:
        return []
    if id(fx) in shown:
        return [f"  {paint('edit:', CYAN)} the edit under {shown[id(fx)]} above"]
    shown[id(fx)] = d.code
    out = [f"  {paint('edit:', CYAN)} {fx.label} (check --fix writes it)"]
    for fe in fx.files:
        for h in fe.hunks():
            where = f"{fe.path}:{h.start}" if h.end >= h.start else f"{fe.path}:{h.start} (new)"
            out.append(f"    {paint(where, DIM)}")
            out += [paint(f"    - {ln.rstrip()}", RED) for ln in h.old]
            out += [paint(f"    + {ln.rstrip()}", GREEN) for ln in h.new]
    return out


def _job_block(job: "JobResult", paint: _Paint, uni: bool, show_ledger: bool) -> list[str]:
    v = verdict(job)
    label = job_label(job)
    extra = len(job.job.files) - 1
    files = f" (+{plural(extra, 'file')})" if extra > 0 else ""
    gpu = gpu_name(job)
    head = f"{paint(label, BOLD)}{files}" + (f" on {gpu}" if gpu else "")
    n = len(job_diagnostics(job))
    finds = f", {plural(n, 'finding')}" if n else ""
    lines = [f"{head}{finds}"]
    status = paint(v.text, STATUS_COLOUR[v.status])
    if v.fraction is None:
        lines.append(f"  {status}")
    else:
        lines.append(f"  {bar(v, unicode=uni, paint=paint)} {status}")
    if show_ledger and job.estimate is not None:
        led = job.estimate.ledger
        width = max([len(ln.label) for ln in led.lines] + [len("total with the margin")])
        for ln in led.lines:
            amount = gib(ln.bytes) if ln.bytes is not None else "unknown"
            formula = f"  = {ln.formula}" if ln.formula else ""
            lines.append(f"    {ln.label.ljust(width)}  {amount:>12}{paint(formula, DIM)}")
            if ln.note:
                lines.append(paint(f"    {'':{width}}  {'':>12}  ({ln.note})", DIM))
        if led.lines:
            lines.append(f"    {'predicted peak'.ljust(width)}  {gib(peak_bytes(led)):>12}")
            if any(is_margin(ln) for ln in led.lines):
                lines.append(f"    {'total with the margin'.ljust(width)}  {gib(led.total):>12}")
            if led.capacity_bytes:
                lines.append(f"    {'capacity'.ljust(width)}  {gib(led.capacity_bytes):>12}")
        if job.estimate.walls.step_s is not None:
            w = job.estimate.walls
            eff = f", scaling efficiency {w.efficiency:.0%}" if w.efficiency is not None else ""
            lines.append(f"    step ≈ {w.step_s:.3g} s{eff}" if uni else
                         f"    step ~ {w.step_s:.3g} s{eff}")
    return lines
