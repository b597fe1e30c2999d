"""A fact's value from the text a user types: `--set micro_batch=4`, `--set fsdp=full_shard`.

Names and values are the vocabulary's (`preflight.facts`): a count is read as
`preflight.units.parse_count` reads it (7e9, 7B, 6_738_415_616), every value is checked by
`preflight.facts.check_value`, the one validation a fact has.
"""

from __future__ import annotations

from typing import Any

from preflight.facts import check_value, spec
from preflight.facts.names import CONTRACT_FACTS
from preflight.plan import Fact, Origin, Source
from preflight.units import parse_count

#: where a `--set` fact comes from, in every output
SET_SOURCE = Source(path="<--set>")
_NOT_USED = ("null", "none", "no", "off", "false")


def parse_fact(name: str, text: str) -> Any:
    """The value of fact `name` written as `text`. Raises ValueError naming what is accepted."""
    name, t = name.strip(), text.strip()
    if name not in CONTRACT_FACTS:
        raise ValueError(f"unknown fact {name!r}: one of {', '.join(CONTRACT_FACTS)}")
    s = spec(name)
    if not t:
        raise ValueError(f"{name}: empty value")
    value: Any = t
    if s.kind == "int":
        try:
            value = parse_count(t)
        except ValueError as e:
            raise ValueError(f"{name}: {e}") from None
    elif s.kind == "enum":
        value = None if (s.none_ok and t.lower() in _NOT_USED) else t.lower()
        if value is not None and name != "offload":
            value = value.replace("-", "_")
    elif s.kind == "dict":
        if t.lower() not in ("false", "none", "no"):
            raise ValueError(f"{name}: only `false` (no adapter) can be set here; an adapter's "
                             "settings come from the job's files")
        value = False
    checked, why = check_value(name, value)
    if why is not None:
        raise ValueError(why)
    return checked


def parse_assignment(text: str) -> tuple[str, Any]:
    """`FACT=VALUE` → (fact, value). Raises ValueError."""
    if "=" not in text:
        raise ValueError(f"{text!r} is not FACT=VALUE")
    name, value = text.split("=", 1)
    return name.strip(), parse_fact(name, value)


def set_facts(assignments: list[str]) -> list[tuple[str, Fact]]:
    """`--set` assignments as facts: the user's word, stronger than any file's."""
    out: list[tuple[str, Fact]] = []
    for a in assignments:
        name, value = parse_assignment(a)
        out.append((name, Fact(value=value, origin=Origin.CLI, source=SET_SOURCE,
                               reason=f"--set {a.strip()}")))
    return out
