"""`preflight rules` and `preflight explain CODE`."""

import click


@click.command()
def rules() -> None:
    """List the rules."""
    raise click.UsageError("not implemented yet")


@click.command()
@click.argument("code")
def explain(code: str) -> None:
    """Show a rule's documentation."""
    raise click.UsageError("not implemented yet")
