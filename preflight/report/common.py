"""What every writer needs: the findings in order, paths relative to the root, verdicts."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

from preflight.plan import Diagnostic

if TYPE_CHECKING:  # pragma: no cover
    from preflight.estimate.result import Ledger
    from preflight.pipeline import JobResult, Report

SEVERITY_RANK = {"error": 0, "warning": 1, "info": 2}
GIB = 1024 ** 3


def sort_key(d: Diagnostic) -> tuple:
    return (d.path or "", d.line, d.col, d.code, d.message)


def _identity(d: Diagnostic) -> tuple:
    return (d.code, d.path, d.line, d.col, d.message)


def all_diagnostics(report: "Report") -> list[Diagnostic]:
    """Every finding once, in file/line order. A file shared by two jobs (a DeepSpeed JSON
    both launchers name) reports the same finding in each; it is listed once."""
    seen: set[tuple] = set()
    out: list[Diagnostic] = []
    for d in [*report.diagnostics, *(d for j in report.jobs for d in j.diagnostics)]:
        key = _identity(d)
        if key not in seen:
            seen.add(key)
            out.append(d)
    return sorted(out, key=sort_key)


def job_diagnostics(job: "JobResult") -> list[Diagnostic]:
    seen: set[tuple] = set()
    out = []
    for d in job.diagnostics:
        if _identity(d) not in seen:
            seen.add(_identity(d))
            out.append(d)
    return sorted(out, key=sort_key)


def counts(diags: list[Diagnostic]) -> dict[str, int]:
    c = {"error": 0, "warning": 0, "info": 0}
    for d in diags:
        c[d.severity] = c.get(d.severity, 0) + 1
    return c


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def summary_counts(diags: list[Diagnostic]) -> str:
    """'3 findings (2 errors, 1 warning)'."""
    c = counts(diags)
    parts = [plural(c[s], s) for s in ("error", "warning", "info") if c[s]]
    head = plural(len(diags), "finding")
    return f"{head} ({', '.join(parts)})" if parts else head


def root_dir(root: Optional[str]) -> str:
    return os.path.abspath(root or os.getcwd())


def relpath(path: Optional[str], root: Optional[str]) -> Optional[str]:
    """`path` relative to `root` with forward slashes; None when it lies outside `root`.

    Relative paths are taken relative to the current directory, as the user gave them."""
    if not path:
        return None
    ap = os.path.abspath(path)
    try:
        rp = os.path.relpath(ap, root_dir(root))
    except ValueError:        # another drive on Windows
        return None
    if rp == os.curdir or rp.startswith(os.pardir + os.sep) or rp == os.pardir:
        return None
    return rp.replace(os.sep, "/")


def display_path(path: Optional[str], root: Optional[str]) -> Optional[str]:
    """Repo-relative where possible, else as given."""
    if not path:
        return None
    return relpath(path, root) or path.replace(os.sep, "/")


def gib(n: Optional[int]) -> str:
    """Bytes for a reader: GiB, or MiB / KiB / B below one GiB."""
    if n is None:
        return "unknown"
    for unit, size in (("GiB", GIB), ("MiB", 1024 ** 2), ("KiB", 1024)):
        if abs(n) >= size:
            return f"{n / size:,.1f} {unit}"
    return f"{n} B"


def job_label(job: "JobResult") -> str:
    return job.job.entry or (job.job.files[0] if job.job.files else "(command)")


def gpu_name(job: "JobResult") -> Optional[str]:
    """The GPU the job was checked against (the result's, else the plan's `gpu` fact)."""
    v = getattr(job, "gpu", None) or job.job.plan.value("gpu")
    return str(v) if v else None


@dataclass
class Verdict:
    status: str          # fits | tight | over | unknown
    total: Optional[int]
    capacity: Optional[int]
    headroom: float
    text: str            # one line, no markup

    @property
    def fraction(self) -> Optional[float]:
        if self.total is None or not self.capacity:
            return None
        return self.total / self.capacity


def verdict(job: "JobResult") -> Verdict:
    """Whether the predicted per-GPU peak fits the GPU, with the headroom margin."""
    est = job.estimate
    if est is None:
        return Verdict("unknown", None, None, 0.0, "no estimate")
    led: "Ledger" = est.ledger
    total, cap, hr = led.total, led.capacity_bytes, led.headroom
    gpu = gpu_name(job) or "the GPU"
    if not led.lines:
        why = f" (missing: {', '.join(led.unknown)})" if led.unknown else ""
        return Verdict("unknown", None, cap, hr, f"memory not estimated{why}")
    if total is None:
        why = f"; missing: {', '.join(led.unknown)}" if led.unknown else ""
        return Verdict("unknown", None, cap, hr, f"peak per GPU unknown{why}")
    if not cap:
        return Verdict("unknown", total, None, hr,
                       f"{gib(total)} per GPU; capacity unknown (no GPU given)")
    pct = 100.0 * total / cap
    if total > cap:
        return Verdict("over", total, cap, hr,
                       f"does not fit: {gib(total)} per GPU, {pct:.0f} % of {gib(cap)} on {gpu}")
    if total > cap * (1.0 - hr):
        return Verdict("tight", total, cap, hr,
                       f"fits without margin: {gib(total)} per GPU, {pct:.0f} % of {gib(cap)} on {gpu}"
                       f" (inside the {hr:.0%} headroom)")
    return Verdict("fits", total, cap, hr,
                   f"fits: {gib(total)} per GPU, {pct:.0f} % of {gib(cap)} on {gpu}")


def rule_attr(rule: object, name: str, default=None):
    v = getattr(rule, name, default)
    return default if v is None else v


def rule_docs(rule: object) -> str:
    """A rule's documentation as markdown text (docs / doc / documentation / docstring)."""
    for attr in ("docs", "doc", "documentation"):
        v = getattr(rule, attr, None)
        if callable(v):
            try:
                v = v()
            except TypeError:
                v = None
        if isinstance(v, dict):
            return "\n\n".join(f"## {k}\n\n{str(t).strip()}" for k, t in v.items())
        if isinstance(v, str) and v.strip():
            return _dedent(v)
    d = getattr(rule, "__doc__", None)
    if isinstance(d, str) and d.strip() and (not isinstance(rule, type) or d is not type.__doc__):
        return _dedent(d)
    return ""


def _dedent(s: str) -> str:
    import inspect
    return inspect.cleandoc(s)


def doc_section(docs: str, title: str) -> str:
    """The body of the section `title` ('What it does') of a rule's docs, or ''."""
    want = title.lower().rstrip(":?")
    out: list[str] = []
    inside = fenced = False
    for ln in docs.splitlines():
        if ln.lstrip().startswith("```"):
            fenced = not fenced
        head = None if fenced else _heading(ln)
        if head is not None:
            if inside:
                break
            inside = head.startswith(want)
            continue
        if inside:
            out.append(ln)
    return "\n".join(out).strip()


_TITLES = ("what it does", "why is this bad", "example", "use instead")


def _heading(line: str) -> Optional[str]:
    s = line.strip()
    if s.startswith("#"):
        return s.lstrip("#").strip().lower().rstrip(":?").strip()
    low = s.lower().rstrip(":?").strip()
    if any(low.startswith(t) for t in _TITLES) and len(low) < 40:
        return low
    return None
