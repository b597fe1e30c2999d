"""TOML config files (torchtitan job configs), read by the framework adapter that claims
them. `pyproject.toml` is left to the project config.

tomllib keeps no positions, so a line scan maps `[table]` + `key =` to line and column
(one key per line, which is how these files are written; a key the scan misses falls back
to its table's header line).
"""

from __future__ import annotations

import os
import re
from typing import Optional

from preflight.frameworks import read_document
from preflight.lang.positions import long_number_position, too_many_digits
from preflight.plan import Diagnostic, Extraction

try:
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

# no two repeats here can match the same characters (a lazy name between `\s*`s did:
# cubic on a long header line that does not close)
_HEADER = re.compile(r"[ \t]*\[\[?([^\]]+)\]\]?[ \t]*(?:#.*)?$")
_KEY = re.compile(r'^\s*("?[A-Za-z0-9_.\-"]+"?)\s*=')


def toml_positions(text: str) -> dict[tuple, tuple[int, int]]:
    pos: dict[tuple, tuple[int, int]] = {}
    table: tuple = ()
    for n, line in enumerate(text.splitlines(), 1):
        m = _HEADER.match(line)
        if m:
            table = tuple(p.strip().strip('"') for p in m.group(1).strip().split("."))
            pos.setdefault(table, (n, line.index("[") + 1))
            continue
        m = _KEY.match(line)
        if m:
            key = tuple(p.strip('"') for p in m.group(1).split("."))
            pos.setdefault(table + key, (n, m.start(1) + 1))
    return pos


def extract(path: str, text: str, args: Optional[list[str]] = None) -> Extraction:
    try:
        cfg = tomllib.loads(text)
    except (ValueError, RecursionError) as e:   # TOMLDecodeError; an int over 4,300 digits
        m = re.search(r"line (\d+), column (\d+)", str(e))
        if too_many_digits(e):
            e = ValueError("an integer of over 4,300 digits (at line {}, column {})".format(
                *long_number_position(text)))
            m = re.search(r"line (\d+), column (\d+)", str(e))
        line, col = (int(m.group(1)), int(m.group(2))) if m else (1, 1)
        msg = re.sub(r"\s*\(at line \d+, column \d+\)", "", str(e))
        return Extraction(path=path, kind="toml", diagnostics=[Diagnostic(
            code="PF005", name="malformed-config", severity="error",
            message=f"malformed TOML: {msg}", path=path, line=line, col=col)])
    if os.path.basename(path) == "pyproject.toml":
        return Extraction(path=path, kind="toml")
    return read_document(path, cfg, toml_positions(text), kind="toml")
