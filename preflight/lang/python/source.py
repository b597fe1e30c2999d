"""The source of the file being evaluated: a node's text as quoted in reasons, cut to a
budget, and the walk over every statement of a body (nested blocks, no expressions).
"""

from __future__ import annotations

import ast
from typing import Any

from preflight.lang.python.budgets import SRC_LIMIT


def last_name(node: Any) -> str:
    """The last part of a name as written: `Adam` of `torch.optim.Adam`, `f` of `f`; "" for
    anything else (a call's result, a subscript)."""
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return ""


def clip(text: str, limit: int = 60) -> str:
    """Source quoted in a reason: long expressions are cut after `limit` characters."""
    return text if len(text) <= limit else text[:limit] + "…"


def source_text(lines: list[str], node: ast.AST) -> str:
    """The source text of a node (first line only for multi-line nodes), cheaply."""
    try:
        ln, el = node.lineno, node.end_lineno
        c0, c1 = node.col_offset, node.end_col_offset
        line = lines[ln - 1]
        if not line.isascii():
            b = line.encode()
            text = b[c0:(c1 if el == ln else len(b))].decode("utf-8", "replace")
        else:
            text = line[c0:c1] if el == ln else line[c0:].rstrip() + " ..."
        # quoted in reasons: a 10,000-term expression is not copied into each of its parts
        return text if len(text) <= SRC_LIMIT else text[:SRC_LIMIT] + "…"
    except (AttributeError, IndexError, TypeError):
        return "?"


def walk_statements(body: list) -> Any:
    """Every statement, nested blocks included (not expressions)."""
    stack = list(reversed(body))
    while stack:
        st = stack.pop()
        yield st
        for field in ("body", "orelse", "finalbody"):
            sub = getattr(st, field, None)
            if sub and isinstance(sub, list):
                stack.extend(reversed(sub))
        for h in getattr(st, "handlers", ()) or ():
            stack.extend(reversed(h.body))
        for c in getattr(st, "cases", ()) or ():
            stack.extend(reversed(c.body))
