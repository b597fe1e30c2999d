"""Arithmetic and formatting with budgets, for the static evaluators.

A training script's constants are small: a batch size, a layer count, a model name. A file
can still hold `1000000000 * "a"`, `((10**255)**255)**255` or `"%01000000000d" % 1`, and
computing them literally would build a gigabyte string or run for minutes. Every value the
evaluators compute goes through `binop` / `check_format` / `check_size` first: a result
predicted past a budget raises `TooLarge`, which the evaluators turn into an unknown value
with the reason — never a hang, never a MemoryError.
"""

from __future__ import annotations

import operator
import re
from typing import Any, Callable

#: integers are kept below this many bits (≈ 1,230 decimal digits)
MAX_INT_BITS = 4096
#: strings, lists, tuples, dicts: at most this many items / characters
MAX_ITEMS = 100_000
#: a field width or precision in a format spec
MAX_WIDTH = 10_000


class TooLarge(ValueError):
    """A value past a budget; the message is the reason an unknown value carries."""


def _bits(x: Any) -> int:
    return x.bit_length() if isinstance(x, int) else 0


def _sized(x: Any) -> bool:
    return isinstance(x, (str, bytes, list, tuple))


def check_size(x: Any) -> Any:
    """`x` itself, or TooLarge when it is past the budgets."""
    if isinstance(x, int) and not isinstance(x, bool) and x.bit_length() > MAX_INT_BITS:
        raise TooLarge(f"an integer of {x.bit_length():,} bits (over {MAX_INT_BITS:,})")
    if isinstance(x, (str, bytes, list, tuple, dict, set)) and len(x) > MAX_ITEMS:
        raise TooLarge(f"a {type(x).__name__} of {len(x):,} items (over {MAX_ITEMS:,})")
    return x


def _int_result_bits(op: str, a: int, b: int) -> int:
    if op == "pow":
        if b < 0 or abs(a) <= 1:
            return 1
        return a.bit_length() * b
    if op == "mul":
        return _bits(a) + _bits(b)
    if op == "lshift":
        return _bits(a) + max(b, 0)
    return max(_bits(a), _bits(b)) + 1


_OPS: dict[str, Callable[[Any, Any], Any]] = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul,
    "truediv": operator.truediv, "floordiv": operator.floordiv, "mod": operator.mod,
    "pow": operator.pow, "lshift": operator.lshift, "rshift": operator.rshift,
    "or": operator.or_, "and": operator.and_, "xor": operator.xor,
}


def binop(op: str, a: Any, b: Any) -> Any:
    """`a <op> b` (op a name of `_OPS`) computed only when the result is within the budgets.
    Raises TooLarge past them; other errors (TypeError, ZeroDivisionError, OverflowError)
    propagate as Python raises them."""
    fn = _OPS[op]
    ints = isinstance(a, int) and isinstance(b, int)
    if ints and op in ("pow", "mul", "lshift"):
        bits = _int_result_bits(op, a, b)
        if bits > MAX_INT_BITS:
            raise TooLarge(f"the result would have about {bits:,} bits (over {MAX_INT_BITS:,})")
    if op == "pow" and isinstance(b, int) and not isinstance(a, int) and abs(b) > 10_000:
        raise TooLarge(f"an exponent of {b:,}")
    if op == "mul":
        seq, n = (a, b) if _sized(a) else (b, a)
        if _sized(seq) and isinstance(n, int) and len(seq) * max(n, 0) > MAX_ITEMS:
            raise TooLarge(f"a repetition of {len(seq):,} × {n:,} items (over {MAX_ITEMS:,})")
    if op == "add" and _sized(a) and _sized(b) and len(a) + len(b) > MAX_ITEMS:
        raise TooLarge(f"a concatenation of {len(a) + len(b):,} items (over {MAX_ITEMS:,})")
    if op == "mod" and isinstance(a, str):
        check_percent_format(a, b)
    return check_size(fn(a, b))


_SPEC_NUMBER = re.compile(r"\d+")


def check_spec(spec: str) -> None:
    """A `format()` / f-string spec (`>10`, `08.3f`): widths and precisions within budget."""
    for m in _SPEC_NUMBER.finditer(spec):
        if len(m.group()) > 6 or int(m.group()) > MAX_WIDTH:
            raise TooLarge(f"a format width of {m.group()} (over {MAX_WIDTH:,})")


_PERCENT = re.compile(r"%(?:\([^)]*\))?[#0\- +]*(\*|\d+)?(?:\.(\*|\d+))?")


def check_percent_format(fmt: str, args: Any) -> None:
    """`fmt % args`: every width and precision within budget; `*` widths are refused (their
    value comes from the arguments)."""
    for m in _PERCENT.finditer(fmt):
        for g in (m.group(1), m.group(2)):
            if g == "*":
                raise TooLarge("a format width taken from the arguments")
            if g and (len(g) > 6 or int(g) > MAX_WIDTH):
                raise TooLarge(f"a format width of {g} (over {MAX_WIDTH:,})")


_BRACE_SPEC = re.compile(r"\{[^{}]*?:([^{}]*)\}|\{[^{}]*\{")


def check_brace_format(fmt: str) -> None:
    """`fmt.format(...)`: the specs inside `{…}` within budget; nested `{…{…}}` specs (their
    width comes from the arguments) are refused."""
    for m in _BRACE_SPEC.finditer(fmt):
        if m.group(1) is None:
            raise TooLarge("a format spec taken from the arguments")
        check_spec(m.group(1))
