"""A parsed YAML / JSON / TOML document read with the documents it includes (`_base_:`,
`extends:`, `!include`: `preflight.lang.includes`) merged in, then by the adapter that
claims it — one reading for the three extractors."""

from __future__ import annotations

from typing import Optional

from preflight.frameworks import read_document
from preflight.lang import includes
from preflight.plan import Diagnostic, Extraction


def read_including(path: str, cfg: dict, pos: dict, *, kind: str,
                   tags: Optional[dict] = None,
                   diagnostics: Optional[list[Diagnostic]] = None) -> Optional[Extraction]:
    """The document merged with what it includes, read; None when it includes nothing (or
    the merge is not a mapping), for the caller to read it as it stands."""
    tags = tags if tags is not None else {}
    if not includes.has_includes(cfg, tags):
        return None
    doc = includes.resolve(path, includes.Loaded(path, cfg, pos, tags))
    if not isinstance(doc.value, dict):
        return None
    return read_document(path, doc.value, pos, kind=kind,
                         diagnostics=(diagnostics or []) + doc.diagnostics, where=doc.src)

