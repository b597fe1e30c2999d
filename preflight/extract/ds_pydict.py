"""DeepSpeed configs built as Python dicts in a training script (`ds_config = {...}` passed
to `deepspeed.initialize`), read with the stdlib `ast` — the script is never imported.

Names used as keys or values are resolved from module-level constants and from the
defaults of the enclosing function's parameters (overridden by `--name value` on the
launch line, as fire / argparse would); anything else is left out, never guessed.
"""

from __future__ import annotations

import ast
from typing import Any, Optional

from preflight.extract.flags import parse_args
from preflight.frameworks.deepspeed import deepspeed_facts
from preflight.plan import Fact, Origin, Source

_MARKERS = ("zero_optimization", "train_micro_batch_size_per_gpu")


class _Unres:
    pass


UNRES = _Unres()


def _const(node: ast.AST) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return UNRES


def _parse_value(raw: str) -> Any:
    for conv in (int, float):
        try:
            return conv(raw)
        except ValueError:
            pass
    return {"true": True, "false": False}.get(raw.lower(), raw)


def deepspeed_dict_facts(path: str, tree: ast.Module, args: Optional[list[str]] = None
                         ) -> tuple[list[tuple[str, Fact]], dict[str, Any]]:
    """Facts of a DeepSpeed config built as a dict in the script whose `ast` tree is given
    (the Python extractor's own, so the script is not read or parsed again)."""
    consts: dict[str, Any] = {}
    for st in tree.body:
        if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name):
            v = _const(st.value)
            if v is not UNRES:
                consts[st.targets[0].id] = v
    cli = parse_args(list(args or []))
    found: list[tuple[ast.Dict, dict[str, tuple[Any, Origin, str]]]] = []

    def scan(node: ast.AST, names: dict[str, tuple[Any, Origin, str]]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                inner = dict(names)
                a = child.args
                pos = a.posonlyargs + a.args
                for arg, d in zip(pos[len(pos) - len(a.defaults):], a.defaults):
                    inner[arg.arg] = (_const(d), Origin.DEFAULT, f"default of parameter {arg.arg}")
                for arg, d in zip(a.kwonlyargs, a.kw_defaults):
                    if d is not None:
                        inner[arg.arg] = (_const(d), Origin.DEFAULT, f"default of parameter {arg.arg}")
                for k in list(inner):
                    for key in (k, k.replace("_", "-")):
                        if key in cli and cli[key][0] is not None:
                            inner[k] = (_parse_value(cli[key][0]), Origin.CLI, f"--{key} {cli[key][0]}")
                scan(child, inner)
            elif isinstance(child, ast.Dict):
                keys = [k.value for k in child.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]
                if any(m in keys for m in _MARKERS):
                    found.append((child, names))
                else:
                    scan(child, names)
            else:
                scan(child, names)

    base = {k: (v, Origin.LITERAL, f"{k} = {v!r}") for k, v in consts.items()}
    scan(tree, base)
    if not found:
        return [], {}
    node, names = found[0]
    pos: dict[tuple, tuple[int, int]] = {}
    via: dict[tuple, tuple[Origin, str]] = {}

    def conv(n: ast.AST, p: tuple) -> Any:
        if isinstance(n, ast.Dict):
            out: dict = {}
            for k, v in zip(n.keys, n.values):
                if k is None:
                    continue
                if isinstance(k, ast.Constant) and isinstance(k.value, str):
                    key = k.value
                elif isinstance(k, ast.Name) and k.id in names and isinstance(names[k.id][0], str):
                    key = names[k.id][0]
                    via[p + (key,)] = names[k.id][1:]
                else:
                    continue
                val = conv(v, p + (key,))
                if val is UNRES:
                    continue
                pos[p + (key,)] = (k.lineno, k.col_offset + 1)
                out[key] = val
            return out
        if isinstance(n, ast.Name):
            if n.id in names and names[n.id][0] is not UNRES:
                via[p] = names[n.id][1:]
                return names[n.id][0]
            return UNRES
        return _const(n)

    cfg = conv(node, ())
    pos[()] = (node.lineno, node.col_offset + 1)

    def where(p: tuple) -> Source:
        q = p
        while q and q not in pos:
            q = q[:-1]
        line, col = pos.get(q, (1, 1))
        return Source(path=path, line=line, col=col)

    facts, extras = deepspeed_facts(cfg, where, Origin.LITERAL)
    # a value that came through a parameter default / a CLI flag carries that origin
    by_src: dict[tuple[int, int], tuple[Origin, str]] = {}
    for p, org_why in via.items():
        for q, lc in pos.items():
            if q[:len(p)] == p and p:
                by_src.setdefault(lc, org_why)
    out = []
    for name, f in facts:
        key = (f.source.line, f.source.col) if f.source else None
        if f.known and f.origin is Origin.LITERAL and key in by_src:
            org, why = by_src[key]
            f = f.model_copy(update={"origin": org, "reason": f"{f.reason} ({why})"})
        out.append((name, f))
    return out, extras
