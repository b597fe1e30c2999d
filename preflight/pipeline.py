"""discover → extract/assemble → estimate → rules, for `preflight check`."""

from __future__ import annotations

import contextlib
import gc
from typing import Any, Iterator, Optional, Sequence

from preflight import engine
from preflight.assemble import assemble
from preflight.discover import discover
from preflight.estimate import estimate
from preflight.hardware import custom, lookup
from preflight.plan import Diagnostic, Fact, Source, merge
from preflight.result import JobResult, Report


def resolve_gpu(gpu: Any = None, gpu_memory: Optional[int] = None) -> tuple[Any, Optional[str]]:
    """(hardware object for the estimator, display name). `gpu` may already be a hardware
    object, a catalogue name, or None; `gpu_memory` (bytes) makes a custom one.
    Raises ValueError for an unknown name (the CLI turns it into a usage error)."""
    if gpu_memory:
        hw = custom(int(gpu_memory))
        return hw, f"a {engine.gb(gpu_memory)} GPU"
    if gpu is None or not isinstance(gpu, str):
        return gpu, getattr(gpu, "name", None)
    hw = lookup(gpu)
    return hw, getattr(hw, "name", None) or gpu


SKIP_DIRS = {".git", ".hg", ".svn", "__pycache__", ".venv", "venv", "node_modules", ".tox",
             ".mypy_cache", ".pytest_cache", "build", "dist", "site-packages"}
SKIP_FILES = {"pyproject.toml", "setup.py", "conftest.py", "noxfile.py"}


def expand_paths(paths: list[str]) -> list[str]:
    """Directories become the files in them that preflight reads (scripts, launchers,
    configs), sorted; other paths pass through unchanged (a missing one is discovery's
    PF001)."""
    import os

    from preflight.extract import kind_of

    out: list[str] = []
    for p in paths:
        if not os.path.isdir(p):
            out.append(p)
            continue
        found = []
        for root, dirs, files in os.walk(p):
            dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("."))
            for f in files:
                if f in SKIP_FILES or f.startswith("."):
                    continue
                fp = os.path.normpath(os.path.join(root, f))
                head = ""
                if "." not in f:
                    try:
                        with open(fp, encoding="utf-8", errors="replace") as fh:
                            head = fh.read(200)
                    except OSError:
                        continue
                if kind_of(fp, head) != "unknown":
                    found.append(fp)
        out += sorted(found)
    return out


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """The garbage-collection policy of a check: the cyclic collector is paused while jobs
    are read, and its previous state restored afterwards.

    A check builds large, acyclic trees (`ast`, the libcst Modules handed on with each
    script) and keeps them until the report is written; with the collector running, its
    repeated scans of that fast-growing heap cost as much as the parses. Reference
    counting still frees everything acyclic while paused, and cyclic garbage made during
    the check is collected once the collector runs again (nothing is frozen)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def run(paths: list[str], command: Optional[list[str]] = None, gpu=None,
        headroom: Optional[float] = None, *, gpu_memory: Optional[int] = None,
        config=None, select: Sequence[str] = (), ignore: Sequence[str] = (),
        rules=None, apply_rules: bool = True, overrides: Sequence[tuple[str, Fact]] = (),
        mfu: Optional[float] = None, family: Optional[str] = None) -> Report:
    """Check jobs. `gpu` (name or hardware) and `headroom` override the project config
    (`[tool.preflight]`); `select` / `ignore` are added to the config's. Findings pass
    through select/ignore, per-file-ignores and `# noqa` before they reach the report.
    Runs with the cyclic garbage collector paused (`gc_paused`)."""
    with gc_paused():
        return _run(paths, command, gpu, headroom, gpu_memory=gpu_memory, config=config,
                    select=select, ignore=ignore, rules=rules, apply_rules=apply_rules,
                    overrides=overrides, mfu=mfu, family=family)


def _run(paths: list[str], command: Optional[list[str]], gpu, headroom: Optional[float], *,
         gpu_memory: Optional[int], config, select: Sequence[str], ignore: Sequence[str],
         rules, apply_rules: bool, overrides: Sequence[tuple[str, Fact]],
         mfu: Optional[float], family: Optional[str]) -> Report:
    from preflight.report import progress

    if config is None:
        from preflight.config import load_project_config
        import os
        config = load_project_config(paths[0] if paths else os.getcwd())
    if headroom is None:
        headroom = config.headroom
    sel = list(select) or list(config.select)
    ign = list(config.ignore) + list(ignore)

    cli_gpu = (gpu, gpu_memory) if (gpu is not None or gpu_memory) else None
    paths = expand_paths(list(paths))
    specs, diags = discover(paths, command)
    report = Report(diagnostics=list(diags) + list(config.diagnostics))
    filt = engine.Filters(select=sel, ignore=ign, per_file_ignores=config.per_file_ignores,
                          root=config.root)
    cache: dict = {}
    # a one-line indicator on a terminal's stderr for long runs (≥ 20 jobs)
    for spec in progress(specs, len(specs)):
        job = assemble(spec, cache)
        if overrides:
            # `preflight estimate FILES --zero 3 …`: the flags change the plan before it is
            # sized and checked, so the ledger and the findings describe the same job
            job.plan = merge(job.plan.candidate_pairs() + list(overrides))
        for ext in job.extractions:
            filt.noqa.add_extraction(ext)
        # which GPU: the command line, else the job's own (sbatch constraint, declared
        # job), else [tool.preflight]. An unknown name there is a finding, not a crash.
        if cli_gpu:
            hw, name = resolve_gpu(*cli_gpu)
        else:
            hw, name, gdiags = _job_gpu(spec, job, config)
            job.diagnostics.extend(gdiags)
        est = estimate(job.plan, hw, headroom, mfu=mfu, family=family)
        diagnostics = list(job.diagnostics)
        if apply_rules:
            ctx = engine.RuleContext(plan=job.plan, estimate=est, job=job, config=config,
                                     gpu_name=name, headroom=headroom)
            diagnostics += engine.run_rules(ctx, rules, sel, ign)
        diagnostics = engine.dedupe_sort(d for d in diagnostics if filt.keep(d))
        report.jobs.append(JobResult(job=job, estimate=est, diagnostics=diagnostics, gpu=name))
    report.diagnostics = engine.dedupe_sort(d for d in report.diagnostics if filt.keep(d))
    return report


def _job_gpu(spec, job, config) -> tuple[Any, Optional[str], list[Diagnostic]]:
    diags: list[Diagnostic] = []
    fact = job.plan.facts.get("gpu")
    cands: list[tuple[Any, Optional[int], Any]] = []
    if spec.overrides.get("gpu"):
        cands.append((spec.overrides["gpu"], None, None))
    if fact is not None and fact.known and fact.value:
        cands.append((fact.value, None, fact.source))
    if config.gpu or config.gpu_memory:
        src = None
        if config.path:
            key = "gpu" if config.gpu else "gpu_memory"
            src = Source(path=config.path, line=config.lines.get(key, 1), col=1)
        cands.append((config.gpu, config.gpu_memory, src))
    for name, mem, src in cands:
        try:
            hw, shown = resolve_gpu(name, mem)
        except (ValueError, KeyError, LookupError) as e:
            msg = e.args[0] if e.args else str(e)
            diags.append(Diagnostic.at("PF003", f"GPU not resolved: {msg}", src,
                                       name="unresolved-value", severity="warning",
                                       fix="name a known GPU or give --gpu-memory"))
            continue
        return hw, shown, diags
    return None, None, diags
