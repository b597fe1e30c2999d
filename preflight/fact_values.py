"""A fact's value from the text a user types: `--set micro_batch=4`, `--set fsdp=full_shard`.

The spellings accepted are the JSON contract's (`preflight.plan.ENUMS`); counts are read
as `preflight.units.parse_count` reads them (7e9, 7B, 6_738_415_616).
"""

from __future__ import annotations

from typing import Any

from preflight.plan import ENUMS, FACT_NAMES, INT_FACTS, Fact, Origin, Source

_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off", "none"}
#: where a `--set` fact comes from, in every output
SET_SOURCE = Source(path="<--set>")


def parse_fact(name: str, text: str) -> Any:
    """The value of fact `name` written as `text`. Raises ValueError naming what is accepted."""
    name = name.strip()
    if name not in FACT_NAMES:
        raise ValueError(f"unknown fact {name!r}: one of {', '.join(FACT_NAMES)}")
    t = text.strip()
    if name in INT_FACTS:
        from preflight.units import parse_count
        try:
            v = parse_count(t)
        except ValueError as e:
            raise ValueError(f"{name}: {e}") from None
        if v < (0 if name == "zero_stage" else 1) or (name == "zero_stage" and v > 3):
            raise ValueError(f"{name}: {t!r} is out of range")
        return v
    if name == "fsdp" and t.lower() in ("null", "none", "no", "off", "false"):
        return None
    if name in ENUMS:
        v = t.lower().replace("-", "_") if name != "offload" else t.lower()
        if v not in ENUMS[name]:
            raise ValueError(f"{name}: {t!r} is not one of {', '.join(ENUMS[name])}")
        return v
    if name == "sp":
        if t.lower() in _TRUE | _FALSE:
            return t.lower() in _TRUE
        raise ValueError(f"sp: {t!r} is not true or false")
    if name == "lora":
        if t.lower() in _FALSE:
            return False
        raise ValueError("lora: only `false` can be set here; give an adapter's rank in "
                         "[tool.preflight] or in the script")
    if not t:
        raise ValueError(f"{name}: empty value")
    return t                                   # model, gpu: names


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
