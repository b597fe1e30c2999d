"""A fix re-checked before it is written: the job's files, with the edits applied in
memory, are laid out in a temporary tree that mirrors their paths (with the nearest
pyproject.toml of each), the same check runs there, and each edited job is judged again.
`check --fix` writes an edit only when its job then fits with the global batch unchanged;
`check --diff` says the verdict after the edit beside the diff."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Optional

from preflight.plan_fit import global_batch
from preflight.plan_fit.search import GUARD_RULES
from preflight.project import find_pyproject

GIB = 2 ** 30


@dataclass
class Recheck:
    """The job as the edit leaves it."""

    entry: str
    ok: bool
    verdict: str = "not sized"
    peak: Optional[int] = None
    capacity: Optional[int] = None
    gpu: Optional[str] = None
    batch_before: Optional[int] = None
    batch_after: Optional[int] = None
    why: str = ""                       # why the edit is not written ('' when it is)

    def line(self) -> str:
        size = ""
        if self.peak is not None and self.capacity:
            size = (f" ({self.peak / GIB:.1f} of {self.capacity / GIB:.1f} GiB, "
                    f"{100 * self.peak / self.capacity:.0f} %)")
        batch = ""
        if self.batch_after is not None:
            batch = (f", global batch {self.batch_after} unchanged"
                     if self.batch_after == self.batch_before else
                     f", global batch {self.batch_before} → {self.batch_after}")
        head = f"after the edit {self.entry} {self.verdict}"
        head += f" on {self.gpu}" if self.gpu else ""
        return head + size + batch + ("" if self.ok else f": {self.why}")


def _mirror(tmp: str, path: str, cwd: str) -> str:
    """Where `path` (relative to `cwd`) lies in the tree rooted at `tmp`: the same
    absolute path below it."""
    return os.path.join(tmp, os.path.normpath(os.path.join(cwd, path)).lstrip(os.sep))


@contextlib.contextmanager
def edited_tree(jobs: list[Any], fixes: list[Any]) -> Iterator[Callable[[str], str]]:
    """A temporary tree holding every file of `jobs` (and the nearest pyproject.toml of
    each), with the edits of `fixes` applied; yields the function that maps a path to its
    place in the tree. The current directory is the tree's copy of it meanwhile."""
    tmp = tempfile.mkdtemp(prefix="preflight-fix-")
    after = {os.path.abspath(f.path): f.after for fx in fixes for f in fx.files if f.changed}
    files = {os.path.abspath(f) for j in jobs for f in j.files if f}
    files |= {p for p in (find_pyproject(os.path.dirname(f)) for f in list(files)) if p}
    cwd = os.getcwd()
    try:
        for f in sorted(files):
            dst = _mirror(tmp, f, cwd)
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            if f in after:
                with open(dst, "w", encoding="utf-8", newline="") as fh:
                    fh.write(after[f])
            elif os.path.isfile(f):
                shutil.copyfile(f, dst)
        here = _mirror(tmp, cwd, cwd)
        os.makedirs(here, exist_ok=True)
        os.chdir(here)
        yield lambda p: _mirror(tmp, p, cwd)
    finally:
        os.chdir(cwd)
        shutil.rmtree(tmp, ignore_errors=True)


def _entry_key(jr: Any) -> str:
    j = jr.job
    return os.path.abspath(j.entry or (j.files[0] if j.files else ""))


def judge(before: Any, after_report: Any, tree: Callable[[str], str],
          name: str = "the job") -> Recheck:
    """The re-check of job result `before` in `after_report` (checked in the tree);
    `name`: the job's entry as the user reads it."""
    # here: `--fix` / `--diff` import this module whether or not a job needs a fix, and
    # lazy() would not do for the planner's package (see fix.attach)

    entry = before.job.entry or (before.job.files[0] if before.job.files else "")
    want = tree(entry)                   # `entry` is relative to the directory checked from
    jr = next((j for j in after_report.jobs if _entry_key(j) == want), None)
    gb0 = global_batch(before.job.plan)
    if jr is None:
        return Recheck(entry=name, ok=False, batch_before=gb0,
                       why="the edited files no longer make this job")
    est = jr.estimate
    led = est.ledger if est is not None else None
    verdict = led.verdict() if led is not None and led.lines else "not sized"
    gb1 = global_batch(jr.job.plan)
    out = Recheck(entry=name, ok=False, verdict=verdict, peak=led.peak if led else None,
                  capacity=led.capacity_bytes if led else None, gpu=jr.gpu,
                  batch_before=gb0, batch_after=gb1)
    guards_before = {d.code for d in before.diagnostics if d.code in GUARD_RULES}
    guards_after = {d.code for d in jr.diagnostics if d.code in GUARD_RULES}
    if verdict != "fits":
        out.why = "the edit does not make it fit; nothing written"
    elif gb1 != gb0:
        out.why = "the edit changes the global batch; nothing written"
    elif guards_after - guards_before:
        out.why = (f"the edit breaks {', '.join(sorted(guards_after - guards_before))}; "
                   "nothing written")
    else:
        out.ok = True
    return out


def recheck(pairs: list[tuple[Any, Any]], run_again: Callable[[Callable[[str], str]], Any]
            ) -> list[Recheck]:
    """Re-check each (job result, fix) pair with all the fixes applied at once;
    `run_again(tree)` runs the same check on the tree (paths mapped by `tree`)."""
    if not pairs:
        return []
    names = []
    for jr, _ in pairs:
        e = jr.job.entry or (jr.job.files[0] if jr.job.files else "")
        rel = os.path.relpath(e) if e else "the job"
        names.append(e if rel.startswith(os.pardir) else rel)
    with edited_tree([jr.job for jr, _ in pairs], [fx for _, fx in pairs]) as tree:
        report = run_again(tree)
        return [judge(jr, report, tree, n) for (jr, _), n in zip(pairs, names)]
