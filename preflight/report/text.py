"""Terminal output: findings in ruff's shape, a ledger bar per job, one summary line.

Colour (plain ANSI) only when stdout is a terminal and NO_COLOR is unset or empty
(https://no-color.org); `concise` is one line per finding and never coloured.
"""

from __future__ import annotations

import os
import re
import sys
from typing import TYPE_CHECKING, Optional

from preflight.plan import in_cell
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


def location(path: Optional[str], line: int, col: int, cell: Optional[int] = None) -> str:
    if not path:
        return "preflight"
    path = in_cell(path, cell)
    if line and col:
        return f"{path}:{line}:{col}"
    if line:
        return f"{path}:{line}"
    return path


def render_concise(report: "Report", quiet: bool = False) -> str:
    """`path:line:col: CODE message`, one finding a line (as `ruff --output-format concise`),
    then the one-line summary — also when there is nothing else to say."""
    lines = [f"{location(d.path, d.line, d.col, d.cell)}: {d.code} {_one_line(d.message)}"
             for d in all_diagnostics(report)]
    return "".join(ln + "\n" for ln in lines + ([] if quiet else [summary_line(report)]))


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


#: the width a finding's first line keeps to (its location aside, when the path is long)
WIDTH = 120
#: the least room the message gets on the first line, however long the location
MIN_HEAD = 60


def _clauses(msg: str) -> list[str]:
    """A message cut after its top-level `; ` and before its ` — ` (not inside brackets):
    the first clause is the headline, the others its details."""
    out, depth, start = [], 0, 0
    i = 0
    while i < len(msg):
        c = msg[i]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth = max(0, depth - 1)
        elif depth == 0 and msg.startswith("; ", i):
            out.append(msg[start:i + 1])
            start = i + 2
            i += 1
        elif depth == 0 and msg.startswith(" — ", i):
            out.append(msg[start:i])
            start = i + 1
            i += 2
        i += 1
    out.append(msg[start:])
    return [c.strip() for c in out if c.strip()]


#: a number and its unit ("50.2 GiB", "87 %"), which a wrapped line never splits
_QUANTITY = re.compile(r"(\d) (GiB|MiB|KiB|B|%)(?=\W|$)")


def _wrap(text: str, first: int, rest: int) -> list[str]:
    import textwrap
    # textwrap splits at ASCII whitespace only: a no-break space holds a quantity together
    text = _QUANTITY.sub("\\1\u00a0\\2", text)
    lines = textwrap.wrap(text, width=max(first, 20), break_long_words=False,
                          break_on_hyphens=False)
    if len(lines) > 1:
        lines = lines[:1] + textwrap.wrap(" ".join(lines[1:]), width=rest,
                                          break_long_words=False, break_on_hyphens=False)
    return [ln.replace("\u00a0", " ") for ln in lines]


def finding_lines(d, paint: Optional["_Paint"] = None, fix_seen: Optional[dict] = None) -> list[str]:
    """One finding for a terminal: `path:line:col: CODE headline` within WIDTH characters
    (unless the path alone is longer), the details indented under it, then the fix — or,
    when an earlier finding had the same fix, a pointer to it instead of the text again."""
    paint = paint or _Paint(False)
    loc = location(d.path, d.line, d.col, d.cell)
    prefix = f"{loc}: {d.code} "
    clauses = _clauses(" ".join(d.message.split()))
    if d.name:
        clauses[-1] += f" [{d.name}]"
    indent = "    "
    head = _wrap(clauses[0], max(WIDTH - len(prefix), MIN_HEAD), WIDTH - len(indent))
    body = head[1:]
    for c in clauses[1:]:
        body += _wrap(c, WIDTH - len(indent), WIDTH - len(indent))
    out = [f"{paint(loc, BOLD)}: {paint(d.code, SEVERITY_COLOUR.get(d.severity, ''), BOLD)} "
           f"{head[0] if head else ''}"]
    out += [indent + ln for ln in body]
    if d.fix:
        fix = " ".join(d.fix.split())
        if fix_seen is not None and fix in fix_seen:
            out.append(f"  {paint('fix:', CYAN)} the same as for {fix_seen[fix]} above")
        else:
            if fix_seen is not None:
                fix_seen[fix] = (f"{d.code} (line {d.line})" if d.cell is None else
                                f"{d.code} (cell {d.cell}, line {d.line})") if d.line else d.code
            for i, ln in enumerate(_wrap(fix, WIDTH - 7, WIDTH - 7)):
                out.append(f"  {paint('fix:', CYAN)} {ln}" if i == 0 else f"       {ln}")
    for r in d.related:
        out.append(f"  {paint('see:', DIM)} {r}")
    return out


def summary_line(report: "Report", paint: Optional["_Paint"] = None) -> str:
    """The run's verdict: the findings counted, then the jobs not sized (with what is
    missing) — "All checks passed" only when nothing was found and every job was sized."""
    paint = paint or _Paint(False)
    diags = all_diagnostics(report)
    lines = []
    if diags:
        n_err = sum(1 for d in diags if d.severity == "error")
        lines.append(paint(f"Found {summary_counts(diags)} in {plural(len(report.jobs), 'job')}.",
                           RED if n_err else YELLOW, BOLD))
    unsized = unsized_summary(report)
    if unsized:
        lines.append(paint(f"{unsized}.", YELLOW, BOLD))
    elif not diags:
        lines.append(paint(f"All checks passed ({plural(len(report.jobs), 'job')}).", GREEN, BOLD))
    return "\n".join(lines)


def render_text(report: "Report", *, color: Optional[bool] = None,
                show_ledger: bool = False, quiet: bool = False) -> str:
    """Findings, a ledger bar per job and a summary line. `quiet`: the findings only."""
    paint = _Paint(use_color() if color is None else color)
    uni = _unicode_ok()
    out: list[str] = []
    diags = all_diagnostics(report)
    fixes: dict[str, str] = {}
    shown_edits: dict[int, str] = {}
    for d in diags:
        out.extend(finding_lines(d, paint, fixes))
        out += _edit_lines(report, d, paint, shown_edits)
    if quiet:
        return "".join(ln + "\n" for ln in out)
    if diags:
        out.append("")
    jobs = shown_jobs(report)
    for job in jobs:
        # a job without a ledger has nothing to draw: its findings are listed above
        if show_ledger or (job.estimate is not None and job.estimate.ledger.lines):
            out.extend(_job_block(job, paint, uni, show_ledger))
            out.append("")
    drawn = {id(k) for k in jobs}
    quiet_jobs = [job_label(j) for j in report.jobs
                  if id(j) not in drawn]
    if quiet_jobs:
        out += [paint(f"No training settings found in {', '.join(quiet_jobs)}.", DIM), ""]
    out.append(summary_line(report, paint))
    return "\n".join(out) + "\n"


def render_statistics(report: "Report") -> str:
    """How many findings of each code, most frequent first (as `ruff --statistics`)."""
    counts: dict[str, list] = {}
    for d in all_diagnostics(report):
        row = counts.setdefault(d.code, [0, d.name, d.severity])
        row[0] += 1
    rows = sorted(counts.items(), key=lambda kv: (-kv[1][0], kv[0]))
    width = max([len(str(r[1][0])) for r in rows] + [1])
    out = [f"{n:>{width}}  {code:<6} {sev:<7}  {name}" for code, (n, name, sev) in rows]
    return "".join(ln + "\n" for ln in out + [summary_line(report)])


def _edit_lines(report: "Report", d, paint: _Paint, shown: dict[int, str]) -> list[str]:
    """The file edit that resolves finding `d` (check --fix writes it): in full under the
    first finding it resolves, by reference under the others."""
    # here: lazy() would import the fix package, which `--format concise` never loads
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
