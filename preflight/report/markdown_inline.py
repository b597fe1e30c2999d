"""Markdown inline text for every writer of GitHub-flavoured Markdown (the pull-request
comment of `report.markdown`, the memory-changes section of `report.deltas`): text that
renders as itself, and code spans that hold any text."""

from __future__ import annotations

import re

_ESCAPE = re.compile(r"([\\`*_{}\[\]<>()#+!|~])")


def escape(s: str) -> str:
    """Inline text that renders as itself (no emphasis, links, HTML or table breaks)."""
    return _ESCAPE.sub(r"\\\1", " ".join(s.split()))


def code_span(s: str) -> str:
    s = " ".join(s.split())
    ticks = "`" * (max((len(m) for m in re.findall(r"`+", s)), default=0) + 1)
    pad = " " if s.startswith("`") or s.endswith("`") else ""
    return f"{ticks}{pad}{s}{pad}{ticks}"
