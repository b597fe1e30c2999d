"""The attention kernel of a model class of the repository, read from the module that
defines it (the script's import followed into the repository): the one kernel it calls
(`scaled_dot_product_attention` → sdpa, `flash_attn_func` → flash, a softmax of q·kᵀ →
eager); FlashAttention imported at the top of that module with SDPA as its fallback →
flash, as an assumption (the fast path runs on CUDA in half precision); any other mix is not
decided."""

from __future__ import annotations

import ast
import os
import re
from typing import Optional

from preflight.plan import Fact, Origin, Source
from preflight.resolve.named_configs import defining_file, module_file, parse_file, search_roots

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


#: names of what a hand-written attention takes the softmax of
#: (not `logits`: a softmax of logits is the sampling of generation code)
_SCORES = re.compile(r"att|score|sim|dots|qk", re.I)


def _score_names(tree: ast.Module) -> set[str]:
    """Names assigned from a product of two tensors (`attn = q @ k.transpose(-2, -1)`)."""
    out: set[str] = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Assign) and _is_scores(n.value):
            out.update(t.id for t in n.targets if isinstance(t, ast.Name))
    return out


def _softmax_evidence(n: ast.Call, scores: set[str]) -> Optional[str]:
    """"strong" for a softmax of q·kᵀ (`softmax(q @ kᵀ)`, `F.softmax(attn)` with `attn`
    assigned from a product), "weak" for a softmax of something named like scores
    (`(sim / t).softmax(-1)`), else None. Weak evidence
    only keeps a module undecided; it never decides one."""
    operands = list(n.args[:1])
    if isinstance(n.func, ast.Attribute) and not n.args:
        operands.append(n.func.value)           # the method form: x.softmax(dim=-1)
    weak = False
    for op in operands:
        if _is_scores(op) or any(isinstance(x, ast.Name) and x.id in scores
                                 for x in ast.walk(op)):
            return "strong"
        weak = weak or any(isinstance(x, ast.Name) and _SCORES.search(x.id) or
                           isinstance(x, ast.Attribute) and _SCORES.search(x.attr)
                           for x in ast.walk(op))
    return "weak" if weak else None


def kernels(tree: ast.Module) -> tuple[dict[str, int], bool]:
    """The attention kernels a module calls, with the line of the first call of each, and
    whether it takes a softmax of something that may be attention scores."""
    out: dict[str, int] = {}
    maybe_eager = False
    scores = _score_names(tree)
    for n in ast.walk(tree):
        if not isinstance(n, ast.Call):
            continue
        name = _name(n.func)
        kind = None
        if name == "scaled_dot_product_attention":
            kind = "sdpa"
        elif name.startswith("flash_attn") and "func" in name:
            kind = "flash"
        elif name in ("softmax", "_softmax"):
            ev = _softmax_evidence(n, scores)
            kind = "eager" if ev == "strong" else None
            maybe_eager = maybe_eager or ev == "weak"
        elif name == "partial" and n.args and _name(n.args[0]) == "softmax":
            maybe_eager = True              # `attn_fn = partial(F.softmax, dim=-1)`
        if kind is not None and (kind not in out or n.lineno < out[kind]):
            out[kind] = n.lineno
    return out, maybe_eager


def _tests_for_sdpa(tree: ast.Module) -> bool:
    """`hasattr(torch.nn.functional, "scaled_dot_product_attention")`: SDPA whenever torch
    has it (≥ 2.0), the hand-written path only for an older torch."""
    return any(isinstance(n, ast.Call) and _name(n.func) == "hasattr" and len(n.args) == 2
               and isinstance(n.args[1], ast.Constant)
               and n.args[1].value == "scaled_dot_product_attention" for n in ast.walk(tree))


def _imports_flash_at_top(tree: ast.Module) -> bool:
    return any(isinstance(s, ast.ImportFrom) and (s.module or "").split(".")[0] == "flash_attn"
               or isinstance(s, ast.Import) and any(a.name.split(".")[0] == "flash_attn"
                                                    for a in s.names)
               for s in tree.body)


#: repository modules read for one class: its own and those it imports from its package
_MAX_MODULES = 16


def _imported_modules(tree: ast.Module, module: str) -> list[str]:
    """The modules of the same top package `module` imports (`from pkg.attend import A`,
    `from .layers import B`, `import pkg.ops`)."""
    top = module.split(".")[0]
    package = module.rsplit(".", 1)[0] if "." in module else ""
    out: list[str] = []
    for s in tree.body:
        names: list[str] = []
        if isinstance(s, ast.ImportFrom):
            if s.level:
                base = package.rsplit(".", s.level - 1)[0] if s.level > 1 else package
                names.append(".".join(p for p in (base, s.module or "") if p))
            elif s.module:
                names.append(s.module)
        elif isinstance(s, ast.Import):
            names.extend(a.name for a in s.names)
        out.extend(n for n in names if n and n.split(".")[0] == top and n != module
                   and n not in out)
    return out


def _module_kernels(tree: ast.Module) -> tuple[dict[str, int], bool, bool]:
    """(kernels, maybe eager, SDPA-where-torch-has-it) of one module: a module that tests
    `hasattr(F, "scaled_dot_product_attention")` keeps its hand-written attention only for
    an older torch."""
    got, maybe = kernels(tree)
    if "sdpa" in got and _tests_for_sdpa(tree):
        got.pop("eager", None)
        return got, False, True
    return got, maybe, False


def class_attention(ref: dict, search_dirs: list[str]) -> Optional[Fact]:
    """The `attention` fact of the class a `class` reference builds, when its module (and
    the modules of its package it imports) is a file of the repository that says it; None
    otherwise."""
    qual = str(ref.get("qual") or "")
    if "." not in qual or ref.get("kind") != "class":
        return None
    module, cls = qual.rsplit(".", 1)
    src = ref.get("source")
    roots = search_roots(src if isinstance(src, Source) else None, search_dirs)
    found = defining_file(module, cls, roots)
    if found is None:
        return None
    path, tree = found
    files = [(path, tree)]
    for name in _imported_modules(tree, module)[:_MAX_MODULES - 1]:
        p = module_file(name, roots)
        t = parse_file(p) if p else None
        if t is not None and all(p != q for q, _ in files):
            files.append((p, t))
    where: dict[str, tuple[str, int]] = {}
    maybe_eager = fallback = flash_top = False
    for p, t in files:
        got, maybe, fb = _module_kernels(t)
        maybe_eager, fallback = maybe_eager or maybe, fallback or fb
        if "flash" in got and _imports_flash_at_top(t):
            flash_top = True
        for kind, line in got.items():
            where.setdefault(kind, (_shown(p), line))
    kinds = set(where)
    files_said = f"{cls}'s module {_shown(path)}" + (
        f" and the {len(files) - 1} module(s) of its package it imports" if len(files) > 1
        else "")
    if len(kinds) == 1 and (not maybe_eager or kinds == {"eager"}):
        kind = next(iter(kinds))
        p, line = where[kind]
        why = (f"{files_said}: scaled_dot_product_attention where torch has it (the "
               f"hand-written attention is the fallback for torch < 2.0)" if fallback and
               kind == "sdpa" else f"{files_said}: only this attention kernel is called")
        return Fact(value=kind, origin=Origin.DERIVED, source=Source(path=p, line=line, col=1),
                    reason=why)
    if kinds == {"flash", "sdpa"} and not maybe_eager and flash_top:
        p, line = where["flash"]
        return Fact(value="flash", origin=Origin.ASSUMED, source=Source(path=p, line=line, col=1),
                    reason=(f"{files_said}: flash-attn imported at the top (installed) and "
                            f"called, with SDPA as the fallback: assumed the FlashAttention "
                            f"path (CUDA, half precision)"))
    return None


def _shown(path: str) -> str:
    rel = os.path.relpath(path)
    return rel if not rel.startswith("..") else path
