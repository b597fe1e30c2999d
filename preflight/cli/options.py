"""Options several commands share, parsed once so that every command says the same thing
about a bad value (one line on stderr, exit 2)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import click

from preflight.facts import names
from preflight.lazy import lazy
from preflight.units import parse_size

# the options types only for an error to word: every command line would build them
options_types = lazy("preflight.options")

if TYPE_CHECKING:  # pragma: no cover
    from preflight.options import OptionError

#: options whose bad value every command reports in one line (`Error: --gpu-memory: …`),
#: without the usage block
ONE_LINE = ("gpu_memory",)


def flag_error(e: "OptionError", options: type) -> click.ClickException:
    """A bad option value of an options type (`preflight.options`), said of its flag:
    `--headroom must be in [0, 1), got 1.5`, `--set: 'x' is not FACT=VALUE`."""
    text = e.worded(options_types.flag_of(options, e.option) or e.option)
    return click.ClickException(text) if e.option in ONE_LINE else click.UsageError(text)


def gpu_memory(text: Optional[str]) -> Optional[int]:
    """`--gpu-memory 80GiB` → bytes; a bare number or an unknown unit is a usage error."""
    if text is None:
        return None
    try:
        return parse_size(text)
    except ValueError as e:
        raise click.ClickException(f"--gpu-memory: {e}") from None


def fact_help(fact: str) -> str:
    """A flag's help from its fact's one description in the vocabulary."""
    doc = names.spec(fact).doc
    return doc[:1].upper() + doc[1:] + "."


def fact_value(flag: str, fact: str, text: Optional[str]):
    """`--dropout 0.1` → the fact's value, checked by the vocabulary's one validation
    (`names.check_value`); a bad value is a one-line usage error."""
    if text is None:
        return None
    value: object = text
    if names.spec(fact).kind in ("prob", "int"):
        try:
            value = float(text)
        except ValueError:
            raise click.ClickException(f"--{flag}: not a number: {text!r}") from None
    checked, why = names.check_value(fact, value)
    if why is not None:
        raise click.ClickException(f"--{flag}: {why}")
    return checked
