"""TOML config files (torchtitan job configs), read by the framework adapter that claims
them. `pyproject.toml` is left to the project config. A document naming a base (`extends`,
`_base_`, `base_config`) is read merged with it (`preflight.lang.includes`).

tomllib keeps no positions, so a line scan maps `[table]` + `key =` to line and column
(one key per line, which is how these files are written; a key the scan misses falls back
to its table's header line).
"""

from __future__ import annotations

import os
import re
from typing import Optional

from preflight.extract.document import read_including
from preflight.frameworks import read_document
from preflight.lang.positions import long_number_position, toml_positions, too_many_digits
from preflight.plan import Diagnostic, Extraction

try:
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

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
    pos = toml_positions(text)
    return (read_including(path, cfg, pos, kind="toml")
            or read_document(path, cfg, pos, kind="toml"))
