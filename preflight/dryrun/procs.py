"""Process handling of a dry run: bounded capture of the job's output, and ending the whole
process tree the job started.

The tree is more than one process group: torchrun starts each worker in a session of its
own, so signalling the launcher's group leaves workers that ignore SIGTERM running as
orphans. Every process of the job carries a token in its environment (`TOKEN_VAR`, inherited
through fork and exec); on Linux the tree is found by parent links *and* by that token — an
orphan re-parented to init still carries it — and each process and its group is signalled.
Elsewhere the launcher's group is signalled as before.
"""

from __future__ import annotations

import collections
import os
import signal
import subprocess
import threading
import time
from typing import IO, Optional

#: environment variable marking every process of one dry run
TOKEN_VAR = "PREFLIGHT_DRYRUN_TOKEN"
#: bytes of the job's output kept (its tail); the rest is counted, not stored
TAIL_BYTES = 64 * 1024


class TailBuffer:
    """The last `limit` bytes of a stream, and how many bytes it carried in all. A job that
    prints gigabytes costs the parent `limit` bytes of memory and no disk."""

    def __init__(self, limit: int = TAIL_BYTES) -> None:
        self.limit = limit
        self.total = 0
        self._chunks: collections.deque[bytes] = collections.deque()
        self._size = 0
        self._lock = threading.Lock()

    def write(self, data: bytes) -> None:
        with self._lock:
            self.total += len(data)
            if len(data) >= self.limit:
                self._chunks.clear()
                self._chunks.append(data[-self.limit:])
                self._size = self.limit
                return
            self._chunks.append(data)
            self._size += len(data)
            while self._size - len(self._chunks[0]) >= self.limit:
                self._size -= len(self._chunks.popleft())

    def getvalue(self) -> bytes:
        with self._lock:
            return b"".join(self._chunks)[-self.limit:]


def drain(stream: IO[bytes], buf: TailBuffer) -> threading.Thread:
    """Read `stream` to its end on a daemon thread, keeping the tail in `buf`."""
    fd = stream.fileno()

    def run() -> None:
        try:
            while True:
                chunk = os.read(fd, 65536)
                if not chunk:
                    return
                buf.write(chunk)
        except OSError:
            return

    th = threading.Thread(target=run, name="preflight-dryrun-output", daemon=True)
    th.start()
    return th


# --------------------------------------------------------------------------- the tree

def _proc_available() -> bool:
    return os.path.isdir("/proc/self")


def _stat(pid: int) -> Optional[tuple[str, int]]:
    """(state letter, parent pid) of a live process, from /proc (None when it is gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    tail = data.rsplit(b")", 1)[-1].split()
    try:
        return tail[0].decode(), int(tail[1])
    except (IndexError, ValueError):
        return None


def _has_token(pid: int, token: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return token in f.read()
    except OSError:
        return False


def tree(leader: int, token: Optional[str]) -> set[int]:
    """The live processes of the job: `leader`, its descendants, and any process carrying
    the job's token (an orphan whose parent died). Linux only; elsewhere {leader}."""
    if not _proc_available():
        return {leader}
    mark = f"{TOKEN_VAR}={token}".encode() if token else None
    me = os.getpid()
    children: dict[int, list[int]] = {}
    out: set[int] = set()
    try:
        entries = os.listdir("/proc")
    except OSError:
        return {leader}
    for e in entries:
        if not e.isdigit():
            continue
        pid = int(e)
        st = _stat(pid)
        if st is None or st[0] == "Z" or pid == me:
            continue
        children.setdefault(st[1], []).append(pid)
        if mark is not None and _has_token(pid, mark):
            out.add(pid)
    todo = [leader]
    while todo:
        p = todo.pop()
        if p in out and p != leader:
            continue
        out.add(p)
        todo.extend(children.get(p, ()))
    return out


def _alive(pid: int) -> bool:
    if _proc_available():
        st = _stat(pid)
        return st is not None and st[0] != "Z"
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _signal(pids: set[int], sig: int) -> None:
    own = os.getpgrp()
    groups = set()
    for pid in pids:
        try:
            groups.add(os.getpgid(pid))
        except OSError:
            pass
    for g in groups - {own}:
        try:
            os.killpg(g, sig)
        except OSError:
            pass
    for pid in pids:
        try:
            os.kill(pid, sig)
        except OSError:
            pass


def end_tree(proc: subprocess.Popen, token: Optional[str],
             grace: float = 3.0, hard: float = 5.0) -> list[int]:
    """End the job: SIGTERM to every process of the tree and its group, then SIGKILL to
    what is left. Returns the pids still alive afterwards (normally none)."""
    seen = tree(proc.pid, token)
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, hard)):
        seen |= tree(proc.pid, token)
        alive = {p for p in seen if p == proc.pid and proc.poll() is None or
                 p != proc.pid and _alive(p)}
        if not alive:
            return []
        _signal(alive, sig)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            proc.poll()
            seen |= tree(proc.pid, token)
            if not any((p == proc.pid and proc.returncode is None) or
                       (p != proc.pid and _alive(p)) for p in seen):
                return []
            time.sleep(0.1)
    proc.poll()
    return sorted(p for p in seen if (p == proc.pid and proc.returncode is None) or
                  (p != proc.pid and _alive(p)))


def set_parent_death_signal(sig: int = signal.SIGKILL) -> bool:
    """Ask the kernel to send `sig` to this process when its parent dies (Linux
    `PR_SET_PDEATHSIG`): a worker whose launcher was killed does not live on."""
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(1, int(sig), 0, 0, 0) == 0     # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return False
