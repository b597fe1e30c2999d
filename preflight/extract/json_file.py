"""JSON config files — DeepSpeed configs (ZeRO stage, offload, precision, batch sizes).
A document naming a base (`"_base_"`, `"extends"`, `"base_config"`) is read merged with it
(`preflight.lang.includes`), each value at the file that set it.

The file is parsed with the line and column of every key; the framework adapter that
claims the document (preflight.frameworks.deepspeed for a DeepSpeed config) reads it, each
fact at its key.
"""

from __future__ import annotations

import json
from typing import Optional

from preflight.extract.document import read_including
from preflight.frameworks import read_document
from preflight.lang.positions import json_positions, long_number_position, too_many_digits
from preflight.plan import Diagnostic, Extraction


def extract(path: str, text: str, args: Optional[list[str]] = None) -> Extraction:
    try:
        cfg = json.loads(text)
    except json.JSONDecodeError as e:
        return Extraction(path=path, kind="json", diagnostics=[Diagnostic(
            code="PF005", name="malformed-config", severity="error",
            message=f"malformed JSON: {e.msg}", path=path, line=e.lineno, col=e.colno,
            fix="fix the JSON syntax (a trailing comma or a missing quote is the usual cause)")])
    except RecursionError:
        return Extraction(path=path, kind="json", diagnostics=[Diagnostic(
            code="PF005", name="malformed-config", severity="error",
            message="JSON nested too deeply to read", path=path, line=1, col=1)])
    except ValueError as e:              # an integer of over 4,300 digits
        line, col = long_number_position(text) if too_many_digits(e) else (1, 1)
        why = "an integer of over 4,300 digits" if too_many_digits(e) else str(e)
        return Extraction(path=path, kind="json", diagnostics=[Diagnostic(
            code="PF005", name="malformed-config", severity="error",
            message=f"JSON value not read: {why}", path=path, line=line, col=col)])

    if not isinstance(cfg, dict):
        return Extraction(path=path, kind="json")
    _, pos = json_positions(text, cfg)
    return (read_including(path, cfg, pos, kind="json")
            or read_document(path, cfg, pos, kind="json"))
