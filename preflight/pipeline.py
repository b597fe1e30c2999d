"""discover → extract/assemble → estimate → rules, for `preflight check`."""

from __future__ import annotations

import contextlib
import gc
from typing import Any, Iterator, Optional

from preflight import both_ends, cache as C, engine, job_pool as jobs_pool, runcache, timing
from preflight.assemble import assemble, run_context
from preflight.config import load_project_config
from preflight.discover.jobs import discover
from preflight.discover.walk_tests import WalkTests
from preflight.extract.pool import extract_all
from preflight.lazy import lazy
from preflight.options import CheckOptions
from preflight.physics import estimate
from preflight.hardware import custom, lookup
from preflight.models.param_tensors import with_catalogue_tensors
from preflight.plan import Diagnostic, Source, merge
from preflight.progress import progress
from preflight.project import find_root
from preflight.result import JobResult, Report
from preflight.sizing import has_evidence, not_sized
from preflight.timing import stage
from preflight.walk import expand_paths, project_groups, walk_paths  # noqa: F401 - the run's walk

ahead = lazy("preflight.ahead")
cells = lazy("preflight.report.cells")


def resolve_gpu(gpu: Any = None, gpu_memory: Optional[int] = None) -> tuple[Any, Optional[str]]:
    """(hardware object for the estimator, display name). `gpu` may already be a hardware
    object, a catalogue name, or None; `gpu_memory` (bytes) makes a custom one.
    Raises ValueError for an unknown name (the CLI turns it into a usage error)."""
    if gpu_memory:
        hw = custom(int(gpu_memory))
        return hw, f"a {engine.gib(gpu_memory)} GPU"
    if gpu is None or not isinstance(gpu, str):
        return gpu, getattr(gpu, "name", None)
    hw = lookup(gpu)
    return hw, getattr(hw, "name", None) or gpu


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


def run(paths: list[str], options: CheckOptions) -> Report:
    """Check the jobs `paths` (and `options.command`) belong to, as `options` says
    (`preflight.options.CheckOptions`: read here are the GPU, headroom, config, select /
    ignore, sets, overrides, the estimator's assumptions, the rules, fixes, the cache and
    the workers). The options' GPU and headroom override the project config
    (`[tool.preflight]` of the nearest pyproject.toml, per project unless `options.config`
    is given); their select / ignore are added to the config's. Findings pass through
    select/ignore, per-file-ignores and `# noqa` before they reach the report. With
    `options.fixes` (or `suggest`) each job that does not fit gets the planner's
    alternatives and the first as file edits (`preflight.fix.attach.attach_fix`).

    `options.cache`: keep per-file extractions in the cache folder (`cache_dir`, else the
    `cache-dir` setting, else `.preflight_cache` at the project root). `options.jobs`:
    worker processes for extraction and for checking the jobs (None: as many as pay —
    none for a few files or jobs). Runs with the cyclic garbage collector paused
    (`gc_paused`)."""
    store = None
    if options.cache:
        import os
        first = paths[0] if paths else os.getcwd()
        cfg = options.config if options.config is not None else load_project_config(first)
        store = C.ExtractionCache(options.cache_dir or C.folder_for(cfg, find_root(first)))
    else:
        store = C.ExtractionCache(None)       # this run only: nothing is extracted twice
    with gc_paused(), C.using(store):
        try:
            return _run(paths, options)
        finally:
            store.save()


def _run(paths: list[str], options: CheckOptions) -> Report:
    import os

    timing.clear()
    command = list(options.command) if options.command else None
    walked = any(os.path.isdir(p) for p in paths)
    with stage("walk"):
        empty: list[Diagnostic] = []
        if walked and both_ends.can_fork():
            # the walk and the walked files' text tests in a second process, while this
            # one imports what checking the jobs needs (before job workers fork, so
            # they need not); then the tests from both ends
            groups = _walk_and_test(paths, empty, meanwhile=lambda: _prepare_jobs(options.apply_rules))
        else:
            groups = project_groups(expand_paths(list(paths), empty)) if paths else [(None, [])]
    report = Report(diagnostics=empty)
    planned = []      # (spec, config) in report order
    for n, (project, files) in enumerate(groups):
        cfg = options.config
        if cfg is None:
            cfg = load_project_config(project or (paths[0] if paths else os.getcwd()))
        root = find_root(files[0]) if files else None
        # a command line belongs to the project the check runs from (the first one)
        with stage("discover"):
            specs, diags = discover(files, command if n == 0 else None, root=root, walked=walked)
        report.diagnostics += list(diags) + [d for d in cfg.diagnostics if d not in report.diagnostics]
        planned += [(spec, cfg) for spec in specs]

    # every file of every job extracted once: here (over worker processes when there are
    # many files), or, when the jobs themselves are checked over workers, by the worker
    # that checks the job — its files travel back once, inside its result
    by_job = jobs_pool.workers_for(len(planned), options.jobs) > 1
    cache: dict = {}
    if not by_job:
        wanted = []
        for spec, _ in planned:
            for path in spec.files:
                wanted.append((path, *run_context(spec, path)))
        with stage("extract"):
            cache = extract_all(wanted, workers=options.jobs)     # keyed as assemble looks them up

    cli_gpu = (options.gpu, options.gpu_memory) if options.gpu_given else None
    fixes = None
    if options.fixes or options.suggest:
        fixes = {"headroom": options.headroom, "full": options.suggest,
                 "config": options.config if options.config is not None
                 else load_project_config(paths[0] if paths else os.getcwd())}
    filters: dict[int, engine.Filters] = {}

    def filters_of(cfg) -> engine.Filters:
        filt = filters.get(id(cfg))
        if filt is None:
            filt = filters[id(cfg)] = engine.Filters(
                select=options.select_for(cfg), ignore=options.ignore_for(cfg),
                per_file_ignores=cfg.per_file_ignores, root=cfg.root)
        return filt

    def one(n: int) -> JobResult:
        spec, cfg = planned[n]
        filt = filters_of(cfg)
        job_headroom = options.headroom_for(cfg)
        if by_job:
            with stage("extract"):
                cache.update(extract_all([(path, *run_context(spec, path)) for path in spec.files],
                                         workers=1))
        with stage("assemble"):
            job = assemble(spec, cache, sets=list(options.sets), only_contributing=walked,
                           hub=options.hub_for(cfg))
        if options.overrides:
            # `preflight estimate FILES --zero 3 …`: the flags change the plan before it is
            # sized and checked, so the ledger and the findings describe the same job
            # (a --model flag names another model: its catalogue tensors, not the file's)
            job.plan = with_catalogue_tensors(
                merge(job.plan.candidate_pairs() + list(options.overrides)))
        for ext in job.extractions:
            filt.noqa.add_extraction(ext)
        # which GPU: the command line, else the job's own (sbatch constraint, declared
        # job), else [tool.preflight]. An unknown name there is a finding, not a crash.
        if cli_gpu:
            hw, name = resolve_gpu(*cli_gpu)
        else:
            hw, name, gdiags = _job_gpu(spec, job, cfg)
            job.diagnostics.extend(gdiags)
        with stage("estimate"):
            est = estimate(job.plan, hw, job_headroom, mfu=options.mfu, family=options.family)
        diagnostics = list(job.diagnostics)
        # a script started by a distributed launcher (torchrun, deepspeed, accelerate, srun…)
        # is a training job even when none of its settings could be read: never a pass
        launched = spec.invocation is not None and spec.invocation.launcher not in (None, "python")
        unsized = not_sized(job.plan, est, entry=job.entry, diagnostics=job.diagnostics) \
            if launched or has_evidence(job.plan) else None
        if options.apply_rules:
            sel, ign = options.select_for(cfg), options.ignore_for(cfg)
            ctx = engine.RuleContext(plan=job.plan, estimate=est, job=job, config=cfg,
                                     gpu_name=name, headroom=job_headroom, unsized=unsized)
            with stage("rules"):
                diagnostics += engine.run_rules(ctx, options.rules, sel, ign)
        diagnostics = engine.dedupe_sort(d for d in diagnostics if filt.keep(d))
        jr = JobResult(job=job, estimate=est, diagnostics=diagnostics, gpu=name,
                       unsized=unsized, hardware=hw)
        if fixes is not None:
            # here: lazy() would import the fix package, which formats that show no fix never load
            from preflight.fix.attach import attach_fix
            with stage("fixes"):
                attach_fix(jr, **fixes)
        return jr

    if by_job and options.apply_rules:
        engine.load_rules()         # once, before the workers are forked
    # a one-line indicator on a terminal's stderr for long runs
    for n, jr in enumerate(progress(jobs_pool.run(one, len(planned), options.jobs), len(planned))):
        report.jobs.append(jr)
        if by_job:      # checked in a worker: the report's own findings honour its `# noqa` too
            for ext in jr.job.extractions:
                filters_of(planned[n][1]).noqa.add_extraction(ext)
    first_filter = filters_of(planned[0][1] if planned else options.config
                              if options.config is not None
                              else load_project_config(paths[0] if paths else os.getcwd()))
    report.diagnostics = engine.dedupe_sort(d for d in report.diagnostics if first_filter.keep(d))
    if any(e.extras.get("notebook") for jr in report.jobs for e in jr.job.extractions):
        cells.relocate(report)      # a notebook's findings at cell and line, in every format
    return report


def _walk_and_test(paths: list[str], diags: list[Diagnostic], meanwhile) -> list:
    """`project_groups(expand_paths(paths))`, made by a forked process (started here, or
    ahead of the run by the command line: `preflight.ahead`) that then asks the walked
    files their tests (`discover.walk_tests.WalkTests`) from one end of the list while this process,
    once `meanwhile()` is done, asks them from the other. What the other process read,
    answered and extracted comes back: `discover` finds it in the cache's memory."""
    asker = WalkTests()

    def count_of(made: tuple) -> int:
        return len(asker.prepare([f for _, files in made[0] for f in files]))

    with runcache.recording() as rec:       # reads kept apart here: the child's travel back
        made, got = both_ends.run_after(lambda: walk_paths(paths), count_of, asker.ask,
                                        lambda: asker.child_result(rec), meanwhile=meanwhile,
                                        helper=ahead.take(paths))
    runcache.absorb((rec.files, rec.env))
    groups, found, read = made
    runcache.absorb(read)
    diags += found
    asker.take(got)
    return groups


#: what checking a job imports (extraction, model counting, sizing, rules, fixes), loaded
#: once in this process when many jobs are ahead rather than once per job worker
_JOB_MODULES = (
    "preflight.extract.python", "preflight.lang.python", "preflight.extract.py_patterns",
    "preflight.extract.numel", "preflight.extract.pins", "preflight.extract.ds_pydict",
    "preflight.extract.flags", "preflight.extract.shell_file", "preflight.extract.json_file",
    "preflight.extract.yaml_file", "preflight.extract.toml_file", "preflight.resolve.entry",
    "preflight.resolve.documented", "preflight.models.modules",
    "preflight.models.forward", "preflight.models.lora", "preflight.models.vision",
    "preflight.physics.ledger", "preflight.physics.states", "preflight.physics.activations",
    "preflight.physics.walls", "preflight.physics.stages", "preflight.physics.comm",
    "preflight.physics.moe", "preflight.physics.mla", "preflight.physics.phases",
    "preflight.fix.attach", "preflight.fix.python_file", "preflight.fix.shell_file",
    "preflight.fix.json_file", "preflight.fix.yaml_file", "preflight.fix.toml_file",
    "preflight.plan_fit.search", "preflight.plan_fit.diagnose", "preflight.plan_fit.limits",
)


def _prepare_jobs(apply_rules: bool) -> None:
    import importlib
    for name in _JOB_MODULES:
        importlib.import_module(name)
    if apply_rules:
        engine.load_rules()


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
