"""Lines of a shell script: physical lines joined into logical ones (backslash
continuations, multi-line arrays and quoted strings), and where a flag of a logical line is
written among the physical ones (a fact's position)."""

from __future__ import annotations

import os
import re
from typing import Optional

from preflight import safe_read
from preflight.plan import Source


def logical_lines(text: str) -> list[tuple[int, str]]:
    """(first line number, text) with backslash continuations joined and multi-line
    array assignments / quoted strings kept together."""
    out: list[tuple[int, str]] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        start = i
        cur = lines[i]
        while True:
            stripped = cur.rstrip()
            if stripped.endswith("\\") and not stripped.endswith("\\\\") and i + 1 < len(lines):
                cur = stripped[:-1] + " " + lines[i + 1]
                i += 1
                continue
            # an open array `X=(` or an unclosed double quote continues on the next line
            if i + 1 < len(lines) and (_open_paren(cur) or cur.count('"') % 2 == 1 and '#' not in cur.split('"')[0]):
                cur = cur + "\n" + lines[i + 1] if _open_paren(cur) else cur + " " + lines[i + 1]
                i += 1
                if i - start > 400:
                    break
                continue
            break
        out.append((start + 1, cur))
        i += 1
    return out


def _open_paren(s: str) -> bool:
    m = re.search(r"(?:^|\s)(?:export\s+|declare\s+-a\s+|local\s+)?[A-Za-z_][A-Za-z0-9_]*\+?=\(", s)
    if not m:
        return False
    body = s[m.end():]
    depth = 1
    q = None
    for ch in body:
        if q:
            if ch == q:
                q = None
            continue
        if ch in "'\"":
            q = ch
        elif ch == "#":
            # a comment inside a multi-line array runs to the end of that physical line
            continue
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return False
    return True


# --------------------------------------------------------------------------- flag positions

_TEXTS: dict[str, list[str]] = {}


def register_text(path: str, text: str) -> None:
    """Make a text that is not a file (the command after `--`) searchable by locate_flag."""
    _TEXTS[path] = text.splitlines() or [""]


_STAMPS: dict[str, tuple] = {}


def lines_of(path: str) -> Optional[list[str]]:
    """The physical lines of a script (or of a text given to register_text)."""
    # a file's lines are kept per version of the file (a long-lived process checks many
    # repositories, with relative paths that repeat)
    try:
        st = os.stat(path)
        stamp: tuple = (os.path.abspath(path), st.st_mtime_ns, st.st_size)
    except (OSError, ValueError):
        stamp = ()
    if path not in _TEXTS or (stamp and _STAMPS.get(path) != stamp):
        if len(_TEXTS) > 256:
            _TEXTS.clear()
        try:
            _TEXTS[path] = safe_read.read_text(path, 1 << 20, truncate=True).splitlines()
        except (OSError, ValueError):
            _TEXTS[path] = []
        _STAMPS[path] = stamp
    return _TEXTS[path]


def locate_flag(source: Optional[Source], flag: str) -> Optional[Source]:
    """Where a flag of a launch line is written: in the command's continuation lines, else
    (a flag kept in a variable or an array) its last occurrence above the line, else the line."""
    if source is None or not flag.startswith("-"):
        return source
    lines = lines_of(source.path)
    if not lines:
        return source
    variants = {flag, flag.replace("_", "-"), "--" + flag.lstrip("-").replace("-", "_")}
    pat = re.compile(r"(?:^|[\s\"'(=])(" + "|".join(re.escape(v) for v in sorted(variants, key=len, reverse=True))
                     + r")(?=[\s=\"')]|$)")
    start = max(source.line - 1, 0)
    i = start
    while i < len(lines) and i - start < 400:
        m = pat.search(lines[i])
        if m:
            return Source(path=source.path, line=i + 1, col=m.start(1) + 1)
        if not lines[i].rstrip().endswith("\\"):
            break
        i += 1
    for j in range(min(start, len(lines)) - 1, -1, -1):
        if lines[j].lstrip().startswith("#"):
            continue
        m = pat.search(lines[j])
        if m:
            return Source(path=source.path, line=j + 1, col=m.start(1) + 1)
    return source

