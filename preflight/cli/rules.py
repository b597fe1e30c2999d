"""`preflight rules` and `preflight explain CODE`."""

from __future__ import annotations

import json

import click


@click.command()
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
              show_default=True)
def rules(fmt: str) -> None:
    """List the rules: code, name, misconception, case and summary."""
    from preflight.engine import load_rules

    rs = load_rules()
    if fmt == "json":
        click.echo(json.dumps([r.meta() for r in rs], indent=2))
        return
    for r in rs:
        tags = []
        if r.misconception:
            tags.append(f"misconception {r.misconception}")
        if r.case:
            tags.append(f"case {r.case}")
        tag = f" ({', '.join(tags)})" if tags else ""
        click.echo(f"{r.code}  {r.name:<32} {r.severity:<7}  {r.summary}{tag}")


@click.command()
@click.argument("code")
def explain(code: str) -> None:
    """Show a rule's documentation (by code, PF101, or name, state-exceeds-capacity)."""
    from preflight.engine import get_rule, load_rules

    r = get_rule(code)
    if r is None:
        known = ", ".join(x.code for x in load_rules())
        raise click.UsageError(f"no rule {code!r}; known codes: {known}")
    head = f"{r.code} {r.name}: {r.summary}"
    tags = [f"severity {r.severity}"]
    if r.misconception:
        tags.append(f"misconception {r.misconception}")
    if r.case:
        tags.append(f"diagnosis case {r.case}")
    click.echo(head)
    click.echo(", ".join(tags))
    click.echo("")
    click.echo(r.docs())
