"""The Python builtins the counter evaluates (`range`, `len`, `min`, `getattr` on a
config …), the operator names `bounded.binop` takes, and the guard that keeps a builtin
from walking a huge range or growing a huge integer."""

from __future__ import annotations

from typing import Any

from preflight.lang import bounded
from preflight.models.modules.values import ConfigObj, Unknown


BUILTINS: dict[str, Any] = {
    "range": range, "len": len, "int": int, "float": float, "min": min, "max": max,
    "abs": abs, "sum": sum, "list": list, "tuple": tuple, "dict": dict, "zip":
    lambda *a: list(zip(*a)), "enumerate": lambda *a: list(enumerate(*a)), "str": str,
    "bool": bool, "round": round, "reversed": lambda x: list(reversed(x)),
    "sorted": sorted, "isinstance": lambda *a: Unknown("isinstance"), "print":
    lambda *a, **k: None, "divmod": divmod, "pow": pow, "any": any, "all": all,
    "getattr": lambda o, n, *d: (o.get(n) if isinstance(o, ConfigObj) and not d else
                                 (o.fields.get(n, o.defaults.get(n, d[0]))
                                  if isinstance(o, ConfigObj) else Unknown("getattr"))),
    "hasattr": lambda o, n: (n in o.fields or n in o.defaults) if isinstance(o, ConfigObj)
    else Unknown("hasattr"),
}


BINOP_NAMES = {"Add": "add", "Subtract": "sub", "Multiply": "mul", "Divide": "truediv",
               "FloorDivide": "floordiv", "Modulo": "mod", "Power": "pow", "BitOr": "or",
               "BitAnd": "and", "BitXor": "xor", "LeftShift": "lshift",
               "RightShift": "rshift"}
#: builtins whose cost grows with an integer argument (not with a sequence's length)
_COSTLY_INT_ARG = {"factorial", "comb", "perm", "pow", "isqrt", "prod"}


def check_builtin_args(name: str, args: list) -> None:
    """TooLarge when a builtin would walk a huge range (`sum(range(10**12))`) or grow a
    huge integer (`math.factorial(10**6)`, `pow(10, 10**9)`)."""
    for a in args:
        if isinstance(a, range):
            try:
                n = len(a)
            except OverflowError:
                n = bounded.MAX_ITEMS + 1
            if n > bounded.MAX_ITEMS and name not in ("range", "len"):
                raise bounded.TooLarge(f"a range of over {bounded.MAX_ITEMS:,} items")
        bounded.check_size(a)
    if name == "pow" and len(args) == 2:
        bounded.binop("pow", args[0], args[1])
    elif name in _COSTLY_INT_ARG and any(isinstance(a, int) and abs(a) > 10_000 for a in args):
        raise bounded.TooLarge(f"{name}() of an argument over 10,000")
