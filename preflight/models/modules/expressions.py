"""How the counter evaluates an expression: constants, names, attributes of modules,
configs and classes, operators (sized by `bounded`), comparisons, containers,
comprehensions and subscripts; anything else is an `Unknown` that says its kind."""

from __future__ import annotations

import ast
from typing import Any, Optional

from preflight.lang import bounded
from preflight.models.modules.python_builtins import BINOP_NAMES, BUILTINS
from preflight.models.modules.values import (MAX_LOOP, MAX_STEPS, Abort, Bound, Builtin, ClassRef,
                                             CompUnknown, ConfigObj, FunctionReturn, Mod, Param,
                                             Tensor, Unknown)


#: `ast` operators by the names unknown pieces give them
_OP_NAMES = {ast.Add: "Add", ast.Sub: "Subtract", ast.Mult: "Multiply", ast.Div: "Divide",
             ast.FloorDiv: "FloorDivide", ast.Mod: "Modulo", ast.Pow: "Power",
             ast.BitOr: "BitOr", ast.BitAnd: "BitAnd", ast.BitXor: "BitXor",
             ast.LShift: "LeftShift", ast.RShift: "RightShift", ast.MatMult: "MatrixMultiply"}
_COMPARE = {ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b,
            ast.Lt: lambda a, b: a < b, ast.Gt: lambda a, b: a > b,
            ast.LtE: lambda a, b: a <= b, ast.GtE: lambda a, b: a >= b,
            ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b}
#: expression kinds not modelled, by the names unknown pieces give them
_KIND_NAMES = {"Starred": "StarredElement", "YieldFrom": "Yield"}


class ExpressionsMixin:
    """Expressions (`_Evaluator`'s part)."""

    # ----------------------------------------------------------------- expressions
    def _safe_eval(self, node: ast.expr, env: dict) -> Any:
        try:
            return self._eval(node, env)
        except (Abort, FunctionReturn):
            raise
        except Exception as e:  # defensive: a construct we do not model
            return Unknown(f"cannot evaluate {_kind(node)}: {e}")

    def _lookup(self, name: str, env: dict) -> Any:
        if name in env:
            return env[name]
        if name in self.globals:
            return self.globals[name]
        if name in self.classes:
            return ClassRef(name, self.classes[name])
        if name in BUILTINS:
            return Builtin(name)
        if name in self.funcs:
            return ("func", self.funcs[name])
        if name in self.imports:
            return Builtin(self.imports[name])
        return Unknown(f"name {name!r} is not known")

    def _eval(self, node: ast.expr, env: dict) -> Any:
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise Abort("evaluation too long")
        if isinstance(node, ast.Constant):
            v = node.value
            if isinstance(v, bytes):
                return Unknown("bytes")
            if isinstance(v, complex) or v is ...:
                return Unknown(f"{'Ellipsis' if v is ... else 'Imaginary'} not modelled")
            return v
        if isinstance(node, ast.JoinedStr):
            return Unknown("f-string")
        if isinstance(node, ast.Name):
            return self._lookup(node.id, env)
        if isinstance(node, ast.Attribute):
            return self._attribute(node, env)
        if isinstance(node, ast.Call):
            return self._call(node, env)
        if isinstance(node, ast.BinOp):
            return self._binop(self._eval(node.left, env), node.op,
                               self._eval(node.right, env))
        if isinstance(node, ast.UnaryOp):
            v = self._eval(node.operand, env)
            if isinstance(v, Unknown):
                return v
            if isinstance(node.op, ast.USub):
                return -v
            if isinstance(node.op, ast.UAdd):
                return +v
            if isinstance(node.op, ast.Not):
                return not v
            return Unknown("unary operator")
        if isinstance(node, ast.Compare):
            return self._compare(node, env)
        if isinstance(node, ast.BoolOp):
            # left to right as Python does: the first value that decides, or the last
            value = self._eval(node.values[0], env)
            for right in node.values[1:]:
                if isinstance(value, Unknown):
                    return value
                if isinstance(node.op, ast.And) and not value or \
                        isinstance(node.op, ast.Or) and value:
                    return value
                value = self._eval(right, env)
            return value
        if isinstance(node, ast.IfExp):
            cond = self._eval(node.test, env)
            if isinstance(cond, Unknown):
                return cond
            return self._eval(node.body if cond else node.orelse, env)
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            out: list = []
            for el in node.elts:
                if isinstance(el, ast.Starred):
                    v = self._eval(el.value, env)
                    items = self._iterate(v, el)
                    if items is None:
                        return Unknown("starred unknown")
                    out.extend(items)
                else:
                    out.append(self._eval(el, env))
            return tuple(out) if isinstance(node, ast.Tuple) else out
        if isinstance(node, ast.Dict):
            d: dict = {}
            for key, value in zip(node.keys, node.values):
                if key is not None:
                    k = self._eval(key, env)
                    if not isinstance(k, Unknown):
                        d[k] = self._eval(value, env)
                else:
                    v = self._eval(value, env)
                    if isinstance(v, dict):
                        d.update(v)
            return d
        if isinstance(node, (ast.ListComp, ast.GeneratorExp, ast.SetComp)):
            out = []
            try:
                self._comp(node.generators, 0, env, lambda e: out.append(self._eval(node.elt, e)))
            except CompUnknown as e:
                return Unknown(str(e))
            return out
        if isinstance(node, ast.DictComp):
            d = {}
            try:
                self._comp(node.generators, 0, env, lambda e: d.__setitem__(
                    self._eval(node.key, e), self._eval(node.value, e)))
            except CompUnknown as e:
                return Unknown(str(e))
            return d
        if isinstance(node, ast.Subscript):
            return self._subscript(node, env)
        return Unknown(f"{_kind(node)} not modelled")

    def _comp(self, gens: list[ast.comprehension], i: int, env: dict, emit) -> None:
        for_in = gens[i]
        it = self._eval(for_in.iter, env)
        items = self._iterate(it, for_in)
        if items is None:
            raise CompUnknown(f"comprehension over an unknown iterable at line "
                              f"{self.line(for_in)}")
        for item in items:
            e = dict(env)
            self._assign(for_in.target, item, e)
            conds = [self._eval(c, e) for c in for_in.ifs]
            if any(isinstance(c, Unknown) for c in conds):
                raise CompUnknown("comprehension filter depends on an unknown value")
            if not all(conds):
                continue
            if i + 1 < len(gens):
                self._comp(gens, i + 1, e, emit)
            else:
                emit(e)

    def _iterate(self, v: Any, node: ast.AST) -> Optional[list]:
        if isinstance(v, (list, tuple)):
            return list(v)
        if isinstance(v, range):
            if len(v) > MAX_LOOP:
                return None
            return list(v)
        if isinstance(v, dict):
            return list(v.keys())
        if isinstance(v, Mod):
            return list(v.children.values())
        if isinstance(v, str):
            return list(v)
        return None

    def _subscript(self, node: ast.Subscript, env: dict) -> Any:
        obj = self._eval(node.value, env)
        if isinstance(obj, Unknown):
            return obj
        sl = node.slice
        if isinstance(sl, ast.Tuple) and sl.elts:
            sl = sl.elts[0]
        if isinstance(sl, ast.Slice):
            parts = [self._eval(x, env) if x is not None else None
                     for x in (sl.lower, sl.upper, sl.step)]
            if any(isinstance(p, Unknown) for p in parts):
                return Unknown("slice")
            s = slice(*parts)
            if isinstance(obj, (list, tuple, str)):
                return obj[s]
            return Unknown("slice of non-sequence")
        key = self._eval(sl, env)
        if isinstance(key, Unknown):
            return key
        try:
            if isinstance(obj, Mod):
                return obj.children[str(key if key >= 0 else len(obj.children) + key)] \
                    if isinstance(key, int) else obj.children[key]
            if isinstance(obj, ConfigObj):
                return obj.get(key)
            if isinstance(obj, (list, tuple, dict, str)):
                return obj[key]
        except (KeyError, IndexError, TypeError):
            return Unknown("subscript out of range")
        return Unknown("subscript not modelled")

    def _compare(self, node: ast.Compare, env: dict) -> Any:
        left = self._eval(node.left, env)
        for op, comparator in zip(node.ops, node.comparators):
            right = self._eval(comparator, env)
            if isinstance(op, (ast.Is, ast.IsNot)):
                res = (left is right) if not isinstance(left, Unknown) else left
                if isinstance(op, ast.IsNot) and not isinstance(res, Unknown):
                    res = not res
            elif isinstance(left, Unknown) or isinstance(right, Unknown):
                return left if isinstance(left, Unknown) else right
            else:
                try:
                    res = _COMPARE[type(op)](left, right)
                except Exception:
                    return Unknown("comparison")
            if isinstance(res, Unknown) or not res:
                return res
            left = right
        return True

    def _binop(self, a: Any, op: ast.operator, b: Any) -> Any:
        if isinstance(a, Unknown):
            return a
        if isinstance(b, Unknown):
            return b
        name = _OP_NAMES.get(type(op), type(op).__name__)
        try:
            return bounded.binop(BINOP_NAMES[name], a, b)
        except bounded.TooLarge as e:
            return Unknown(f"operator {name} not computed: {e}")
        except Exception:
            return Unknown(f"operator {name} on {type(a).__name__}, {type(b).__name__}")

    def _attribute(self, node: ast.Attribute, env: dict) -> Any:
        full = self._full(node)
        if full.startswith("torch.") and not isinstance(self._root_value(node, env), (Mod, ConfigObj)):
            return Builtin(full)
        obj = self._eval(node.value, env)
        name = node.attr
        if isinstance(obj, Unknown):
            return obj
        if isinstance(obj, ConfigObj):
            return obj.get(name)
        if isinstance(obj, Mod):
            if name in obj.params:
                return obj.params[name]
            if name in obj.children:
                return obj.children[name]
            if name in obj.attrs:
                return obj.attrs[name]
            return Bound(obj, name)
        if isinstance(obj, Param):
            if name == "shape":
                return obj.shape
            return Bound(obj, name)
        if isinstance(obj, Tensor):
            return obj.shape if name == "shape" else Bound(obj, name)
        if isinstance(obj, ClassRef):
            attrs = self._class_attrs(obj.node)
            if name in attrs:
                return attrs[name]
            return Bound(obj, name)
        if isinstance(obj, dict) and name in ("items", "keys", "values", "get", "update"):
            return Bound(obj, name)
        if isinstance(obj, list) and name in ("append", "extend", "insert", "copy"):
            return Bound(obj, name)
        if isinstance(obj, Builtin):
            return Builtin(f"{obj.name}.{name}")
        if isinstance(obj, (int, float, str, tuple)):
            return Bound(obj, name)
        return Unknown(f"attribute {name!r}")

    def _root_value(self, node: ast.expr, env: dict) -> Any:
        while isinstance(node, ast.Attribute):
            node = node.value
        if isinstance(node, ast.Name):
            return env.get(node.id)
        return None


def _kind(node: ast.AST) -> str:
    """A node's kind, as unknown pieces name it."""
    name = type(node).__name__
    return _KIND_NAMES.get(name, name)
