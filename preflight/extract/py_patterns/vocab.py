"""The vocabulary a script resizes the embeddings to: `resize_token_embeddings(n)`, or the
tokenizer's length (rounded up to a multiple) after the tokens the script adds."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any, Optional

from preflight.lang.python import Evaluator, V
from preflight.extract.py_patterns.common import FROZEN
from preflight.frameworks import NO_MATCH, Call, answers

if TYPE_CHECKING:
    from preflight.extract.py_patterns.collector import Patterns


def _is_len(node: ast.AST) -> bool:
    """`len(tokenizer)`."""
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
        node.func.id == "len" and len(node.args) == 1


def _rounded_len(node: ast.AST) -> Optional[int]:
    """M for `M * math.ceil(len(tokenizer) / M)` (factors in either order, an `int(...)`
    around it): the tokenizer's length rounded up to a multiple of M."""
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
            node.func.id == "int" and len(node.args) == 1:
        node = node.args[0]
    if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult)):
        return None
    for k, c in ((node.left, node.right), (node.right, node.left)):
        if not (isinstance(k, ast.Constant) and isinstance(k.value, (int, float))):
            continue
        if isinstance(c, ast.Call) and ast.unparse(c.func) in ("math.ceil", "ceil") and \
                len(c.args) == 1 and isinstance(c.args[0], ast.BinOp) and \
                isinstance(c.args[0].op, ast.Div) and _is_len(c.args[0].left) and \
                isinstance(c.args[0].right, ast.Constant) and c.args[0].right.value == k.value \
                and float(k.value).is_integer() and k.value > 1:
            return int(k.value)
    return None


@answers("resize_token_embeddings")
def resize_call(pats: Patterns, ev: Evaluator, c: Call) -> Any:
    """`model.resize_token_embeddings(...)` on the trained model."""
    name, recv, args, kwargs, node = c.name, c.recv, c.args, c.kwargs, c.node
    if name == "resize_token_embeddings" and not FROZEN.search(recv):
        resize(pats, args, kwargs, node)
        return None
    return NO_MATCH


def resize(pats: Patterns, args: list[V], kwargs: dict[str, V], node: ast.Call) -> None:
    """`resize_token_embeddings(n)`: a known `n` is the new vocabulary; `len(tokenizer)`
    (with `pad_to_multiple_of=M`, or written `M * math.ceil(len(tokenizer) / M)`) is the
    base vocabulary plus the tokens the script adds, rounded up to M."""
    n = args[0] if args else kwargs.get("new_num_tokens")
    arg = node.args[0] if node.args else next(
        (k.value for k in node.keywords if k.arg == "new_num_tokens"), None)
    m = kwargs.get("pad_to_multiple_of")
    ref: dict[str, Any] = {"kind": "resize", "source": pats.src(node)}
    if n is not None and n.known and isinstance(n.value, int) and not isinstance(n.value, bool):
        ref["vocab"] = n.value
    elif arg is not None and (_rounded_len(arg) or _is_len(arg)):
        mult = _rounded_len(arg) or 1
        if m is not None and m.known and isinstance(m.value, int) and m.value > 1:
            mult = m.value
        ref["multiple"] = mult
    else:
        return
    if pats.resize is None:
        pats.resize = ref


def tokens_added(pats: Patterns, ev: Evaluator) -> Optional[tuple[str, int]]:
    """(file, line) of the first place the job adds tokens to its tokenizer
    (`add_special_tokens({...})`, `add_tokens([...])`, a tokenizer loaded with
    `pad_token=` / `additional_special_tokens=`), in the script or a module it calls."""
    trees = [(pats.path, ev.tree)] + [(m.path, m.tree) for m in ev.modules.values()
                                      if m is not None]
    for path, tree in trees:
        for n in ast.walk(tree):
            if not isinstance(n, ast.Call) or not isinstance(n.func, ast.Attribute):
                continue
            attr = n.func.attr
            if attr in ("add_special_tokens", "add_tokens") and n.args:
                return path, n.lineno
            if attr == "from_pretrained" and "Tokenizer" in ast.unparse(n.func.value) and \
                    any(k.arg in ("pad_token", "additional_special_tokens")
                        for k in n.keywords):
                return path, n.lineno
    return None
