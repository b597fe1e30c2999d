"""Memory deltas on a pull request (`check --diff-base REF`): each touched job is checked
again as it was at the merge base of REF and HEAD, and the per-GPU change is reported per
ledger line, with the facts that changed and the cheapest fix.

The base side is read with `git show` into a temporary tree holding the job's files (and
the project config) at their repository paths, and checked there with the same arguments
— nothing in the working tree is touched, nothing of the base is executed.

`--fail-on-regression` fails when a job that fitted no longer does, or when it loses more
than `max_loss` of its headroom (capacity − predicted peak).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from typing import Any, Iterator, Optional

from preflight.plan_fit.search import tier_peaks
from preflight.report.errors import DiffBaseError
from preflight.report.markdown_inline import code_span, escape

GIB = 2 ** 30
#: share of a job's headroom a change may take before it counts as a regression
DEFAULT_MAX_LOSS = 0.5
_FITS = ("fits", "tight")


def _git(args: list[str], cwd: str, *, binary: bool = False) -> Any:
    try:
        r = subprocess.run(["git", *args], cwd=cwd, capture_output=True, timeout=60,
                           text=not binary)
    except (OSError, subprocess.SubprocessError) as e:
        raise DiffBaseError(f"cannot run git: {e}") from None
    if r.returncode != 0:
        err = r.stderr if not binary else r.stderr.decode("utf-8", "replace")
        raise DiffBaseError(f"git {args[0]}: {(err.strip().splitlines() or ['failed'])[-1]}")
    return r.stdout


def merge_base(ref: str, cwd: str) -> tuple[str, str]:
    """(repository top, commit id of the merge base of REF and HEAD). REF is verified as
    a commit first; `--end-of-options` keeps a ref that starts with '-' from being read
    as an option."""
    top = _git(["rev-parse", "--show-toplevel"], cwd).strip()
    base = _git(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}"],
                top).strip()
    mb = _git(["merge-base", "--end-of-options", base, "HEAD"], top).strip()
    return top, mb


@dataclass
class JobDelta:
    entry: str
    base_verdict: str
    head_verdict: str
    base_peak: Optional[int]
    head_peak: Optional[int]
    capacity: Optional[int]
    tiers: dict[str, Optional[int]] = field(default_factory=dict)   # per ledger key: head − base
    facts: list[tuple[str, Any, Any]] = field(default_factory=list)  # (name, base, head)
    fix: str = ""
    regression: str = ""         # why it counts as a regression ('' when it does not)
    gpu: Optional[str] = None

    @property
    def change(self) -> Optional[int]:
        if self.base_peak is None or self.head_peak is None:
            return None
        return self.head_peak - self.base_peak

    def line(self) -> str:
        facts = ", ".join(f"{n} {_v(a)} → {_v(b)}" for n, a, b in self.facts) or \
            "no fact changed"
        if self.change is None:
            size = "peak unknown"
        else:
            size = f"{_signed(self.change)} per GPU"
        now = ""
        if self.head_peak is not None and self.capacity:
            now = f", now {100 * self.head_peak / self.capacity:.0f} % of {self.gpu or 'the GPU'}"
        fix = f"; cheapest fix: {self.fix}" if self.fix else ""
        return f"{self.entry}: {facts}: {size}{now} ({self.head_verdict}){fix}"

    def to_json(self) -> dict[str, Any]:
        return {"entry": self.entry, "base": {"verdict": self.base_verdict, "peak_bytes": self.base_peak},
                "head": {"verdict": self.head_verdict, "peak_bytes": self.head_peak},
                "capacity_bytes": self.capacity, "change_bytes": self.change,
                "per_gpu_bytes_change": self.tiers,
                "facts": [{"name": n, "base": a, "head": b} for n, a, b in self.facts],
                "fix": self.fix or None, "regression": self.regression or None,
                "line": self.line()}


def _v(x: Any) -> str:
    return "unset" if x is None else str(x)


def _signed(n: int) -> str:
    return f"{'+' if n >= 0 else '−'}{abs(n) / GIB:.1f} GiB"


@contextlib.contextmanager
def base_tree(top: str, commit: str, files: list[str]) -> Iterator[str]:
    """A temporary directory holding `files` (absolute paths inside `top`) as they were at
    `commit`; files that did not exist then are absent."""
    tmp = tempfile.mkdtemp(prefix="preflight-base-")
    try:
        for f in files:
            rel = os.path.relpath(os.path.realpath(f), os.path.realpath(top))
            if rel.startswith(os.pardir):
                continue
            try:
                data = _git(["show", f"{commit}:{rel.replace(os.sep, '/')}"], top, binary=True)
            except DiffBaseError:
                continue
            dst = os.path.join(tmp, rel)
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            with open(dst, "wb") as fh:
                fh.write(data)
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def compute(report: Any, ref: str, run_again, *, config_path: Optional[str] = None,
            max_loss: float = DEFAULT_MAX_LOSS) -> list[JobDelta]:
    """Deltas of the (already filtered) report's jobs against REF. `run_again()` checks
    again with the same arguments from the current directory (the base tree's)."""
    cwd = os.getcwd()
    top, commit = merge_base(ref, cwd)
    files = sorted({os.path.abspath(f) for j in report.jobs for f in [*j.job.files]
                    if f} | ({os.path.abspath(config_path)} if config_path else set()))
    out: list[JobDelta] = []
    with base_tree(top, commit, files) as tmp:
        rel_cwd = os.path.relpath(cwd, os.path.realpath(top))
        base_cwd = os.path.join(tmp, rel_cwd)
        os.makedirs(base_cwd, exist_ok=True)
        os.chdir(base_cwd)
        try:
            base = run_again()
            base_jobs = {_key(j, tmp): j for j in base.jobs}   # entries relative to here
        finally:
            os.chdir(cwd)
    for j in report.jobs:
        if j.estimate is None or not j.estimate.ledger.lines:
            continue
        b = base_jobs.get(_key(j, top))
        if b is None or b.estimate is None or not b.estimate.ledger.lines:
            continue
        out.append(_delta(b, j, max_loss))
    return out


def _key(j: Any, root: str) -> str:
    entry = j.job.entry or (j.job.files[0] if j.job.files else "")
    return os.path.relpath(os.path.realpath(entry), os.path.realpath(root))


def _delta(b: Any, h: Any, max_loss: float) -> JobDelta:
    lb, lh = b.estimate.ledger, h.estimate.ledger
    pb, ph = lb.per_gpu_bytes(), lh.per_gpu_bytes()
    tiers = {k: (None if pb.get(k) is None or ph.get(k) is None else ph[k] - pb[k]) for k in ph}
    tb, th = tier_peaks(lb), tier_peaks(lh)
    for k in th:
        tiers[k] = None if tb.get(k) is None or th[k] is None else th[k] - tb[k]
    facts = []
    for name in sorted(set(b.job.plan.facts) | set(h.job.plan.facts)):
        vb, vh = b.job.plan.value(name), h.job.plan.value(name)
        if vb != vh:
            facts.append((name, vb, vh))
    d = JobDelta(entry=h.job.entry or "", base_verdict=lb.verdict(), head_verdict=lh.verdict(),
                 base_peak=lb.peak, head_peak=lh.peak, capacity=lh.capacity_bytes,
                 tiers={k: v for k, v in tiers.items() if v}, facts=facts, gpu=h.gpu)
    fx = getattr(h, "fix", None)
    fit = getattr(h, "fit", None)
    if fx is not None:
        d.fix = fx.label
    elif fit is not None and fit.first is not None:
        d.fix = fit.first.label
    if d.base_verdict in _FITS and d.head_verdict not in _FITS:
        d.regression = f"fitted at the base ({d.base_verdict}), {d.head_verdict} now"
    elif d.base_verdict == "fits" and d.head_verdict == "tight":
        d.regression = "fitted with the headroom kept at the base, inside the margin now"
    elif d.capacity and d.base_peak is not None and d.head_peak is not None:
        room = d.capacity - d.base_peak
        lost = d.head_peak - d.base_peak
        if room > 0 and lost > max_loss * room:
            d.regression = (f"takes {lost / room:.0%} of the job's headroom "
                            f"(more than {max_loss:.0%})")
    return d


def render_text(deltas: list[JobDelta], ref: str) -> str:
    if not deltas:
        return f"memory changes since {ref}: none in the touched jobs"
    lines = [f"memory changes since {ref}:"]
    for d in deltas:
        lines.append(f"  {d.line()}")
        tiers = ", ".join(f"{k} {_signed(v)}" for k, v in d.tiers.items() if k != "total")
        if tiers:
            lines.append(f"    per GPU: {tiers}")
        if d.regression:
            lines.append(f"    regression: {d.regression}")
    return "\n".join(lines)


def render_markdown(deltas: list[JobDelta], ref: str) -> str:
    out = [f"### Memory changes since {code_span(ref)}", ""]
    if not deltas:
        return "\n".join(out + ["No memory change in the touched jobs.", ""])
    for d in deltas:
        icon = "❌" if d.regression else ("⚠️" if (d.change or 0) > 0 else "✅")
        out.append(f"- {icon} {escape(d.line())}"
                   + (f" — **regression:** {escape(d.regression)}" if d.regression else ""))
    return "\n".join(out + [""])
