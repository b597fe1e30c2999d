"""The repository-wide search for the launchers and configs that name a file.

A pre-commit hook passes only the changed files, so for a script or config given alone
discovery looks across the repository for the launchers and configs that name it: a cheap
text scan (file names only, no parsing) over launcher and config files, skipping VCS
folders, virtual environments and node_modules, with caps on depth, file count and size.
Only the few files whose text names the target are parsed.
"""

from __future__ import annotations

import os
import re
from typing import Optional

from preflight import runcache, safe_read
from preflight.discover.paths import MAX_SCAN_BYTES, rel

SKIP_DIRS = {".git", ".hg", ".svn", ".venv", "venv", "env", ".env", "node_modules", "__pycache__",
             ".tox", ".nox", ".mypy_cache", ".pytest_cache", ".ruff_cache", "site-packages",
             "build", "dist", ".eggs", "wandb", "outputs", "checkpoints", ".idea", ".vscode"}
SCAN_EXT = (".sh", ".bash", ".slurm", ".sbatch", ".yaml", ".yml", ".json", ".toml", ".ipynb")
LAUNCH_EXT = (".sh", ".bash", ".slurm", ".sbatch")
#: notebooks launch scripts too (`!torchrun train.py`, `%run train.py`)
NOTEBOOK_EXT = (".ipynb",)
MAX_DEPTH = 8
MAX_FILES = 20000


#: characters that end a file name written in a launcher or config (quotes, `=`, `/`, …)
NAME_SPLIT = re.compile(r"[\s\"'`=/\\,;:|&<>(){}\[\]$]+")


class Index:
    """Launcher and config files of the repository with their text, read lazily once, and
    an index from every file name they mention to the files that mention it — built in one
    pass over them, so finding the launchers that name a file is one look-up, not one
    search of the repository per file."""

    def __init__(self, root: str, files: Optional[list[str]] = None):
        self.root = root
        self._files: Optional[list[str]] = None
        if files is not None:
            self._files = [f for f in files
                           if f.lower().endswith(SCAN_EXT) or os.path.basename(f).lower() == "makefile"]
        self._text: dict[str, str] = {}
        self._names: Optional[dict[str, list[str]]] = None

    def files(self) -> list[str]:
        if self._files is None:
            out: list[str] = []
            base_depth = self.root.rstrip(os.sep).count(os.sep)
            for d, dirs, names in os.walk(self.root):
                runcache.note_file(d)     # a launcher added here later changes its stamp
                depth = d.count(os.sep) - base_depth
                dirs[:] = sorted(x for x in dirs if x not in SKIP_DIRS and not x.startswith(".")
                                 and not x.endswith(".egg-info")) if depth < MAX_DEPTH else []
                for n in sorted(names):
                    low = n.lower()
                    if low.endswith(SCAN_EXT) or low == "makefile":
                        out.append(os.path.join(d, n))
                if len(out) >= MAX_FILES:
                    break
            self._files = out[:MAX_FILES]
        return self._files

    def text(self, path: str) -> str:
        if path not in self._text:
            try:
                if os.path.getsize(path) > MAX_SCAN_BYTES:
                    runcache.note_file(path)
                    self._text[path] = ""
                else:
                    self._text[path] = safe_read.read_text(path)
            except OSError:
                self._text[path] = ""
        return self._text[path]

    def _by_name(self) -> dict[str, list[str]]:
        if self._names is None:
            names: dict[str, list[str]] = {}
            for f in self.files():
                for word in {w.rstrip(".") for w in NAME_SPLIT.split(self.text(f))}:
                    if "." in word:
                        names.setdefault(word, []).append(f)
            self._names = names
        return self._names

    def naming(self, target: str, exts: tuple[str, ...]) -> list[str]:
        base = os.path.basename(target)
        ta = os.path.abspath(target)
        if "." in base and not NAME_SPLIT.search(base):
            cands = self._by_name().get(base, [])
        else:      # a name the index cannot hold: the plain text search
            cands = [f for f in self.files() if base in self.text(f)]
        return [rel(f) for f in cands if f.lower().endswith(exts) or
                (os.path.basename(f).lower() == "makefile" and "makefile" in exts)
                if os.path.abspath(f) != ta]
