"""The walked files' tests: the cheap text test of each kind of file a directory walk
finds, and their asking over two processes (`both_ends`), whose answers `discover` then
finds in the active cache's memory."""

from __future__ import annotations

from typing import Any, Optional

from preflight import cache, runcache
from preflight.discover.signals import (may_launch_file, notebook_may_train, read_head,
                                        training_config, training_entry)
from preflight.extract import extract_file, kind_of, stats, stats_since


#: the cheap text test discovery asks of a walked file, by its kind
WALK_TESTS = {"json": training_config, "yaml": training_config, "toml": training_config,
              "shell": may_launch_file, "python": training_entry,
              "notebook": notebook_may_train}


class WalkTests:
    """The walked files' tests, asked over two processes (`both_ends`, from
    `pipeline`) so that `discover` finds the answers in the active cache's memory:
    `prepare` the list (files whose kind only their content tells are left to `discover`),
    `ask` a block of it, and in this process `take` what the other one answered — the
    tests' answers, the launchers it extracted, its counts and what it read."""

    def __init__(self) -> None:
        read_head.cache_clear()    # a new run: no text remembered from an earlier one
        self.store = cache.active()
        self.tests: list[tuple[str, Any]] = []
        self.done: list[str] = []       # in the child: the files it tested (the parent's copy is apart)
        self.known = set(self.store.memory) if self.store is not None else set()
        self.counted = dict(stats)

    def prepare(self, files: list[str]) -> list[tuple[str, Any]]:
        self.tests = [(p, WALK_TESTS[k]) for p in files if (k := kind_of(p)) in WALK_TESTS]
        return self.tests

    def ask(self, start: int, end: int) -> None:
        store = self.store
        assert store is not None
        for p, test in self.tests[start:end]:
            if store.signal(p, test) and test is may_launch_file:
                extract_file(p)     # `discover` reads each such launcher: here, on two cores
            self.done.append(p)

    def child_result(self, rec) -> tuple:
        store = self.store
        assert store is not None
        return (store.signals_of(self.done),
                {k: v for k, v in store.memory.items() if k not in self.known},
                stats_since(self.counted), (rec.files, rec.env))

    def take(self, got: Optional[tuple]) -> None:
        if got is None or self.store is None:
            return
        signals, extracted, counts, read = got
        self.store.add_signals(signals)
        self.store.memory.update((k, v) for k, v in extracted.items() if k not in self.store.memory)
        stats.update(counts)
        runcache.absorb(read)
