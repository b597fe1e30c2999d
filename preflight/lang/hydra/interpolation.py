"""`${…}` interpolation of a composed config, once everything is merged: absolute and
relative keys, `oc.select`, `oc.env` (known only where the launcher sets the variable), the
arithmetic resolvers apps register under their plain names and `eval` of an arithmetic
expression of numbers (never code). What cannot be resolved is an `Unresolved` with its
reason. Budgets: `MAX_INTERPOLATION_DEPTH` nested references, `MAX_INTERPOLATIONS`
resolutions, and `bounded`'s for arithmetic and text sizes."""

from __future__ import annotations

import ast
import re
from typing import Any, Optional

from preflight.lang import bounded, overrides
from preflight.lang.hydra.values import Composed, Unresolved

MAX_INTERPOLATION_DEPTH = 32
MAX_INTERPOLATIONS = 50_000
#: resolvers whose plain names apps register for plain arithmetic (NeMo: multiply, sum)
ARITHMETIC = {"multiply": "mul", "mul": "mul", "sum": "add", "add": "add", "subtract": "sub",
              "sub": "sub", "divide": "truediv", "div": "truediv", "floordiv": "floordiv",
              "int_div": "floordiv"}


_EXPONENT = re.compile(r"[-+]?(?:\d[\d_]*(?:\.\d*)?|\.\d+)[eE][-+]?\d+")


class _Ctx:
    def __init__(self, cfg: dict, env: Optional[dict[str, Any]]):
        self.cfg, self.env = cfg, env
        self.stack: list[tuple] = []
        self.done: dict[tuple, Any] = {}
        self.count = 0


def resolve_all(out: Composed, env: Optional[dict[str, Any]] = None) -> None:
    """Every `${…}` of a composed config replaced by its value (or an `Unresolved`)."""
    ctx = _Ctx(out.cfg, env)

    def walk(node: Any, p: tuple) -> None:
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for k, v in list(items):
            if isinstance(v, (dict, list)):
                walk(v, p + (k,))
            else:
                node[k] = _value_at(ctx, p + (k,))

    walk(out.cfg, ())


def _raw(ctx: _Ctx, p: tuple) -> Any:
    node: Any = ctx.cfg
    for k in p:
        if isinstance(node, dict) and k in node:
            node = node[k]
        elif isinstance(node, list) and isinstance(k, int) and 0 <= k < len(node):
            node = node[k]
        else:
            raise KeyError(".".join(map(str, p)))
    return node


def _value_at(ctx: _Ctx, p: tuple) -> Any:
    if p in ctx.done:
        return ctx.done[p]
    v = _raw(ctx, p)
    if isinstance(v, str) and _EXPONENT.fullmatch(v):
        r: Any = float(v)            # OmegaConf's YAML reads `1e-6` as a float (YAML 1.1: text)
    elif isinstance(v, str) and v == "???":
        r = Unresolved(f"{'.'.join(map(str, p))}: mandatory value (???) not given", v)
    elif isinstance(v, str) and "${" in v:
        if p in ctx.stack:
            return Unresolved(f"interpolation cycle through {'.'.join(map(str, p))}")
        if len(ctx.stack) >= MAX_INTERPOLATION_DEPTH:
            return Unresolved(f"interpolation nested over {MAX_INTERPOLATION_DEPTH} deep")
        ctx.count += 1
        if ctx.count > MAX_INTERPOLATIONS:
            return Unresolved(f"more than {MAX_INTERPOLATIONS:,} interpolations")
        ctx.stack.append(p)
        try:
            r = _interpolate(ctx, v, p[:-1])
        finally:
            ctx.stack.pop()
        if isinstance(r, Unresolved) and str(r) != v:
            r = Unresolved(r.reason, v)
    else:
        r = v
    ctx.done[p] = r
    return r


def _interpolate(ctx: _Ctx, text: str, here: tuple) -> Any:
    try:
        parts, end = _parse(text, 0, False)
    except (ValueError, IndexError):
        return Unresolved(f"interpolation {text[:80]!r} not understood")
    if end != len(text):
        return Unresolved(f"interpolation {text[:80]!r} not understood")
    vals = [_eval(ctx, x, here) if isinstance(x, tuple) else x for x in parts]
    if len(vals) == 1:
        return vals[0]
    for v in vals:
        if isinstance(v, Unresolved):
            return v
    s = "".join(str(v) if not isinstance(v, bool) else str(v).lower() for v in vals)
    return bounded.check_size(s)


def _parse(s: str, i: int, in_arg: bool) -> tuple[list, int]:
    """Text and `${…}` nodes from s[i:] up to the end (or, in a resolver argument, up to a
    top-level `,` or `}`). A node is ("ref", key) or ("call", name, [args])."""
    parts: list = []
    buf: list[str] = []
    while i < len(s):
        if s.startswith("${", i):
            if buf:
                parts.append("".join(buf))
                buf = []
            node, i = _node(s, i + 2)
            parts.append(node)
            continue
        ch = s[i]
        if in_arg and ch in ",}":
            break
        if in_arg and ch in "'\"" and not buf and not parts:
            j = s.index(ch, i + 1)
            inner, _ = _parse(s[i + 1:j], 0, False)
            parts.extend(inner if inner else [""])
            i = j + 1
            continue
        if ch == "\\" and i + 1 < len(s):
            buf.append(s[i + 1])
            i += 2
            continue
        buf.append(ch)
        i += 1
    if buf:
        parts.append("".join(buf))
    return parts, i


_NAME = re.compile(r"\s*([A-Za-z_][\w.]*)\s*:")
_KEYREF = re.compile(r"\s*(\.*[\w\-]*(?:[.\[][\w\-\]]*)*)\s*\}")


def _node(s: str, i: int) -> tuple[tuple, int]:
    m = _NAME.match(s, i)
    if m and not s.startswith(":", m.end()):
        name, i = m.group(1), m.end()
        args: list = []
        while True:
            parts, i = _parse(s, i, True)
            args.append(parts)
            if s[i] == ",":
                i += 1
                continue
            if s[i] == "}":
                return ("call", name, args), i + 1
            raise ValueError("bad resolver call")
    m = _KEYREF.match(s, i)
    if not m:
        raise ValueError("bad interpolation")
    return ("ref", m.group(1)), m.end()


def _ref_path(key: str, here: tuple) -> tuple:
    if key.startswith("."):
        dots = len(key) - len(key.lstrip("."))
        base = here[:len(here) - (dots - 1)] if dots - 1 <= len(here) else None
        if base is None:
            raise KeyError(key)
        rest = key[dots:]
        return base + (_split_key(rest) if rest else ())
    return _split_key(key)


def _split_key(key: str) -> tuple:
    out: list = []
    for part in re.findall(r"[^.\[\]]+|\[\d+\]", key):
        out.append(int(part[1:-1]) if part.startswith("[") else part)
    return tuple(out)


def _arg(ctx: _Ctx, parts: list, here: tuple) -> Any:
    vals = [_eval(ctx, x, here) if isinstance(x, tuple) else x for x in parts]
    if len(vals) == 1 and not isinstance(parts[0], str):
        return vals[0]
    for v in vals:
        if isinstance(v, Unresolved):
            return v
    text = "".join(str(v) for v in vals).strip()
    return overrides.value_of(text)


def _eval(ctx: _Ctx, node: tuple, here: tuple) -> Any:
    if node[0] == "ref":
        try:
            p = _ref_path(node[1], here)
            return _value_at(ctx, p)
        except KeyError:
            return Unresolved(f"${{{node[1]}}}: no such key")
    _, name, raw_args = node
    if name == "oc.select":
        key = raw_args[0][0] if raw_args and raw_args[0] and isinstance(raw_args[0][0], str) else ""
        try:
            return _value_at(ctx, _ref_path(key.strip(), here))
        except KeyError:
            return _arg(ctx, raw_args[1], here) if len(raw_args) > 1 else None
    args = [_arg(ctx, a, here) for a in raw_args]
    for a in args:
        if isinstance(a, Unresolved):
            return a
    if name in ("oc.env", "env"):
        var = str(args[0]) if args else ""
        if ctx.env is not None and isinstance(ctx.env.get(var), str):
            return ctx.env[var]
        alt = f" (default {args[1]!r} when it is not set)" if len(args) > 1 else ""
        return Unresolved(f"${{oc.env:{var}}}: the environment variable {var} at run time{alt}")
    try:
        if name in ARITHMETIC and len(args) >= 2 and all(_num(a) for a in args):
            acc = args[0]
            for a in args[1:]:
                acc = bounded.binop(ARITHMETIC[name], acc, a)
            return acc
        if name in ("max", "min") and args and all(_num(a) for a in args):
            return max(args) if name == "max" else min(args)
        if name == "int" and len(args) == 1 and _num(args[0]):
            return int(args[0])
        if name == "eval" and len(args) == 1 and isinstance(args[0], (str, int, float)):
            return _arith(str(args[0]))
    except (bounded.TooLarge, ZeroDivisionError, OverflowError, TypeError, ValueError) as e:
        return Unresolved(f"${{{name}:…}}: {e}")
    return Unresolved(f"${{{name}:…}}: a resolver registered by the application, not known statically")


def _num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


_ARITH_OPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "truediv",
              ast.FloorDiv: "floordiv", ast.Mod: "mod", ast.Pow: "pow"}


def _arith(expr: str) -> Any:
    """An arithmetic expression of numbers (`eval` resolvers): computed within the budgets
    of `bounded`; anything but numbers, + - * / // % ** and parentheses is unknown."""
    if len(expr) > 500:
        return Unresolved("eval: expression too long")
    try:
        tree = ast.parse(expr.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError):
        return Unresolved(f"eval: {expr[:60]!r} is not an arithmetic expression")

    def ev(n: ast.AST, depth: int = 0) -> Any:
        if depth > 50:
            raise ValueError("nested too deeply")
        if isinstance(n, ast.Constant) and _num(n.value):
            return n.value
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, (ast.USub, ast.UAdd)):
            v = ev(n.operand, depth + 1)
            return -v if isinstance(n.op, ast.USub) else v
        if isinstance(n, ast.BinOp) and type(n.op) in _ARITH_OPS:
            return bounded.binop(_ARITH_OPS[type(n.op)], ev(n.left, depth + 1), ev(n.right, depth + 1))
        raise ValueError(f"{expr[:60]!r} is not plain arithmetic (only numbers and operators are computed)")

    try:
        return ev(tree.body)
    except (bounded.TooLarge, ZeroDivisionError, OverflowError, TypeError, ValueError) as e:
        return Unresolved(f"eval: {e}")
