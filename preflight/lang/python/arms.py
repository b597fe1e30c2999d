"""The arms of undecided choices: the evaluator runs each arm of an `if` / `match` whose
condition it cannot decide and names it (`Evaluator.choices`: `` `x` is true (line 3)``,
``cond (line 7): branch 2``). Two settings made under different arms of the same choice
can never both run: they are alternatives of the job, not a first and a second."""

from __future__ import annotations

import re


def site(choice: str) -> str:
    """The statement a choice is an arm of: `` `x` is true (line 3)`` and `` `x` is false
    (line 3)`` share `` `x` (line 3)``; ``cond (line 7): branch 2`` is ``cond (line 7)``."""
    c = re.sub(r" is (?:true|false) \(line ", " (line ", choice, count=1)
    return c.rsplit("): ", 1)[0] + ")" if "): " in c else c


def exclusive(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    """Whether settings made under the undecided choices `a` and `b` can never both run:
    they part in different arms of the same `if` / `match`."""
    for x, y in zip(a, b):
        if x != y:
            return site(x) == site(y)
    return False
