"""Per-file extraction results kept between runs, in `.preflight_cache/` (like ruff's).

An entry is found by a key over everything an extraction reads: the file's bytes (SHA-256),
the path as given and the working directory (facts carry their location; relative names
resolve from there), the launch-line arguments, the extractor kind, and preflight's
version. What an extraction read besides its own file — the files it follows or names
(a `source`d script, a JSON given on the command line) and the environment variables a
launcher consulted — is stored with the entry and compared on every hit; any difference is
a miss.

Entries are pickled `Extraction`s without their syntax tree (parsed again where the model
counter needs it: `extract.python.syntax_tree`). A missing,
unreadable, corrupt, or other-version entry is a miss, never an error; a cache folder that
cannot be written is used read-only or not at all. The folder is created with a
`.gitignore` holding `*`, so it is never committed.

Within one run the same object is also kept in memory, so the launcher that discovery
reads is not extracted again for its job.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import pickle
import tempfile
from typing import TYPE_CHECKING, Any, Iterator, Optional

from preflight import runcache
from preflight.version import __version__
from preflight.project import CACHE_FOLDER
from preflight.safe_read import read_regular

if TYPE_CHECKING:       # the settings and plan models are not needed to find a stored run
    from preflight.plan import Extraction

FOLDER = CACHE_FOLDER
#: bump when the entry layout changes (the version already covers the extractors)
LAYOUT = 2
VERSION = __version__


@functools.lru_cache(maxsize=1)
def _code_tag() -> str:
    """Size and modification time of preflight's own modules: an edited checkout (or an
    upgrade that keeps the version number) does not read entries written by other code."""
    h = hashlib.sha256()
    here = os.path.dirname(os.path.abspath(__file__))
    for d, dirs, names in os.walk(here):
        dirs.sort()
        for n in sorted(names):
            if n.endswith((".py", ".json")):     # the catalogues are code too
                try:
                    st = os.stat(os.path.join(d, n))
                except OSError:
                    continue
                h.update(f"{os.path.relpath(os.path.join(d, n), here)}:{st.st_size}:{st.st_mtime_ns};".encode())
    return h.hexdigest()[:16]


def version() -> str:
    """What an entry must have been written by: preflight's version and its code."""
    return f"{VERSION}+{_code_tag()}"


_NONE = object()


class ExtractionCache:
    def __init__(self, folder: Optional[str]):
        self.folder = folder            # None: this run only, nothing on disk
        self.memory: dict[str, Extraction] = {}
        self.hits = 0                   # served from disk
        self.misses = 0                 # extracted
        self._ready = False
        self._signals: Optional[dict[str, tuple[int, int, Any]]] = None
        self._signals_dirty = False
        self._fresh: dict[str, Any] = {}      # answers of this run: not stat'ed again
        self._made = False                    # the entries' folder exists
        self._cwd = os.getcwd()         # walked paths are joined to it (see `signal`)

    # ----------------------------------------------------------------- walk signals

    def signal(self, path: str, compute) -> Any:
        """What a cheap text test `compute(path)` said about a file a directory walk found
        (a training config? a runnable training script?), remembered by the file's
        modification time and size, so a warm run of a large repository does not read
        the thousands of files that are no part of a job."""
        # walked paths are normalised already: joined, not made absolute (no getcwd each)
        a = path if os.path.isabs(path) else os.path.join(self._cwd, path)
        fresh = self._fresh.get(a, _NONE)
        if fresh is not _NONE:
            return fresh            # asked in this run already (here or in a helper process)
        try:
            st = os.stat(path)
        except OSError:
            return compute(path)
        if self._signals is None:
            self._signals = self._load_signals()
        seen = self._signals.get(a)
        if seen is not None and seen[0] == st.st_mtime_ns and seen[1] == st.st_size:
            value = seen[2]
        else:
            value = compute(path)
            self._signals[a] = (st.st_mtime_ns, st.st_size, value)
            self._signals_dirty = True
        self._fresh[a] = value
        return value

    def signals_of(self, paths: list[str]) -> dict[str, tuple[int, int, Any]]:
        """What `signal` remembers of these files (for another process's cache)."""
        mine = self._signals or {}
        out = {}
        for p in paths:
            a = p if os.path.isabs(p) else os.path.join(self._cwd, p)
            if a in mine:
                out[a] = mine[a]
        return out

    def add_signals(self, found: dict[str, tuple[int, int, Any]]) -> None:
        """Take what another process's `signals_of` gave: its files' tests, not asked again."""
        if not found:
            return
        if self._signals is None:
            self._signals = self._load_signals()
        self._signals.update(found)
        self._fresh.update((a, v[2]) for a, v in found.items())
        self._signals_dirty = True

    def _signals_file(self) -> str:
        assert self.folder is not None
        return os.path.join(self.folder, VERSION, f"signals-{_code_tag()}.pickle")

    def _load_signals(self) -> dict:
        if self.folder is None:
            return {}
        try:
            with open(self._signals_file(), "rb") as fh:
                found = pickle.load(fh)
            return found if isinstance(found, dict) else {}
        except Exception:  # noqa: BLE001 - missing or corrupt: recomputed
            return {}

    def save(self) -> None:
        """Write what this run learnt about walked files (atomic; never fatal)."""
        if not self._signals_dirty or self.folder is None or not self._prepare():
            return
        try:
            data = pickle.dumps(self._signals, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:  # noqa: BLE001 - an unpicklable answer: not kept
            return
        if write_atomic(self._signals_file(), data):
            self._signals_dirty = False

    # ----------------------------------------------------------------- keys

    @staticmethod
    def key(path: str, raw: bytes, kind: str, args: Optional[list[str]],
            env: Optional[dict] = None) -> str:
        h = hashlib.sha256()
        for part in (version(), str(LAYOUT), kind, path, os.path.abspath(path), os.getcwd(),
                     json.dumps(args), json.dumps(sorted((env or {}).items()))):
            h.update(part.encode("utf-8", "surrogateescape"))
            h.update(b"\0")
        h.update(raw)
        return h.hexdigest()

    def _file(self, key: str) -> str:
        assert self.folder is not None
        # one flat folder: a new subfolder per entry costs a mkdir as dear as the write
        return os.path.join(self.folder, VERSION, key + ".pickle")

    # ----------------------------------------------------------------- lookup

    def get(self, key: str) -> Optional[Extraction]:
        # here, not at the top: a warm run imports this module but never the plan models (a
        # lazy() one would sit in sys.modules, where a warm run is told from a cold one)
        from preflight.plan import Extraction
        if key in self.memory:
            return self.memory[key]
        if self.folder is None:
            return None
        try:
            with open(self._file(key), "rb") as fh:
                entry = pickle.load(fh)
            if not (isinstance(entry, dict) and entry.get("layout") == LAYOUT
                    and entry.get("version") == version() and entry.get("key") == key
                    and isinstance(entry.get("extraction"), Extraction)):
                return None
            if not _still(entry.get("files", {}), entry.get("env", {})):
                return None
        except Exception:  # noqa: BLE001 - a corrupt or foreign entry is a miss, never fatal
            return None
        ext = entry["extraction"]
        self.memory[key] = ext
        self.hits += 1
        # what the extraction read is what a stored run result depends on, too
        for p in entry.get("files", {}):
            runcache.note_file(p)
        for k in entry.get("env", {}):
            runcache.note_env(k)
        return ext

    def put(self, key: str, ext: Extraction, read: dict[str, Optional[str]],
            env: dict[str, Optional[str]]) -> None:
        self.memory[key] = ext
        self.misses += 1
        if self.folder is None or not self._prepare():
            return
        stored = ext.without_tree()
        entry = {"layout": LAYOUT, "version": version(), "key": key, "files": read,
                 "env": env, "extraction": stored}
        try:
            data = pickle.dumps(entry, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:  # noqa: BLE001 - an unpicklable extra: not cached
            return
        # the entries' folder is made by the first write of the run only
        self._made = write_atomic(self._file(key), data, made=self._made) or self._made

    def prepare(self) -> bool:
        """Create the folder (with its .gitignore and CACHEDIR.TAG); False when it cannot be."""
        return self.folder is not None and self._prepare()

    def _prepare(self) -> bool:
        if self._ready:
            return True
        assert self.folder is not None
        try:
            os.makedirs(self.folder, exist_ok=True)
            ignore = os.path.join(self.folder, ".gitignore")
            if not os.path.exists(ignore):
                with open(ignore, "w", encoding="utf-8") as fh:
                    fh.write("# Automatically created by preflight.\n*\n")
            tag = os.path.join(self.folder, "CACHEDIR.TAG")
            if not os.path.exists(tag):
                with open(tag, "w", encoding="utf-8") as fh:
                    fh.write("Signature: 8a477f597d28d172789f06886806bc55\n"
                             "# This file is a cache directory tag created by preflight.\n")
        except OSError:
            self.folder = None
            return False
        self._ready = True
        return True


def write_atomic(target: str, data: bytes, *, made: bool = False) -> bool:
    """Replace `target` with `data` atomically — a reader sees the old file or the new one —
    creating its folder unless `made`; False (and nothing left behind) when it cannot be
    written (a read-only or full disk): the cache's files are never worth an error."""
    tmp = None
    try:
        if not made:
            os.makedirs(os.path.dirname(target), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(target), suffix=".tmp")
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, target)
        return True
    except OSError:
        if tmp:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        return False


def digest(path: str) -> Optional[str]:
    """SHA-256 of a file's bytes, or None when it is not a readable file."""
    try:
        return hashlib.sha256(read_regular(path)).hexdigest()
    except (OSError, ValueError):      # ValueError: a path with an unknown (NUL-marked) piece
        return None


def _still(files: dict[str, Optional[str]], env: dict[str, Optional[str]]) -> bool:
    return (all(digest(p) == h for p, h in files.items())
            and all(os.environ.get(k) == v for k, v in env.items()))


# --------------------------------------------------------------------- the run's cache

_ACTIVE: Optional[ExtractionCache] = None


def active() -> Optional[ExtractionCache]:
    return _ACTIVE


@contextlib.contextmanager
def using(cache: Optional[ExtractionCache]) -> Iterator[Optional[ExtractionCache]]:
    """Make `cache` the one `preflight.extract.extract_file` consults, for the block."""
    global _ACTIVE
    before = _ACTIVE
    _ACTIVE = cache
    try:
        yield cache
    finally:
        _ACTIVE = before


def folder_for(config: Any, root: str) -> str:
    """The cache folder: `cache-dir` from [tool.preflight], else `.preflight_cache` in the
    project root."""
    d = getattr(config, "cache_dir", None)
    return d if d else os.path.join(root, FOLDER)
