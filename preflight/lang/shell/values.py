"""Values of the shell reader: an expanded word, and the marker an unknown piece of an
expansion leaves inside a string (so the rest of the string stays usable)."""

from __future__ import annotations

import re
from typing import Optional, Union
from urllib.parse import quote, unquote


class Unknown:
    """An expansion that cannot be known statically (the reason says why)."""

    def __init__(self, reason: str):
        self.reason = reason

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"Unknown({self.reason!r})"


class Word:
    """One shell word after expansion; `unknown` is set when part of it could not be known."""

    __slots__ = ("text", "unknown", "line", "col", "quoted")

    def __init__(self, text: str, unknown: Optional[str] = None, line: int = 0, col: int = 0,
                 quoted: bool = False):
        self.text, self.unknown, self.line, self.col, self.quoted = text, unknown, line, col, quoted

    def __repr__(self) -> str:  # pragma: no cover
        return f"Word({self.text!r}{', ?' + self.unknown if self.unknown else ''})"


Value = Union[str, list, Unknown]

#: An unknown piece inside an expanded string is kept as a marker, so that the rest of the
#: string (a launcher command stored in a variable) stays usable: "\x00<reason>\x00", the
#: reason percent-encoded (no spaces, so word splitting keeps it whole). The string carries
#: its own reason: no table outside it, so expansions are re-entrant.
MARK = "\x00"
MARKED = re.compile(MARK + r"([^\x00]*)" + MARK)


def mark(reason: str) -> str:
    return f"{MARK}{quote(reason, safe='')}{MARK}"


def readable(text: str) -> str:
    """An expanded string for display: each unknown piece shown as `<?>`."""
    return MARKED.sub("<?>", text or "")


def reason_of(text: str) -> Optional[str]:
    """The reason of the first unknown piece in an expanded string (None when fully known)."""
    m = MARKED.search(text or "")
    return unquote(m.group(1)) if m else None


#: what an argument the script is not given says (`$2` of a script run without arguments):
#: unknown where it is used as a value, empty where the script tests it (`[ -z "$2" ]`)
ABSENT = "is an argument of the script, not given when it runs without arguments"


def without_absent(text: str) -> Optional[str]:
    """The text with its absent-argument pieces removed, when they are its only unknown
    pieces (None otherwise)."""
    pieces = MARKED.findall(text or "")
    if not pieces or any(ABSENT not in unquote(p) for p in pieces):
        return None
    return MARKED.sub("", text)


OPERATORS = (";", "&&", "||", "|", "&")


def as_int(s: Optional[str]) -> Optional[int]:
    """A word as an integer (None when it is not one)."""
    if s is None:
        return None
    try:
        return int(str(s).strip())
    except ValueError:
        return None
