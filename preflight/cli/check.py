"""`preflight check PATH… [-- COMMAND]` — lint training jobs."""

from __future__ import annotations

import click


@click.command()
@click.argument("paths", nargs=-1)
@click.option("--format", "fmt", type=click.Choice(
    ["text", "concise", "json", "github", "sarif", "markdown"]), default="text")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when there are findings.")
@click.option("--diff-base", metavar="REF",
              help="Only the jobs touched since the git ref REF (git diff REF...HEAD).")
def check(paths: tuple[str, ...], fmt: str, exit_zero: bool, diff_base: str | None) -> int:
    """Check training jobs: scripts, launchers and configs (or a launch command after --)."""
    from preflight import pipeline

    command = (click.get_current_context().obj or {}).get("command")
    report = pipeline.run(list(paths), command)
    from preflight.report import DiffBaseError, filter_changed, render
    if diff_base:
        try:
            report = filter_changed(report, diff_base)
        except DiffBaseError as e:
            raise click.UsageError(f"--diff-base: {e}")
    click.echo(render(report, fmt, diff_base=diff_base), nl=False)
    n = sum(len(j.diagnostics) for j in report.jobs) + len(report.diagnostics)
    return 0 if exit_zero or n == 0 else 1
