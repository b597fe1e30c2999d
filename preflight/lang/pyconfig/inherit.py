"""mmengine inheritance: `_base_` files' variables merged under the file's own (dicts key by
key, `_delete_=True` replacing instead), and the `{{_base_.x}}` / `_base_.x` references to a
base's variables."""

from __future__ import annotations

import ast
import copy
import re
from typing import Any

from preflight.lang.pyconfig.values import CDict, Opaque

BASE_REF = re.compile(r"\{\{\s*_base_\.([\w.]+)\s*\}\}")
BASE_STR = re.compile(r"\{\{\s*_base_\.([\w.]+)\s*\}\}|\{_base_\.([\w.]+)\}")


def pre_substitute(text: str) -> str:
    """`model = {{_base_.model}}` is not Python until the loader substitutes it: an unquoted
    reference becomes the string `"{_base_.model}"`, of the same length, so every column
    stays where it was written."""
    out, last = [], 0
    for m in BASE_REF.finditer(text):
        before = text[m.start() - 1] if m.start() else ""
        after = text[m.end()] if m.end() < len(text) else ""
        if before in "'\"" and after in "'\"" and before:
            continue
        out.append(text[last:m.start()])
        out.append('"' + m.group(0)[1:-1] + '"')
        last = m.end()
    out.append(text[last:])
    return "".join(out)


def base_value(base: dict, s: str, node: ast.AST) -> Any:
    """`'{{_base_.model.depth}}'` (or the pre-substituted `"{_base_.model.depth}"`):
    the base's value when the string is the whole reference, else the text with each
    reference replaced by its value."""
    m = BASE_STR.fullmatch(s)
    if m is None:
        return s
    cur: Any = base
    for part in (m.group(1) or m.group(2)).split("."):
        if not isinstance(cur, dict) or part not in cur:
            return Opaque(f"`{s}` names nothing the base files set", node.lineno)
        cur = cur[part]
    return copy.deepcopy(cur)


def merge(into: dict, new: dict) -> None:
    """mmengine's merge of a child's dict over its base's: key by key, recursively; a dict
    with `_delete_=True` replaces the base's instead (the key itself is dropped)."""
    for k, v in new.items():
        pos = new.at.get(k) if isinstance(new, CDict) else None
        if isinstance(v, dict) and v.get("_delete_") is True:
            rep = CDict({kk: vv for kk, vv in v.items() if kk != "_delete_"})
            rep.at = {kk: p for kk, p in getattr(v, "at", {}).items() if kk != "_delete_"}
            into[k] = rep
        elif isinstance(v, dict) and isinstance(into.get(k), dict):
            merge(into[k], v)
        else:
            into[k] = v
        if pos is not None and isinstance(into, CDict):
            into.at[k] = pos


def merge_flat(into: dict, new: dict) -> None:
    """`dict(base, k=v)` / `{**base, k: v}`: keys of `new` replace, no recursion."""
    for k, v in new.items():
        into[k] = v
        if isinstance(into, CDict) and isinstance(new, CDict) and k in new.at:
            into.at[k] = new.at[k]
