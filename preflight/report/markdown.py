"""The body of a pull-request comment (GitHub-flavoured Markdown).

It starts with a hidden marker, `<!-- preflight-report -->`, by which a workflow finds
its own earlier comment and edits it instead of adding another. Per job: a verdict line,
the per-GPU ledger against capacity as a table, the same as a mermaid pie chart, and the
findings with links to their lines — absolute GitHub blob links when GITHUB_SERVER_URL,
GITHUB_REPOSITORY and GITHUB_SHA (or PREFLIGHT_LINK_SHA) are set, relative links otherwise.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Optional
from urllib.parse import quote

from preflight.lazy import lazy
from preflight.physics.result import LEDGER_KEYS
from preflight.plan import Diagnostic, in_cell
from preflight.report.common import (GIB, all_diagnostics, display_path, gpu_name, is_margin,
                                     job_diagnostics, job_label, key_bytes, margin_bytes,
                                     peak_bytes, plural, shown_jobs, summary_counts,
                                     unsized_summary,
                                     verdict)
from preflight.report.markdown_inline import code_span, escape
from preflight.version import __version__

fit_table = lazy("preflight.plan_fit.table")
memory_deltas = lazy("preflight.report.deltas")

if TYPE_CHECKING:  # pragma: no cover
    from preflight.result import JobResult, Report

MARKER = "<!-- preflight-report -->"
#: GitHub rejects comment bodies over 65,536 characters; findings beyond this are counted.
MAX_CHARS = 60_000
MAX_FINDINGS_PER_JOB = 50

ICON = {"fits": "✅", "tight": "⚠️", "over": "❌", "unknown": "❔"}
SEVERITY_ICON = {"error": "❌", "warning": "⚠️", "info": "ℹ️"}
KEY_LABEL = {"params": "parameters", "grads": "gradients", "optimizer": "optimizer state",
             "master": "master weights", "activations": "activations",
             "comm": "communication buffers", "overhead": "runtime overhead"}

def link_base() -> Optional[str]:
    """`https://github.com/OWNER/REPO/blob/SHA/` from the Actions environment, if set."""
    server = os.environ.get("GITHUB_SERVER_URL")
    repo = os.environ.get("GITHUB_REPOSITORY")
    sha = os.environ.get("PREFLIGHT_LINK_SHA") or os.environ.get("GITHUB_SHA")
    if server and repo and sha:
        return f"{server.rstrip('/')}/{repo}/blob/{sha}/"
    return None


def line_link(rel: str, line: int, base: Optional[str]) -> str:
    url = quote(rel, safe="/")
    if line > 0:
        url += f"#L{line}"
    return (base or "") + url


def _finding(d: Diagnostic, root: Optional[str], base: Optional[str]) -> str:
    icon = SEVERITY_ICON.get(d.severity, "")
    where = ""
    if d.path:
        shown = display_path(d.path, root) or d.path
        label = f"{in_cell(shown, d.cell)}:{d.line}" if d.line else shown
        if os.path.isabs(shown):
            where = f" {code_span(label)}"
        else:
            # a notebook's line is within its cell: the link opens the notebook
            where = f" [{code_span(label)}]({line_link(shown, d.line if d.cell is None else 0, base)})"
    name = f" {escape(d.name)}" if d.name else ""
    text = f"- {icon} **{d.code}**{name}{where}: {escape(d.message)}"
    if d.fix:
        text += f" — *fix:* {escape(d.fix)}"
    return text


def _pct(n: Optional[int], cap: Optional[int]) -> str:
    if n is None or not cap:
        return "–"
    return f"{100.0 * n / cap:.1f} %"


def _row(label: str, n: Optional[int], cap: Optional[int], bold: bool = False) -> str:
    gb = "unknown" if n is None else f"{n / GIB:,.2f}"
    exact = "" if n is None else f"{n:,}"
    pct = _pct(n, cap)
    if bold:
        label, gb, pct = f"**{label}**", f"**{gb}**", f"**{pct}**"
    return f"| {label} | {gb} | {exact} | {pct} |"


def _ledger_table(job: "JobResult") -> list[str]:
    led = job.estimate.ledger if job.estimate else None
    if led is None or not led.lines:
        return []
    cap = led.capacity_bytes
    phase = led.peak_phase
    head = f"per GPU at the peak ({escape(phase)})" if phase else "per GPU"
    out = [f"| {head} | GiB | bytes | of capacity |", "|---|---:|---:|---:|"]
    for key in LEDGER_KEYS:
        if any(ln.key == key and not is_margin(ln) for ln in led.lines):
            out.append(_row(KEY_LABEL.get(key, key), key_bytes(led, key), cap))
    has_margin = any(is_margin(ln) for ln in led.lines)
    peak = peak_bytes(led)
    out.append(_row("predicted peak", peak, cap, bold=True))
    if has_margin:
        out.append(_row(f"headroom margin ({led.headroom:.0%})", margin_bytes(led), cap))
        out.append(_row("total with the margin", led.total, cap, bold=True))
    if cap:
        gpu = escape(gpu_name(job) or "GPU")
        out.append(_row(f"capacity ({gpu})", cap, cap))
    return out


def _mermaid(job: "JobResult") -> list[str]:
    led = job.estimate.ledger if job.estimate else None
    if led is None:
        return []
    parts = [(KEY_LABEL.get(k, k), key_bytes(led, k)) for k in LEDGER_KEYS]
    parts.append(("headroom margin", margin_bytes(led)))
    # slices that would print as 0.00 GiB are left out: they cannot be seen anyway
    parts = [(label, b) for label, b in parts if b and b >= GIB / 200]
    if not parts:
        return []
    phase = led.peak_phase
    at = f" at the peak ({phase})" if phase else ""
    title = f"per-GPU memory{at}, {job_label(job)} (GiB)".replace('"', "'")
    out = ["```mermaid", f"pie showData title {title}"]
    for label, b in parts:
        out.append(f'    "{label}" : {b / GIB:.2f}')
    total = led.total
    if led.capacity_bytes and total is not None and total < led.capacity_bytes:
        out.append(f'    "free" : {(led.capacity_bytes - total) / GIB:.2f}')
    out.append("```")
    return out


def _formulas(job: "JobResult") -> list[str]:
    led = job.estimate.ledger if job.estimate else None
    if led is None or not led.lines:
        return []
    out = ["<details><summary>How the ledger was computed</summary>", "",
           "| line | bytes | formula | note |", "|---|---:|---|---|"]
    for ln in led.lines:
        b = "unknown" if ln.bytes is None else f"{ln.bytes:,}"
        out.append(f"| {escape(ln.label)} | {b} | {code_span(ln.formula) if ln.formula else ''} | "
                   f"{escape(ln.note)} |")
    out += ["", "</details>"]
    return out


def _job_section(job: "JobResult", root: Optional[str], base: Optional[str],
                 max_findings: int) -> list[str]:
    v = verdict(job)
    diags = job_diagnostics(job)
    worst = "over" if any(d.severity == "error" for d in diags) else (
        "tight" if any(d.severity == "warning" for d in diags) else None)
    icon = ICON[v.status]
    if worst == "over" or (worst == "tight" and v.status in ("fits", "unknown")):
        icon = ICON[worst]
    label = display_path(job_label(job), root) or job_label(job)
    out = [f"### {icon} {code_span(label)}", ""]
    n = len(diags)
    found = f" · {summary_counts(diags)}" if n else " · no findings"
    out += [f"**{escape(v.text)}**{found}", ""]
    others = [display_path(f, root) or f for f in job.job.files if f != job.job.entry]
    if others:
        out += ["Files: " + ", ".join(code_span(f) for f in others), ""]
    table = _ledger_table(job)
    if table:
        out += table + [""]
    chart = _mermaid(job)
    if chart:
        out += chart + [""]
    formulas = _formulas(job)
    if formulas:
        out += formulas + [""]
    if diags:
        shown = diags[:max_findings]
        out += [_finding(d, root, base) for d in shown]
        if n > len(shown):
            out.append(f"- … and {n - len(shown)} more (see the check's annotations)")
        out.append("")
    out += _fit_section(job, root)
    return out


def _fit_section(job: "JobResult", root: Optional[str]) -> list[str]:
    """What would fit (the planner's table) and the first alternative as GitHub
    suggestion blocks, one per replaced range of lines."""
    out: list[str] = []
    fit = getattr(job, "fit", None)
    if fit is not None and (fit.alternatives or fit.notes):
        out += ["<details><summary>What would fit</summary>", "",
                fit_table.render_markdown(fit), "", "</details>", ""]
    fx = getattr(job, "fix", None)
    if fx is None:
        return out
    codes = ", ".join(fx.resolves) or "the findings above"
    out += [f"**Suggested fix** ({escape(fx.label)}; resolves {escape(codes)}):", ""]
    for fe in fx.files:
        if not fe.changed:
            continue
        shown = display_path(fe.path, root) or fe.path
        for h in fe.replacements():
            lines = f"line {h.start}" if h.start == h.end else f"lines {h.start}–{h.end}"
            body = "".join(h.new)
            fence = "`" * max(3, max((len(m) for m in re.findall(r"`+", body)), default=0) + 1)
            out += [f"{code_span(shown)} {lines}:", "", f"{fence}suggestion",
                    body.rstrip("\n"), fence, ""]
    for note in fx.notes:
        out.append(f"- {escape(note)}")
    if fx.notes:
        out.append("")
    return out


def render(report: "Report", *, root: Optional[str] = None,
           diff_base: Optional[str] = None, max_findings: int = MAX_FINDINGS_PER_JOB) -> str:
    base = link_base()
    diags = all_diagnostics(report)
    jobs = shown_jobs(report)
    out = [MARKER, f"## preflight: {plural(len(report.jobs), 'job')}, "
           f"{summary_counts(diags) if diags else 'no findings'}", ""]
    unsized = unsized_summary(report)
    if unsized:
        out += [f"**{escape(unsized)}.**", ""]
    if diff_base:
        out += [f"Jobs touched since {code_span(diff_base)}.", ""]
    if getattr(report, "deltas", None) is not None:
        out += [memory_deltas.render_markdown(report.deltas,
                                              report.delta_base or diff_base or "the base")]
    if not report.jobs and not diags:
        out += ["No training jobs among the changed files." if diff_base
                else "No training jobs found.", ""]
    for job in jobs:
        out += _job_section(job, root, base, max_findings)
    loose = [d for d in report.diagnostics]
    if loose:
        out += ["### Other findings", ""] + [_finding(d, root, base) for d in
                                            sorted(loose, key=lambda d: (d.path or "", d.line))] + [""]
    drawn = {id(k) for k in jobs}
    quiet = [display_path(job_label(j), root) or job_label(j) for j in report.jobs
             if id(j) not in drawn]
    if quiet:
        out += ["No training settings found in " + ", ".join(code_span(q) for q in quiet) + ".", ""]
    out += [f"<sub>preflight {__version__}</sub>"]
    body = "\n".join(out).rstrip() + "\n"
    if len(body) > MAX_CHARS and max_findings > 5:
        return render(report, root=root, diff_base=diff_base, max_findings=max_findings // 2)
    return body
