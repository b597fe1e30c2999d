"""What a fix is made of: the fact edits asked of one file, the file's text before and
after, and the line ranges that changed (for SARIF replacements, suggestion blocks and a
unified diff that `git apply` accepts)."""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass, field
from typing import Any, Optional

from preflight.plan import Source


class Unspellable(ValueError):
    """An edit a file cannot carry (no literal at the fact's line, no key for the value);
    the message says why, for the user."""


@dataclass
class FactEdit:
    """Set `fact` to `value` at `source`: the fact's own line (replace the value there) or,
    with `new_key`, the place a framework reads it when nothing sets it (add a key)."""

    fact: str
    value: Any
    source: Source
    old: Any = None
    new_key: bool = False


@dataclass
class Hunk:
    """Lines start..end (1-based, inclusive; end = start - 1 for a pure insertion before
    `start`) of the old text replaced by `lines`."""

    start: int
    end: int
    old: list[str]
    new: list[str]


@dataclass
class FileEdit:
    path: str
    before: str
    after: str
    notes: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def hunks(self) -> list[Hunk]:
        a, b = self.before.splitlines(keepends=True), self.after.splitlines(keepends=True)
        out = []
        sm = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
        for tag, i1, i2, j1, j2 in sm.get_opcodes():
            if tag == "equal":
                continue
            out.append(Hunk(start=i1 + 1, end=i2, old=a[i1:i2], new=b[j1:j2]))
        return out

    def replacements(self) -> list[Hunk]:
        """The hunks as replacements of whole, existing lines (an insertion becomes the
        line above it followed by the new lines): what a SARIF `replacement` and a GitHub
        suggestion block can say."""
        a = self.before.splitlines(keepends=True)
        out = []
        for h in self.hunks():
            if h.end >= h.start:
                out.append(h)
            elif h.start > 1:
                prev = a[h.start - 2]
                out.append(Hunk(start=h.start - 1, end=h.start - 1, old=[prev],
                                new=[prev] + h.new))
            else:
                first = a[0] if a else ""
                out.append(Hunk(start=1, end=1, old=[first], new=h.new + [first]))
        return out

    def diff(self, name: Optional[str] = None) -> str:
        """A unified diff with a/ b/ prefixes (what `git apply` reads)."""
        rel = (name or self.path).replace(os.sep, "/")
        a = self.before.splitlines(keepends=True)
        b = self.after.splitlines(keepends=True)
        lines = list(difflib.unified_diff(a, b, f"a/{rel}", f"b/{rel}", n=3))
        out = []
        for ln in lines:
            if not ln.endswith("\n"):
                ln += "\n\\ No newline at end of file\n"
            out.append(ln)
        return "".join(out)


def line_offsets(text: str) -> list[int]:
    """Offset of the start of each line (index 0 = line 1)."""
    offs = [0]
    for i, ch in enumerate(text):
        if ch == "\n":
            offs.append(i + 1)
    return offs
