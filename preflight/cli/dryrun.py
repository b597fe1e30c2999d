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

from preflight.lazy import lazy

# the static prediction beside the measurement: loaded only when a step is measured
options_types = lazy("preflight.options")
pipeline = lazy("preflight.pipeline")


@click.command()
@click.argument("script", type=click.Path(dir_okay=False))
@click.argument("script_args", nargs=-1, type=click.UNPROCESSED)
@click.option("--device", type=click.Choice(["auto", "cuda", "cpu", "fake"]), default="auto",
              show_default=True, help="fake: FakeTensorMode on CPU, any size, an estimate.")
@click.option("--nproc-per-node", type=click.IntRange(1, 1024), default=1, show_default=True,
              help="Launch through torchrun with this many processes (one ledger each).")
@click.option("--timeout", type=click.FloatRange(1, 7 * 86400), default=600.0, show_default=True,
              help="Seconds before the job is ended.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
              show_default=True)
@click.option("--predict/--no-predict", default=True, show_default=True,
              help="Also run the static analysis of the job and set the prediction beside "
                   "the measurement.")
def dryrun(script: str, script_args: tuple[str, ...], device: str, nproc_per_node: int,
           timeout: float, fmt: str, predict: bool) -> int:
    """Run one optimizer step of SCRIPT under instrumentation and report the ledger."""
    # the dry run's side: `lazy()` would load the package `preflight.dryrun` on every
    # start-up (`--help`, `check`)
    from preflight.dryrun.report import format_text, report_json
    from preflight.dryrun.runner import TorchMissing, run_dryrun

    ctx = click.get_current_context()
    args = list(script_args) + list((ctx.obj or {}).get("command") or [])
    try:
        result = run_dryrun(script, args, device=device, nproc_per_node=nproc_per_node,
                            timeout=timeout)
    except TorchMissing as e:
        click.echo(f"preflight: {e}", err=True)
        sys.exit(2)
    except (FileNotFoundError, ValueError) as e:
        raise click.UsageError(str(e)) from None
    est, diags = _prediction(script, args, nproc_per_node) if predict else (None, [])
    if fmt == "json":
        click.echo(json.dumps(report_json(result, est, diags), indent=2))
    else:
        click.echo(format_text(result, est, diags))
    return 0 if result.status == "ok" else 1


def _prediction(script: str, args: list[str], nproc_per_node: int):
    """The static estimate and findings for the same launch, or (None, []) when the static
    analysis finds no job or fails (the measurement stands on its own)."""
    try:
        launch = (["torchrun", f"--nproc-per-node={nproc_per_node}"] if nproc_per_node > 1
                  else ["python"]) + [script, *args]
        report = pipeline.run([script], options_types.CheckOptions(command=launch, fixes=False))
        for jr in report.jobs:
            led = jr.estimate.ledger if jr.estimate is not None else None
            if led is not None and any(led.bytes_of(k) for k in ("params", "grads",
                                                                  "optimizer", "activations")):
                return jr.estimate, list(jr.diagnostics)
    except Exception:  # noqa: BLE001 - the prediction is optional
        pass
    return None, []
