"""Small readers the pattern modules share: a dotted name's last part, the plain value of a
dtype-like argument and its dtype spelling, the names of models kept frozen and of the networks loaded beside the trained one."""

from __future__ import annotations

import ast
import re
from typing import Any, Optional

from preflight.lang.python import Dotted, V
from preflight.facts import spellings

#: receivers that name a model kept frozen beside the trained one (DPO / PPO / distillation)
FROZEN = re.compile(r"(^|[._])(ref|reference|reward|rm|teacher|frozen|ema)(_|$|\.|model)")
#: the helper networks a diffusion or multimodal trainer loads beside the network it trains
#: (the latent autoencoder, the prompt and image encoders): loaded first, cast to half
#: precision, they are neither the trained model nor its weights' dtype
AUXILIARY = re.compile(r"(^|[._])(vae|vq_?vae|vq_?model|autoencoder|text_encoder(_\w+)?|"
                       r"image_encoder|safety_checker)($|[._])")


def auxiliary(written: str) -> bool:
    """Whether a receiver or an assignment target, as written, names a helper network of a
    diffusion / multimodal trainer. Not "any module the script freezes": a LoRA or linear-
    probe job freezes its base model, whose weights and dtype are still the job's."""
    return bool(AUXILIARY.search(written.strip().lower()))


def last(qual: str) -> str:
    return qual.rsplit(".", 1)[-1]


def kind(v: Any) -> Any:
    """The plain value of a V holding a Dotted/str dtype etc."""
    if isinstance(v, V):
        v = v.value
    if isinstance(v, Dotted):
        return v.name
    return v


def dtype_of(v: V) -> Optional[str]:
    x = kind(v)
    if not isinstance(x, str):
        return None
    return spellings.dtype(x)


def parents(ev: Any) -> dict[int, ast.AST]:
    """id(node) → its parent in the file being read (`ev.tree`), built once per file."""
    tree = getattr(ev, "tree", None)
    if tree is None:
        return {}
    memo = getattr(ev, "_parents_memo", None)
    if memo is None or memo[0] is not tree:
        up: dict[int, ast.AST] = {}
        for node in ast.walk(tree):
            for ch in ast.iter_child_nodes(node):
                up[id(ch)] = node
        memo = (tree, up)
        ev._parents_memo = memo
    return memo[1]


#: the iterators of a module's submodules: a loop over them walks parts of the model
_PARTS = ("named_modules", "modules", "children", "named_children")


def submodule_var(ev: Any, node: ast.AST, name: str) -> bool:
    """Whether `name`, at `node`, is the loop variable of an enclosing `for` over a model's
    submodules (`for n, module in model.named_modules(): module.to(torch.float32)`)."""
    tree = getattr(ev, "tree", None)
    text = getattr(ev, "text_for_checks", "") or ""
    if tree is None or not any(f".{p}(" in text for p in _PARTS):
        return False          # no loop over a model's parts in the file
    memo = getattr(ev, "_part_loops", None)
    if memo is None or memo[0] is not tree:
        loops = [(n.lineno, n.end_lineno or n.lineno,
                  {t.id for t in ast.walk(n.target) if isinstance(t, ast.Name)})
                 for n in ast.walk(tree) if isinstance(n, ast.For)
                 and isinstance(n.iter, ast.Call) and isinstance(n.iter.func, ast.Attribute)
                 and n.iter.func.attr in _PARTS]
        memo = (tree, loops)
        ev._part_loops = memo
    line = getattr(node, "lineno", 0)
    return any(a <= line <= b and name in names for a, b, names in memo[1])
