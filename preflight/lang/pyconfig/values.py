"""The values a Python config is read into: `Opaque` (not known statically, with its
reason), `Name` (a class or module the config names), `CDict` (a dict that remembers where
each key was written), `PyConfig` (a whole file's value), and the budgets of the reading."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Optional

#: base and imported config files read per config (the file itself included)
MAX_FILES = 24
#: expression nodes evaluated over all of them
MAX_NODES = 200_000
#: nesting of expressions and dicts followed
MAX_DEPTH = 64
#: a larger file is not read as a config
MAX_BYTES = 512_000

Pos = tuple[str, int, int]          # (file, line, col)


class Opaque:
    """A value the reader cannot know statically: a call of a function, a comprehension,
    a name from a library; `why` says which."""

    __slots__ = ("why", "line")

    def __init__(self, why: str, line: int = 0) -> None:
        self.why, self.line = why, line

    def __repr__(self) -> str:
        return f"Opaque({self.why!r})"

    def __deepcopy__(self, memo: dict) -> "Opaque":
        return self


class Name(str):
    """A class or module named in the config (`type=ImageClassifier` imported from a
    library, `L(torch.optim.SGD)`): its dotted name, compared as a string."""


class CDict(dict):
    """A dict of the config that remembers where each key was written: key → (file, line,
    col)."""

    __slots__ = ("at",)

    def __init__(self, *a: Any, **k: Any) -> None:
        super().__init__(*a, **k)
        self.at: dict[Any, Pos] = {}

    def __deepcopy__(self, memo: dict) -> "CDict":
        out = CDict()
        memo[id(self)] = out
        for k, v in self.items():
            out[k] = copy.deepcopy(v, memo)
        out.at = dict(self.at)
        return out


@dataclass
class PyConfig:
    """A Python config file's value: `cfg` the top-level variables (private names and
    imported modules left out), `pos` every key path's (line, col), `where` its file,
    `files` the base / imported config files read, `notes` (file, line, col, message)."""

    cfg: dict
    pos: dict[tuple, tuple[int, int]] = field(default_factory=dict)
    where: dict[tuple, str] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)
    notes: list[tuple[str, int, int, str]] = field(default_factory=list)

def opaque_reason(v: Any) -> Optional[str]:
    """Why a value read from a Python config is not known (None when it is known)."""
    return v.why if isinstance(v, Opaque) else None
