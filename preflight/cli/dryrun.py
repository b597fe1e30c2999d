"""`preflight dryrun` — run exactly one real training step and measure the ledger.

    preflight dryrun [--device auto|cuda|cpu|fake] [--nproc-per-node N] [--timeout S]
                     [--format text|json] SCRIPT [-- ARGS...]

The script's own arguments follow `--` (the group splits them off before parsing).
Exit codes: 0 one step measured, 1 the step did not complete (OOM, error, timeout, no
step), 2 usage error or torch missing.
"""

from __future__ import annotations

import json
import sys

import click


@click.command()
@click.argument("script", type=click.Path(dir_okay=False))
@click.argument("script_args", nargs=-1, type=click.UNPROCESSED)
@click.option("--device", type=click.Choice(["auto", "cuda", "cpu", "fake"]), default="auto",
              show_default=True, help="fake: FakeTensorMode on CPU, any size, an estimate.")
@click.option("--nproc-per-node", type=click.IntRange(1, 1024), default=1, show_default=True,
              help="Launch through torchrun with this many processes (one ledger each).")
@click.option("--timeout", type=click.FloatRange(1, None), default=600.0, show_default=True,
              help="Seconds before the job is ended.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
              show_default=True)
def dryrun(script: str, script_args: tuple[str, ...], device: str, nproc_per_node: int,
           timeout: float, fmt: str) -> int:
    """Run one optimizer step of SCRIPT under instrumentation and report the ledger."""
    from preflight.dryrun.report import format_text
    from preflight.dryrun.runner import TorchMissing, run_dryrun

    ctx = click.get_current_context()
    args = list(script_args) + list((ctx.obj or {}).get("command") or [])
    try:
        result = run_dryrun(script, args, device=device, nproc_per_node=nproc_per_node,
                            timeout=timeout)
    except TorchMissing as e:
        click.echo(f"preflight: {e}", err=True)
        sys.exit(2)
    except FileNotFoundError as e:
        raise click.UsageError(str(e)) from None
    if fmt == "json":
        click.echo(json.dumps(result.to_json(), indent=2))
    else:
        click.echo(format_text(result))
    return 0 if result.status == "ok" else 1
