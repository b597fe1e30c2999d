"""What a run reads, recorded while it runs: the files it found or read (by size and
modification time), the folders it listed, the paths it probed that were absent and the
environment variables a launcher consulted. The stored whole-run results
(`preflight.runstore`) depend on exactly this record; every reader of the disk notes what
it reads here (`note_file`, `note_env`), a no-op outside `recording`. Imports nothing of
preflight: the lowest layer, so every reader can call it."""

from __future__ import annotations

import contextlib
import os
import stat as _stat
from typing import Iterator, Optional

Stamp = tuple  # (size, mtime_ns) or (None, None) for a path that is absent / not a file


def stamp(path: str) -> Stamp:
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return (None, None)
    if not _stat.S_ISREG(st.st_mode):
        return ("dir" if _stat.S_ISDIR(st.st_mode) else "other", st.st_mtime_ns)
    return (st.st_size, st.st_mtime_ns)


# --------------------------------------------------------------------------- recording

class Recorder:
    """What a run read beyond the files its key covers: files (by stamp), folders looked
    into (by modification time: an entry added or removed changes it) and environment
    variables (by value)."""

    def __init__(self) -> None:
        self.files: dict[str, Stamp] = {}
        self.env: dict[str, Optional[str]] = {}
        self._cwd = os.getcwd()

    def file(self, path: str, size: Optional[int] = None, mtime_ns: Optional[int] = None) -> None:
        # joined, not made absolute: the walk's paths are normalised already, and this is
        # called for every file a run finds and again for every file it reads
        a = path if os.path.isabs(path) else os.path.join(self._cwd, path)
        if a not in self.files:
            self.files[a] = (size, mtime_ns) if size is not None else stamp(a)

    def variable(self, name: str) -> None:
        if name not in self.env:
            self.env[name] = os.environ.get(name)


_ACTIVE: Optional[Recorder] = None


def active() -> Optional[Recorder]:
    return _ACTIVE


@contextlib.contextmanager
def recording() -> Iterator[Recorder]:
    global _ACTIVE
    before = _ACTIVE
    _ACTIVE = rec = Recorder()
    try:
        yield rec
    finally:
        _ACTIVE = before


def note_file(path: str, size: Optional[int] = None, mtime_ns: Optional[int] = None) -> None:
    """A file (or folder) the run read or looked for; a no-op outside `recording`."""
    if _ACTIVE is not None:
        _ACTIVE.file(path, size, mtime_ns)


def note_env(name: str) -> None:
    if _ACTIVE is not None:
        _ACTIVE.variable(name)


def absorb(read: tuple[dict, dict]) -> None:
    """Add what a worker process recorded — (its Recorder's files, env) — to this process's
    recording: a stored result depends on what the workers read too."""
    if _ACTIVE is None:
        return
    files, env = read
    _ACTIVE.files.update({p: st for p, st in files.items() if p not in _ACTIVE.files})
    _ACTIVE.env.update({n: v for n, v in env.items() if n not in _ACTIVE.env})
