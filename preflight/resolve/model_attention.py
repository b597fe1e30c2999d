"""The attention kernel of a model class of the repository, read from the module that
defines it (the script's import followed into the repository): the one kernel it calls
(`scaled_dot_product_attention` or torch's transformer layers → sdpa, `flash_attn_func` →
flash, a softmax of q·kᵀ → eager); FlashAttention imported at the top of that module with SDPA as its fallback →
flash, as an assumption (the fast path runs on CUDA in half precision); any other mix is not
decided."""

from __future__ import annotations

import ast
import os
import re
from typing import Optional

from preflight.plan import Fact, Origin, Source
from preflight.lang.python.source import last_name
from preflight.resolve.named_configs import defining_file, search_roots

_MATMUL_CALLS = ("matmul", "bmm", "einsum", "baddbmm")


def _is_scores(node: ast.AST) -> bool:
    """q·kᵀ inside a softmax's argument: `q @ k.transpose(...)`, `torch.matmul(q, k)`."""
    for n in ast.walk(node):
        if isinstance(n, ast.BinOp) and isinstance(n.op, ast.MatMult):
            return True
        if isinstance(n, ast.Call) and last_name(n.func) in _MATMUL_CALLS:
            return True
    return False


#: names of what a hand-written attention takes the softmax of
#: (not `logits`: a softmax of logits is the sampling of generation code)
_SCORES = re.compile(r"att|score|sim|dots|qk", re.I)


def _walk(nodes: list[ast.AST]):
    for node in nodes:
        yield from ast.walk(node)


def _score_names(nodes: list[ast.AST]) -> set[str]:
    """Names assigned from a product of two tensors (`attn = q @ k.transpose(-2, -1)`)."""
    out: set[str] = set()
    for n in _walk(nodes):
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


#: torch's transformer layers: their attention calls `scaled_dot_product_attention`
#: (`nn.MultiheadAttention` with need_weights=False, torch ≥ 2.0)
_TORCH_SDPA_LAYERS = re.compile(r"(^|\.)nn\.(Transformer|TransformerEncoderLayer|"
                                r"TransformerDecoderLayer)$")
#: `nn.MultiheadAttention` called directly returns its weights by default (no SDPA then)
_TORCH_MHA = re.compile(r"(^|\.)nn\.MultiheadAttention$")


def kernels(nodes: list[ast.AST]) -> tuple[dict[str, int], bool]:
    """The attention kernels the code calls, with the line of the first call of each, and
    whether it takes a softmax of something that may be attention scores."""
    out: dict[str, int] = {}
    maybe_eager = False
    scores = _score_names(nodes)
    for n in _walk(nodes):
        if isinstance(n, (ast.ClassDef, ast.Call)):
            for f in (n.bases if isinstance(n, ast.ClassDef) else [n.func]):
                text = ast.unparse(f) if isinstance(f, (ast.Attribute, ast.Name)) else ""
                if _TORCH_SDPA_LAYERS.search(text) and ("sdpa" not in out or
                                                        n.lineno < out["sdpa"]):
                    out["sdpa"] = n.lineno
                maybe_eager = maybe_eager or bool(_TORCH_MHA.search(text))
        if not isinstance(n, ast.Call):
            continue
        name = last_name(n.func)
        kind = None
        if name == "scaled_dot_product_attention":
            kind = "sdpa"
        elif name.startswith("flash_attn") and "func" in name:
            kind = "flash"
        elif name in ("softmax", "_softmax"):
            ev = _softmax_evidence(n, scores)
            kind = "eager" if ev == "strong" else None
            maybe_eager = maybe_eager or ev == "weak"
        elif name == "partial" and n.args and last_name(n.args[0]) == "softmax":
            maybe_eager = True              # `attn_fn = partial(F.softmax, dim=-1)`
        if kind is not None and (kind not in out or n.lineno < out[kind]):
            out[kind] = n.lineno
    return out, maybe_eager


def _tests_for_sdpa(nodes: list[ast.AST]) -> bool:
    """`hasattr(torch.nn.functional, "scaled_dot_product_attention")`: SDPA whenever torch
    has it (≥ 2.0), the hand-written path only for an older torch."""
    return any(isinstance(n, ast.Call) and last_name(n.func) == "hasattr" and len(n.args) == 2
               and isinstance(n.args[1], ast.Constant)
               and n.args[1].value == "scaled_dot_product_attention" for n in _walk(nodes))


def _imports_flash_at_top(tree: ast.Module) -> bool:
    return any(isinstance(s, ast.ImportFrom) and (s.module or "").split(".")[0] == "flash_attn"
               or isinstance(s, ast.Import) and any(a.name.split(".")[0] == "flash_attn"
                                                    for a in s.names)
               for s in tree.body)


#: repository modules read for one class: its own and those its code imports
_MAX_MODULES = 16


def _closure(tree: ast.Module, name: str) -> tuple[list[ast.AST], set[str]]:
    """The class or function `name` of a module and the module's classes and functions its
    code names, transitively; and every name that code uses."""
    defs = {d.name: d for d in tree.body
            if isinstance(d, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))}
    nodes: list[ast.AST] = []
    used: set[str] = set()
    todo, seen = [name], set()
    while todo:
        n = todo.pop()
        if n in seen or n not in defs:
            continue
        seen.add(n)
        nodes.append(defs[n])
        for x in ast.walk(defs[n]):
            if isinstance(x, ast.Name):
                used.add(x.id)
                if x.id in defs and x.id not in seen:
                    todo.append(x.id)
    return nodes, used


def _imports_used(tree: ast.Module, module: str, used: set[str]) -> list[tuple[str, str]]:
    """(module, name) of what the code imports from the same top package
    (`from pkg.attend import Attend`, `from .layers import Block`) and uses."""
    top = module.split(".")[0]
    package = module.rsplit(".", 1)[0] if "." in module else ""
    out: list[tuple[str, str]] = []
    for s in tree.body:
        if not isinstance(s, ast.ImportFrom):
            continue
        if s.level:
            base = package.rsplit(".", s.level - 1)[0] if s.level > 1 else package
            mod = ".".join(p for p in (base, s.module or "") if p)
        else:
            mod = s.module or ""
        if not mod or mod.split(".")[0] != top or mod == module:
            continue
        out.extend((mod, a.name) for a in s.names if (a.asname or a.name) in used)
    return out


def _code_kernels(nodes: list[ast.AST]) -> tuple[dict[str, int], bool, bool]:
    """(kernels, maybe eager, SDPA-where-torch-has-it) of some code: code that tests
    `hasattr(F, "scaled_dot_product_attention")` keeps its hand-written attention only for
    an older torch."""
    got, maybe = kernels(nodes)
    if "sdpa" in got and _tests_for_sdpa(nodes):
        got.pop("eager", None)
        return got, False, True
    return got, maybe, False


def class_attention(ref: dict, search_dirs: list[str]) -> Optional[Fact]:
    """The `attention` fact of the class a `class` reference builds, read from its code in
    the repository (its class, the module's classes and functions it names, and what it
    imports from its package); None when that code does not decide it."""
    qual = str(ref.get("qual") or "")
    if "." not in qual or ref.get("kind") != "class":
        return None
    module, cls = qual.rsplit(".", 1)
    src = ref.get("source")
    roots = search_roots(src if isinstance(src, Source) else None, search_dirs)
    found = defining_file(module, cls, roots)
    if found is None:
        return None
    first_path = found[0]
    where: dict[str, tuple[str, int]] = {}
    maybe_eager = fallback = flash_top = False
    todo = [(module, cls, found)]
    read = 0
    seen: set[tuple[str, str]] = set()
    while todo and read < _MAX_MODULES:
        mod, name, got_file = todo.pop(0)
        if (mod, name) in seen:
            continue
        seen.add((mod, name))
        got_file = got_file or defining_file(mod, name, roots)
        if got_file is None:
            continue
        read += 1
        path, tree = got_file
        nodes, used = _closure(tree, name)
        got, maybe, fb = _code_kernels(nodes)
        maybe_eager, fallback = maybe_eager or maybe, fallback or fb
        if "flash" in got and _imports_flash_at_top(tree):
            flash_top = True
        for kind, line in got.items():
            where.setdefault(kind, (_shown(path), line))
        todo.extend((m, n, None) for m, n in _imports_used(tree, mod, used))
    kinds = set(where)
    said = f"{cls}'s code ({_shown(first_path)}" + (
        f" and {read - 1} module(s) of its package)" if read > 1 else ")")
    if len(kinds) == 1 and (not maybe_eager or kinds == {"eager"}):
        kind = next(iter(kinds))
        p, line = where[kind]
        why = (f"{said}: scaled_dot_product_attention where torch has it (the hand-written "
               f"attention is the fallback for torch < 2.0)" if fallback and kind == "sdpa"
               else f"{said}: only this attention kernel is called")
        return Fact(value=kind, origin=Origin.DERIVED, source=Source(path=p, line=line, col=1),
                    reason=why)
    if kinds == {"flash", "sdpa"} and not maybe_eager and flash_top:
        p, line = where["flash"]
        return Fact(value="flash", origin=Origin.ASSUMED, source=Source(path=p, line=line, col=1),
                    reason=(f"{said}: flash-attn imported at the top (installed) and called, "
                            f"with SDPA as the fallback: assumed the FlashAttention path "
                            f"(CUDA, half precision)"))
    return None


def _shown(path: str) -> str:
    rel = os.path.relpath(path)
    return rel if not rel.startswith("..") else path
