"""Paths as discovery handles them: a file named on a launch line resolved to an existing
path, paths shown as the user would write them and compared absolute, how much of a file
is read, and the path findings about a command given after `--` are reported at.
"""

from __future__ import annotations

import os
from typing import Iterable, Optional

from preflight.lang.notebook import split_virtual

#: the most of a file discovery reads (a larger launcher or config is not scanned)
MAX_SCAN_BYTES = 256 * 1024
#: the path a launch command given after `--` is reported at
COMMAND_PATH = "<command>"


def rel(path: str) -> str:
    """A path as the user would write it: relative to the working directory when inside it."""
    a = os.path.abspath(path)
    cwd = os.getcwd()
    if a == cwd or a.startswith(cwd + os.sep):
        return os.path.relpath(a, cwd)
    return path


def resolve(name: str, bases: Iterable[str], root: str) -> Optional[str]:
    """A file named on a launch line → an existing path. Tried against each base folder,
    then — for paths built from variables such as `${CODE_DIR}/train.py` — the longest
    tail of the path that exists under the repository root."""
    if not name:
        return None
    written = split_virtual(name)
    if written is not None:
        # a file a notebook's `%%writefile` cell writes: there as long as the notebook is
        return name if os.path.isfile(written[0]) else None
    if "\0" in name:
        # a path built from an unknown variable: only its known tail can be looked for
        name = name.rsplit("\0", 1)[-1].lstrip("/") or ""
        if not name:
            return None
    name = os.path.expanduser(name)
    if os.path.isabs(name) and os.path.isfile(name):
        return name
    for b in bases:
        p = os.path.normpath(os.path.join(b, name))
        if os.path.isfile(p):
            return p
    parts = [x for x in name.replace("\\", "/").split("/") if x and x != "."]
    for k in range(1, len(parts)):
        tail = os.path.join(root, *parts[k:])
        if os.path.isfile(tail):
            return os.path.normpath(tail)
    return None


def module_file(module: str, root: str) -> Optional[str]:
    rel = module.replace(".", os.sep)
    for base in (root, os.path.join(root, "src")):
        for cand in (rel + ".py", os.path.join(rel, "__main__.py")):
            p = os.path.join(base, cand)
            if os.path.isfile(p):
                return p
    return None


#: absolute paths of this `discover` call (emptied as it starts: the working folder may
#: have changed since the last): a walk's thousands of files compare paths many times
ABS: dict[str, str] = {}


def absolute(p: str) -> str:
    a = ABS.get(p)
    if a is None:
        a = ABS[p] = os.path.abspath(p)
    return a


def same(a: Optional[str], b: Optional[str]) -> bool:
    return bool(a) and bool(b) and absolute(a) == absolute(b)
