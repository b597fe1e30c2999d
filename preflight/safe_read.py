"""The one way preflight reads a file of the analysed repository.

A repository can hold anything at a path that looks like a config: a FIFO named `run.sh`
(a plain `open()` waits forever for a writer), a symlink to `/dev/zero` (a plain `read()`
never ends), a symlink loop, a file it may not read. `read_regular` opens without blocking,
reads only regular files, stops at a size cap, and says the true reason otherwise
(`Unreadable.reason`), so every caller can report a located finding instead of hanging or
calling everything "no such file".
"""

from __future__ import annotations

import errno
import os
import stat
from typing import Optional

from preflight import runcache

#: the default cap: larger files are reported, not read
MAX_BYTES = 8 * 1024 * 1024

_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a named pipe (FIFO)"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"))


class Unreadable(OSError):
    """A file that is not read; `reason` says why in words, `size` is set when it is only
    too large."""

    def __init__(self, reason: str, size: Optional[int] = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.size = size

    def __str__(self) -> str:
        return self.reason


def _reason(path: str, e: OSError) -> str:
    if e.errno == errno.ENOENT:
        return "broken symbolic link" if os.path.islink(path) else "no such file or directory"
    if e.errno == errno.ELOOP:
        return "symbolic link loop (too many levels of symbolic links)"
    if e.errno in (errno.EACCES, errno.EPERM):
        return "permission denied"
    if e.errno == errno.ENOTDIR:
        return "a part of the path is not a directory"
    if e.errno == errno.ENAMETOOLONG:
        return "file name too long"
    return e.strerror or str(e)


def stat_reason(path: str) -> Optional[str]:
    """Why `path` cannot be reached, in words (no such file, broken link, link loop,
    permission denied) — None when it can."""
    try:
        os.stat(path)
    except OSError as e:
        return _reason(path, e)
    except ValueError as e:              # an embedded NUL in the path
        return f"invalid path ({e})"
    return None


def within(path: str, roots: "list[str] | tuple[str, ...]") -> bool:
    """Is `path` (symlinks resolved) inside one of `roots`? A link inside the project that
    points out of it is outside."""
    real = os.path.realpath(path)
    for r in roots:
        rr = os.path.realpath(r)
        if real == rr or real.startswith(rr.rstrip(os.sep) + os.sep):
            return True
    return False


def read_regular(path: str, max_bytes: int = MAX_BYTES, *, truncate: bool = False) -> bytes:
    """The bytes of the regular file at `path` (symlinks followed).

    Raises `Unreadable` for anything else: a missing file, a broken link, a link loop, no
    permission, a directory, a FIFO, a device, a socket — and for a file over `max_bytes`
    (unless `truncate`, which returns its first `max_bytes` instead). Never blocks: a FIFO is
    opened non-blocking and refused before any read."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | \
        getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as e:
        runcache.note_file(path)
        raise Unreadable(_reason(path, e)) from None
    except ValueError as e:              # an embedded NUL in the path
        raise Unreadable(f"invalid path ({e})") from None
    try:
        st = os.fstat(fd)
        if stat.S_ISREG(st.st_mode):     # what a stored run result depends on
            runcache.note_file(path, st.st_size, st.st_mtime_ns)
        else:
            runcache.note_file(path)
        if not stat.S_ISREG(st.st_mode):
            kind = next((word for test, word in _KINDS if test(st.st_mode)), "not a regular file")
            raise Unreadable(f"{kind}, not a regular file; not read")
        if st.st_size > max_bytes and not truncate:
            raise Unreadable(f"file is {st.st_size:,} bytes, over the {max_bytes:,}-byte limit; "
                             "not read", size=st.st_size)
        chunks: list[bytes] = []
        got = 0
        while got <= max_bytes:          # the size can grow while we read (a log being written)
            try:
                want = min(1 << 20, max_bytes + 1 - got)
                b = os.read(fd, want)
            except BlockingIOError:
                break
            except OSError as e:
                raise Unreadable(_reason(path, e)) from None
            if not b:
                break
            chunks.append(b)
            got += len(b)
            # a short read that reaches the size fstat gave is the end (a size of 0 may be
            # a /proc file's: read on until a read returns nothing)
            if 0 < st.st_size <= got and len(b) < want:
                break
        data = b"".join(chunks)
        if len(data) > max_bytes:
            if truncate:
                return data[:max_bytes]
            raise Unreadable(f"file grew past the {max_bytes:,}-byte limit while read; not read",
                             size=len(data))
        return data
    finally:
        os.close(fd)


def read_text(path: str, max_bytes: int = MAX_BYTES, *, truncate: bool = False) -> str:
    """`read_regular` decoded as UTF-8 (invalid bytes replaced, a BOM dropped)."""
    data = read_regular(path, max_bytes, truncate=truncate)
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    return data.decode("utf-8", "replace")      # the C decoder; utf-8-sig's is Python


def try_read_text(path: str, max_bytes: int = MAX_BYTES, *, truncate: bool = False
                  ) -> Optional[str]:
    """`read_text`, or None when the file is not read (for callers that only look for
    hints in other files and report nothing about them)."""
    try:
        return read_text(path, max_bytes, truncate=truncate)
    except Unreadable:
        return None
