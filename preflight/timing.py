"""Where a check's time goes: wall and CPU seconds per stage (walk, discover, extract,
assemble, estimate, rules, fixes).

The pipeline times its stages with `stage`; the job pool adds what its workers spent
(summed over workers: time spent, not time waited); bench/speed.py reads the split.
"""

from __future__ import annotations

import contextlib
import time
from typing import Iterator

#: wall and CPU seconds spent in each stage by the last `preflight.pipeline.run` (walk,
#: discover, extract, assemble, estimate, rules; fixes when the run attaches them): read by
#: bench/speed.py for the per-stage split
timings: dict[str, float] = {}
cpu_timings: dict[str, float] = {}


def clear() -> None:
    """Start a new split (a run, or a worker's chunk of jobs)."""
    timings.clear()
    cpu_timings.clear()


@contextlib.contextmanager
def stage(name: str) -> Iterator[None]:
    t, c = time.perf_counter(), time.process_time()
    try:
        yield
    finally:
        timings[name] = timings.get(name, 0.0) + time.perf_counter() - t
        cpu_timings[name] = cpu_timings.get(name, 0.0) + time.process_time() - c


def add(wall: dict[str, float], cpu: dict[str, float]) -> None:
    """Add a worker's split to this process's."""
    for k, v in wall.items():
        timings[k] = timings.get(k, 0.0) + v
    for k, v in cpu.items():
        cpu_timings[k] = cpu_timings.get(k, 0.0) + v
