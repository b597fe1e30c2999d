"""Python config files (mmengine / mmcv, detectron2 LazyConfig): a module whose top level
only assigns values, read as a document (`preflight.lang.pyconfig`, never imported or run)
and handed to the framework adapter that claims it — or, when none does, to the knob
lexicon — each fact at its key in the file that wrote it (a `_base_` file's key at that
file's line). The arguments of the line that names the config (`--cfg-options a.b=1`,
`--amp`) are applied by its adapter; what they set has origin `cli`.
"""

from __future__ import annotations

from typing import Any, Optional

from preflight.extract.reading import read_text
from preflight.frameworks import ConfigOut, for_config, read_document
from preflight.lang import pyconfig
from preflight.plan import Diagnostic, Extraction, Origin, Source


def _read(path: str) -> Optional[str]:
    text, _ = read_text(path)
    return text


def _set(cfg: dict, p: tuple, value: Any) -> None:
    cur = cfg
    for k in p[:-1]:
        nxt = cur.get(k)
        if not isinstance(nxt, dict):
            nxt = cur[k] = pyconfig.CDict()
        cur = nxt
    cur[p[-1]] = value


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
    fw = for_config(doc.cfg, path)
    over = fw.config_overrides(doc.cfg, list(args)) if fw is not None and args else []
    for p, v, _ in over:
        _set(doc.cfg, p, v)
    ext = read_document(path, doc.cfg, doc.pos, kind="pyconfig", diagnostics=diags, where=where,
                        references=doc.files, unread=pyconfig.opaque_reason)
    if over and fw is not None:
        # the facts the overridden keys set, read again from the merged config at `cli`
        probe: dict = {}
        for p, v, _ in over:
            _set(probe, p, v)
        shown = ", ".join(why for _, _, why in over)
        po = ConfigOut(path, {}, where=where, partial=True)
        fw.read_config(probe, po)
        names = {n for n, _ in po.facts}
        o = ConfigOut(path, doc.pos, origin=Origin.CLI, where=where, partial=True)
        fw.read_config(doc.cfg, o)
        ext.facts += [(n, f.model_copy(update={"reason": f"{shown} ({f.reason})"}))
                      for n, f in o.facts if n in names and f.origin == Origin.CLI]
    return ext
