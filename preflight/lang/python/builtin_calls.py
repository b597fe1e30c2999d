"""What the evaluator knows of Python's own functions (`int()`, `min()`, `len()`, `dict()`,
`exec()`, …) and of the methods of strings and dicts (`"…".format()`, `d.get()`, …): each
computed on known values within `bounded`'s budgets, anything else an unknown value.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any, Optional

from preflight.lang import bounded
from preflight.lang.python.cli import convert
from preflight.lang.python.values import (ArgsNS, DCInst, Dotted, Obj, V, as_v, combine,
                                          hashable, plain, unk)

if TYPE_CHECKING:
    from preflight.lang.python.evaluator import Evaluator

BUILTIN_TYPES = {"int": "int", "float": "float", "str": "str", "bool": "bool"}
BUILTIN_FUNCS = {"min", "max", "abs", "round", "len", "sum", "dict", "list", "tuple", "exec",
                 "open", "getattr", "hasattr", "isinstance", "callable", "print", "setattr",
                 "vars", "globals", "locals"}
STR_METHODS = {"format", "lower", "upper", "strip", "replace", "split", "join", "startswith",
               "endswith"}


#: the builtin types `isinstance` is decided for, over plain values (a parsed YAML / JSON
#: document's dicts, lists and scalars); `Mapping` / `MutableMapping` are dict's
_PLAIN_TYPES = {"dict": dict, "list": list, "tuple": tuple, "str": str, "int": int,
                "float": float, "bool": bool, "Mapping": dict, "MutableMapping": dict}


def _isinstance(obj: V, types: ast.AST) -> Optional[bool]:
    """`isinstance(x, dict)` / `isinstance(x, (list, tuple))` of a known plain value (a
    str, number, bool, None, dict, list or tuple — not an instance the evaluator models);
    None when it cannot be told."""
    v = obj.value
    if not obj.known or not (v is None or type(v) in (str, int, float, bool, dict, list, tuple)):
        return None
    names = types.elts if isinstance(types, ast.Tuple) else [types]
    want: list[type] = []
    for n in names:
        name = n.id if isinstance(n, ast.Name) else n.attr if isinstance(n, ast.Attribute) else None
        if name not in _PLAIN_TYPES:
            return None
        want.append(_PLAIN_TYPES[name])
    return isinstance(v, tuple(want))


class BuiltinsMixin:
    """Calls of Python's builtins."""

    def _builtin(self, name: str, args: list[V], kwargs: dict[str, V], line: int, col: int,
                 node: ast.Call) -> Optional[V]:
        if name in ("int", "float", "str", "bool") and len(args) == 1:
            a = args[0]
            if not a.known:
                d = a.default
                out = unk(a.reason or "", a.line or line, a.col or col)
                if d is not None and not isinstance(d, dict):
                    try:
                        out.default = convert(str(d), name) if name != "str" else str(d)
                    except (ValueError, OverflowError):
                        out.default = d
                else:
                    out.default = d
                return out
            try:
                val = {"int": int, "float": float, "str": str, "bool": bool}[name](a.value)
            except Exception:  # noqa: BLE001
                return unk(f"{name}({plain(a)!r})", line, col)
            return V(val, a.origin, a.line, a.col, a.reason)
        if name in ("min", "max", "abs", "round", "len", "sum") and args:
            vals = args[0].value if (len(args) == 1 and args[0].known
                                     and isinstance(args[0].value, (list, tuple))) else None
            items = list(vals) if vals is not None else args
            items = [x if isinstance(x, V) else V(x) for x in items]
            if name == "len" and len(args) == 1 and args[0].known:
                try:
                    return V(len(args[0].value), args[0].origin, line, col)
                except TypeError:
                    return unk("len()", line, col)
            if all(x.known for x in items):
                try:
                    fn = {"min": min, "max": max, "abs": abs, "round": round, "sum": sum}[name]
                    raw = [x.value for x in items]
                    res = fn(raw) if name in ("min", "max", "sum") else fn(*raw)
                    return combine(items, res, line, col, f"{name}(...)")
                except Exception:  # noqa: BLE001
                    return unk(f"{name}(...)", line, col)
            return unk(next(x.reason for x in items if not x.known) or f"{name}(...)", line, col)
        if name == "dict":
            out = {}
            if args and args[0].known and isinstance(args[0].value, dict):
                out.update(args[0].value)
            out.update({k: v for k, v in kwargs.items()})
            return V(out, "literal", line, col)
        if name in ("list", "tuple") and len(args) == 1 and args[0].known and \
                isinstance(args[0].value, (list, tuple)):
            return V(list(args[0].value) if name == "list" else tuple(args[0].value),
                     args[0].origin, line, col)
        if name == "exec" and args:
            self.patterns.on_exec(self, args[0], node)
            return V(None)
        if name == "open":
            return V(Obj("builtins.open", args, kwargs, line, col), "derived", line, col)
        if name in ("getattr", "setattr", "hasattr") and len(args) >= 2 and args[1].known and \
                isinstance(args[1].value, str) and args[0].known:
            got = self._named_attribute(name, args, line, col, node)
            if got is not None:
                return got
        if name == "vars" and len(args) == 1 and args[0].known:
            # `config = vars(args)`: the parsed arguments (or an instance's fields) as a dict
            o = args[0].value
            if isinstance(o, ArgsNS):
                names = list(self.argparse_order) + [d for d in o.attrs
                                                     if d not in self.argparse_order]
                return V({d: (o.attrs[d] if d in o.attrs else self.arg_final(d))
                          for d in names}, "derived", line, col, "vars(args)")
            if isinstance(o, DCInst):
                return V(dict(o.fields), "derived", line, col, f"vars({o.cls})")
        if name == "isinstance" and len(args) == 2 and len(node.args) == 2:
            got = _isinstance(args[0], node.args[1])
            if got is not None:
                return V(got, "derived", line, col)
        if name in ("getattr", "hasattr", "isinstance", "callable", "print", "setattr", "vars",
                    "globals", "locals"):
            return unk(f"{name}(...) is evaluated at run time", line, col)
        return None


    def _named_attribute(self, name: str, args: list[V], line: int, col: int,
                         node: ast.Call) -> Optional[V]:
        """`getattr(args, "lr", d)`, `setattr(cfg, "batch_size", 8)`, `hasattr(cfg, "x")`
        with a constant name, on the parsed arguments or a configuration instance."""
        o, attr = args[0].value, args[1].value
        if name == "getattr" and isinstance(o, Dotted) and attr.isidentifier():
            # `getattr(torch.optim, args.optim)`: the module's attribute the name picks
            return V(Dotted(f"{o.name}.{attr}"), args[1].origin if args[1].origin != "literal"
                     else "literal", args[1].line or line, args[1].col or col, args[1].reason)
        fields = o.fields if isinstance(o, DCInst) else (
            {**o.kwargs, **o.attrs} if isinstance(o, Obj) and o.kwargs else None)
        if name == "setattr" and len(args) == 3:
            if isinstance(o, ArgsNS):
                o.attrs[attr] = args[2]
                self.note_arg_set(attr, args[2], node)
            elif isinstance(o, DCInst):
                o.fields[attr] = args[2]
            elif isinstance(o, Obj):
                o.attrs[attr] = args[2]
            else:
                return None
            return V(None, "literal", line, col)
        if name == "hasattr" and fields is not None:
            return V(attr in fields, "derived", line, col, f"{attr} is a field of the instance"
                     if attr in fields else f"{attr} is not a field of the instance")
        if name == "getattr":
            if isinstance(o, ArgsNS):
                if attr in o.attrs:
                    return o.attrs[attr]
                if attr in self.argparse or len(args) < 3:
                    return self.arg_value(attr, line, col)
                return args[2]
            if fields is not None:
                return fields[attr] if attr in fields else (args[2] if len(args) >= 3 else
                                                            unk(f"no field {attr}", line, col))
        return None


class BoundStr:
    __slots__ = ("s", "meth", "base")

    def __init__(self, s: str, meth: str, base: V) -> None:
        self.s, self.meth, self.base = s, meth, base

    def call(self, args: list[V], kwargs: dict[str, V], line: int, col: int) -> V:
        vals = list(args) + list(kwargs.values())
        if not all(v.known for v in vals):
            bad = next(v for v in vals if not v.known)
            return unk(bad.reason or "str method", line, col)
        try:
            pa = [plain(a) for a in args]
            pk = {k: plain(v) for k, v in kwargs.items()}
            if self.meth == "format":
                bounded.check_brace_format(self.s)
            if self.meth == "join":
                res: Any = self.s.join(str(x) for x in pa[0])
            elif self.meth == "replace" and len(pa) >= 2 and isinstance(pa[1], str) and \
                    pa[0] and self.s.count(str(pa[0])) * len(pa[1]) > bounded.MAX_ITEMS:
                raise bounded.TooLarge("str.replace result too long")
            else:
                res = getattr(self.s, self.meth)(*pa, **pk)
            bounded.check_size(res)
            if isinstance(res, list):
                res = [V(x, "literal", line, col) for x in res]
        except bounded.TooLarge as e:
            return unk(f"str.{self.meth}() not computed: {e}", line, col)
        except Exception:  # noqa: BLE001
            return unk(f"str.{self.meth}", line, col)
        return combine([self.base] + vals, res, line, col, f"str.{self.meth}")


class BoundDict:
    __slots__ = ("d", "meth", "base")

    def __init__(self, d: dict, meth: str, base: V) -> None:
        self.d, self.meth, self.base = d, meth, base

    def call(self, ev: Evaluator, args: list[V], kwargs: dict[str, V], line: int, col: int,
             node: ast.AST) -> V:
        if self.meth in ("get", "pop", "setdefault") and args and args[0].known:
            k = args[0].value
            if hashable(k) and k in self.d:
                res = as_v(self.d[k], self.base, line, col)
                if self.meth == "pop":
                    self.d.pop(k, None)
                return res
            if "\0unknown" in self.d:
                return unk(f"key {k!r} may come from unknown entries", line, col)
            if len(args) > 1:
                if self.meth == "setdefault":
                    self.d[k] = args[1]
                return args[1]
            return V(None, "literal", line, col)
        if self.meth == "update" and args and args[0].known and isinstance(args[0].value, dict):
            self.d.update(args[0].value)
            self.d.update(kwargs)
            return V(None)
        if self.meth == "update":
            if args:
                # `cfg.update(something not known)`: any key may change
                unsettle(self.d, f"`.update({ev.src(node.args[0]) if getattr(node, 'args', None) else '…'})` "
                                 f"at line {line}", line, col)
            self.d.update(kwargs)
            return V(None)
        if self.meth == "copy":
            return V(dict(self.d), self.base.origin, line, col)
        if self.meth in ("items", "keys", "values") and not args and "\0unknown" not in self.d:
            # for a loop over a known dict (`for k, v in vars(args).items():`)
            keys = [k for k in self.d if not (isinstance(k, str) and k.startswith("\0"))]
            o = self.base.origin
            if self.meth == "keys":
                items = [V(k, o, line, col) for k in keys]
            elif self.meth == "values":
                items = [as_v(self.d[k], self.base, line, col) for k in keys]
            else:
                items = [V((V(k, o, line, col), as_v(self.d[k], self.base, line, col)), o, line, col)
                         for k in keys]
            return V(items, o, line, col, f"dict.{self.meth}()")
        return unk(f"dict.{self.meth}()", line, col)


def unsettle(d: dict, why: str, line: int, col: int) -> None:
    """Every key of `d` may be replaced by `why` (a write with a key not known statically):
    unknown, the value it had the alternative; later keys may come from it too."""
    for k in list(d):
        if isinstance(k, str) and k.startswith("\0"):
            continue
        v = d[k]
        old = v.value if isinstance(v, V) and v.known else (v.default if isinstance(v, V) else v)
        u = unk(f"{k} may be set by {why}", getattr(v, "line", line), getattr(v, "col", col), old)
        u.path = getattr(v, "path", None)
        d[k] = u
    d["\0unknown"] = unk(why, line, col)
