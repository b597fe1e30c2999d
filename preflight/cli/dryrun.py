"""`preflight dryrun` — run exactly one real training step and measure the ledger."""

import click


@click.command()
def dryrun() -> None:
    """Run one optimizer step of the job and compare with the prediction."""
    raise click.UsageError("not implemented yet")
