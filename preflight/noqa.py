"""`# noqa` comments: the one parser for every file kind that has comments (Python, shell,
YAML, TOML).

    x = 1  # noqa                    every code on this line
    x = 1  # noqa: PF101             one code (or a prefix: PF1)
    x = 1  # noqa: PF101, PF102      several, separated by commas and/or spaces
    x = 1  # noqa: PF101 PF102
"""

from __future__ import annotations

import re
from typing import Optional

_CODE = r"[A-Za-z]+[0-9]+"
_NOQA = re.compile(rf"#\s*noqa(?::[ \t]*(?P<codes>{_CODE}(?:[ \t]*,?[ \t]*{_CODE})*))?", re.I)


def _codes(m: re.Match) -> list[str]:
    codes = m.group("codes")
    return [c.upper() for c in re.findall(_CODE, codes)] if codes else []


def noqa_codes(line_text: str) -> Optional[list[str]]:
    """None when the line has no `# noqa`; [] for a bare `# noqa` (all codes)."""
    m = _NOQA.search(line_text)
    return None if m is None else _codes(m)


def noqa_lines(text: str) -> dict[int, list[str]]:
    """{line: codes} for every line of `text` with a `# noqa` ([] = all codes)."""
    out: dict[int, list[str]] = {}
    if "noqa" not in text and "NOQA" not in text:
        return out
    for m in _NOQA.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        out.setdefault(line, []).extend(_codes(m))
    return out
