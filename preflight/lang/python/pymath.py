"""The `math` module as a script uses it for sizes (`math.ceil(hidden * math.pi / 64) *
64`): its constants and the functions of known numbers that cannot blow up (no factorial,
no power), computed as Python computes them."""

from __future__ import annotations

import math
from typing import Any, Optional

MATH_CONSTANTS = {"math.pi": math.pi, "math.e": math.e, "math.tau": math.tau,
                  "math.inf": math.inf}

_ONE = {"ceil": math.ceil, "floor": math.floor, "sqrt": math.sqrt, "log2": math.log2,
        "log10": math.log10, "trunc": math.trunc, "fabs": math.fabs, "isqrt": math.isqrt}
_TWO = {"gcd": math.gcd, "copysign": math.copysign, "fmod": math.fmod}
#: the calls `math_call` computes
MATH_CALLS = frozenset(f"math.{n}" for n in list(_ONE) + list(_TWO) + ["log"])


def math_call(qual: str, values: list[Any]) -> Optional[Any]:
    """`math.<fn>(*values)` of known numbers; None when it does not apply or raises."""
    if not values or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                             for v in values):
        return None
    name = qual.rsplit(".", 1)[-1]
    try:
        if name in _ONE and len(values) == 1:
            return _ONE[name](values[0])
        if name in _TWO and len(values) == 2:
            return _TWO[name](*values)
        if name == "log" and len(values) in (1, 2):
            return math.log(*values)
    except (ValueError, OverflowError, TypeError, ZeroDivisionError):
        return None
    return None
