"""Hydra / OmegaConf configs, composed without running the app.

A Hydra app names a config folder and a primary config (`@hydra.main(config_path=…,
config_name=…)`, or `--config-path` / `--config-name` on the command line). Composition:

- the **defaults list** of each config, in order: `group: option` (the file
  `group/option.yaml`, merged at the package `group`), `group@pkg: option` (at `pkg`,
  `_global_` for the top), `/group: option` (a group from the top of the folder),
  `optional group: option` (no finding when the file is missing), `override group: option`
  (a new choice for a group chosen elsewhere), `group: null` (nothing), plain config names,
  and `_self_` (where the config's own keys go; at the end when the list does not say);
- **command-line overrides** (`preflight.lang.overrides`): `group=option` chooses a group's
  file, `+group=option` adds one, `~group` removes one; `key=value`, `+key=value`,
  `++key=value` and `~key` set, add and delete values after the merge;
- **interpolation** `${…}` once everything is merged: absolute keys (`${model.hidden}`),
  relative ones (`${.x}`, `${..x}`), `${oc.select:key,default}`, `${oc.env:VAR,default}`
  (known only where the launcher sets VAR — the user's environment is not known), and the
  arithmetic resolvers apps register under their plain names (`multiply`, `sum`, `add`,
  `subtract`, `divide`, `floordiv`, `max`, `min`, `int`) and `eval` of an arithmetic
  expression of numbers (never code: anything else in it is unknown). A reference that
  cannot be resolved, a cycle, a chain past `MAX_INTERPOLATION_DEPTH`, an unknown resolver
  and a mandatory `???` left unset are `Unresolved` values with their reason.

Every value keeps where it was set (`Composed.where`: key path → file:line, or the
override's word on the launch line), so a fact points at the line that decides it.
Budgets: `includes.MAX_FILES` documents, `includes.MAX_TOTAL_BYTES` bytes,
`MAX_DEFAULTS_DEPTH` levels of defaults lists, `MAX_INTERPOLATIONS` resolutions.
"""

from __future__ import annotations

import ast
import os
import posixpath
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from preflight.lang import bounded, overrides
from preflight.lang.includes import Budget, Loaded, load, merge_into, places
from preflight.lang.overrides import LangExample, Override
from preflight.plan import Diagnostic, Source

MAX_DEFAULTS_DEPTH = 12
MAX_INTERPOLATION_DEPTH = 32
MAX_INTERPOLATIONS = 50_000
#: override words of one command line applied (a line is not longer in practice)
MAX_OVERRIDES = 1_000
#: resolvers whose plain names apps register for plain arithmetic (NeMo: multiply, sum)
ARITHMETIC = {"multiply": "mul", "mul": "mul", "sum": "add", "add": "add", "subtract": "sub",
              "sub": "sub", "divide": "truediv", "div": "truediv", "floordiv": "floordiv",
              "int_div": "floordiv"}


class Unresolved(str):
    """A value composition cannot know statically: its text as written (so a reader that
    only knows plain values sees what the file says) and `reason`, why it is not known."""

    reason: str

    def __new__(cls, reason: str, text: str = "") -> "Unresolved":
        obj = super().__new__(cls, text)
        obj.reason = reason
        return obj

    def __repr__(self) -> str:
        return f"Unresolved({self.reason!r})"


def unresolved_reason(value: Any) -> Optional[str]:
    """Why a composed value is not known (None for a known one): what a generic reader of
    the composed document is told."""
    return value.reason if isinstance(value, Unresolved) else None


@dataclass
class Composed:
    """A composed config: its value, where each key path was set, the documents merged (in
    merge order), the group choices, the key paths the command line set, the findings."""

    cfg: dict = field(default_factory=dict)
    where: dict = field(default_factory=dict)
    files: list = field(default_factory=list)
    choices: dict = field(default_factory=dict)
    from_line: set = field(default_factory=set)
    diagnostics: list = field(default_factory=list)

    def src(self, p: tuple) -> Optional[Source]:
        q = tuple(p)
        while q and q not in self.where:
            q = q[:-1]
        return self.where.get(q)

    def get(self, *p: Any) -> Any:
        d: Any = self.cfg
        for k in p:
            if not isinstance(d, dict) or k not in d:
                return None
            d = d[k]
        return d


def _diag(msg: str, src: Optional[Source], severity: str = "warning", code: str = "PF005",
          name: str = "malformed-config") -> Diagnostic:
    return Diagnostic.at(code, msg, src, name=name, severity=severity)


def is_defaults_list(v: Any) -> bool:
    """A Hydra defaults list: a list of `_self_`, names and `group: option` entries (not a
    list of document file names, which `preflight.lang.includes` reads)."""
    if not isinstance(v, list) or not v:
        return False
    ok = False
    for e in v:
        if e == "_self_" or (isinstance(e, dict) and len(e) == 1):
            ok = True
        elif isinstance(e, str):
            if e.lower().endswith((".yaml", ".yml", ".json", ".toml")):
                return False
        else:
            return False
    return ok or all(isinstance(e, str) for e in v)


# --------------------------------------------------------------------------- the defaults list


@dataclass
class _Entry:
    group: Optional[str]        # the group's path from the top of the folder (None: a config)
    option: Any                 # option name (str), list of names, None (nothing), "???"
    package: tuple
    optional: bool
    override: bool
    at: Optional[Source]


def _entries(defaults: list, group: str, package: tuple, ld_where: dict,
             diags: list) -> list[Any]:
    """A config's defaults list as `_Entry`s and the marker "_self_"."""
    out: list[Any] = []
    for i, e in enumerate(defaults):
        at = ld_where.get(("defaults", i))
        if e == "_self_":
            out.append("_self_")
            continue
        if isinstance(e, str):          # a config of this group (`- base`, `- /db/mysql`)
            name, _, pkg = e.partition("@")
            full = _norm(name[1:] if name.startswith("/") else "/".join(x for x in (group, name) if x))
            sub = tuple(x for x in os.path.dirname(name.lstrip("/")).split("/") if x)
            pk = _package(pkg, package) if pkg else \
                (sub if name.startswith("/") else package + sub)
            out.append(_Entry(None, full, pk, False, False, at))
            continue
        if not isinstance(e, dict) or len(e) != 1:
            diags.append(_diag("defaults list entry not understood; skipped", at))
            continue
        (k, v), = e.items()
        k = str(k).strip()
        optional = override = False
        while True:
            if k.startswith("optional "):
                optional, k = True, k[len("optional "):].strip()
            elif k.startswith("override "):
                override, k = True, k[len("override "):].strip()
            else:
                break
        gname, _, pkg = k.partition("@")
        absolute = gname.startswith("/")
        gpath = _norm(gname.lstrip("/") if absolute else "/".join(x for x in (group, gname) if x))
        if pkg:
            pk = _package(pkg, package)
        else:
            pk = (tuple(gpath.split("/")) if absolute else
                  package + tuple(x for x in gname.split("/") if x not in ("", "..", ".")))
        out.append(_Entry(gpath, v, pk, optional, override, at))
    return out


def _norm(path: str) -> str:
    """A group path with `..` and `.` parts resolved (`actor/../optim` → `optim`)."""
    return posixpath.normpath(path).lstrip("/") if path else path


def _package(pkg: str, parent: tuple) -> tuple:
    """`@pkg` of a defaults entry: relative to the containing config's package, `_global_`
    from the top, `_here_` the containing package itself."""
    if pkg.startswith("_global_"):
        rest = pkg[len("_global_"):].lstrip(".")
        return tuple(x for x in rest.split(".") if x)
    if pkg == "_here_":
        return parent
    return parent + tuple(x for x in pkg.split(".") if x)


class _Composer:
    def __init__(self, folder: str, budget: Budget, choices: dict[str, Any],
                 diags: list[Diagnostic]):
        self.folder, self.budget, self.choices, self.diags = folder, budget, choices, diags
        self.cfg: dict = {}
        self.where: dict = {}
        self.files: list[str] = []
        self.chosen: dict[str, Any] = {}
        self.preloaded: dict[str, Any] = {}     # documents the caller already parsed

    def file_of(self, name: str) -> Optional[str]:
        for ext in (".yaml", ".yml"):
            p = os.path.join(self.folder, name + ext) if not name.endswith((".yaml", ".yml")) \
                else os.path.join(self.folder, name)
            if os.path.isfile(p):
                return os.path.normpath(p)
            if name.endswith((".yaml", ".yml")):
                break
        return None

    def config(self, name: str, package: tuple, depth: int, at: Optional[Source],
               optional: bool = False, chain: tuple = ()) -> None:
        """Merge the config `name` (a path from the top of the folder, no extension) and its
        defaults at `package`."""
        if depth > MAX_DEFAULTS_DEPTH:
            self.diags.append(_diag(f"defaults lists nested over {MAX_DEFAULTS_DEPTH} deep; "
                                    f"{name!r} not read", at))
            return
        if name in chain:
            self.diags.append(_diag(f"defaults cycle: {name!r} includes itself; not followed", at))
            return
        path = self.file_of(name)
        if path is None:
            if not optional:
                self.diags.append(_diag(f"config {name!r} not found in {self.folder or '.'}", at,
                                        code="PF006", name="missing-file"))
            return
        ld = self.preloaded.pop(os.path.abspath(path), None) or load(path, self.budget, at)
        self.diags.extend(ld.diagnostics)
        if ld.value is None:
            return
        if not isinstance(ld.value, dict):
            self.diags.append(_diag(f"config {name!r} is not a mapping; not merged",
                                    Source(path=path, line=1, col=1)))
            return
        self.files.append(path)
        own_where = places(ld)
        group = os.path.dirname(name)
        defaults = ld.value.get("defaults")
        items: list[Any] = []
        if isinstance(defaults, list):
            items = _entries(defaults, group, package, own_where, self.diags)
        elif defaults is not None:
            self.diags.append(_diag("`defaults` is not a list; not read", own_where.get(("defaults",))))
        if "_self_" not in items:
            items.append("_self_")
        for it in items:            # `override` entries choose before any group is merged
            if isinstance(it, _Entry) and it.override and it.group is not None:
                self.choices.setdefault(it.group, it.option)
        own = {k: v for k, v in ld.value.items() if k != "defaults"}
        for it in items:
            if it == "_self_":
                self.put(own, own_where, package)
                continue
            if it.override or (it.group or "").split("/")[0] == "hydra":
                continue        # Hydra's own groups (launcher, sweeper, logging) ship with Hydra
            if it.group is None:
                self.config(it.option, it.package, depth + 1, it.at, False, chain + (name,))
                continue
            option = self.choices.get(it.group, it.option)
            self.chosen[it.group] = option
            for opt in (option if isinstance(option, list) else [option]):
                if opt is None:
                    continue
                if opt == "???":
                    self.diags.append(_diag(f"config group {it.group!r} has no option chosen (???)",
                                            it.at, severity="info", code="PF003", name="unresolved-value"))
                    continue
                if not isinstance(opt, str):
                    self.diags.append(_diag(f"option of {it.group!r} is not a name; skipped", it.at))
                    continue
                self.config(f"{it.group}/{opt}", it.package, depth + 1, it.at, it.optional,
                            chain + (name,))

    def put(self, own: dict, own_where: dict, package: tuple) -> None:
        """A config's own keys merged at its package."""
        node = self.cfg
        for k in package:
            if not isinstance(node.get(k), dict):
                node[k] = {}
            node = node[k]
        shifted = {package + p: s for p, s in own_where.items() if p[:1] != ("defaults",)}
        merge_into(node, own, self.where, shifted, package)


def compose(folder: str, name: str, words: Optional[list[str]] = None, *,
            locate: Optional[Callable[[Override], Optional[Source]]] = None,
            env: Optional[dict[str, Any]] = None, values: bool = True,
            loaded: Optional[Loaded] = None) -> Composed:
    """The config `name` of `folder` composed with the override words (`words`, as on the
    launch line; `locate(override)` places each on the line). `env`: what the launcher
    sets in the environment (None: nothing known). `values=False` applies only the group
    choices and deletions of the words (the caller reads the value overrides itself).
    `loaded`: the primary config, when the caller has parsed it already."""
    diags: list[Diagnostic] = []
    budget = Budget()
    ovs = overrides.parse(words or [])[:MAX_OVERRIDES]
    where_of = locate or (lambda o: None)
    groups = _groups(folder) if ovs else set()
    choices: dict[str, Any] = {}
    extra: list[Override] = []
    value_ovs: list[Override] = []
    removed: set[str] = set()
    for o in ovs:
        g = o.key.split("@", 1)[0].replace(".", "/")
        if g in groups and (o.value is None or isinstance(o.value, (str, list))):
            if o.op == "delete":
                removed.add(g)
            elif o.op == "add":
                extra.append(o)
            else:
                choices[g] = o.value
            continue
        value_ovs.append(o)
    c = _Composer(folder, budget, choices, diags)
    for g in removed:
        c.choices[g] = None
    if loaded is not None:
        c.preloaded[os.path.abspath(loaded.path)] = loaded
    c.config(name.removesuffix(".yaml").removesuffix(".yml"), (), 0,
             Source(path=os.path.join(folder, name), line=1, col=1))
    for o in extra:
        g = o.key.split("@", 1)[0].replace(".", "/")
        pkg = _package(o.key.split("@", 1)[1], ()) if "@" in o.key else tuple(g.split("/"))
        for opt in (o.value if isinstance(o.value, list) else [o.value]):
            c.config(f"{g}/{opt}", pkg, 1, where_of(o))
    out = Composed(cfg=c.cfg, where=c.where, files=c.files, choices=dict(c.chosen), diagnostics=diags)
    for o in value_ovs:
        if o.op != "delete" and not values:
            continue
        _apply(out, o, where_of(o))
    resolve_all(out, env)
    return out


def _groups(folder: str) -> set[str]:
    """The config groups of a folder: its sub-folders holding YAML files (bounded walk)."""
    out: set[str] = set()
    seen = 0
    for d, subs, files in os.walk(folder or "."):
        seen += 1
        if seen > 400:
            break
        subs[:] = sorted(s for s in subs if not s.startswith("."))[:64]
        if d != folder and any(f.endswith((".yaml", ".yml")) for f in files):
            out.add(os.path.relpath(d, folder).replace(os.sep, "/"))
        if d.count(os.sep) - folder.count(os.sep) > MAX_DEFAULTS_DEPTH:
            subs[:] = []
    return out


def _apply(out: Composed, o: Override, at: Optional[Source]) -> None:
    """A value override applied to the composed config (a finding where Hydra would stop)."""
    path = tuple(o.key.split("."))
    node: Any = out.cfg
    for k in path[:-1]:
        if not isinstance(node, dict):
            return
        if k not in node:
            if o.op == "set" or o.op == "delete":
                out.diagnostics.append(_diag(f"override {o.key}: no key {o.key!r} in the config "
                                             f"(Hydra needs +{o.key}=… to add one)", at, "warning"))
                return
            node[k] = {}
        node = node[k]
    if not isinstance(node, dict):
        return
    last = path[-1]
    if o.op == "delete":
        node.pop(last, None)
        return
    if o.op == "set" and last not in node:
        out.diagnostics.append(_diag(f"override {o.key}: no key {o.key!r} in the config "
                                     f"(Hydra needs +{o.key}=… to add one)", at, "warning"))
    if o.op == "add" and last in node:
        out.diagnostics.append(_diag(f"override +{o.key}: the config already has {o.key!r} "
                                     f"(Hydra needs ++{o.key}=… to replace it)", at, "warning"))
    node[last] = o.value
    if at is not None:
        for q in [q for q in out.where if q[:len(path)] == path]:
            del out.where[q]
        out.where[path] = at
    out.from_line.add(path)


# --------------------------------------------------------------------------- interpolation


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


# --------------------------------------------------------------------------- the app's folder


_MAIN = re.compile(r"@(?:hydra\.main|hydra_runner|main)\s*\(([^)]*)\)", re.S)
_KW = re.compile(r"(config_path|config_name)\s*=\s*(?:f?['\"]([^'\"]*)['\"]|None)")


def app_config(script_text: str) -> tuple[Optional[str], Optional[str]]:
    """(config_path, config_name) of a Hydra app's `@hydra.main(…)` (NeMo's
    `@hydra_runner(…)`) when written as literals; (None, None) otherwise."""
    m = _MAIN.search(script_text[:200_000])
    if not m:
        return None, None
    kw = {k: v for k, v in _KW.findall(m.group(1))}
    return kw.get("config_path"), kw.get("config_name")


def cli_config(words: list[str]) -> tuple[Optional[str], Optional[str], list[str]]:
    """`--config-path` / `-cp`, `--config-name` / `-cn` of a Hydra command line, and the
    other words (the overrides)."""
    path = name = None
    rest: list[str] = []
    i = 0
    while i < len(words):
        w = words[i]
        for flags, slot in ((("--config-path", "--config_path", "-cp"), "path"),
                            (("--config-name", "--config_name", "-cn"), "name")):
            hit = next((f for f in flags if w == f or w.startswith(f + "=")), None)
            if hit:
                if w == hit and i + 1 < len(words):
                    v = words[i + 1]
                    i += 1
                else:
                    v = w[len(hit) + 1:]
                if slot == "path":
                    path = v
                else:
                    name = v
                break
        else:
            rest.append(w)
        i += 1
    return path, name, rest


# --------------------------------------------------------------------------- examples

_PRIMARY = """\
defaults:
  - model: small
  - optional site: local
  - _self_

trainer:
  devices: 1
  num_nodes: 1
model:
  micro_batch_size: 2
  seq_length: ${.encoder_seq_length}
  global: ${multiply:${trainer.devices},${model.micro_batch_size}}
  home: ${oc.env:DATA_HOME,/data}
  steps: ${eval:'2 ** 10'}
  bad: ${eval:'__import__("os")'}
  loop: ${model.loop}
"""

EXAMPLES = [
    LangExample(title="defaults list, `_self_` last, relative / absolute / arithmetic interpolation, "
                      "`oc.env` unknown, a cycle unknown, `eval` of code unknown",
                run="compose",
                files={"conf/config.yaml": _PRIMARY,
                       "conf/model/small.yaml": "hidden: 512\nencoder_seq_length: 1024\nmicro_batch_size: 8\n"},
                given={"folder": "conf", "name": "config"},
                expect={"model.hidden": (512, "conf/model/small.yaml:1"),
                        "model.micro_batch_size": (2, "conf/config.yaml:10"),
                        "model.seq_length": (1024, "conf/config.yaml:11"),
                        "model.global": (2, "conf/config.yaml:12"),
                        "model.home": (Unresolved, "conf/config.yaml:13"),
                        "model.steps": (1024, "conf/config.yaml:14"),
                        "model.bad": (Unresolved, "conf/config.yaml:15"),
                        "model.loop": (Unresolved, "conf/config.yaml:16")}),
    LangExample(title="command-line overrides: a group choice, a value, an added key, a deletion",
                run="compose",
                files={"conf/config.yaml": _PRIMARY,
                       "conf/model/small.yaml": "hidden: 512\nencoder_seq_length: 1024\n",
                       "conf/model/big.yaml": "hidden: 4096\nencoder_seq_length: 4096\n"},
                given={"folder": "conf", "name": "config",
                       "words": ["model=big", "trainer.devices=8", "+model.lora_rank=16", "~model.home"]},
                expect={"model.hidden": (4096, "conf/model/big.yaml:1"),
                        "trainer.devices": (8, "<command>:1"),
                        "model.lora_rank": (16, "<command>:1"),
                        "model.seq_length": (4096, "conf/config.yaml:11"),
                        "model.global": (16, "conf/config.yaml:12"),
                        "model.home": (None, None)}),
    LangExample(title="`group@package` and `override` in the primary's defaults; a missing option "
                      "is a located finding",
                run="compose",
                files={"conf/ppo.yaml": "defaults:\n  - actor@roles.actor: dp\n  - override actor: fsdp\n"
                                        "  - data: gone\n  - _self_\nroles:\n  actor:\n    lr: 0.1\n",
                       "conf/actor/dp.yaml": "strategy: dp\nlr: 1.0\n",
                       "conf/actor/fsdp.yaml": "strategy: fsdp\nlr: 1.0\n"},
                given={"folder": "conf", "name": "ppo"},
                expect={"roles.actor.strategy": ("fsdp", "conf/actor/fsdp.yaml:1"),
                        "roles.actor.lr": (0.1, "conf/ppo.yaml:8"),
                        "!diagnostics": ["'data/gone' not found"]}),
]
