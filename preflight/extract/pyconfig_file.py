"""Python config files (mmengine / mmcv, detectron2 LazyConfig): a module whose top level
only assigns values, read as a document (`preflight.lang.pyconfig`, never imported or run)
and handed to the framework adapter that claims it — or, when none does, to the knob
lexicon — each fact at its key in the file that wrote it (a `_base_` file's key at that
file's line).
"""

from __future__ import annotations

from typing import Optional

from preflight.extract.reading import read_text
from preflight.frameworks import read_document
from preflight.lang import pyconfig
from preflight.plan import Diagnostic, Extraction, Source


def _read(path: str) -> Optional[str]:
    text, _ = read_text(path)
    return text


def extract(path: str, text: str, args: Optional[list[str]] = None) -> Extraction:
    doc = pyconfig.read(path, text, _read)

    def where(p: tuple) -> Source:
        q = p
        while q and q not in doc.pos:
            q = q[:-1]
        line, col = doc.pos.get(q, (1, 1))
        return Source(path=doc.where.get(q, path), line=line, col=col)

    diags = [Diagnostic(code="PF003", name="unresolved-value", severity="info", message=msg,
                        path=f, line=line, col=col) for f, line, col, msg in doc.notes]
    ext = read_document(path, doc.cfg, doc.pos, kind="pyconfig", diagnostics=diags, where=where,
                        unread=pyconfig.opaque_reason)
    ext.references = list(dict.fromkeys(ext.references + doc.files))
    return ext
