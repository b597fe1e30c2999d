"""`preflight rules` and `preflight explain CODE`."""

from __future__ import annotations

import json

import click

from preflight.lazy import lazy

# the rule registry loads the rules: `--help` and the other commands do without it
engine = lazy("preflight.engine")


def _tags(r) -> str:
    tags = [f"severity **{r.severity}**"]
    if r.misconception:
        tags.append(f"misconception **{r.misconception}**")
    if r.case:
        tags.append(f"diagnosis case **{r.case}**")
    if r.stage:
        tags.append(f"reported by the {r.stage} stage")
    return ", ".join(tags)


def reference_markdown(rules) -> str:
    """The rule index and every rule's documentation, as docs/rules.md carries them."""
    out = ["## Rule index", "", "| code | name | severity | misconception | case | summary |",
           "|---|---|---|---|---|---|"]
    for r in rules:
        out.append(f"| [{r.code}](#{r.code.lower()}-{r.name}) | `{r.name}` | {r.severity} | "
                   f"{r.misconception or ''} | {r.case or ''} | {r.summary} |")
    out += ["", _LEGEND, "", "## The rules", ""]
    for r in rules:
        body = "\n".join(("##" + ln) if ln.startswith("## ") else ln
                         for ln in r.docs().splitlines())
        out += [f"### {r.code} {r.name}", "", f"{r.summary}. ({_tags(r)})", "", body, ""]
    return "\n".join(out)


_LEGEND = """\
Misconceptions (docs/ledger.md): 1 memory = params × 4 bytes; 2 a smaller batch shrinks the
optimizer; 3 mixed precision halves memory; 4 an OOM means the model must be split;
5 50 % scaling efficiency means bad hardware; 6 a finer ledger is an exact one.
Cases (docs/ledger.md): A model states, B activations, C one layer or tensor — prescribed in
that order (config change → training-loop change → model rewrite). A rule has a case when
its findings predict an OOM of that kind (each such finding carries `data["case"]`, which
`preflight dryrun` confirms or refutes); PF106's activation branch predicts case B.

Input problems (`PF0xx`) are reported by the stage that meets them — discovery, the
extractors, model resolution — as soon as it does; their rules document them and carry
examples like every other rule. Consistency findings (`PF4xx`) are rules over the
assembled job (PF401 is reported by assembly, which resolves DeepSpeed's `"auto"`)."""


@click.command()
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
              show_default=True)
def rules(fmt: str) -> None:
    """List the rules: code, name, misconception, case and summary."""
    rs = engine.load_rules()
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
    r = engine.get_rule(code)
    if r is None:
        known = ", ".join(x.code for x in engine.load_rules())
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
