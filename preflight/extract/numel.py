"""Places where code sizes memory as `numel() * 4` (parameters × 4 bytes), found on the
`ast` the Python extractor already has — the facts rule PF103 reports."""

from __future__ import annotations

import ast
from typing import Iterator, Optional


def _is_four(node: ast.AST) -> bool:
    return (isinstance(node, ast.Constant) and not isinstance(node.value, bool)
            and isinstance(node.value, (int, float)) and node.value == 4)


def _preorder(node: ast.AST) -> Iterator[ast.AST]:
    """Nodes in source order (depth first), unlike `ast.walk`'s breadth-first order."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(list(ast.iter_child_nodes(n))))


def _numel_in(expr: ast.AST) -> Optional[ast.Attribute]:
    for n in _preorder(expr):
        if isinstance(n, ast.Attribute) and n.attr == "numel":
            return n
    return None


def numel_times_four(tree: ast.AST) -> list[tuple[int, int]]:
    """(line, byte column + 1) of the `numel` name in every multiplication of an expression
    holding `.numel` by a literal 4 (`sum(p.numel() …) * 4`, `4 * x.numel()`), in any
    layout or line breaks. `element_size()` (the tensor's real width) is not a 4."""
    out: list[tuple[int, int]] = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult)):
            continue
        for a, b in ((node.left, node.right), (node.right, node.left)):
            if _is_four(b):
                name = _numel_in(a)
                if name is not None and name.end_lineno is not None and name.end_col_offset is not None:
                    out.append((name.end_lineno, name.end_col_offset - len("numel") + 1))
    return sorted(set(out))
