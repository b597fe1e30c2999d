"""Blocks of lines read as a unit: a function's body (read at each call, with the call's
arguments as `$1`, `"$@"`), and the body of a `for NAME in …` loop written over several
lines (read once per value, so each value launches a run of its own).

Only the lines are found here (where a block starts, where it ends); the reader runs them.
Each search goes forward from the block's first line and stops at its end, so a script is
still read in time linear in its length times the (bounded) number of times a body is read.
"""

from __future__ import annotations

import re
from typing import Optional

#: `name() {`, `function name {`, `function name() {` (the `{` may be on the next line)
_FUNCTION = re.compile(r"^\s*(?:function\s+([A-Za-z_][\w-]*)\s*(?:\(\s*\))?|([A-Za-z_][\w-]*)\s*\(\s*\))\s*(\{)?\s*$")
#: `for NAME in WORDS; do` / `for NAME in WORDS` (its `do` on the next line)
_FOR = re.compile(r"\s*for\s+([A-Za-z_]\w*)\s+in\s")
_OPENS = re.compile(r"(?:^|[;&|(]|\bthen|\bdo|\belse)\s*(?:for|while|until|select)\b")
_DONE = re.compile(r"(?:^|[;&|]|\s)done\b")

Lines = list[tuple[int, str]]


def function_header(raw: str) -> Optional[tuple[str, bool]]:
    """(name, whether its `{` is on this line) of a function definition line."""
    m = _FUNCTION.match(raw)
    if not m:
        return None
    return (m.group(1) or m.group(2)), bool(m.group(3))


def function_end(lines: Lines, k: int, brace_here: bool) -> Optional[int]:
    """Index of the line that closes the function whose body starts at `lines[k]` (the
    last line when none does; None when no `{` opens a body)."""
    if not brace_here and (k >= len(lines) or lines[k][1].strip() != "{"):
        return None
    depth = 1 if brace_here else 0
    j = k
    while j < len(lines):
        s = lines[j][1].strip()
        if s.startswith("}"):
            depth -= 1
            if depth <= 0:
                return j
        if s.endswith("{") and not s.endswith("${"):
            depth += 1
        j += 1
    return len(lines) - 1


def loop_header(raw: str) -> Optional[tuple[str, str]]:
    """(NAME, the text of its word list) of a `for NAME in …` line whose body continues on
    the lines below (a loop written on one line is read where it stands)."""
    if "\n" in raw or _DONE.search(raw):
        return None
    m = _FOR.match(raw)
    if not m:
        return None
    listed = raw[m.end():].strip()
    if listed.endswith("do") and listed[:-2].rstrip().endswith(";"):
        listed = listed[:-2].rstrip()[:-1]
    if re.search(r"[;&|]", listed):
        return None
    return m.group(1), listed.strip()


def one_line_loop(raw: str) -> Optional[tuple[str, str, str]]:
    """(NAME, its word list, the body) of `for NAME in a b; do BODY; done` written on one
    line with nothing before or after it, and no loop inside it."""
    m = _FOR.match(raw)
    if not m or "\n" in raw:
        return None
    rest = raw[m.end():]
    d = re.search(r";\s*do\s", rest)
    tail = rest[d.end():].rstrip() if d else ""
    if not d or not tail.endswith("done") or not tail[:-4].rstrip().endswith(";"):
        return None
    body = tail[:-4].rstrip()[:-1]
    listed = rest[:d.start()].strip()
    if re.search(r"[;&|]", listed) or _OPENS.search(body) or _DONE.search(body):
        return None
    return m.group(1), listed, body


def loop_ends(lines: Lines) -> dict[int, int]:
    """For each line that opens a loop, the index of the line whose `done` closes it: one
    pass over the lines with a stack of open loops."""
    ends: dict[int, int] = {}
    stack: list[int] = []
    for j, (_, raw) in enumerate(lines):
        code = raw.split("#", 1)[0]
        if "do" not in code and not any(k in code for k in ("for", "while", "until", "select")):
            continue
        stack.extend([j] * len(_OPENS.findall(code)))
        for _ in _DONE.findall(code):
            if stack:
                ends.setdefault(stack.pop(), j)
    return ends
