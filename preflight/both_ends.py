"""Work through a list from both ends: a forked child takes blocks from the front while
this process, once it has done something else first (`meanwhile`), takes them from the
back. Neither is told its share: they meet wherever the work puts them.

The list may itself be the child's first piece of work (`run_after`'s `prologue`, a
directory walk): the child makes it and sends it across, while this process does its
`meanwhile`; both then work through it.

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
_LEN = struct.Struct("Q")       # a message's length, before it


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
    return run_after(lambda: None, lambda _: count, do, child_result, meanwhile=meanwhile,
                     block=block)[1]


def run_after(prologue: Callable[[], Any], count_of: Callable[[Any], int],
              do: Callable[[int, int], None], child_result: Callable[[], Any], *,
              meanwhile: Optional[Callable[[], None]] = None, block: int = 64,
              helper: Optional["Helper"] = None) -> tuple[Any, Optional[Any]]:
    """`run` over a list the child makes first: the child runs `prologue()` and sends what
    it made, while this process runs `meanwhile()`; `count_of(made)` (asked in both
    processes) is the number of items. Returns (made, the child's result or None).
    `helper`: a child started earlier for this work (`Helper.start`), joined here."""
    if helper is None:
        helper = Helper.start(prologue, count_of, do, child_result, block=block)
    if helper is None:
        return _alone(prologue, count_of, do, meanwhile)
    return helper.finish(prologue, count_of, do, meanwhile=meanwhile, block=block)


class Helper:
    """The forked child of `run_after`, started early (`start`) and joined later
    (`finish`): this process may do anything in between. The child's functions are the
    ones given to `start`; this process's side, the ones given to `finish` (they may
    differ: each process has its own state to work in)."""

    def __init__(self, pid: int, shared: mmap.mmap, inp) -> None:
        self.pid, self.shared, self.inp = pid, shared, inp

    @classmethod
    def start(cls, prologue: Callable[[], Any], count_of: Callable[[Any], int],
              do: Callable[[int, int], None], child_result: Callable[[], Any], *,
              block: int = 64) -> Optional["Helper"]:
        """Fork the child (None where no process can be had)."""
        try:
            shared = mmap.mmap(-1, _POS.size)
            r, w = os.pipe()
        except (OSError, ValueError):
            return None
        try:
            pid = os.fork()
        except OSError:
            os.close(r)
            os.close(w)
            return None
        if pid == 0:                                 # the child: never returns
            code = 1
            try:
                os.close(r)
                with os.fdopen(w, "wb") as out:
                    made = prologue()
                    _POS.pack_into(shared, 0, 0, count_of(made))   # before the parent may look
                    _send(out, made)
                    _front(shared, do, block)
                    _send(out, child_result())
                code = 0
            finally:
                os._exit(code)                       # no atexit, no flush of the parent's buffers
        os.close(w)
        return cls(pid, shared, os.fdopen(r, "rb"))

    def finish(self, prologue: Callable[[], Any], count_of: Callable[[Any], int],
               do: Callable[[int, int], None], *, meanwhile: Optional[Callable[[], None]] = None,
               block: int = 64) -> tuple[Any, Optional[Any]]:
        """Run `meanwhile()`, take the child's list, work from the back, take the child's
        result: (made, the child's result or None). Where the child failed, its share
        (or, before its list, everything: `prologue()` here) is done here. Interrupted
        (Ctrl-C, an error here), the child is killed, not waited for."""
        done = False
        try:
            if meanwhile is not None:
                meanwhile()
            ok, made = _receive(self.inp)
            if not ok:                               # the child failed before its list: all here
                made = prologue()
                count = count_of(made)
                if count:
                    do(0, count)
                return made, None
            count_of(made)
            _back(self.shared, do, block)
            ok, got = _receive(self.inp)             # read before waiting: the child blocks on a full pipe
            done = True
            if not ok:
                _rest(self.shared, do)
                return made, None
            return made, got
        finally:
            self.cancel(kill=not done)

    def cancel(self, kill: bool = True) -> None:
        """End the child (killed, unless it is known to be done) and reap it."""
        if self.pid is None:
            return
        import signal
        try:
            self.inp.close()
            if kill:
                os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        except OSError:
            pass
        self.pid = None


def _send(out, value: Any) -> None:
    data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    out.write(_LEN.pack(len(data)))
    out.write(data)
    out.flush()


def _receive(inp) -> tuple[bool, Any]:
    """(True, the next message) or (False, None) when the child ended without sending it."""
    head = inp.read(_LEN.size)
    if len(head) != _LEN.size:
        return False, None
    (n,) = _LEN.unpack(head)
    data = inp.read(n)
    if len(data) != n:
        return False, None
    try:
        return True, pickle.loads(data)
    except Exception:  # noqa: BLE001 - a garbled message: as if none came
        return False, None


def _alone(prologue, count_of, do, meanwhile) -> tuple[Any, None]:
    if meanwhile is not None:
        meanwhile()
    made = prologue()
    count = count_of(made)
    if count:
        do(0, count)
    return made, None


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
