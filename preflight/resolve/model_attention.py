"""The attention kernel of a model class of the repository, read from the module that
defines it (the script's import followed into the repository): the one kernel it calls
(`scaled_dot_product_attention` → sdpa, `flash_attn_func` → flash, a softmax of q·kᵀ →
eager); FlashAttention imported at the top of that module with SDPA as its fallback →
flash, as an assumption (the fast path runs on CUDA in half precision); any other mix is not
decided."""

from __future__ import annotations

import ast
import os
from typing import Optional

from preflight.plan import Fact, Origin, Source
from preflight.resolve.named_configs import defining_file, search_roots

_MATMUL_CALLS = ("matmul", "bmm", "einsum", "baddbmm")


def _name(f: ast.expr) -> str:
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


def _is_scores(node: ast.AST) -> bool:
    """q·kᵀ inside a softmax's argument: `q @ k.transpose(...)`, `torch.matmul(q, k)`."""
    for n in ast.walk(node):
        if isinstance(n, ast.BinOp) and isinstance(n.op, ast.MatMult):
            return True
        if isinstance(n, ast.Call) and _name(n.func) in _MATMUL_CALLS:
            return True
    return False


def kernels(tree: ast.Module) -> dict[str, int]:
    """The attention kernels a module calls, with the line of the first call of each."""
    out: dict[str, int] = {}
    for n in ast.walk(tree):
        if not isinstance(n, ast.Call):
            continue
        name = _name(n.func)
        kind = None
        if name == "scaled_dot_product_attention":
            kind = "sdpa"
        elif name.startswith("flash_attn") and "func" in name:
            kind = "flash"
        elif name == "softmax" and n.args and _is_scores(n.args[0]):
            kind = "eager"
        if kind is not None and (kind not in out or n.lineno < out[kind]):
            out[kind] = n.lineno
    return out


def _imports_flash_at_top(tree: ast.Module) -> bool:
    return any(isinstance(s, ast.ImportFrom) and (s.module or "").split(".")[0] == "flash_attn"
               or isinstance(s, ast.Import) and any(a.name.split(".")[0] == "flash_attn"
                                                    for a in s.names)
               for s in tree.body)


def class_attention(ref: dict, search_dirs: list[str]) -> Optional[Fact]:
    """The `attention` fact of the class a `class` reference builds, when its module is a
    file of the repository that says it; None otherwise."""
    qual = str(ref.get("qual") or "")
    if "." not in qual or ref.get("kind") != "class":
        return None
    module, cls = qual.rsplit(".", 1)
    src = ref.get("source")
    found = defining_file(module, cls, search_roots(src if isinstance(src, Source) else None,
                                                    search_dirs))
    if found is None:
        return None
    path, tree = found
    rel = os.path.relpath(path)
    path = rel if not rel.startswith("..") else path
    got = kernels(tree)
    if len(got) == 1:
        kind, line = next(iter(got.items()))
        return Fact(value=kind, origin=Origin.DERIVED, source=Source(path=path, line=line, col=1),
                    reason=f"{cls}'s module {path} calls only this attention kernel")
    if set(got) == {"flash", "sdpa"} and _imports_flash_at_top(tree):
        return Fact(value="flash", origin=Origin.ASSUMED,
                    source=Source(path=path, line=got["flash"], col=1),
                    reason=(f"{cls}'s module {path} imports flash-attn at its top (installed) "
                            f"and calls it, with SDPA as the fallback: assumed the FlashAttention "
                            f"path (CUDA, half precision)"))
    return None
