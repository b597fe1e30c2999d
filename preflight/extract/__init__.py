"""Extractors: one per file kind. Each reads one file and returns an `Extraction`.

`extract_file` is the single entry point: it reads the file defensively (missing, binary,
non-UTF-8, huge) and dispatches on the file kind. A file that cannot be read or parsed
yields a located PF0xx diagnostic, never an exception.
"""

from __future__ import annotations

import collections
import hashlib
import os
from typing import Optional

from preflight.plan import Diagnostic, Extraction
from preflight.safe_read import MAX_BYTES   # larger files are reported, not parsed

#: work done in this process: `extractions` (a file read by its extractor, which parses
#: it), `cache_hits` (served from the cache folder), `ast_reparses` (a Python file parsed
#: again for the model counter: its extraction came from the cache or a worker process,
#: or it is a helper module that defines the model class), `ast_parses` (texts handed to
#: `ast.parse`: once per text and process, `extract.python.parse`), `libcst_parses` (a file `ast`
#: rejects, tried with libcst's newer grammar). Read by tests and bench/.
stats: collections.Counter = collections.Counter()


def stats_since(before: dict) -> dict[str, int]:
    """What `stats` counted since it was `before` (a worker's counts, for its parent)."""
    return {k: v - before.get(k, 0) for k, v in stats.items() if v != before.get(k, 0)}
#: while an extraction runs with the cache on: the other files it read, path → SHA-256
_reading: Optional[dict[str, Optional[str]]] = None


def kind_of(path: str, head: str = "") -> str:
    """The extractor to use for a path (by extension, then by content)."""
    name = os.path.basename(path).lower()
    ext = os.path.splitext(name)[1]
    if ext == ".py":
        return "python"
    if ext in (".sh", ".bash", ".slurm", ".sbatch", ".mk") or name in ("makefile", "gnumakefile"):
        return "shell"
    if ext == ".json":
        return "json"
    if ext in (".yaml", ".yml"):
        return "yaml"
    if ext == ".toml":
        return "toml"
    if head.startswith("#!") and ("sh" in head.split("\n", 1)[0]):
        return "shell"
    if head.startswith("#!") and "python" in head.split("\n", 1)[0]:
        return "python"
    if ext in ("", ".conf", ".config", ".cfg", ".ds") and head.lstrip().startswith("{"):
        return "json"        # a JSON config without a .json name (DeepSpeed's --deepspeed_config)
    return "unknown"


def read_text(path: str) -> tuple[Optional[str], Optional[Diagnostic]]:
    """The file's text, or a PF001 diagnostic saying why it cannot be read (too large, a
    FIFO or device, a link loop, no permission: `safe_read.read_regular`'s reasons)."""
    from preflight.safe_read import Unreadable, read_regular
    try:
        raw = read_regular(path, MAX_BYTES)
    except Unreadable as e:
        if e.size is not None:
            return None, Diagnostic(code="PF001", name="unreadable-file", severity="warning",
                                    message=f"file is {e.size:,} bytes, over the "
                                            f"{MAX_BYTES:,}-byte limit; not analysed",
                                    path=path, line=1, col=1)
        return None, Diagnostic(code="PF001", name="unreadable-file", severity="error",
                                message=f"cannot read file: {e.reason}", path=path)
    if _reading is not None:
        _reading[os.path.abspath(path)] = hashlib.sha256(raw).hexdigest()
    if b"\0" in raw[:8192]:
        return None, Diagnostic(code="PF001", name="unreadable-file", severity="warning",
                                message="binary file (contains NUL bytes); not analysed",
                                path=path, line=1, col=1)
    try:
        return raw.decode("utf-8-sig"), None
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        col = e.start - (raw.rfind(b"\n", 0, e.start) + 1) + 1
        return None, Diagnostic(code="PF001", name="unreadable-file", severity="error",
                                message=f"not valid UTF-8 (byte 0x{raw[e.start]:02x}); not analysed",
                                path=path, line=line, col=col)


def extract_text(path: str, text: str, kind: str, args: Optional[list[str]] = None,
                 env: Optional[dict] = None) -> Extraction:
    """Dispatch on kind. Extractor modules are imported lazily: a job without YAML never
    pays for the YAML extractor's import."""
    if kind == "python":
        from preflight.extract import python as mod
        return mod.extract(path, text, args=args, env=env)
    if kind not in ("shell", "json", "yaml", "toml"):
        return Extraction(path=path, kind=kind)
    import importlib
    mod = importlib.import_module(f"preflight.extract.{kind}_file")
    try:
        return mod.extract(path, text, args=args)
    except (RecursionError, MemoryError) as e:
        return Extraction(path=path, kind=kind, diagnostics=[Diagnostic(
            code="PF003", name="unresolved-value", severity="warning",
            message=f"file too deeply nested or too large to analyse ({type(e).__name__}); "
                    "its facts are missing", path=path, line=1, col=1)])
    except Exception as e:  # noqa: BLE001 - one file's surprise must not stop the others
        if os.environ.get("PREFLIGHT_DEBUG"):
            raise
        return Extraction(path=path, kind=kind, diagnostics=[Diagnostic(
            code="PF003", name="unresolved-value", severity="warning",
            message=f"the {kind} extractor failed on this file ({type(e).__name__}: "
                    f"{str(e)[:200]}); its facts are missing", path=path, line=1, col=1)])


def extract_file(path: str, args: Optional[list[str]] = None,
                 env: Optional[dict] = None) -> Extraction:
    """One file's facts. `args`: the script's command line; `env`: what its launcher sets
    in its environment (`preflight.extract.launch_env`), for Python scripts. With a cache
    active (`preflight.cache.using`), served from it when the file and everything its
    extraction read are unchanged."""
    from preflight import cache as C

    text, diag = read_text(path)
    if diag is not None:
        return Extraction(path=path, kind="unreadable", diagnostics=[diag])
    text = text or ""
    kind = kind_of(path, text[:200])
    store = C.active()
    if store is None:
        stats["extractions"] += 1
        return extract_text(path, text, kind, args=args, env=env)
    key = store.key(path, text.encode("utf-8", "surrogatepass"), kind, args, env)
    in_run = key in store.memory        # already read in this run (by discovery)
    hit = store.get(key)
    if hit is not None:
        if not in_run:
            stats["cache_hits"] += 1
        return hit
    global _reading
    from preflight.lang.shell import expand
    outer, outer_env = _reading, expand.env_read
    _reading, expand.env_read = {}, {}
    try:
        stats["extractions"] += 1
        ext = extract_text(path, text, kind, args=args, env=env)
        read, env = _reading, expand.env_read
    finally:
        _reading, expand.env_read = outer, outer_env
    read.pop(os.path.abspath(path), None)
    for ref in ext.references:         # files it followed or named, present or not
        for cand in (ref, os.path.join(os.path.dirname(path), ref)):
            a = os.path.abspath(cand)
            if a not in read and a != os.path.abspath(path):
                read[a] = C.digest(a)
    store.put(key, ext, read, env)
    return ext
