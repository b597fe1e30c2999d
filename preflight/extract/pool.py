"""Extract many files at once: serially for a few, over worker processes for many.

Results come back in the order asked (the report's order never depends on which worker
finished first) and are keyed as `preflight.assemble` looks them up. Workers use the same
cache folder as the run; what they extracted is counted in this process's `stats`.
"""

from __future__ import annotations

import os
from typing import Optional

from preflight import cache as C, runcache
from preflight.extract import extract_file, stats, stats_since
from preflight.plan import Extraction
from preflight.progress import progress

#: fewer files than this are extracted in this process: starting workers costs more
PARALLEL_MIN = 256


def key(path: str, args: Optional[list[str]], env: Optional[dict] = None) -> str:
    """How a job's assembly finds the extraction of `path` run with `args` under the
    launcher's environment `env`."""
    return f"{os.path.abspath(path)}\0{args}\0{sorted((env or {}).items())}"


def extract_all(wanted: list[tuple[str, Optional[list[str]], Optional[dict]]],
                workers: Optional[int] = None) -> dict[str, Extraction]:
    todo: dict[str, tuple[str, Optional[list[str]], Optional[dict]]] = {}
    for path, args, env in wanted:
        todo.setdefault(key(path, args, env), (path, args, env))
    n = _workers(len(todo), workers)
    out: dict[str, Extraction] = {}
    if n <= 1:
        # drawn on a terminal only when reading takes long (files done / total)
        for k, (path, args, env) in progress(list(todo.items()), len(todo), label="reading",
                                             min_items=len(todo) + 1):
            out[k] = extract_file(path, args=args, env=env)
        return out
    import concurrent.futures as cf
    import multiprocessing

    store = C.active()
    folder = store.folder if store is not None else None
    try:
        ctx = multiprocessing.get_context("fork")
    except ValueError:        # no fork (Windows, macOS default): a fresh interpreter each
        ctx = multiprocessing.get_context("spawn")
    items = list(todo.items())
    try:
        with cf.ProcessPoolExecutor(max_workers=n, mp_context=ctx, initializer=_start,
                                    initargs=(folder,)) as ex:
            results = list(ex.map(_one, [it[1] for it in items],
                                  chunksize=max(1, len(items) // (n * 4))))
    except Exception:  # noqa: BLE001 - no processes to be had (sandbox, limits): serially
        for k, (path, args, env) in items:
            out[k] = extract_file(path, args=args, env=env)
        return out
    for (k, _), (ext, counts, read) in zip(items, results):
        out[k] = ext
        stats.update(counts)
        runcache.absorb(read)
        if store is not None:
            store.misses += counts.get("extractions", 0)
            store.hits += counts.get("cache_hits", 0)
    return out


def _workers(count: int, asked: Optional[int]) -> int:
    if asked is not None:
        return max(1, asked) if count > 1 else 1
    if count < PARALLEL_MIN:
        return 1
    return max(1, min(os.cpu_count() or 1, 8, count // 64))


def _start(folder: Optional[str]) -> None:
    import gc

    gc.disable()        # as the check itself runs (`pipeline.gc_paused`)
    C._ACTIVE = C.ExtractionCache(folder)


def _one(item: tuple[str, Optional[list[str]], Optional[dict]]) -> tuple[Extraction, dict[str, int], tuple]:
    before = dict(stats)
    path, args, env = item
    with runcache.recording() as rec:
        ext = extract_file(path, args=args, env=env)
    return ext.without_tree(), stats_since(before), (rec.files, rec.env)
