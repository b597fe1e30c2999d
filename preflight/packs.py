"""Third-party rule packs: the entry points of group `preflight.rules`.

Listing entry points reads the metadata of every installed distribution; a run asks once
(for its stored result's key, then to load the rules) and reuses the answer."""

from __future__ import annotations

import functools

#: the entry-point group a rule pack registers its rules module under
ENTRY_POINT_GROUP = "preflight.rules"


@functools.lru_cache(maxsize=1)
def entry_points() -> tuple:
    """The installed packs' entry points (empty where metadata cannot be read)."""
    from importlib.metadata import entry_points as eps
    return tuple(eps(group=ENTRY_POINT_GROUP))
