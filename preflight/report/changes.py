"""`--diff-base REF`: keep the jobs that a file changed since REF belongs to."""

from __future__ import annotations

import os
import subprocess
from typing import TYPE_CHECKING, Optional

from preflight.report.common import root_dir
from preflight.report.errors import DiffBaseError

if TYPE_CHECKING:  # pragma: no cover
    from preflight.result import Report


def _git(args: list[str], cwd: str) -> str:
    try:
        r = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as e:
        raise DiffBaseError(f"cannot run git: {e}") from None
    if r.returncode != 0:
        msg = (r.stderr.strip().splitlines() or ["git failed"])[-1]
        raise DiffBaseError(f"git {' '.join(args)}: {msg}")
    return r.stdout


def resolve_ref(base: str, cwd: str) -> str:
    """The commit `base` names, as a full hash — or DiffBaseError. A ref is never read as
    an option: one starting with `-` is refused before git sees it, and git itself is told
    where options end (`--end-of-options`), so `--output=x` cannot make git write a file."""
    if not base or base.startswith("-") or "\0" in base or any(c in base for c in "\n\r"):
        raise DiffBaseError(f"--diff-base {base!r} is not a git revision")
    try:
        r = subprocess.run(["git", "rev-parse", "--verify", "--quiet", "--end-of-options",
                            f"{base}^{{commit}}"], cwd=cwd, capture_output=True, text=True,
                           timeout=60)
    except (OSError, subprocess.SubprocessError) as e:
        raise DiffBaseError(f"cannot run git: {e}") from None
    sha = r.stdout.strip()
    if r.returncode != 0 or not sha or sha.startswith("-"):
        raise DiffBaseError(f"--diff-base {base!r} is not a commit of this repository")
    return sha


def changed_files(base: str, root: Optional[str] = None) -> set[str]:
    """Absolute real paths of the files that differ between BASE and HEAD
    (`git diff --name-only BASE...HEAD`: changes on this branch since it left BASE)."""
    cwd = root_dir(root)
    top = _git(["rev-parse", "--show-toplevel"], cwd).strip()
    sha = resolve_ref(base, top)
    out = _git(["-c", "core.quotepath=off", "diff", "--name-only", "-z", f"{sha}...HEAD", "--"], top)
    return {os.path.realpath(os.path.join(top, p)) for p in out.split("\0") if p}


def filter_changed(report: "Report", base: str, root: Optional[str] = None) -> "Report":
    changed = changed_files(base, root)

    def touched(path: Optional[str]) -> bool:
        return bool(path) and os.path.realpath(path) in changed

    jobs = [j for j in report.jobs
            if any(touched(f) for f in [j.job.entry, *j.job.files])]
    loose = [d for d in report.diagnostics if not d.path or touched(d.path)]
    return report.model_copy(update={"jobs": jobs, "diagnostics": loose})
