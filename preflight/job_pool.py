"""Check many jobs at once: in this process for a few, over forked worker processes for
many.

A job's assembly, sizing, rules and fix search depend on nothing but its own files (read
before the pool starts) and the run's settings, so jobs are independent. Workers are
forked, so they inherit the run's state — its extractions, settings and loaded rules —
and only the finished `JobResult`s travel back. Results come back in the order of the
jobs: the report never depends on which worker finished first. What workers counted
(extraction statistics, stage timings) and read (for a stored run result) is merged here.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Iterator, Optional

from preflight import runcache, timing
from preflight.both_ends import can_fork
from preflight.extract import stats, stats_since

#: fewer jobs than this are checked in this process: forking costs more than it saves
PARALLEL_JOBS = 16

_FN: Optional[Callable[[int], Any]] = None      # the job function, inherited by fork


def workers_for(count: int, asked: Optional[int]) -> int:
    if asked is not None:
        return max(1, asked) if count > 1 else 1
    if count < PARALLEL_JOBS or not can_fork():
        return 1
    return max(1, min(os.cpu_count() or 1, 8, count // 8))


def run(fn: Callable[[int], Any], count: int, workers: Optional[int] = None) -> Iterator[Any]:
    """fn(0), fn(1), … fn(count - 1), in order; over worker processes when it pays."""
    n = workers_for(count, workers)
    if n <= 1:
        for i in range(count):
            yield fn(i)
        return
    import concurrent.futures as cf
    import multiprocessing

    global _FN
    _FN = fn
    # contiguous chunks, a few per worker: neighbours share files (and so cache entries)
    size = max(1, -(-count // (n * 3)))
    chunks = [list(range(i, min(count, i + size))) for i in range(0, count, size)]
    try:
        ex = cf.ProcessPoolExecutor(max_workers=n, mp_context=multiprocessing.get_context("fork"))
    except Exception:  # noqa: BLE001 - no processes to be had (sandbox, limits): here
        _FN = None
        for i in range(count):
            yield fn(i)
        return
    try:
        futures = [ex.submit(_chunk, c) for c in chunks]
        for fut in futures:
            for result in _merge(fut.result()):
                yield result
    finally:
        ex.shutdown(cancel_futures=True)
        _FN = None


def _chunk(indices: list[int]) -> tuple[list[Any], dict, dict, dict, tuple]:
    before = dict(stats)
    timing.clear()
    assert _FN is not None
    with runcache.recording() as rec:
        results = [_slim(_FN(i)) for i in indices]
    return results, stats_since(before), dict(timing.timings), dict(timing.cpu_timings), \
        (rec.files, rec.env)


def _merge(done: tuple) -> list[Any]:
    results, counts, wall, cpu, read = done
    stats.update(counts)             # a Counter: adds
    timing.add(wall, cpu)           # summed over workers: time spent, not time waited
    runcache.absorb(read)
    return results


def _slim(jr: Any) -> Any:
    """A result without the syntax trees its extractions keep for later stages (copies:
    other jobs of this worker share the extractions)."""
    jr.job.extractions = [ext.without_tree() for ext in jr.job.extractions]
    return jr
