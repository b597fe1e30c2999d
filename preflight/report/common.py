"""What every writer needs: the findings in order, paths relative to the root, verdicts."""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

from preflight import safe_read
from preflight.lang.notebook import cell_lines
from preflight.plan import SEVERITIES, Diagnostic
from preflight.units import gib  # noqa: F401  (the one byte formatter; re-exported)

if TYPE_CHECKING:  # pragma: no cover
    from preflight.physics.result import Ledger
    from preflight.result import JobResult, Report

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


#: the key of the fingerprint in SARIF's partialFingerprints (its version: bump it when the
#: recipe below changes, so that code scanning starts afresh instead of mismatching)
FINGERPRINT_KEY = "preflightFinding/v1"


def normalise_message(msg: str) -> str:
    """Numbers blanked and whitespace collapsed: `112.0 GB` and `113.4 GB` are one finding."""
    return " ".join(re.sub(r"\d+(?:[.,]\d+)*", "#", msg).split())


def fingerprint(code: str, rel: str, message: str, context: str) -> str:
    h = hashlib.sha256("\0".join((code, rel, normalise_message(message),
                                  " ".join(context.split()))).encode())
    return h.hexdigest()[:32]


def _line_text(path: Optional[str], line: int, cache: dict, cell: Optional[int] = None) -> str:
    """The text of the flagged line (in a notebook: of the line within its cell)."""
    if not path or line <= 0:
        return ""
    key = (path, cell)
    if key not in cache:
        try:
            text = safe_read.read_text(path)
            cache[key] = text.splitlines() if cell is None else cell_lines(text, cell)
        except (OSError, ValueError):
            cache[key] = []
    lines = cache[key]
    return lines[line - 1].strip() if line <= len(lines) else ""


def fingerprints(diags: list[Diagnostic], root: Optional[str]) -> list[str]:
    """One stable identity per finding, for tools that de-duplicate across runs (SARIF's
    partialFingerprints, GitLab Code Quality's fingerprint): a hash of the rule, the
    repo-relative path, the message with its numbers blanked and the text of the flagged
    line — never the absolute path or the line number, so a finding keeps its identity when
    lines move or an estimate changes — and `:N` for the N-th finding with the same hash."""
    cache: dict[tuple, list[str]] = {}
    seen: dict[str, int] = {}
    out = []
    for d in diags:
        rel = relpath(d.path, root) or os.path.basename(d.path or "")
        fp = fingerprint(d.code, rel, d.message, _line_text(d.path, d.line, cache, d.cell))
        seen[fp] = seen.get(fp, 0) + 1
        out.append(f"{fp}:{seen[fp]}")
    return out


def counts(diags: list[Diagnostic]) -> dict[str, int]:
    c = {s: 0 for s in SEVERITIES}
    for d in diags:
        c[d.severity] = c.get(d.severity, 0) + 1
    return c


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def summary_counts(diags: list[Diagnostic]) -> str:
    """'3 findings (2 errors, 1 warning)'."""
    c = counts(diags)
    parts = [plural(c[s], s) for s in SEVERITIES if c[s]]
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


#: origins that show a file really describes a training job (not preflight's own defaults)
#: (`inferred`: a training knob read by its name from a document no adapter owns)
_EVIDENCE = frozenset({"runtime", "cli", "config", "literal", "catalog", "inferred"})


def is_training_job(job: "JobResult") -> bool:
    """A job with findings, or with at least one fact read from its files. A YAML or TOML
    file that merely passed through discovery (a CI config, `.pre-commit-config.yaml`)
    has neither and is not drawn."""
    if job.diagnostics:
        return True
    for f in job.job.plan.facts.values():
        origin = getattr(f.origin, "value", f.origin)
        if f.known and origin in _EVIDENCE:
            return True
    return False


def shown_jobs(report: "Report") -> list:
    return [j for j in report.jobs if is_training_job(j)]


def unsized_summary(report: "Report") -> Optional[str]:
    """'2 of 3 jobs not sized: micro_batch unknown in train.py; no GPU given' — or None
    when every training job was sized against a known GPU."""
    jobs = shown_jobs(report)
    bad = [j for j in jobs if getattr(j, "unsized", None) is not None]
    if not bad:
        return None
    clauses: list[str] = []
    gpu = False
    for j in bad:
        for c in j.unsized.text().split("; "):
            if c == "no GPU given":
                gpu = True
            elif c not in clauses:
                clauses.append(c)
    if gpu:
        clauses.append("no GPU given")
    noun = "job" if len(jobs) == 1 else "jobs"
    return f"{len(bad)} of {len(jobs)} {noun} not sized: {'; '.join(clauses)}"


def job_label(job: "JobResult") -> str:
    return job.job.entry or (job.job.files[0] if job.job.files else "(command)")


def gpu_name(job: "JobResult") -> Optional[str]:
    """The GPU the job was checked against: the result's, the ledger's, else the plan's."""
    led = job.estimate.ledger if job.estimate is not None else None
    v = (getattr(job, "gpu", None) or getattr(led, "gpu", None)
         or job.job.plan.value("gpu"))
    return str(v) if v else None


def _sum(vals: list) -> Optional[int]:
    return None if any(v is None for v in vals) else sum(vals)


def is_margin(line: object) -> bool:
    """The headroom-margin line: a reserve, not a predicted allocation."""
    return bool(getattr(line, "margin", False))


def key_bytes(led: "Ledger", key: str) -> Optional[int]:
    """Bytes of the lines under `key` alive at the phase that sets the predicted peak (so
    the keys add up to it), the headroom margin left out; a ledger without phases adds
    every line of the key. None if one is unknown."""
    if led.peak_phase is not None:      # None without phases, or with an unknown one
        return led.at_peak(key)
    return _sum([ln.bytes for ln in led.lines if ln.key == key and not is_margin(ln)])


def margin_bytes(led: "Ledger") -> Optional[int]:
    return _sum([ln.bytes for ln in led.lines if is_margin(ln)])


def peak_bytes(led: "Ledger") -> Optional[int]:
    """The predicted peak per GPU: the estimator's (the largest phase of a step and the
    process tiers above it); a ledger without phases adds up every line but the margin."""
    if getattr(led, "phases", None):
        return led.peak
    return _sum([ln.bytes for ln in led.lines if not is_margin(ln)])


@dataclass
class Verdict:
    status: str          # fits | tight | over | unknown
    peak: Optional[int]  # predicted peak per GPU (a lower bound when `at_least`)
    capacity: Optional[int]
    headroom: float
    text: str            # one line, no markup
    at_least: bool = False

    @property
    def fraction(self) -> Optional[float]:
        if self.peak is None or not self.capacity:
            return None
        return self.peak / self.capacity


_STATUS = {"fits": "fits", "tight": "tight", "does not fit": "over", "unknown": "unknown"}


def _status(led: "Ledger") -> str:
    """The estimator's verdict where the ledger has one; the same rule otherwise: the peak
    plus the headroom margin must fit the capacity; a peak that fits only by eating into
    the margin is tight; known lines alone over capacity do not fit."""
    fn = getattr(led, "verdict", None)
    if callable(fn):
        return _STATUS.get(fn(), "unknown")
    cap, peak = led.capacity_bytes, peak_bytes(led)
    if not cap:
        return "unknown"
    if peak is None:
        known = sum(ln.bytes for ln in led.lines if ln.bytes is not None and not is_margin(ln))
        return "over" if known > cap else "unknown"
    if peak > cap:
        return "over"
    return "tight" if peak > cap * (1.0 - led.headroom) else "fits"


def verdict(job: "JobResult") -> Verdict:
    """Whether the predicted per-GPU peak fits the GPU with the headroom margin kept."""
    est = job.estimate
    if est is None:
        return Verdict("unknown", None, None, 0.0, "no estimate")
    led: "Ledger" = est.ledger
    cap, hr = led.capacity_bytes, led.headroom
    if not job.analysed:
        # a list of missing facts says nothing when the entry itself could not be read
        return Verdict("unknown", None, cap, hr, "not analysed: the entry file could not be read or parsed")
    gpu = gpu_name(job) or "the GPU"
    if not led.lines:
        why = f" (missing: {', '.join(led.unknown)})" if led.unknown else ""
        return Verdict("unknown", None, cap, hr, f"memory not estimated{why}")
    status = _status(led)
    peak = peak_bytes(led)
    missing = f"; missing: {', '.join(led.unknown)}" if led.unknown else ""
    if peak is None:
        known = sum(ln.bytes for ln in led.lines if ln.bytes is not None and not is_margin(ln))
        if status == "over" and cap:
            return Verdict("over", known, cap, hr,
                           f"does not fit: at least {gib(known)} per GPU (some lines unknown), "
                           f"{gib(cap)} on {gpu}{missing}", at_least=True)
        return Verdict("unknown", None, cap, hr, f"peak per GPU unknown{missing}")
    if not cap:
        return Verdict("unknown", peak, None, hr,
                       f"{gib(peak)} per GPU; capacity unknown (no GPU given)")
    pct = 100.0 * peak / cap
    on = f"{pct:.0f} % of {gib(cap)} on {gpu}"
    unsized = getattr(job, "unsized", None)
    if unsized is not None and status != "over":
        # the ledger is complete only because the estimator assumed what the job leaves open
        return Verdict("unknown", None, cap, hr, f"not sized: {unsized.text()}")
    if status == "over":
        return Verdict("over", peak, cap, hr, f"does not fit: {gib(peak)} per GPU, {on}")
    if status == "tight":
        return Verdict("tight", peak, cap, hr,
                       f"tight: {gib(peak)} per GPU, {on}, inside the {hr:.0%} headroom margin")
    return Verdict(status, peak, cap, hr,
                   f"fits: {gib(peak)} per GPU, {on}, {hr:.0%} headroom kept")


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
