"""Edits of YAML configs (accelerate, recipes) with ruamel.yaml's round trip: comments,
key order and quoting survive. The key edited is the one at the fact's line.

ruamel re-emits the whole document, so the file's indentation is detected first and the
edit is made only when the unedited document comes back byte for byte; otherwise the
file is left alone and the reason said (never a file reformatted behind the user's back).
"""

from __future__ import annotations

import io
import re
from typing import Any, Iterator, Optional

from preflight.fix.edits import FactEdit, Unspellable
from preflight.fix.spelling import render

# ruamel.yaml is imported by the functions that use it: a check imports this module before
# its job workers fork (pipeline._JOB_MODULES) and pays for ruamel only when a YAML file is
# edited


def _yaml(mapping: int, sequence: int, offset: int, capital_bools: bool = False):
    from ruamel.yaml import YAML

    y = YAML()
    y.preserve_quotes = True
    y.width = 4096
    y.indent(mapping=mapping, sequence=sequence, offset=offset)
    if capital_bools:       # recipes often write True / False; ruamel would write true
        y.representer.add_representer(bool, lambda r, v: r.represent_scalar(
            "tag:yaml.org,2002:bool", "True" if v else "False"))
    return y


def _dump(y, data) -> str:
    buf = io.StringIO()
    y.dump(data, buf)
    return buf.getvalue()


def _layouts() -> Iterator[tuple[int, int, int]]:
    for m in (2, 4):
        for seq, off in ((m, 0), (m + 2, 2), (m, m - 2 if m > 2 else 0)):
            yield m, seq, off


def _walk(node: Any) -> Iterator[tuple[Any, Any]]:
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    if isinstance(node, CommentedMap):
        for k in node:
            yield node, k
            yield from _walk(node[k])
    elif isinstance(node, CommentedSeq):
        for v in node:
            yield from _walk(v)


def _at_line(data: Any, line: int) -> Optional[tuple[Any, Any]]:
    for m, k in _walk(data):
        try:
            if m.lc.key(k)[0] == line - 1:
                return m, k
        except (KeyError, TypeError, AttributeError):
            continue
    return None


def edit_yaml(text: str, edits: list[FactEdit]) -> tuple[str, list[str]]:
    from ruamel.yaml.error import YAMLError

    y = None
    data = None
    capital = re.search(r":[ \t]+(True|False)\b", text) is not None
    for layout in _layouts():
        cand = _yaml(*layout, capital_bools=capital)
        try:
            d = cand.load(text)
        except YAMLError as e:
            raise Unspellable(f"the YAML does not parse: {e}") from None
        if _dump(cand, d) == text:
            y, data = cand, d
            break
    if y is None:
        raise Unspellable("ruamel.yaml cannot reproduce this file's layout exactly; "
                          "left unedited")
    for e in edits:
        hit = _at_line(data, e.source.line)
        if hit is None:
            raise Unspellable(f"no YAML key at line {e.source.line}")
        m, k = hit
        old = m[k]
        v = render(e.fact, e.value, str(k), old)
        if v is None:
            raise Unspellable(f"{k}: at line {e.source.line} cannot say {e.fact} = {e.value}")
        if isinstance(old, str) and not isinstance(v, str):
            v = str(v)
        m[k] = _like(old, v)
    return _dump(y, data), []


def _like(old: Any, new: Any) -> Any:
    """Keep the old scalar's quoting style for a string."""
    from ruamel.yaml.scalarstring import DoubleQuotedScalarString, SingleQuotedScalarString

    if isinstance(old, DoubleQuotedScalarString):
        return DoubleQuotedScalarString(str(new))
    if isinstance(old, SingleQuotedScalarString):
        return SingleQuotedScalarString(str(new))
    return new
