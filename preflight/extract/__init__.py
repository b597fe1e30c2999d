"""Extractors: one per file kind. Each reads one file and returns an `Extraction`.

`extract_file` is the single entry point: it reads the file defensively (missing, binary,
non-UTF-8, huge) and dispatches on the file kind. A file that cannot be read or parsed
yields a located PF0xx diagnostic, never an exception.
"""

from __future__ import annotations

import os
from typing import Optional

from preflight.plan import Diagnostic, Extraction
from preflight.extract import reading
# the package's surface: reading a file, its kind, the work counters
from preflight.extract.reading import kind_of, read_text, stats, stats_since  # noqa: F401
from preflight.lang.notebook import DATABRICKS, VIRTUAL
from preflight.lazy import lazy

C = lazy("preflight.cache")
python_extractor = lazy("preflight.extract.python")
notebook_file = lazy("preflight.extract.notebook_file")


def extract_text(path: str, text: str, kind: str, args: Optional[list[str]] = None,
                 env: Optional[dict] = None) -> Extraction:
    """Dispatch on kind. Extractor modules are imported lazily: a job without YAML never
    pays for the YAML extractor's import."""
    if kind == "python":
        if text.startswith(DATABRICKS) or text.startswith("\ufeff" + DATABRICKS):
            return notebook_file.extract_databricks(path, text, args=args, env=env)
        return python_extractor.extract(path, text, args=args, env=env)
    if kind == "notebook":
        return notebook_file.extract(path, text, args=args, env=env)
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
    extraction read are unchanged. A file a notebook's `%%writefile` cell writes
    (`nb.ipynb#train.py`) is read from that cell."""
    if VIRTUAL in path:
        return notebook_file.extract_written(
            path, lambda p, t, args, env: extract_text(p, t, kind_of(p, t[:200]), args, env),
            args=args, env=env)
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
    # here: lazy() would import the lang.shell package, unused by `estimate --model`
    from preflight.lang.shell import expand
    outer, outer_env = reading.files_read, expand.env_read
    reading.files_read, expand.env_read = {}, {}
    try:
        stats["extractions"] += 1
        ext = extract_text(path, text, kind, args=args, env=env)
        read, env = reading.files_read, expand.env_read
    finally:
        reading.files_read, expand.env_read = outer, outer_env
    read.pop(os.path.abspath(path), None)
    for ref in ext.references:         # files it followed or named, present or not
        for cand in (ref, os.path.join(os.path.dirname(path), ref)):
            a = os.path.abspath(cand)
            if a not in read and a != os.path.abspath(path):
                read[a] = C.digest(a)
    store.put(key, ext, read, env)
    return ext
