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


def frozen_names(tree: ast.AST) -> frozenset[str]:
    """The receivers a script freezes, as written: `vae.requires_grad_(False)`,
    `model.text_encoder.requires_grad_(requires_grad=False)`. One pass over the tree."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "requires_grad_"):
            continue
        flag = node.args[0] if node.args else next(
            (k.value for k in node.keywords if k.arg == "requires_grad"), None)
        if isinstance(flag, ast.Constant) and flag.value is False:
            name = dotted_name(node.func.value)
            if name:
                out.add(name)
    return frozenset(out)


def dotted_name(node: ast.AST) -> Optional[str]:
    """`a.b.c` for a chain of attributes on a name, else None."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(parts)])


def auxiliary(written: str, frozen: frozenset[str]) -> bool:
    """Whether a receiver or an assignment target, as written, is a network kept beside the
    trained one: frozen by the script, or a diffusion / multimodal helper by its name."""
    w = written.strip()
    return w in frozen or bool(AUXILIARY.search(w.lower()))


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
