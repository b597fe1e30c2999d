"""Places where code sizes memory as `numel() * 4` (parameters × 4 bytes), found on the
`ast` the Python extractor already has — the facts rule PF103 reports."""

from __future__ import annotations

import ast
import bisect
import re
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


def numel_times_four(tree: ast.AST, text: Optional[str] = None) -> list[tuple[int, int]]:
    """(line, byte column + 1) of the `numel` name in every multiplication of an expression
    holding `.numel` by a literal 4 (`sum(p.numel() …) * 4`, `4 * x.numel()`), in any
    layout or line breaks. `element_size()` (the tensor's real width) is not a 4.

    `text`: the source the tree was parsed from; given, only statements spanning a line
    that says `numel` are walked — a whole tree's walk costs more than the rest of the
    extraction."""
    out: list[tuple[int, int]] = []
    for node in _candidates(tree, text):
        if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult)):
            continue
        for a, b in ((node.left, node.right), (node.right, node.left)):
            if _is_four(b):
                name = _numel_in(a)
                if name is not None and name.end_lineno is not None and name.end_col_offset is not None:
                    out.append((name.end_lineno, name.end_col_offset - len("numel") + 1))
    return sorted(set(out))


def _candidates(tree: ast.AST, text: Optional[str]) -> Iterator[ast.AST]:
    """Every node of `tree`, less the subtrees whose lines never say `numel`: a
    multiplication holding `.numel` spans the line of its `numel` name."""
    hits = _numel_lines(text) if text is not None else None
    if hits is None:
        yield from ast.walk(tree)
        return
    stack = [tree]
    while stack:
        n = stack.pop()
        start = getattr(n, "lineno", None)
        if start is not None:
            end = getattr(n, "end_lineno", None) or start
            i = bisect.bisect_left(hits, start)
            if i == len(hits) or hits[i] > end:
                continue            # no line of this node says `numel`
        yield n
        stack.extend(ast.iter_child_nodes(n))


def _numel_lines(text: str) -> Optional[list[int]]:
    """The lines (numbered as the parser numbers them) that say `numel`; None when a lone
    carriage return makes counting newlines differ from the parser's count."""
    if "\r" in text.replace("\r\n", ""):
        return None
    out: list[int] = []
    line, pos = 1, 0
    for m in re.finditer("numel", text):
        line += text.count("\n", pos, m.start())
        pos = m.start()
        if not out or out[-1] != line:
            out.append(line)
    return out
