"""`preflight check PATH… [-- COMMAND]` — lint training jobs."""

from __future__ import annotations

import json

import click


@click.command()
@click.argument("paths", nargs=-1)
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when there are findings.")
def check(paths: tuple[str, ...], fmt: str, exit_zero: bool) -> int:
    """Check training jobs: scripts, launchers and configs (or a launch command after --)."""
    from preflight import pipeline

    command = (click.get_current_context().obj or {}).get("command")
    report = pipeline.run(list(paths), command)
    if fmt == "json":
        click.echo(json.dumps(report.to_json(), indent=2))
    else:
        for j in report.jobs:
            for d in j.diagnostics:
                click.echo(f"{d.path}:{d.line}:{d.col}: {d.code} {d.message}")
    n = sum(len(j.diagnostics) for j in report.jobs) + len(report.diagnostics)
    return 0 if exit_zero or n == 0 else 1
