"""Work through a list from both ends: a forked child takes blocks from the front while
this process, once it has done something else first (`meanwhile`), takes them from the
back. Neither waits for the other to be told its share: they meet wherever the work
puts them.

The two claim positions live in a shared anonymous mapping. A side writes its claim
before doing the block and stops as soon as its next block would start inside the other
side's claims, so every index is done at least once. Reading the other side's position
and writing one's own are not one atomic step, so both may take the same last block: it
is done twice, which is harmless for the pure, per-item work this is for (the tests a
directory walk asks of each file).
"""

from __future__ import annotations

import mmap
import os
import pickle
import struct
import sys
from typing import Any, Callable, Optional

_POS = struct.Struct("qq")      # (front: the child's next index, back: this process's claimed start)


def can_fork() -> bool:
    """Forking is safe to rely on only where it is the default (Linux), and pays only with
    a second core."""
    return sys.platform.startswith("linux") and (os.cpu_count() or 1) > 1 and hasattr(os, "fork")


def run(count: int, do: Callable[[int, int], None], child_result: Callable[[], Any], *,
        meanwhile: Optional[Callable[[], None]] = None, block: int = 64) -> Optional[Any]:
    """`do(start, end)` over [0, count) in blocks, some in a forked child and the others
    here; returns what `child_result()` gave in the child (pickled across), or None when
    there was no child (then everything was done here). `meanwhile()` runs here first,
    while the child has already started."""
    try:
        shared = mmap.mmap(-1, _POS.size)
        _POS.pack_into(shared, 0, 0, count)
        r, w = os.pipe()
    except (OSError, ValueError):
        return _alone(count, do, meanwhile)
    try:
        pid = os.fork()
    except OSError:
        os.close(r)
        os.close(w)
        return _alone(count, do, meanwhile)
    if pid == 0:                                     # the child: never returns
        code = 1
        try:
            os.close(r)
            _front(shared, do, block)
            data = pickle.dumps(child_result(), protocol=pickle.HIGHEST_PROTOCOL)
            with os.fdopen(w, "wb") as fh:
                fh.write(data)
            code = 0
        finally:
            os._exit(code)                           # no atexit, no flush of the parent's buffers
    os.close(w)
    try:
        if meanwhile is not None:
            meanwhile()
        _back(shared, do, block)
    finally:
        with os.fdopen(r, "rb") as fh:              # read before waiting: the child blocks on a full pipe
            data = fh.read()
        _, status = os.waitpid(pid, 0)
    if status != 0 or not data:
        _rest(shared, do)                            # the child failed: its claims are done here
        return None
    try:
        return pickle.loads(data)
    except Exception:  # noqa: BLE001 - a truncated result: its claims are done here
        _rest(shared, do)
        return None


def _alone(count: int, do: Callable[[int, int], None], meanwhile) -> None:
    if meanwhile is not None:
        meanwhile()
    if count:
        do(0, count)
    return None


def _front(shared: mmap.mmap, do: Callable[[int, int], None], block: int) -> None:
    front = 0
    while True:
        back = _POS.unpack_from(shared, 0)[1]
        if front >= back:
            return
        end = min(front + block, back)
        struct.pack_into("q", shared, 0, end)        # the first field alone: the second is ours to read
        do(front, end)
        front = end


def _back(shared: mmap.mmap, do: Callable[[int, int], None], block: int) -> None:
    back = _POS.unpack_from(shared, 0)[1]
    while True:
        front = _POS.unpack_from(shared, 0)[0]
        if back <= front:
            return
        start = max(back - block, front)
        struct.pack_into("q", shared, 8, start)
        do(start, back)
        back = start


def _rest(shared: mmap.mmap, do: Callable[[int, int], None]) -> None:
    """Everything the child claimed (from 0 to where this process's claims start)."""
    back = _POS.unpack_from(shared, 0)[1]
    if back > 0:
        do(0, back)
