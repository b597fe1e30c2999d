"""Extractors: one per file kind. Each reads one file and returns an `Extraction`.

`extract_file` is the single entry point: it reads the file defensively (missing, binary,
non-UTF-8, huge) and dispatches on the file kind. A file that cannot be read or parsed
yields a located PF0xx diagnostic, never an exception.
"""

from __future__ import annotations

import os
from typing import Optional

from preflight.plan import Diagnostic, Extraction

MAX_BYTES = 8 * 1024 * 1024   # larger files are reported, not parsed


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
    return "unknown"


def read_text(path: str) -> tuple[Optional[str], Optional[Diagnostic]]:
    """The file's text, or a PF001 diagnostic saying why it cannot be read."""
    try:
        size = os.path.getsize(path)
        if size > MAX_BYTES:
            return None, Diagnostic(code="PF001", name="unreadable-file", severity="warning",
                                    message=f"file is {size:,} bytes, over the {MAX_BYTES:,}-byte limit; not analysed",
                                    path=path, line=1, col=1)
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError as e:
        return None, Diagnostic(code="PF001", name="unreadable-file", severity="error",
                                message=f"cannot read file: {e.strerror or e}", path=path)
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


def extract_text(path: str, text: str, kind: str, args: Optional[list[str]] = None) -> Extraction:
    """Dispatch on kind. Extractor modules are imported lazily: a job without YAML never
    pays for the YAML extractor's import."""
    if kind == "python":
        from preflight.extract import python as mod
        return mod.extract(path, text, args=args)
    if kind not in ("shell", "json", "yaml", "toml"):
        return Extraction(path=path, kind=kind)
    import importlib
    mod = importlib.import_module(f"preflight.extract.{kind}_file")
    return mod.extract(path, text, args=args)


def extract_file(path: str, args: Optional[list[str]] = None) -> Extraction:
    text, diag = read_text(path)
    if diag is not None:
        return Extraction(path=path, kind="unreadable", diagnostics=[diag])
    return extract_text(path, text or "", kind_of(path, (text or "")[:200]), args=args)
