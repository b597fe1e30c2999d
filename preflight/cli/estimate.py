"""`preflight estimate` — the ledger for a job given by explicit flags."""

import click


@click.command()
def estimate() -> None:
    """Print the per-GPU memory ledger and the scaling walls."""
    raise click.UsageError("not implemented yet")
