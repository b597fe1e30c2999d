"""The value language of a Python config, evaluated with budgets: literals, `dict(...)` /
`list(...)`, names bound earlier, arithmetic through `preflight.lang.bounded`, f-strings,
subscripts and attributes of dicts, LazyCall dicts. Any other expression is an `Opaque`
value carrying its reason. Every evaluated node counts against one `Budget` shared by all
the files of a config, so the reading stays linear."""

from __future__ import annotations

import ast
import copy
from typing import Any

from preflight.lang import bounded
from preflight.lang.pyconfig import lazyconfig
from preflight.lang.pyconfig.inherit import base_value, merge_flat
from preflight.lang.pyconfig.values import MAX_DEPTH, MAX_NODES, CDict, Name, Opaque, Pos
from preflight.lang.python.source import last_name


class Budget:
    """What the files of one config have spent: evaluated nodes and files read."""

    __slots__ = ("nodes", "files")

    def __init__(self) -> None:
        self.nodes = 0
        self.files = 0


class Spent(Exception):
    """The node budget is spent: the rest of the file is not read."""


BIN = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "truediv",
       ast.FloorDiv: "floordiv", ast.Mod: "mod", ast.Pow: "pow"}


class Evaluator:
    """The expressions of one config file, evaluated against its top-level names (`scope`)
    and its bases' variables (`base`)."""

    def __init__(self, path: str, budget: Budget) -> None:
        self.path, self.budget = path, budget
        self.scope: CDict = CDict()
        self.base: CDict = CDict()          # `_base_.x` and `{{_base_.x}}` refer here

    def at(self, node: ast.AST) -> Pos:
        return (self.path, node.lineno, node.col_offset + 1)

    def ev(self, node: ast.AST, depth: int = 0) -> Any:
        self.budget.nodes += 1
        if self.budget.nodes > MAX_NODES:
            raise Spent()
        if depth > MAX_DEPTH:
            return Opaque("nested too deeply", getattr(node, "lineno", 0))
        t = type(node)
        d = depth + 1
        if t is ast.Constant:
            v = node.value
            if isinstance(v, str) and "_base_." in v:
                return self.base_string(v, node)
            return v
        if t is ast.Name:
            if node.id in self.scope:
                return self.scope[node.id]
            if node.id in ("True", "False", "None"):
                return {"True": True, "False": False, "None": None}[node.id]
            if node.id == "_base_":
                return self.base
            return Name(node.id)
        if t in (ast.List, ast.Tuple, ast.Set):
            items = []
            for e in node.elts:
                if isinstance(e, ast.Starred):
                    v = self.ev(e.value, d)
                    if isinstance(v, (list, tuple)):
                        items.extend(v)
                        continue
                    return Opaque("a starred item not read", node.lineno)
                items.append(self.ev(e, d))
            return tuple(items) if t is ast.Tuple else items
        if t is ast.Dict:
            out = CDict()
            for k, v in zip(node.keys, node.values):
                if k is None:
                    sub = self.ev(v, d)
                    if isinstance(sub, dict):
                        merge_flat(out, sub)
                    continue
                key = self.ev(k, d)
                if isinstance(key, Opaque) or isinstance(key, (dict, list)):
                    continue
                out[key] = self.ev(v, d)
                out.at[key] = self.at(k)
            return out
        if t is ast.Call:
            return self.call(node, d)
        if t is ast.Attribute:
            obj = self.ev(node.value, d)
            if isinstance(obj, dict):
                if node.attr in obj:
                    return obj[node.attr]
                return Opaque(f"`{ast.unparse(node)[:80]}` is not set", node.lineno)
            if isinstance(obj, Name):
                return Name(f"{obj}.{node.attr}")
            return Opaque(f"`{ast.unparse(node)[:80]}` not read", node.lineno)
        if t is ast.Subscript:
            obj = self.ev(node.value, d)
            key = self.ev(node.slice, d)
            try:
                if isinstance(obj, (dict, list, tuple, str)) and isinstance(key, (int, str)) \
                        and not isinstance(key, bool):
                    return obj[key]
            except (KeyError, IndexError, TypeError):
                pass
            return Opaque(f"`{ast.unparse(node)[:80]}` not read", node.lineno)
        if t is ast.BinOp:
            op = BIN.get(type(node.op))
            a, b = self.ev(node.left, d), self.ev(node.right, d)
            if op is None:
                return Opaque("an operator not read", node.lineno)
            return self.arith(op, a, b, node)
        if t is ast.UnaryOp:
            v = self.ev(node.operand, d)
            if isinstance(node.op, ast.USub) and isinstance(v, (int, float)) and not isinstance(v, bool):
                return -v
            if isinstance(node.op, ast.UAdd) and isinstance(v, (int, float)):
                return v
            if isinstance(node.op, ast.Not) and isinstance(v, (bool, int, str)) and not isinstance(v, Name):
                return not v
            return Opaque(f"`{ast.unparse(node)[:80]}` not read", node.lineno)
        if t is ast.JoinedStr:
            parts = []
            for p in node.values:
                if isinstance(p, ast.Constant):
                    parts.append(str(p.value))
                    continue
                v = self.ev(p.value, d) if isinstance(p, ast.FormattedValue) else Opaque("", 0)
                if isinstance(v, (Opaque, dict, list)) or (isinstance(p, ast.FormattedValue)
                                                          and p.format_spec is not None):
                    return Opaque(f"f-string `{ast.unparse(node)[:80]}` not read", node.lineno)
                parts.append(str(v))
            s = "".join(parts)
            return s if len(s) <= bounded.MAX_ITEMS else Opaque("a string too long", node.lineno)
        if t is ast.IfExp:
            test = self.ev(node.test, d)
            if isinstance(test, (bool, int, str)) and not isinstance(test, (Opaque, Name)):
                return self.ev(node.body if test else node.orelse, d)
            return Opaque(f"`{ast.unparse(node)[:80]}`: the condition is not decided statically",
                          node.lineno)
        return Opaque(f"`{ast.unparse(node)[:80]}` is computed when the config is loaded",
                      getattr(node, "lineno", 0))

    def arith(self, op: str, a: Any, b: Any, node: ast.AST) -> Any:
        if isinstance(a, (Opaque, Name)) or isinstance(b, (Opaque, Name)) or \
                isinstance(a, dict) or isinstance(b, dict):
            return Opaque(f"`{ast.unparse(node)[:80]}` not read", node.lineno)
        try:
            return bounded.binop(op, a, b)
        except bounded.TooLarge as e:
            return Opaque(f"`{ast.unparse(node)[:80]}` not computed: {e}", node.lineno)
        except (TypeError, ValueError, ZeroDivisionError, OverflowError):
            return Opaque(f"`{ast.unparse(node)[:80]}` not computed", node.lineno)

    def kwargs(self, call: ast.Call, depth: int = 0) -> CDict:
        out = CDict()
        for kw in call.keywords:
            if kw.arg is None:
                sub = self.ev(kw.value, depth)
                if isinstance(sub, dict):
                    merge_flat(out, sub)
                continue
            out[kw.arg] = self.ev(kw.value, depth)
            out.at[kw.arg] = self.at(kw)
        return out

    def call(self, node: ast.Call, depth: int) -> Any:
        f = node.func
        for special in (lazyconfig.lazy_call, lazyconfig.omegaconf_create):
            got = special(self, node, depth)
            if got is not None:
                return got
        name = last_name(f)
        if name == "dict" and not node.args:
            return self.kwargs(node, depth)
        if name == "dict" and len(node.args) == 1:
            base = self.ev(node.args[0], depth)
            if isinstance(base, dict):
                out = CDict(base)
                if isinstance(base, CDict):
                    out.at.update(base.at)
                merge_flat(out, self.kwargs(node, depth))
                return out
        if name in ("list", "tuple") and len(node.args) == 1:
            v = self.ev(node.args[0], depth)
            if isinstance(v, (list, tuple)):
                return list(v) if name == "list" else tuple(v)
        if name in ("int", "float", "str", "bool") and len(node.args) == 1:
            v = self.ev(node.args[0], depth)
            if isinstance(v, (int, float, str, bool)) and not isinstance(v, Name):
                try:
                    return {"int": int, "float": float, "str": str, "bool": bool}[name](v)
                except (TypeError, ValueError, OverflowError):
                    pass
        if isinstance(f, ast.Attribute) and f.attr == "copy" and not node.args:
            v = self.ev(f.value, depth)
            if isinstance(v, dict):
                return copy.deepcopy(v)
        return Opaque(f"`{ast.unparse(node)[:80]}` is computed when the config is loaded",
                      node.lineno)

    def base_string(self, s: str, node: ast.AST) -> Any:
        """A string naming a base's variable (`'{{_base_.model.depth}}'`): see
        `preflight.lang.pyconfig.inherit.base_value`."""
        return base_value(self.base, s, node)
