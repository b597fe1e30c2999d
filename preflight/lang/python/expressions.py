"""Expressions: constants, names, operators (every one through `bounded`'s budgets),
comparisons, conditional expressions, containers, f-strings, subscripts (`os.environ`,
`sys.argv` included) and attributes (module attributes by name, argparse and dataclass
fields, the bound methods of strings and dicts).
"""

from __future__ import annotations

import ast
from typing import Any, Optional

from preflight.lang import bounded
from preflight.lang.python.budgets import MAX_STEPS
from preflight.lang.python.builtin_calls import (BUILTIN_FUNCS, BUILTIN_TYPES, STR_METHODS,
                                                 BoundDict, BoundStr)
from preflight.lang.python.source import clip
from preflight.lang.shell.values import readable, reason_of
from preflight.lang.python.pymath import MATH_CONSTANTS
from preflight.lang.python.values import (MISSING, UNK, ArgsNS, AttrDict, ClassVal, DCInst, Dotted, FuncVal,
                                          KDict, Obj, V, as_v, cmpval, combine, hashable, plain,
                                          same, show, truthy, unk)

_BIN_NAMES = {
    ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "truediv",
    ast.FloorDiv: "floordiv", ast.Mod: "mod", ast.Pow: "pow", ast.LShift: "lshift",
    ast.RShift: "rshift", ast.BitOr: "or", ast.BitAnd: "and", ast.BitXor: "xor",
}
# every operator goes through the budgets of `bounded.binop` (a TooLarge is an unknown value)
BIN = {t: (lambda name: lambda a, b: bounded.binop(name, a, b))(name)
       for t, name in _BIN_NAMES.items()}
_CMP = {
    ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b, ast.Lt: lambda a, b: a < b,
    ast.LtE: lambda a, b: a <= b, ast.Gt: lambda a, b: a > b, ast.GtE: lambda a, b: a >= b,
    ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b,
    ast.Is: lambda a, b: a is b, ast.IsNot: lambda a, b: a is not b,
}


class ExpressionsMixin:
    """Evaluating an expression node to a `V`."""

    def runtime(self, v: V, node: ast.AST) -> V:
        """A call result the evaluator could not run is not a truth value it knows."""
        if v.known and isinstance(v.value, Obj):
            return unk(f"`{self.src(node)}` is only known at run time", v.line, v.col)
        return v

    def ev(self, node: Optional[ast.AST]) -> V:
        if node is None:
            return V(None)
        self.steps += 1
        t = type(node)
        line = getattr(node, "lineno", 0)
        col = getattr(node, "col_offset", -1) + 1
        if self.steps > MAX_STEPS:
            return unk(f"evaluation budget of {MAX_STEPS:,} steps for this file spent",
                       line, col)
        if t is ast.Constant:
            return V(node.value, "literal", line, col)
        if t is ast.Name:
            val = self.lookup(node.id)
            if val is MISSING:
                if node.id in ("True", "False", "None"):
                    return V({"True": True, "False": False, "None": None}[node.id], "literal", line, col)
                if node.id in BUILTIN_TYPES or node.id in BUILTIN_FUNCS:
                    return V(Dotted("builtins." + node.id), "literal", line, col)
                return unk(f"name `{node.id}` is not defined in this file", line, col)
            if isinstance(val, V):
                return val
            return V(val, "literal", line, col)
        if t is ast.Attribute:
            return self.ev_attribute(node, line, col)
        if t is ast.Call:
            return self.ev_call(node, line, col)
        if t is ast.BinOp:
            a, b = self.ev(node.left), self.ev(node.right)
            if a.known and b.known:
                if isinstance(node.op, ast.Mod) and isinstance(a.value, str):
                    try:
                        args = b.value if isinstance(b.value, tuple) else b.value
                        if isinstance(args, tuple):
                            args = tuple(plain(x) if isinstance(x, V) else x for x in args)
                        return combine([a, b], bounded.binop("mod", a.value, args), line, col,
                                       "string formatting")
                    except bounded.TooLarge as e:
                        return unk(f"`{clip(self.src(node))}` not computed: {e}", line, col)
                    except Exception:  # noqa: BLE001
                        return unk(f"cannot format `{self.src(node)}`", line, col)
                op = BIN.get(type(node.op))
                if op is not None:
                    try:
                        av = [plain(x) for x in a.value] if isinstance(a.value, (list, tuple)) else a.value
                        bv = [plain(x) for x in b.value] if isinstance(b.value, (list, tuple)) else b.value
                        res = op(av, bv)
                    except bounded.TooLarge as e:
                        return unk(f"`{clip(self.src(node))}` not computed: {e}", line, col)
                    except Exception:  # noqa: BLE001
                        return unk(f"cannot compute `{self.src(node)}`", line, col)
                    if res is not UNK:
                        if isinstance(res, list):
                            res = [V(x, "literal", line, col) for x in res]
                        return combine([a, b], res, line, col, f"`{self.src(node)}`")
            bad = a if not a.known else b
            return unk(bad.reason or f"cannot compute `{self.src(node)}`", line, col)
        if t is ast.UnaryOp:
            a = self.runtime(self.ev(node.operand), node.operand)
            if not a.known:
                return a
            try:
                if isinstance(node.op, ast.Not):
                    res = not truthy(a.value)
                elif isinstance(node.op, ast.USub):
                    res = -a.value
                elif isinstance(node.op, ast.UAdd):
                    res = +a.value
                else:
                    res = ~a.value
            except Exception:  # noqa: BLE001
                return unk(f"cannot compute `{self.src(node)}`", line, col)
            return V(res, a.origin, a.line if a.origin != "literal" else line,
                     a.col if a.origin != "literal" else col, a.reason)
        if t is ast.BoolOp:
            vals = []
            for v_node in node.values:
                v = self.runtime(self.ev(v_node), v_node)
                vals.append(v)
                if not v.known:
                    return unk(v.reason or f"`{self.src(node)}` not known", line, col)
                tv = truthy(v.value)
                if isinstance(node.op, ast.And) and not tv:
                    return v
                if isinstance(node.op, ast.Or) and tv:
                    return v
            return vals[-1]
        if t is ast.Compare:
            left = self.ev(node.left)
            vals = [left]
            res = True
            for op, comp in zip(node.ops, node.comparators):
                right = self.ev(comp)
                vals.append(right)
                if type(op) in (ast.In, ast.NotIn) and right.known and \
                        isinstance(right.value, Dotted) and right.value.name == "os.environ" \
                        and left.known and isinstance(left.value, str):
                    # `"GRAD_ACC" in os.environ`: what the launch sets, else not known
                    got = self.env_value(left.value, line, col)
                    if got is None:
                        return unk(f"`{self.src(node)}`: environment variable {left.value} "
                                   f"(set when the job is launched)", line, col)
                    present = got.known or got.default is not None
                    if not got.known and not present and "not set" not in (got.reason or ""):
                        return unk(f"`{self.src(node)}`: {got.reason}", line, col)
                    res = res and (present if type(op) is ast.In else not present)
                    left = right
                    continue
                if not (left.known and right.known):
                    return unk(f"comparison `{self.src(node)}` depends on "
                               f"{(left if not left.known else right).reason}", line, col)
                if type(op) in (ast.In, ast.NotIn) and (isinstance(left.value, Dotted) or
                                                        isinstance(right.value, Dotted)):
                    # membership in a module's object (`x in sys.modules`) is a run-time fact
                    return unk(f"`{self.src(node)}` is only known at run time", line, col)
                blank = next((x for x in (left, right) if isinstance(x.value, str)
                              and reason_of(x.value)), None)
                if blank is not None:
                    # a launch word the shell reading could not know (`--arch "$1"`):
                    # what it equals is not known either
                    return unk(f"comparison `{self.src(node)}`: {readable(blank.value)!r} is "
                               f"not known statically ({reason_of(blank.value)})", line, col)
                if type(op) not in (ast.Is, ast.IsNot) and (
                        isinstance(left.value, Obj) or isinstance(right.value, Obj)):
                    # an object built at run time (`torch.device(...).type`) equals no
                    # literal the reading knows of
                    return unk(f"comparison `{self.src(node)}`: "
                               f"`{self.src(node.left if isinstance(left.value, Obj) else comp)}` "
                               f"is only known at run time", line, col)
                try:
                    lv = cmpval(left.value)
                    rv = cmpval(right.value)
                    if not _CMP[type(op)](lv, rv):
                        res = False
                except Exception:  # noqa: BLE001
                    return unk(f"cannot compare `{self.src(node)}`", line, col)
                left = right
            return combine(vals, res, line, col, f"`{self.src(node)}`")
        if t is ast.IfExp:
            test = self.runtime(self.ev(node.test), node.test)
            if test.known:
                return self.ev(node.body if truthy(test.value) else node.orelse)
            a, b = self.ev(node.body), self.ev(node.orelse)
            if a.known and b.known and same(a.value, b.value):
                return a
            v = unk(f"depends on `{self.src(node.test)}` ({test.reason}): {show(a)} if true, "
                    f"{show(b)} otherwise", line, col)
            v.default = {"if_true": plain(a), "if_false": plain(b)}
            return v
        if t is ast.Dict:
            out = KDict()
            for k, v_node in zip(node.keys, node.values):
                if k is None:
                    sub = self.ev(v_node)
                    if sub.known and isinstance(sub.value, dict):
                        out.update(sub.value)
                    elif sub.known and isinstance(sub.value, DCInst):
                        out.update(sub.value.fields)
                    else:
                        out["\0unknown"] = sub
                    continue
                kv = self.ev(k)
                if not kv.known or not hashable(kv.value):
                    continue
                out[kv.value] = self.ev(v_node)
                if kv.origin != "literal":   # where the key is written, with the key's origin
                    out.key_v[kv.value] = V(kv.value, kv.origin, k.lineno, k.col_offset + 1,
                                            kv.reason, kv.default)
            return V(out, "literal", line, col)
        if t in (ast.List, ast.Tuple, ast.Set):
            items = []
            for e in node.elts:
                if isinstance(e, ast.Starred):
                    sub = self.ev(e.value)
                    if sub.known and isinstance(sub.value, (list, tuple)):
                        items.extend(sub.value)
                        continue
                    return unk(f"starred element `{self.src(e)}`", line, col)
                items.append(self.ev(e))
            return V(tuple(items) if t is ast.Tuple else items, "literal", line, col)
        if t is ast.JoinedStr:
            parts = []
            for p in node.values:
                if isinstance(p, ast.Constant):
                    parts.append(str(p.value))
                elif isinstance(p, ast.FormattedValue):
                    v = self.ev(p.value)
                    if not v.known:
                        return unk(f"f-string part `{self.src(p.value)}`: {v.reason}", line, col)
                    try:
                        spec = ""
                        if p.format_spec is not None:
                            sv = self.ev(p.format_spec)
                            spec = sv.value if sv.known else ""
                        bounded.check_spec(str(spec))
                        pv = plain(v)
                        pv = repr(pv) if p.conversion == ord("r") else pv
                        parts.append(format(pv, spec))
                    except bounded.TooLarge as e:
                        return unk(f"f-string part `{clip(self.src(p.value))}` not computed: {e}",
                                   line, col)
                    except Exception:  # noqa: BLE001
                        return unk(f"cannot format `{self.src(p.value)}`", line, col)
                    vals = [v]
                else:
                    return unk("f-string", line, col)
            joined = "".join(parts)
            if len(joined) > bounded.MAX_ITEMS:
                return unk(f"an f-string of {len(joined):,} characters", line, col)
            return V(joined, "literal", line, col)
        if t is ast.Subscript:
            obj = self.ev(node.value)
            if type(node.slice) is ast.Slice:
                # `sys.argv[1:]`, `layers[:n]`: a slice of a known list or string
                bounds = [self.ev(b) if b is not None else V(None) for b in
                          (node.slice.lower, node.slice.upper, node.slice.step)]
                if obj.known and isinstance(obj.value, (list, tuple, str)) and all(
                        b.known and (b.value is None or (isinstance(b.value, int) and
                                                         not isinstance(b.value, bool)))
                        for b in bounds) and bounds[2].value != 0:
                    return V(obj.value[slice(*(b.value for b in bounds))], obj.origin,
                             obj.line, obj.col, obj.reason, None, obj.path)
                bad = obj if not obj.known else next((b for b in bounds if not b.known), None)
                return unk(f"`{self.src(node)}`" + (f": {bad.reason}" if bad is not None else
                                                    " not known statically"), line, col)
            key = self.ev(node.slice)
            if obj.known and isinstance(obj.value, Dotted) and obj.value.name == "os.environ":
                name = key.value if key.known else self.src(node.slice)
                got = self.env_value(name, line, col)
                if got is not None and got.known:
                    return got
                return unk(f"environment variable {name} (set when the job is launched)", line, col)
            if obj.known and key.known:
                try:
                    if isinstance(obj.value, dict):
                        if key.value in obj.value:
                            got = as_v(obj.value[key.value], obj, line, col)
                            if key.origin != "literal" and got.known:
                                return V(got.value, key.origin, key.line, key.col,
                                         key.reason, None, key.path)
                            return got
                        return unk(f"key {key.value!r} not in the dict", line, col)
                    if isinstance(obj.value, (list, tuple, str)) and isinstance(key.value, int):
                        return as_v(obj.value[key.value], obj, line, col)
                    if isinstance(obj.value, Dotted) and obj.value.name.endswith(".__dict__") \
                            and isinstance(key.value, str) and key.value.isidentifier():
                        # `torchvision.models.__dict__[args.arch]`: the module's attribute
                        return V(Dotted(obj.value.name[:-len(".__dict__")] + "." + key.value),
                                 key.origin if key.origin != "literal" else "literal",
                                 key.line, key.col, key.reason, None, key.path)
                    if isinstance(obj.value, Dotted) and obj.value.name == "sys.argv":
                        i = key.value
                        if isinstance(i, int) and 1 <= i <= len(self.argv):
                            return V(self.argv[i - 1], "cli", line, col, f"sys.argv[{i}]")
                        return unk(f"sys.argv[{i}] (command-line argument)", line, col)
                except Exception:  # noqa: BLE001
                    pass
            if not obj.known or not key.known:
                bad = obj if not obj.known else key
                return unk(f"`{self.src(node)}`: {bad.reason}", line, col)
            return unk(f"`{self.src(node)}` not known statically", line, col)
        if t is ast.Slice:
            return unk("slice", line, col)
        if t is ast.Lambda:
            return V(FuncVal(node), "literal", line, col)
        if t is ast.NamedExpr:
            v = self.ev(node.value)
            self.assign(node.target, v, node)
            return v
        if t is ast.Starred:
            return self.ev(node.value)
        if t in (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp):
            for g in node.generators:
                self.ev(g.iter)
            return unk(f"comprehension `{self.src(node)[:60]}`", line, col)
        if t is ast.Await:
            return self.ev(node.value)
        return unk(f"`{self.src(node)[:60]}` not evaluated", line, col)

    def env_value(self, name: Any, line: int, col: int, default: Optional[V] = None) -> Optional[V]:
        """An environment variable as the launcher sets it: its value, the `default` of a
        `.get` when the launcher does not set it, or None when the launch does not say."""
        if not isinstance(name, str) or name not in self.env:
            return None
        value, why = self.env[name]
        if value is not None:
            return V(value, "derived", line, col, f"{name}: {why}")
        if default is not None and default.known:
            return V(default.value, "derived", line, col, f"{name} {why}: the default applies")
        return unk(f"environment variable {name} is {why}", line, col)

    def ev_attribute(self, node: ast.Attribute, line: int, col: int) -> V:
        base = self.ev(node.value)
        if not base.known:
            if base.reason and base.reason.startswith("name `"):
                return unk(base.reason, line, col)
            return unk(f"`{self.src(node)}`: {base.reason}", line, col)
        o = base.value
        if isinstance(o, Dotted):
            name = o.name + "." + node.attr
            if name in MATH_CONSTANTS:
                return V(MATH_CONSTANTS[name], "literal", line, col)
            if name == "sys.argv":
                # the script's command line as the launcher gives it
                return V([V(self.path, "cli", line, col)] +
                         [V(a, "cli", line, col, f"{a!r} on the command line") for a in self.argv],
                         "cli", line, col, "the command line")
            return V(Dotted(name), "literal", line, col)
        if isinstance(o, ArgsNS):
            self.arg_reads.setdefault(node.attr, []).append((line, bool(self.choices)))
            if node.attr in o.attrs:
                return o.attrs[node.attr]
            return self.arg_value(node.attr, line, col)
        if isinstance(o, DCInst):
            if node.attr in o.fields:
                return o.fields[node.attr]
            return unk(f"`{self.src(node)}`: no field {node.attr} in {o.cls}", line, col)
        if isinstance(o, Obj):
            if node.attr in o.attrs:
                return o.attrs[node.attr]
            if node.attr in o.kwargs:
                return o.kwargs[node.attr]
            return V(Obj(o.qual + "()." + node.attr, [], {}, line, col), "derived", line, col,
                     f"attribute of {o.short}(...)")
        if isinstance(o, ClassVal):
            f = o.fields.get(node.attr)
            if f is not None and f[1] is not None:
                return self.ev(f[1])
        if isinstance(o, AttrDict) and node.attr in o:
            return as_v(o[node.attr], base, line, col)
        if isinstance(o, str) and node.attr in STR_METHODS:
            return V(BoundStr(o, node.attr, base), "literal", line, col)
        if isinstance(o, dict) and node.attr in ("get", "pop", "setdefault", "items", "keys",
                                                  "values", "update", "copy"):
            return V(BoundDict(o, node.attr, base), "literal", line, col)
        return unk(f"attribute `{self.src(node)}` not known statically", line, col)
