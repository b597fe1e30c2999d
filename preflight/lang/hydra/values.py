"""What composition produces: the composed config with where each value was set, and the
marker of a value that cannot be known statically."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from preflight.plan import Diagnostic, Source


class Unresolved(str):
    """A value composition cannot know statically: its text as written (so a reader that
    only knows plain values sees what the file says) and `reason`, why it is not known."""

    reason: str

    def __new__(cls, reason: str, text: str = "") -> "Unresolved":
        obj = super().__new__(cls, text)
        obj.reason = reason
        return obj

    def __repr__(self) -> str:
        return f"Unresolved({self.reason!r})"


def unresolved_reason(value: Any) -> Optional[str]:
    """Why a composed value is not known (None for a known one): what a generic reader of
    the composed document is told."""
    return value.reason if isinstance(value, Unresolved) else None


@dataclass
class Composed:
    """A composed config: its value, where each key path was set, the documents merged (in
    merge order), the group choices, the key paths the command line set, the findings."""

    cfg: dict = field(default_factory=dict)
    where: dict = field(default_factory=dict)
    files: list = field(default_factory=list)
    choices: dict = field(default_factory=dict)
    from_line: set = field(default_factory=set)
    diagnostics: list = field(default_factory=list)
    #: a config of the defaults lists was not found: a key the merge lacks may be in it
    incomplete: bool = False

    def src(self, p: tuple) -> Optional[Source]:
        q = tuple(p)
        while q and q not in self.where:
            q = q[:-1]
        return self.where.get(q)

    def get(self, *p: Any) -> Any:
        d: Any = self.cfg
        for k in p:
            if not isinstance(d, dict) or k not in d:
                return None
            d = d[k]
        return d


def diag(msg: str, src: Optional[Source], severity: str = "warning", code: str = "PF005",
         name: str = "malformed-config") -> Diagnostic:
    """A finding of composition, located where the config or override says it."""
    return Diagnostic.at(code, msg, src, name=name, severity=severity)
