"""`preflight check PATH… [-- COMMAND]` — lint training jobs.

Exit status: 0 clean, 1 findings at or above the fail level (`[tool.preflight]
fail-level`, default warning), 2 usage or internal error. A file that cannot be read or
parsed is a PF0xx finding, not exit 2.
"""

from __future__ import annotations

import os
from typing import Any, Optional

import click

from preflight import DISTRIBUTION as DIST
from preflight.report import FORMATS


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
@click.option("--timeout", type=click.FloatRange(1, None), default=600.0, show_default=True,
              help="Seconds before --dry-run ends a job that has not stepped.")
@click.option("--config", "config_path", type=click.Path(dir_okay=False),
              help="pyproject.toml to read [tool.preflight] from (default: nearest).")
def check(paths: tuple[str, ...], gpu: Optional[str], gpu_memory: Optional[str],
          headroom: Optional[float], select: tuple[str, ...], ignore: tuple[str, ...],
          fmt: str, exit_zero: bool, show_ledger: bool, statistics: bool, quiet: bool,
          fail_level: Optional[str],
          diff_base: Optional[str], dry_run: bool, device: str, nproc_per_node: int,
          timeout: float, config_path: Optional[str]) -> int:
    """Check training jobs: scripts, launchers and configs (or a launch command after --)."""
    from preflight import api, engine
    from preflight.cli import options
    from preflight.config import load_project_config
    from preflight.hardware import UnknownGPU

    command = (click.get_current_context().obj or {}).get("command")
    if not paths and not command:
        raise click.UsageError("give files to check, or a launch command after --")
    if headroom is not None and not 0 <= headroom < 1:
        raise click.UsageError(f"--headroom must be in [0, 1), got {headroom}")
    mem = options.gpu_memory(gpu_memory)
    start = config_path or (paths[0] if paths else os.getcwd())
    config = load_project_config(start)
    try:
        report = api.check(list(paths), gpu=gpu, gpu_memory=mem, headroom=headroom,
                           config=config, select=select, ignore=ignore, command=command)
    except UnknownGPU as e:
        raise click.UsageError(f"--gpu: {e.args[0] if e.args else e}")
    level = fail_level or config.fail_level
    dry_texts: list[str] = []
    dry_failed = False
    if dry_run:
        dry_texts, dry_failed = _dry_run(report, command, device, nproc_per_node, timeout)

    for msg in engine.LOAD_ERRORS:
        click.echo(f"preflight: warning: {msg}", err=True)
    if diff_base:
        from preflight.report import DiffBaseError, filter_changed
        try:
            report = filter_changed(report, diff_base)
        except DiffBaseError as e:
            raise click.UsageError(f"--diff-base: {e}")
    from preflight.report import render
    out = render(report, fmt, show_ledger=show_ledger, fail_level=level,
                 rules=engine.load_rules(), diff_base=diff_base, quiet=quiet,
                 statistics=statistics)
    click.echo(out, nl=not out.endswith("\n") and bool(out))
    if dry_texts and fmt in ("text", "concise"):
        click.echo("\n".join(dry_texts))
    if exit_zero:
        return 0
    return 1 if dry_failed or engine.fails(report.all_diagnostics(), level) else 0


def _dry_run(report: Any, command: Optional[list[str]], device: str, nproc: int,
             timeout: float) -> tuple[list[str], bool]:
    """One real optimizer step per job with a Python entry script (the job's own launch
    arguments when a command was given); each job's JSON gets a `dryrun` section and each
    static finding with a diagnosis case a confirmed / refuted verdict."""
    from preflight.dryrun.report import format_text, report_json
    from preflight.dryrun.runner import TorchMissing, run_dryrun
    from preflight.engine import load_rules

    cases = {r.code: r.case for r in load_rules() if r.case}
    texts: list[str] = []
    failed = False
    for jr in report.jobs:
        script = jr.job.entry
        if not script or not script.endswith(".py"):
            continue
        args: list[str] = []
        if command and script in command:
            args = list(command[command.index(script) + 1:])
        try:
            result = run_dryrun(script, args, device=device, nproc_per_node=nproc,
                                timeout=timeout)
        except TorchMissing as e:
            raise click.UsageError(f"--dry-run: {e}")
        except FileNotFoundError as e:
            raise click.UsageError(f"--dry-run: {e}")
        jr.dryrun = report_json(result, jr.estimate, jr.diagnostics, cases=cases)
        texts.append(format_text(result, jr.estimate, jr.diagnostics, cases=cases))
        failed = failed or result.status != "ok"
    return texts, failed
