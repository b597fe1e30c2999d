"""Sizes and counts as people write them, and bytes as people can read them.

GB is 10**9 bytes and GiB is 2**30 bytes. The two differ by 7 %, which is exactly the
kind of gap that decides whether a job fits, so text output always shows both and
parsing refuses the ambiguous bare "G".
"""

from __future__ import annotations

import math
import re

GB = 10**9
GiB = 2**30
MiB = 2**20

_UNITS = {
    "b": 1,
    "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
    "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40,
}

#: the largest memory size accepted (a GPU of more than a pebibyte is a typo)
MAX_SIZE = 2**50
#: the largest count accepted: 10^15 parameters or tokens is no training job of this world
MAX_COUNT = 10**15

_SIZE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*([a-z]*)\s*$", re.IGNORECASE)


def parse_size(text: str | int | float) -> int:
    """'80GiB' → 85899345920, '40GB' → 40000000000, '512MiB', '1.5TB', '123B'.

    Raises ValueError with the accepted spellings. A bare 'G'/'M' is refused (decimal or
    binary?), and so is a bare number ('80' — bytes or GB?).
    """
    m = None if isinstance(text, bool) else _SIZE.match(str(text))
    if not m:
        raise ValueError(f"cannot read size {_short(text)}: write e.g. 80GiB or 40GB")
    number, unit = float(m.group(1)), m.group(2).lower()
    if not unit and len(str(text)) > 24:
        raise ValueError(f"size {_short(text)} has no unit "
                         f"(B, KB, MB, GB, TB or KiB, MiB, GiB, TiB)")
    if not unit:
        raise ValueError(f"size {text!r} has no unit: write e.g. {text}GB or {text}GiB "
                         f"(B, KB, MB, GB, TB or KiB, MiB, GiB, TiB)")
    if unit not in _UNITS:
        raise ValueError(f"unknown size unit {m.group(2)!r} in {text!r}: use B, KB, MB, GB, TB "
                         f"(powers of 1000) or KiB, MiB, GiB, TiB (powers of 1024)")
    value = number * _UNITS[unit]
    if value <= 0 or not math.isfinite(value):
        raise ValueError(f"size must be positive and finite: {_short(text)}")
    if value > MAX_SIZE:
        raise ValueError(f"size {text!r} is over {MAX_SIZE // 2**50} PiB, not a GPU's memory")
    return int(round(value))


_COUNT_SUFFIX = {"": 1, "k": 10**3, "m": 10**6, "b": 10**9, "t": 10**12}
_COUNT = re.compile(r"^\s*(-?[0-9][0-9_,]*\.?[0-9]*(?:e[+-]?[0-9]+)?)\s*([kmbt]?)\s*$", re.IGNORECASE)


def parse_count(text: str | int | float) -> int:
    """'7e9', '7B', '1.5b', '125M', '6,738,415,616' → an exact integer count.

    Raises ValueError for negatives, fractions of one and anything else.
    """
    if isinstance(text, bool):
        raise ValueError(f"not a count: {text!r}")
    if isinstance(text, int):
        value = text
    elif isinstance(text, float):
        if not math.isfinite(text) or text != int(text):
            raise ValueError(f"not a whole count: {text!r}")
        value = int(text)
    else:
        m = _COUNT.match(str(text))
        if not m:
            raise ValueError(f"cannot read count {text!r}: write e.g. 7e9, 7B, 125M or 6738415616")
        digits = m.group(1).replace(",", "").replace("_", "")
        mult = _COUNT_SUFFIX[m.group(2).lower()]
        if re.fullmatch(r"[0-9]+", digits):
            if len(digits.lstrip("0")) > 30:
                raise ValueError(f"count {_short(text)} is over {MAX_COUNT:.0e}, "
                                 "not a plausible value")
            value = int(digits) * mult          # exact for large integers
        else:
            f = float(digits) * mult
            if not math.isfinite(f):
                raise ValueError(f"count {_short(text)} is not finite")
            if f != int(f):
                raise ValueError(f"not a whole count: {_short(text)}")
            value = int(f)
    if value < 0:
        raise ValueError(f"count must not be negative: {text!r}")
    if value > MAX_COUNT:
        raise ValueError(f"count {_short(text)} is over {MAX_COUNT:.0e}, not a plausible value")
    return value


def _short(text: object) -> str:
    """A number as quoted in a message: a 400-digit one is not echoed whole."""
    if isinstance(text, int) and text.bit_length() >= 1000:
        return f"a {int(text.bit_length() * 0.30103) + 1}-digit number"
    s = str(text)
    return repr(s if len(s) <= 24 else s[:20] + "…")


def fmt_int(n: int) -> str:
    """7000000000 → '7,000,000,000' (how formulas show their numbers)."""
    return f"{n:,}"


def fmt_num(x: float) -> str:
    """Numbers inside formulas: integers with separators, others short."""
    if isinstance(x, int) or (isinstance(x, float) and x.is_integer() and abs(x) < 1e18):
        return fmt_int(int(x))
    return f"{x:g}"


def fmt_gb(n: int) -> str:
    return f"{n / GB:,.2f} GB"


def fmt_gib(n: int) -> str:
    return f"{n / GiB:,.2f} GiB"


def gib(n: float | None, unknown: str = "unknown") -> str:
    """Bytes for a reader, in binary units: '104.3 GiB', or MiB / KiB / B below one GiB.

    The one unit of every finding and of the verdict bar beside it, so that a finding's
    '72.3 GiB' and the bar's '72.3 GiB' are the same number in the same unit as the
    capacity nvidia-smi reports (MiB × 2**20); never GB in the same sentence."""
    if n is None:
        return unknown
    for unit, size in (("GiB", GiB), ("MiB", MiB), ("KiB", 2**10)):
        if abs(n) >= size:
            return f"{n / size:,.1f} {unit}"
    return f"{n:,.0f} B"


def fmt_bytes(n: int | None) -> str:
    """Both units, never one alone: '112.00 GB (104.31 GiB)'. None → 'unknown'."""
    if n is None:
        return "unknown"
    return f"{fmt_gb(n)} ({fmt_gib(n)})"


def fmt_seconds(s: float | None) -> str:
    if s is None:
        return "unknown"
    if s >= 1:
        return f"{s:,.3f} s"
    return f"{s * 1e3:,.2f} ms"
