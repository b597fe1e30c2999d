"""Reading one file defensively, telling its kind, and counting the work extraction does.

Below the extractors and their dispatch (`preflight.extract`): every extractor and the
walk read files through `read_text`, which never raises (missing, binary, non-UTF-8, huge:
a located PF001 diagnostic instead).
"""

from __future__ import annotations

import collections
import hashlib
import os
from typing import Optional

from preflight.plan import Diagnostic
from preflight.safe_read import MAX_BYTES, Unreadable, read_regular  # larger files are reported, not parsed

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
#: (set by `preflight.extract.extract_file` around each extraction)
files_read: Optional[dict[str, Optional[str]]] = None


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
    if ext == ".ipynb":
        return "notebook"
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
    if files_read is not None:
        files_read[os.path.abspath(path)] = hashlib.sha256(raw).hexdigest()
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
