"""Whole-run results kept between `preflight check` runs: a warm run over an unchanged
repository prints the stored report without walking, reading or parsing anything.

An entry is found by a key over what a run is decided by before it reads a file:
preflight's version and code, the command line, the working directory, the environment
variables that steer it (`ENV_PREFIXES`, `ENV_NAMES`), whether stdout is a terminal
(colour) and the installed rule packs.

Everything the run looked at on disk is recorded while it runs (`runcache.recording`) and stored
with the entry: each folder the walk listed (an entry added, removed or renamed changes
the folder's modification time), each file it found, every file read (launchers, configs,
`source`d scripts, a model's config.json, `.gitignore`s, pyproject.toml files) and every
path probed that was absent then; and the environment variables a launcher consulted. A
hit requires each of them unchanged — size and modification time — so a warm run costs one
`stat` per recorded path.

A file modified in the same clock tick as the run that stored the entry could keep its
size and modification time while its bytes change (the "racy clean" case of git's index):
for files modified shortly before the run began, the entry also keeps a hash of the bytes,
compared on every hit.

Entries live in the cache folder (`runs/`), one per command line, are written
atomically, and a missing, corrupt or foreign one is a miss, never an error.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
import time
from typing import Optional

from preflight.cache import digest, write_atomic
from preflight.packs import entry_points
from preflight.runcache import Recorder, stamp

#: environment variables that change what a run reports, by prefix or name
ENV_PREFIXES = ("PREFLIGHT_", "HF_", "HUGGINGFACE_", "TRANSFORMERS_", "GITHUB_")
ENV_NAMES = ("XDG_CACHE_HOME", "HOME", "NO_COLOR", "FORCE_COLOR", "TERM")
#: a file modified less than this many seconds before the run started has its bytes hashed
RACY_S = 3.0
#: entries kept per cache folder (the newest; one per command line)
KEEP = 32
LAYOUT = 1

# --------------------------------------------------------------------------- keys

def _environment() -> list[tuple[str, str]]:
    return sorted((k, v) for k, v in os.environ.items()
                  if k.startswith(ENV_PREFIXES) or k in ENV_NAMES)


def _rule_packs() -> list[str]:
    """The installed rule packs (entry points of `preflight.rules`) and their versions."""
    try:
        eps = entry_points()
        return sorted(f"{ep.name}={ep.value}@{getattr(ep.dist, 'version', '')}" for ep in eps)
    except Exception:  # noqa: BLE001 - no metadata: no packs to tell apart
        return []


def key(argv: list, *, version: str) -> str:
    """The entry key of a run of `argv` (the command's name, its options, the launch
    command) from the working directory, under the current environment."""
    head = {"layout": LAYOUT, "version": version, "argv": argv, "cwd": os.getcwd(),
            "env": _environment(), "tty": bool(getattr(sys.stdout, "isatty", lambda: False)()),
            "packs": _rule_packs(), "python": sys.version}
    return hashlib.sha256(json.dumps(head, sort_keys=True, default=repr)
                          .encode("utf-8", "surrogateescape")).hexdigest()


# --------------------------------------------------------------------------- entries

def _path(folder: str, k: str) -> str:
    return os.path.join(folder, "runs", k + ".json")


def load(folder: Optional[str], k: str) -> Optional[dict]:
    """The stored result of run `k` — {"stdout", "stderr", "code"} — when every path and
    variable it depended on is unchanged; else None."""
    if not folder:
        return None
    try:
        with open(_path(folder, k), encoding="utf-8") as fh:
            entry = json.load(fh)
        if not (isinstance(entry, dict) and entry.get("layout") == LAYOUT and entry.get("key") == k):
            return None
        for path, st in entry["deps"].items():
            if tuple(st) != stamp(path):
                return None
        for name, value in entry["env"].items():
            if os.environ.get(name) != value:
                return None
        for path, h in entry["racy"].items():
            if digest(path) != h:
                return None
        out = entry["result"]
        if not (isinstance(out.get("stdout"), str) and isinstance(out.get("stderr"), str)
                and isinstance(out.get("code"), int)):
            return None
        return out
    except Exception:  # noqa: BLE001 - missing, corrupt or foreign: a miss
        return None


def store(folder: Optional[str], k: str, rec: Recorder, started: float, result: dict) -> None:
    """Keep the result of run `k` with what it depended on (atomic, never fatal). A run
    that recorded nothing on disk (a launch command alone) is not kept."""
    if not folder or not rec.files:
        return
    racy = {}
    limit = (started - RACY_S) * 1e9
    for path, st in rec.files.items():
        if isinstance(st[0], int) and isinstance(st[1], int) and st[1] >= limit:
            h = digest(path)
            if h is None:
                return          # vanished while the run read it: not kept
            racy[path] = h
    entry = {"layout": LAYOUT, "key": k, "written": time.time(),
             "deps": {p: list(st) for p, st in rec.files.items()},
             "env": rec.env, "racy": racy, "result": result}
    target = _path(folder, k)
    # one C-encoded string: json.dump writes in pieces
    if write_atomic(target, json.dumps(entry).encode("utf-8", "surrogateescape")):
        _prune(os.path.dirname(target))


def _prune(runs: str) -> None:
    try:
        names = [n for n in os.listdir(runs) if n.endswith(".json")]
        if len(names) <= KEEP:
            return
        aged = sorted(names, key=lambda n: os.path.getmtime(os.path.join(runs, n)))
        for n in aged[: len(names) - KEEP]:
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(runs, n))
    except OSError:
        pass
