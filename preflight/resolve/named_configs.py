"""A model named by a string through a config class of the repository:
`Config.from_name("tiny-1b")`, where the class's module keeps its models as a list of
literal entries (`dict(name="tiny-1b", n_layer=22, …)` or `{"name": "tiny-1b", …}`). The
module is found by following the script's import into the repository (and its re-exports,
a few hops); the entry's literal fields over the class's own defaults describe the model.
The fields are counted when they are litgpt's spelling of a known architecture
(`models.litgpt_config`); otherwise the shape facts their names say are kept and the size
stays unknown."""

from __future__ import annotations

import ast
import os
from typing import Any, Optional

from preflight import runcache, safe_read
from preflight.models import litgpt_config
from preflight.plan import Fact, Origin, Source
from preflight.resolve.shapes import shape_for_arch
from preflight.resolve.values import Resolved, shape_facts_from_fields

#: import hops followed from the script's module to the file that defines the class
_MAX_HOPS = 4
#: parent folders of the script searched for the top package of the import
_MAX_UP = 4
_MAX_BYTES = 2_000_000


def module_file(module: str, roots: list[str]) -> Optional[str]:
    """The file of a dotted module under one of `roots` (`pkg/mod.py`, `pkg/mod/__init__.py`)."""
    rel = module.replace(".", os.sep)
    for root in roots:
        for cand in (os.path.join(root, rel + ".py"), os.path.join(root, rel, "__init__.py")):
            runcache.note_file(cand)
            if os.path.isfile(cand):
                return cand
    return None


def search_roots(src: Optional[Source], search_dirs: list[str]) -> list[str]:
    """Where a package a script imports may live: the script's folder and its parents, the
    job's folders, the working directory."""
    out: list[str] = []
    starts = [os.path.dirname(os.path.abspath(src.path))] if src is not None and src.path else []
    starts += [os.path.abspath(d) for d in search_dirs or []] + [os.getcwd()]
    for s in starts:
        d = s
        for _ in range(_MAX_UP):
            if d not in out:
                out.append(d)
            d = os.path.dirname(d)
    return out


def parse_file(path: str) -> Optional[ast.Module]:
    """The `ast` tree of a Python file of at most 2 MB, or None."""
    try:
        if os.path.getsize(path) > _MAX_BYTES:
            return None
        return ast.parse(safe_read.read_text(path))
    except (OSError, SyntaxError, ValueError):
        return None


def defining_file(module: str, cls: str, roots: list[str]) -> Optional[tuple[str, ast.Module]]:
    """The file (and its tree) that defines class `cls`, starting at `module` and following
    `from X import cls` re-exports."""
    for _ in range(_MAX_HOPS):
        path = module_file(module, roots)
        tree = parse_file(path) if path else None
        if tree is None:
            return None
        if any(isinstance(s, ast.ClassDef) and s.name == cls for s in tree.body):
            return path, tree
        nxt = None
        for s in tree.body:
            if isinstance(s, ast.ImportFrom) and any(a.name == cls and a.asname in (None, cls)
                                                     for a in s.names):
                base = module.rsplit(".", s.level)[0] if s.level else ""
                nxt = ".".join(p for p in (base if s.level else "", s.module or "") if p)
                break
        if not nxt:
            return None
        module = nxt
    return None


def _literal(node: ast.AST) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _NOT_LITERAL


_NOT_LITERAL = object()


def _entry_fields(node: ast.AST) -> Optional[tuple[dict, list[str]]]:
    """The literal fields of a `dict(k=v, …)` call or a `{"k": v}` display (and the names of
    those that are not literals), or None when it is neither."""
    fields: dict = {}
    other: list[str] = []
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict" \
            and not node.args:
        pairs = [(k.arg, k.value) for k in node.keywords]
    elif isinstance(node, ast.Dict):
        pairs = [(k.value if isinstance(k, ast.Constant) else None, v)
                 for k, v in zip(node.keys, node.values)]
    else:
        return None
    for k, v in pairs:
        if not isinstance(k, str):
            return None                   # `**other` or a computed key: not a plain entry
        val = _literal(v)
        if val is _NOT_LITERAL:
            other.append(k)
        else:
            fields[k] = val
    return fields, other


def registry_entry(tree: ast.Module, name: str) -> Optional[tuple[dict, list[str], int]]:
    """The entry named `name` among the module's literal entries: its fields, the fields
    that are not literals, and its line."""
    for node in ast.walk(tree):
        got = _entry_fields(node)
        if got is not None and got[0].get("name") == name:
            return got[0], got[1], getattr(node, "lineno", 0)
    return None


def class_defaults(tree: ast.Module, cls: str) -> dict:
    """The literal defaults of a dataclass's fields (`n_layer: int = 16`)."""
    out: dict = {}
    for s in tree.body:
        if isinstance(s, ast.ClassDef) and s.name == cls:
            for st in s.body:
                if isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name) \
                        and st.value is not None:
                    v = _literal(st.value)
                    if v is not _NOT_LITERAL:
                        out[st.target.id] = v
    return out


def resolve_named(name: Any, ref: dict, src: Optional[Source],
                  search_dirs: list[str]) -> Optional[Resolved]:
    """`Owner.from_name(name)` with `Owner` a class of the repository that keeps its models
    as literal entries: the entry resolved, or None when the class or the entry is not
    found there (the name is then resolved as any other)."""
    qual = str(ref.get("qual") or "").lstrip("?")
    parts = qual.split(".")
    if not isinstance(name, str) or len(parts) < 3 or parts[-1] != "from_name":
        return None
    module, cls = ".".join(parts[:-2]), parts[-2]
    found = defining_file(module, cls, search_roots(src, search_dirs))
    if found is None:
        return None
    path, tree = found
    entry = registry_entry(tree, name)
    if entry is None:
        return None
    fields, other, line = entry
    rel = os.path.relpath(path)
    where = Source(path=rel if not rel.startswith("..") else path, line=line, col=1)
    cfg = {**class_defaults(tree, cls), **fields}
    res = Resolved(ref=ref, origin=Origin.DERIVED, source=where, name=name)
    what = f"{name}: the entry of {cls}'s models in {where.path}:{line}"
    shape_fields = [k for k in other if k in litgpt_config.SHAPE_FIELDS]
    if shape_fields:
        res.unknown = f"{what}: field(s) {', '.join(shape_fields)} not literal"
        res.shape_facts = shape_facts_from_fields(cfg)
        return res
    hf = litgpt_config.as_hf_config(cfg)
    if hf is None:
        res.unknown = f"{what}: its fields are not a model layout preflight can count"
        res.shape_facts = shape_facts_from_fields(cfg)
        return res
    arch, hf_cfg = hf
    res.reason = what
    block = cfg.get("block_size")
    if isinstance(block, int) and not isinstance(block, bool) and block > 0:
        # the model's training context, as a config object built in the script says it
        # (`py_patterns.models.config_ref`); weaker than any value the script states
        res.more.append(("seq_len", Fact(value=block, origin=Origin.CATALOG, source=where,
                                         reason=f"{name}: block_size of its entry (the "
                                                f"model's training context)")))
    return shape_for_arch(res, arch, hf_cfg, None, None, what)
