"""The walk of `preflight check DIR…`, started ahead of the run.

As soon as the command line knows it has no stored result to print, it forks a helper
(`both_ends.Helper`) that walks the directories and then asks the walked files their
tests (`discover.walk_tests.WalkTests`), while this process goes on importing, configuring and
starting the run — a third of a cold check of a large repository on one core. The run
takes the helper when it reaches its walk (`take`), with exactly the paths it was
started for; a helper nobody took is killed at the end (`cancel`).
"""

from __future__ import annotations

import os
from typing import Any, Optional

from preflight import cache, runcache
from preflight.lazy import lazy

# a warm run (its stored result printed) imports this module and starts no helper: the
# fork and the walk's modules are imported when a helper is started, the walk's in it
both_ends = lazy("preflight.both_ends")
walk_tests = lazy("preflight.discover.walk_tests")
walk = lazy("preflight.walk")

_PENDING: Optional[tuple[tuple[str, ...], Any]] = None     # (paths, both_ends.Helper)


def start(paths: list[str], folder: Optional[str]) -> None:
    """Fork the helper for a check of `paths` whose cache folder is `folder` (where its
    launchers' extractions go). Nothing is started unless a directory is among the
    paths and a second process pays (`both_ends.can_fork`)."""
    global _PENDING
    cancel()
    if folder is None or not any(os.path.isdir(p) for p in paths) or not both_ends.can_fork():
        return
    state: dict[str, Any] = {}

    def prologue() -> tuple:
        # in the child: the run's cache, as `pipeline.run` makes it, and a recording of
        # every read, to travel back — both for the rest of the child's life (it ends
        # with os._exit) — then the walk
        import contextlib

        life = state["life"] = contextlib.ExitStack()
        life.enter_context(cache.using(cache.ExtractionCache(folder)))
        state["rec"] = life.enter_context(runcache.recording())
        state["asker"] = walk_tests.WalkTests()
        return walk.walk_paths(list(paths))

    def count_of(made: tuple) -> int:
        return len(state["asker"].prepare([f for _, files in made[0] for f in files]))

    def do(start: int, end: int) -> None:
        state["asker"].ask(start, end)

    def child_result() -> tuple:
        return state["asker"].child_result(state["rec"])

    helper = both_ends.Helper.start(prologue, count_of, do, child_result)
    if helper is not None:
        _PENDING = (tuple(paths), helper)


def take(paths: list[str]) -> Optional[Any]:
    """The helper started for exactly these paths (once), or None."""
    global _PENDING
    if _PENDING is None or _PENDING[0] != tuple(paths):
        return None
    helper = _PENDING[1]
    _PENDING = None
    return helper


def cancel() -> None:
    """Kill and reap a helper nobody took."""
    global _PENDING
    if _PENDING is not None:
        _PENDING[1].cancel()
        _PENDING = None
