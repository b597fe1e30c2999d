"""`preflight check PATH… [-- COMMAND]` — lint training jobs.

Exit status: 0 clean, 1 findings at or above the fail level (`[tool.preflight]
fail-level`, default warning), 2 usage or internal error. A file that cannot be read or
parsed is a PF0xx finding, not exit 2.
"""

from __future__ import annotations

import os
from typing import Any, Optional

import click

from preflight.cli.options import flag_error
from preflight.lazy import lazy
from preflight.version import DISTRIBUTION as DIST
from preflight.report import FORMATS, SHOWS_FIXES, DiffBaseError, filter_changed, render

# a stored result answers a warm run before the run's own stages are imported
ahead = lazy("preflight.ahead")
api = lazy("preflight.api")
cache = lazy("preflight.cache")
engine = lazy("preflight.engine")
hardware = lazy("preflight.hardware")
memory_deltas = lazy("preflight.report.deltas")
options_types = lazy("preflight.options")
project = lazy("preflight.project")
project_config = lazy("preflight.config")
runcache = lazy("preflight.runcache")
runstore = lazy("preflight.runstore")


@click.command()
@click.argument("paths", nargs=-1)
@click.option("--gpu", help="GPU to check against (H100-80GB, A100-40GB, 4090, …).")
@click.option("--gpu-memory", help="Custom GPU memory instead of --gpu (40GB, 80GiB).")
@click.option("--headroom", type=float, default=None,
              help="Fraction of capacity to keep free (default 0.2 or [tool.preflight] headroom).")
@click.option("--select", multiple=True, help="Only these code prefixes (PF1,PF201). Repeatable.")
@click.option("--ignore", multiple=True, help="Skip these code prefixes. Repeatable.")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True)
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when there are findings.")
@click.option("--show-ledger", is_flag=True, help="Print each job's per-GPU memory ledger.")
@click.option("--statistics", is_flag=True,
              help="Print how many findings of each code instead of the findings.")
@click.option("-q", "--quiet", is_flag=True,
              help="Print the findings and nothing else (no ledger bars, no summary).")
@click.option("--fail-level", type=click.Choice(["error", "warning", "info"]), default=None,
              help="Lowest severity that makes the run fail (default warning).")
@click.option("--diff-base", metavar="REF",
              help="Only the jobs touched since the git ref REF (git diff REF...HEAD).")
@click.option("--dry-run", is_flag=True,
              help="Also run each job's script for exactly one optimizer step and compare "
                   f"(needs torch: pip install '{DIST}[dryrun]').")
@click.option("--device", type=click.Choice(["auto", "cuda", "cpu", "fake"]), default="auto",
              show_default=True, help="Where --dry-run runs the step.")
@click.option("--nproc-per-node", type=click.IntRange(1, 1024), default=1, show_default=True,
              help="Processes per node for --dry-run (torchrun).")
@click.option("--timeout", type=click.FloatRange(1, 7 * 86400), default=600.0, show_default=True,
              help="Seconds before --dry-run ends a job that has not stepped.")
@click.option("--config", "config_path", type=click.Path(dir_okay=False),
              help="pyproject.toml to read [tool.preflight] from (default: nearest).")
@click.option("--no-cache", is_flag=True,
              help="Neither read nor write the cache (.preflight_cache/: stored results, per-file extractions).")
@click.option("--set", "sets", multiple=True, metavar="FACT=VALUE",
              help="Fill a fact the files do not state (micro_batch=4, world_size=16, "
                   "fsdp=full_shard); stronger than any file. Repeatable.")
@click.option("--hub", is_flag=True,
              help="Ask the Hugging Face hub for a model nothing offline sizes: its config.json "
                   "and safetensors headers (never the weights), kept in the hub's cache for the "
                   "next run (needs huggingface_hub: pip install "
                   f"'{DIST}[hub]'). Never while HF_HUB_OFFLINE=1. Default: off, or "
                   "[tool.preflight] hub = true.")
@click.option("--fail-on-unsized", is_flag=True,
              help="Exit 1 when a job could not be sized against a known GPU.")
@click.option("--suggest", is_flag=True,
              help="Show what would fit: each job's ranked alternatives and its limits.")
@click.option("--fix", "apply_fix", is_flag=True,
              help="Write the first alternative that fits into the job's own files, then "
                   "check again.")
@click.option("--diff", "show_diff", is_flag=True,
              help="Print the edits --fix would make as a unified diff (for git apply); "
                   "write nothing. Exit 1 when there are edits.")
@click.option("--fail-on-regression", is_flag=True,
              help="With --diff-base: exit 1 only when a touched job that fitted at the base no "
                   "longer fits, or loses more than --max-headroom-loss of its headroom.")
@click.option("--max-headroom-loss", type=click.FloatRange(0, 1), default=0.5,
              show_default=True, metavar="FRACTION",
              help="Share of a job's headroom a change may take before --fail-on-regression fails.")
def check(**params: Any) -> int:
    """Check training jobs: scripts, launchers and configs (or a launch command after --)."""
    # an unchanged repository checked the same way again: the stored result, nothing read
    stored = _Stored.for_run(params)
    if stored is not None:
        hit = stored.lookup()
        if hit is not None:
            click.echo(hit["stdout"], nl=False)
            if hit["stderr"]:
                click.echo(hit["stderr"], nl=False, err=True)
            return hit["code"]
        stored.prepare()
        # nothing stored: the walk of the directories starts now, in a second process,
        # while this one imports and configures the run (`preflight.ahead`)
        ahead.start(list(params.get("paths") or ()), stored.folder)
    # what the run reads is recorded from the first file on: a stored result depends on it
    try:
        with runcache.recording() as rec:
            return _check(rec, stored, params)
    finally:
        ahead.cancel()              # a helper the run did not take


def _options(params: dict) -> tuple[tuple[str, ...], Any, Any]:
    """(paths, the run's `CheckOptions`, the `[tool.preflight]` the command reads), built
    once from the flags; a bad value is a usage error naming its flag."""
    from dataclasses import replace

    CheckOptions = options_types.CheckOptions
    flags = dict(params)
    paths = tuple(flags.pop("paths"))
    config_path = flags.pop("config_path")
    command = (click.get_current_context().obj or {}).get("command")
    if not paths and not command:
        raise click.UsageError("give files to check, or a launch command after --")
    try:
        options = CheckOptions(command=command, cache=not flags.pop("no_cache"), **flags)
    except options_types.OptionError as e:
        raise flag_error(e, CheckOptions) from None
    gpu_set = [f.value for n, f in options.sets if n == "gpu"]
    if gpu_set and not options.gpu:
        options = replace(options, gpu=str(gpu_set[-1]))
    start = config_path or (paths[0] if paths else os.getcwd())
    config = project_config.load_project_config(start)
    if options.gpu is not None and not options.gpu.strip():
        raise click.UsageError("--gpu: empty GPU name (give a name such as H100-80GB)")
    fmt = options.fmt
    # the planner runs only when something shows or writes its answer
    fixes = (options.show_diff or options.apply_fix or options.suggest or bool(options.diff_base)
             or (fmt in SHOWS_FIXES and not (options.statistics and fmt == "text")))
    # without --config each project found uses its own nearest [tool.preflight]
    options = replace(options, fixes=fixes, config=config if config_path else None)
    return paths, options, config


def _check(rec: Any, stored: Optional["_Stored"], params: dict) -> int:
    from dataclasses import replace

    paths, options, config = _options(params)
    command, fmt = options.command, options.fmt

    def run_check():
        return api.check(list(paths), options)

    try:
        report = run_check()
    except hardware.UnknownGPU as e:
        raise click.UsageError(f"--gpu: {e.args[0] if e.args else e}")
    if options.show_diff or options.apply_fix:
        pairs = _job_fixes(report)

        def in_tree(tree):
            # an absolute path of the command that names a file of the job: its copy
            cmd = [tree(t) if os.path.isabs(t) and os.path.isfile(tree(t)) else t
                   for t in command] if command else None
            return api.check([tree(p) for p in paths],
                             replace(options, command=cmd, cache=False, suggest=False,
                                     fixes=True))
        # the editors' verification (libcst): not loaded by a check that writes nothing,
        # and `lazy()` would load its package `preflight.fix` on every start-up
        from preflight.fix.verify import recheck
        checks = recheck(pairs, in_tree)
        if options.show_diff:
            for (_, fx), rc in zip(pairs, checks):
                for note in fx.notes:
                    click.echo(f"preflight: {note}", err=True)
                click.echo(f"preflight: {rc.line()}", err=True)
            click.echo("".join(fx.diff() for _, fx in pairs), nl=False)
            return 0 if options.exit_zero or not pairs else 1
        written = False
        for (_, fx), rc in zip(pairs, checks):
            if not rc.ok:
                click.echo(f"preflight: not fixed: {fx.label}: {rc.line()}", err=True)
                continue
            for p in fx.apply():
                click.echo(f"preflight: fixed {p}: {fx.label}", err=True)
            for note in fx.notes:
                click.echo(f"preflight: {note}", err=True)
            click.echo(f"preflight: {rc.line()}", err=True)
            written = True
        if written:
            report = run_check()
    level = options.fail_level_for(config)
    dry_texts: list[str] = []
    dry_failed = False
    if options.dry_run:
        dry_texts, dry_failed = _dry_run(report, options)

    printed: list[str] = []
    errs: list[str] = []

    def say(text: str, nl: bool = True, err: bool = False) -> None:
        click.echo(text, nl=nl, err=err)
        (errs if err else printed).append(text + ("\n" if nl else ""))

    for msg in engine.LOAD_ERRORS:
        say(f"preflight: warning: {msg}", err=True)
    diff_base = options.diff_base
    if diff_base:
        try:
            report = filter_changed(report, diff_base)
            # the base checked as the flags say, without --config and --set (the base
            # tree holds its own pyproject.toml)
            base = replace(options, config=None, sets=(), cache=False, suggest=False,
                           fixes=True)
            report.deltas = memory_deltas.compute(
                report, diff_base, lambda: api.check(list(paths), base),
                config_path=config.path, max_loss=options.max_headroom_loss)
            report.delta_base = diff_base
        except DiffBaseError as e:
            raise click.UsageError(f"--diff-base: {e}")
    elif options.fail_on_regression:
        raise click.UsageError("--fail-on-regression needs --diff-base REF")
    out = render(report, fmt, options, rules=engine.load_rules())
    say(out, nl=not out.endswith("\n") and bool(out))
    if dry_texts and fmt in ("text", "concise"):
        say("\n".join(dry_texts))
    if report.deltas is not None and fmt in ("text", "concise"):
        say(memory_deltas.render_text(report.deltas, diff_base or ""))
    if options.suggest and fmt in ("text", "concise"):
        # only --suggest prints the planner's table: `lazy()` would load the package
        # `preflight.plan_fit` on every start-up (`--help`, a stored result)
        from preflight.plan_fit.table import render_text as fit_table
        for jr in report.jobs:
            if jr.fit is not None:
                say(fit_table(jr.fit, jr.job.entry or ""))
    if options.fail_on_regression:
        code = 1 if any(d.regression for d in report.deltas or []) else 0
    elif options.exit_zero:
        code = 0
    elif options.fail_on_unsized and report.unsized_jobs():
        code = 1
    else:
        code = 1 if dry_failed or engine.fails(report.all_diagnostics(), level) else 0
    if stored is not None:
        stored.keep(rec, {"stdout": "".join(printed), "stderr": "".join(errs), "code": code})
    return code


class _Stored:
    """The stored result of this exact run (`preflight.runstore`): keyed on the command
    line, valid while every path the run looked at is unchanged. Not used with --no-cache,
    nor for runs that write files, run a step, or compare with git."""

    def __init__(self, folder: str, key: str) -> None:
        import time
        self.folder, self.key = folder, key
        self.started = time.time()      # before any file is read (racy files are hashed)

    @classmethod
    def for_run(cls, params: dict) -> Optional["_Stored"]:
        if any(params.get(k) for k in ("no_cache", "dry_run", "diff_base", "apply_fix",
                                       "show_diff", "fail_on_regression")):
            return None
        ctx = click.get_current_context()
        command = (ctx.obj or {}).get("command")
        paths = params.get("paths") or ()
        first = paths[0] if paths else os.getcwd()
        folder = project.cache_folder(first, params.get("config_path"))
        argv = [ctx.info_name or "check", sorted((k, repr(v)) for k, v in params.items()), command]
        return cls(folder, runstore.key(argv, version=cache.version()))

    def prepare(self) -> None:
        """Create the cache folder before the run looks at its parent: made during the run,
        it would change the stamp of a folder the run recorded."""
        cache.ExtractionCache(self.folder).prepare()

    def lookup(self) -> Optional[dict]:
        return runstore.load(self.folder, self.key)

    def keep(self, rec: Any, result: dict) -> None:
        runstore.store(self.folder, self.key, rec, self.started, result)


def _job_fixes(report: Any) -> list:
    """(job result, fix) for each job with a fix, none touching a file an earlier job's
    fix already edits (two jobs sharing a config would otherwise write it twice)."""
    out, taken = [], set()
    for jr in report.jobs:
        fx = jr.fix
        if fx is None:
            continue
        paths = {os.path.realpath(f.path) for f in fx.files if f.changed}
        if paths & taken:
            continue
        taken |= paths
        out.append((jr, fx))
    return out


def _dry_run(report: Any, options: Any) -> tuple[list[str], bool]:
    """One real optimizer step per job with a Python entry script (the job's own launch
    arguments when a command was given); each job's JSON gets a `dryrun` section and each
    static finding with a diagnosis case a confirmed / refuted verdict."""
    # the dry run's side: only --dry-run loads it; `lazy()` would load the package
    # `preflight.dryrun` on every start-up
    from preflight.dryrun.report import format_text, report_json
    from preflight.dryrun.runner import TorchMissing, run_dryrun

    cases = {r.code: r.case for r in engine.load_rules() if r.case}
    texts: list[str] = []
    failed = False
    for jr in report.jobs:
        script = jr.job.entry
        if not script or not script.endswith(".py"):
            continue
        command = options.command
        args: list[str] = []
        if command and script in command:
            args = list(command[command.index(script) + 1:])
        try:
            result = run_dryrun(script, args, device=options.device,
                                nproc_per_node=options.nproc_per_node, timeout=options.timeout)
        except TorchMissing as e:
            raise click.UsageError(f"--dry-run: {e}")
        except (FileNotFoundError, ValueError) as e:
            raise click.UsageError(f"--dry-run: {e}")
        jr.dryrun = report_json(result, jr.estimate, jr.diagnostics, cases=cases)
        texts.append(format_text(result, jr.estimate, jr.diagnostics, cases=cases))
        failed = failed or result.status != "ok"
    return texts, failed
