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
    array assignments / quoted strings kept together. Each physical line is scanned once:
    the state of the logical line being built (open quotes, the depth of an open array)
    is carried from piece to piece, so thousands of continuation lines cost what they
    weigh."""
    out: list[tuple[int, str]] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        start = i
        cur = _Joined(lines[i])
        while True:
            last = cur.pieces[-1].rstrip()
            if last.endswith("\\") and not last.endswith("\\\\") and i + 1 < len(lines):
                cur.pieces[-1] = last[:-1]
                cur.add(" ", lines[i + 1])
                i += 1
                continue
            # an open array `X=(` or an unclosed double quote continues on the next line
            if i + 1 < len(lines) and (cur.open_array() or cur.open_quote()):
                cur.add("\n" if cur.open_array() else " ", lines[i + 1])
                i += 1
                if i - start > 400:
                    break
                continue
            break
        out.append((start + 1, "".join(cur.pieces)))
        i += 1
    return out


_ARRAY_START = re.compile(r"(?:^|\s)(?:export\s+|declare\s+-a\s+|local\s+)?[A-Za-z_][A-Za-z0-9_]*\+?=\(")


class _Joined:
    """A logical line being joined from physical ones, with what its text so far leaves
    open: double quotes (their count; a `#` before the first one makes them a comment's)
    and the first array assignment `X=(` (its parenthesis depth, outside quotes)."""

    __slots__ = ("pieces", "quotes", "hash_first", "array", "depth", "q")

    def __init__(self, first: str):
        self.pieces: list[str] = []
        self.quotes = 0
        self.hash_first: Optional[bool] = None     # known once the first `"` is seen
        self.array: Optional[bool] = None          # None: no `X=(` yet; True: open; False: closed
        self.depth = 0
        self.q: Optional[str] = None
        self.add("", first)

    def add(self, sep: str, piece: str) -> None:
        if sep:
            self.pieces.append(sep)
        self.pieces.append(piece)
        if self.hash_first is None and '"' in piece:
            self.hash_first = "#" in piece.split('"', 1)[0] or self._hash_before()
        self.quotes += piece.count('"')
        body = piece
        if self.array is None:
            m = _ARRAY_START.search(piece)
            if not m:
                return
            self.array, body = True, piece[m.end():]
            self.depth = 1
        if self.array:
            self._scan(body)

    def _hash_before(self) -> bool:
        return any("#" in p for p in self.pieces[:-1])

    def _scan(self, body: str) -> None:
        for ch in body:
            if self.q:
                if ch == self.q:
                    self.q = None
                continue
            if ch in "'\"":
                self.q = ch
            elif ch == "(":
                self.depth += 1
            elif ch == ")":
                self.depth -= 1
                if self.depth == 0:
                    self.array = False
                    return

    def open_array(self) -> bool:
        return self.array is True

    def open_quote(self) -> bool:
        return self.quotes % 2 == 1 and not self.hash_first


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

