"""A small static evaluator for Python training scripts.

It interprets the script's syntax tree abstractly — never importing or running it — and
knows just enough Python to follow configuration values: module constants, arithmetic,
string formatting, dict/list literals, function calls inside the file (inlined, with their
arguments bound), `argparse` arguments, `HfArgumentParser`/`TrlParser` dataclasses, library
defaults, `os.environ`, and nanoGPT's `exec(open(configurator).read())` pattern.

Every value is a `V`: the value, how it was known (origin) and where it was written
(line, col). What cannot be known statically is a `V` with value `UNK` and a reason.
Recognising training APIs (optimizers, precision, parallelism…) is `py_patterns`' job;
this module calls `py_patterns.on_call` for every call whose target it could name.

The tree is the standard library's `ast` (C parser, exact positions for free); the libcst
Module for later stages is parsed once by `preflight.extract.python`.
"""

from __future__ import annotations

import ast
import os
from typing import Any, Optional

from preflight.lang import bounded


#: the file whose code is being evaluated, when it is not the analysed file itself
_CUR_PATH: list = [None]


def current_path() -> Optional[str]:
    """The other module being followed into, or None for the analysed file."""
    return _CUR_PATH[0]


class _Unknown:
    __slots__ = ()

    def __repr__(self) -> str:
        return "UNK"


UNK = _Unknown()


class V:
    """A value with provenance. origin: literal | default | derived | cli | config | unknown."""

    __slots__ = ("value", "origin", "line", "col", "reason", "default", "path")

    def __init__(self, value: Any, origin: str = "literal", line: int = 0, col: int = 0,
                 reason: Optional[str] = None, default: Any = None,
                 path: Optional[str] = None) -> None:
        self.value = value
        self.origin = origin
        self.line = line
        self.col = col
        self.reason = reason
        self.default = default
        # None: the file being analysed; a value made while following a call into another
        # module of the repository carries that module's path
        self.path = path if path is not None else _CUR_PATH[0]

    @property
    def known(self) -> bool:
        return self.value is not UNK

    def __repr__(self) -> str:
        return f"V({self.value!r}, {self.origin}, {self.line}:{self.col})"


def _join_dicts(a: "V", b: "V", cond: str, line: int) -> "V":
    """Two branches' versions of one dict: keys they agree on stay, the others are unknown."""
    out = KDict()
    for k in list(a.value) + [k for k in b.value if k not in a.value]:
        va, vb = a.value.get(k, _MISSING), b.value.get(k, _MISSING)
        if va is vb or (isinstance(va, V) and isinstance(vb, V) and va.known and vb.known
                        and _same(va.value, vb.value)):
            out[k] = va
            continue
        sa = _show(va) if isinstance(va, V) else "unset"
        sb = _show(vb) if isinstance(vb, V) else "unset"
        at = va if isinstance(va, V) else vb
        u = V(UNK, "unknown", getattr(at, "line", line), getattr(at, "col", 0),
              f"[{k!r}] depends on `{cond}` (line {line}), not known statically: {sa} if true, "
              f"{sb} otherwise")
        u.default = {"if_true": plain(va) if isinstance(va, V) else None,
                     "if_false": plain(vb) if isinstance(vb, V) else None}
        out[k] = u
    for src in (a.value, b.value):
        for k, kv in getattr(src, "key_v", {}).items():
            out.key_v.setdefault(k, kv)
    return V(out, a.origin, a.line, a.col, a.reason, a.default, a.path)


def unk(reason: str, line: int = 0, col: int = 0, default: Any = None) -> V:
    return V(UNK, "unknown", line, col, reason, default)


class KDict(dict):
    """A dict literal's value that remembers where each key's value came from (a key may
    be a variable: `{dtype: {...}}` with `dtype` a parameter default)."""

    __slots__ = ("key_v",)

    def __init__(self) -> None:
        super().__init__()
        self.key_v: dict = {}


class Dotted:
    """A reference to a module attribute by qualified name: `torch.bfloat16`."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Dotted) and other.name == self.name

    def __hash__(self) -> int:
        return hash(self.name)

    def __repr__(self) -> str:
        return f"<{self.name}>"


class Obj:
    """The result of a call the evaluator cannot run: what was called, with what."""

    __slots__ = ("qual", "args", "kwargs", "line", "col", "attrs")

    def __init__(self, qual: str, args: list, kwargs: dict, line: int, col: int) -> None:
        self.qual = qual
        self.args = args
        self.kwargs = kwargs
        self.line = line
        self.col = col
        self.attrs: dict[str, V] = {}

    @property
    def short(self) -> str:
        return self.qual.rsplit(".", 1)[-1]

    def __repr__(self) -> str:
        return f"Obj({self.qual})"


class FuncVal:
    __slots__ = ("node", "owner", "closure")

    def __init__(self, node: ast.AST, owner: Optional[str] = None,
                 closure: Optional[dict] = None) -> None:
        self.node = node
        self.owner = owner
        #: the frame of the function it is defined in (its free names are read there, with
        #: the values they have when it runs)
        self.closure = closure


class ClassVal:
    __slots__ = ("node", "name", "bases", "fields", "is_dataclass")

    def __init__(self, node: ast.ClassDef, bases: list[str], is_dataclass: bool) -> None:
        self.node = node
        self.name = node.name
        self.bases = bases
        self.fields: dict[str, tuple[ast.AST, Optional[ast.AST], Optional[ast.AST]]] = {}
        self.is_dataclass = is_dataclass


class ArgsNS:
    """`args` from `parser.parse_args()`: attributes come from the file's add_argument calls."""

    __slots__ = ("attrs",)

    def __init__(self) -> None:
        self.attrs: dict[str, V] = {}


class DCInst:
    """An instance of an arguments dataclass (HfArgumentParser / TrlParser / direct call)."""

    __slots__ = ("cls", "lib", "fields", "line", "col")

    def __init__(self, cls: str, lib: Optional[str], fields: dict[str, V], line: int,
                 col: int) -> None:
        self.cls = cls
        self.lib = lib          # the library dataclass it is or derives from, if any
        self.fields = fields
        self.line = line
        self.col = col


def plain(v: Any, depth: int = 0) -> Any:
    """A JSON-able Python value from a V / container of Vs (unknown → {"unknown": reason})."""
    if depth > 12:
        return {"unknown": "nested too deep"}
    if isinstance(v, V):
        if v.value is UNK:
            out: dict[str, Any] = {"unknown": v.reason or "not known statically"}
            if v.default is not None:
                out["default"] = plain(v.default, depth + 1)
            return out
        return plain(v.value, depth + 1)
    if isinstance(v, dict):
        return {str(plain(k, depth + 1)): plain(x, depth + 1) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [plain(x, depth + 1) for x in v]
    if isinstance(v, Dotted):
        return v.name
    if isinstance(v, Obj):
        out = {"call": v.short}
        if v.args:
            out["args"] = [plain(a, depth + 1) for a in v.args]
        if v.kwargs:
            out["kwargs"] = {k: plain(a, depth + 1) for k, a in v.kwargs.items()}
        return out
    if isinstance(v, (ArgsNS, FuncVal, ClassVal)):
        return {"unknown": type(v).__name__}
    if isinstance(v, DCInst):
        return {k: plain(x, depth + 1) for k, x in v.fields.items()}
    if isinstance(v, (str, int, float, bool)) or v is None:
        return v
    return {"unknown": type(v).__name__}


# --------------------------------------------------------------------------- CLI args

def _convert(text: str, typ: Optional[str]) -> Any:
    if typ == "int":
        try:
            return int(text)
        except ValueError:
            return int(float(text))
    if typ == "float":
        return float(text)
    if typ == "bool":
        low = text.lower()
        if low in ("true", "1", "yes", "y", "t"):
            return True
        if low in ("false", "0", "no", "n", "f"):
            return False
        raise ValueError(text)
    if typ == "str":
        return text
    # no type: argparse gives str; nanoGPT's configurator uses literal_eval
    return text


def literal_or_str(text: str) -> Any:
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return text


def parse_cli(args: list[str]) -> tuple[dict[str, list[Optional[str]]], list[str]]:
    """`--a 1 --b=2 --flag pos` → ({'a': ['1'], 'b': ['2'], 'flag': [None]}, ['pos'])

    A flag's value is the next token unless that starts with `--`. Values are kept as
    strings and converted per the argument's declared type when looked up."""
    opts: dict[str, list[Optional[str]]] = {}
    pos: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        if a.startswith("--") and len(a) > 2:
            body = a[2:]
            if "=" in body:
                k, val = body.split("=", 1)
                opts.setdefault(k, []).append(val)
            elif i + 1 < len(args) and not (args[i + 1].startswith("--") and len(args[i + 1]) > 2):
                opts.setdefault(body, []).append(args[i + 1])
                i += 1
            else:
                opts.setdefault(body, []).append(None)
        elif a.startswith("-") and len(a) == 2 and not a[1].isdigit():
            if i + 1 < len(args) and not args[i + 1].startswith("-"):
                opts.setdefault(a, []).append(args[i + 1])
                i += 1
            else:
                opts.setdefault(a, []).append(None)
        else:
            pos.append(a)
        i += 1
    return opts, pos


def _norm(opt: str) -> str:
    return opt.lstrip("-").replace("-", "_")


# --------------------------------------------------------------------------- evaluator

_BUILTIN_TYPES = {"int": "int", "float": "float", "str": "str", "bool": "bool"}
_BIN_NAMES = {
    ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "truediv",
    ast.FloorDiv: "floordiv", ast.Mod: "mod", ast.Pow: "pow", ast.LShift: "lshift",
    ast.RShift: "rshift", ast.BitOr: "or", ast.BitAnd: "and", ast.BitXor: "xor",
}
# every operator goes through the budgets of `bounded.binop` (a TooLarge is an unknown value)
_BIN = {t: (lambda name: lambda a, b: bounded.binop(name, a, b))(name)
        for t, name in _BIN_NAMES.items()}
_CMP = {
    ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b, ast.Lt: lambda a, b: a < b,
    ast.LtE: lambda a, b: a <= b, ast.Gt: lambda a, b: a > b, ast.GtE: lambda a, b: a >= b,
    ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b,
    ast.Is: lambda a, b: a is b, ast.IsNot: lambda a, b: a is not b,
}
_MAX_DEPTH = 12
_MAX_STEPS = 200_000


class _Return(Exception):
    pass


def _combine(vals: list[V], value: Any, line: int, col: int, what: str) -> V:
    """Origin of a value computed from others: all literal → literal, else derived."""
    for v in vals:
        if v.value is UNK:
            return V(UNK, "unknown", line, col, v.reason, None)
    origins = {v.origin for v in vals}
    if origins <= {"literal"}:
        return V(value, "literal", line, col)
    inputs = ", ".join(f"{plain(v)!r} ({v.origin}, line {v.line})" for v in vals
                       if v.origin != "literal")
    return V(value, "derived", line, col, f"{what} from {inputs}")


class Evaluator:
    """Abstract interpretation of one file. `patterns` receives the calls it recognises."""

    def __init__(self, path: str, tree: ast.Module, args: Optional[list[str]], patterns: Any,
                 read_file: Any = None, lines: Optional[list[str]] = None,
                 env: Optional[dict] = None) -> None:
        self.path = path
        #: the launcher's environment: name → (value or None when not set, reason)
        self.env: dict = dict(env or {})
        #: modules of the repository followed into (path → _Module or None), and the budget
        self.modules: dict[str, Any] = {}
        self.followed = 0
        self.tree = tree
        self.argv = list(args or [])
        self.cli_opts, self.cli_pos = parse_cli(self.argv)
        self.used_cli: set[str] = set()
        self.patterns = patterns
        self.read_file = read_file
        self.globals: dict[str, Any] = {}
        self.frames: list[dict[str, Any]] = []
        self.depth = 0
        self.steps = 0
        self.visited: set[int] = set()
        self.functions: list[FuncVal] = []
        self.classes: dict[str, ClassVal] = {}
        self.argparse: dict[str, dict] = {}
        self.argparse_order: list[str] = []
        self.references: list[str] = []
        self.notes: list[tuple[int, int, str]] = []    # unresolved things worth a PF003
        self.cond_depth = 0                              # > 0 inside an unknown-condition branch
        self.conds: list[str] = []                       # the unknown `if` tests around the statement
        self.cur_stmt: Optional[ast.stmt] = None
        self.unbound = False                              # walking never-called functions
        self.local_config: dict[str, V] = {}             # config-like names bound in functions
        #: the lines of the file being evaluated (for `src`); each evaluator has its own
        self.lines: list[str] = lines if lines is not None else []
        self._prescan()

    def src(self, node: ast.AST) -> str:
        """The source text of a node of this file (first line only when it spans several)."""
        return source_text(self.lines, node)

    def runtime(self, v: V, node: ast.AST) -> V:
        """A call result the evaluator could not run is not a truth value it knows."""
        if v.known and isinstance(v.value, Obj):
            return unk(f"`{self.src(node)}` is only known at run time", v.line, v.col)
        return v

    # ----------------------------------------------------------------- prescan
    def _prescan(self) -> None:
        """Collect add_argument calls and classes anywhere in the file (order-independent)."""
        if any("add_argument" in line for line in self.lines):
            # statement level only (`parser.add_argument(...)` is a statement): a walk of
            # every expression node would cost a quarter of the analysis
            for st in _statements(self.tree.body):
                if type(st) is ast.Expr and type(st.value) is ast.Call:
                    f = st.value.func
                    if type(f) is ast.Attribute and f.attr == "add_argument":
                        self._register_argument(st.value)
        # classes: module level and one level down (inside `if`/`try` blocks)
        for st in self.tree.body:
            if isinstance(st, ast.ClassDef):
                self._register_class(st)
            elif isinstance(st, (ast.If, ast.Try)):
                for sub in st.body:
                    if isinstance(sub, ast.ClassDef):
                        self._register_class(sub)

    def _register_argument(self, node: ast.Call) -> None:
        opts = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        if not opts:
            return
        kw = {k.arg: k.value for k in node.keywords if k.arg}
        longs = [o for o in opts if o.startswith("--")]
        if "dest" in kw and isinstance(kw["dest"], ast.Constant):
            dest = str(kw["dest"].value)
        elif longs:
            dest = _norm(longs[0])
        elif opts[0].startswith("-"):
            dest = _norm(opts[0])
        else:
            dest = opts[0]
        action = kw.get("action")
        action = action.value if isinstance(action, ast.Constant) else None
        typ = None
        t = kw.get("type")
        if isinstance(t, ast.Name):
            typ = _BUILTIN_TYPES.get(t.id, t.id)
        elif isinstance(t, ast.Attribute):
            typ = t.attr
        if dest not in self.argparse:
            self.argparse_order.append(dest)
        self.argparse[dest] = {"opts": opts, "kw": kw, "action": action, "type": typ,
                               "line": node.lineno, "col": node.col_offset + 1, "node": node}

    def _register_class(self, node: ast.ClassDef) -> None:
        bases = [self._dotted_text(b) for b in node.bases]
        deco = [self._dotted_text(d.func if isinstance(d, ast.Call) else d) for d in node.decorator_list]
        is_dc = any(d.endswith("dataclass") for d in deco if d)
        cv = ClassVal(node, [b for b in bases if b], is_dc)
        for st in node.body:
            if isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name):
                cv.fields[st.target.id] = (st, st.value, st.annotation)
            elif isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name):
                cv.fields[st.targets[0].id] = (st, st.value, None)
        self.classes[node.name] = cv

    @staticmethod
    def _dotted_text(node: ast.AST) -> str:
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name):
            parts.append(node.id)
            return ".".join(reversed(parts))
        return ""

    # ----------------------------------------------------------------- scopes
    def lookup(self, name: str) -> Any:
        if self.frames:
            f: Optional[dict] = self.frames[-1]
            hops = 0
            while f is not None and hops < 8:
                if name in f:
                    return f[name]
                f, hops = f.get("\0closure"), hops + 1
        return self.globals.get(name, _MISSING)

    def bind(self, name: str, val: Any) -> None:
        if self.frames:
            self.frames[-1][name] = val
            if not self.unbound and isinstance(val, V) and _CONFIG_NAME.match(name):
                self.local_config[name] = val
        else:
            self.globals[name] = val

    def scope(self) -> dict[str, Any]:
        return self.frames[-1] if self.frames else self.globals

    # ----------------------------------------------------------------- run
    def run(self) -> None:
        self.exec_block(self.tree.body)
        # functions and methods never called from the top level: walk them once so their
        # training-API calls are still seen (parameters unknown)
        i = 0
        self.unbound = True
        self.patterns.unbound = True
        while i < len(self.functions):
            fv = self.functions[i]
            i += 1
            if id(fv.node) in self.visited:
                continue
            self.call_function(fv, [], {}, fv.node.lineno, fv.node.col_offset + 1, unbound=True)
        self.unbound = False
        self.patterns.unbound = False

    def exec_block(self, body: list[ast.stmt]) -> None:
        for st in body:
            self.steps += 1
            if self.steps > _MAX_STEPS:
                return
            self.cur_stmt = st
            try:
                self.exec_stmt(st)
            except _Return:
                raise
            except (RecursionError, MemoryError, OverflowError, ValueError, TypeError,
                    ZeroDivisionError, AttributeError, KeyError, IndexError):
                continue

    def exec_stmt(self, st: ast.stmt) -> None:
        t = type(st)
        if t is ast.Expr:
            self.ev(st.value)
        elif t is ast.Assign:
            val = self.ev(st.value)
            for tgt in st.targets:
                self.assign(tgt, val, st)
        elif t is ast.AnnAssign:
            if st.value is not None:
                self.assign(st.target, self.ev(st.value), st)
        elif t is ast.AugAssign:
            self.aug_assign(st)
        elif t in (ast.FunctionDef, ast.AsyncFunctionDef):
            fv = FuncVal(st, closure=self.frames[-1] if self.frames else None)
            self.bind(st.name, fv)
            if _CUR_PATH[0] is None:
                # the analysed file's own functions are walked even when never called; those
                # of a module followed into run only when called (walked later they would
                # be read against this file's lines and path)
                self.functions.append(fv)
        elif t is ast.ClassDef:
            cv = self.classes.get(st.name)
            if cv is not None:
                self.bind(st.name, cv)
                for sub in st.body:
                    if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        self.functions.append(FuncVal(sub, owner=st.name))
        elif t is ast.If:
            self.exec_if(st)
        elif t in (ast.For, ast.AsyncFor):
            self.assign(st.target, unk("loop variable", st.lineno, st.col_offset + 1), st)
            self.ev(st.iter)
            self.exec_branch(st.body)
            self.exec_branch(st.orelse)
        elif t is ast.While:
            self.ev(st.test)
            self.exec_branch(st.body)
            self.exec_branch(st.orelse)
        elif t in (ast.With, ast.AsyncWith):
            for item in st.items:
                self.ev(item.context_expr)
                if item.optional_vars is not None:
                    self.assign(item.optional_vars, unk("context manager value"), st)
            self.exec_block(st.body)
        elif t is ast.Try or t.__name__ == "TryStar":
            if not st.handlers:
                self.exec_block(st.body)
                self.exec_block(st.orelse)
            else:
                # whether the body raises is not known: the body (with its `else`) and each
                # handler are alternatives — `try: import flash_attn; a = "flash" except
                # ImportError: a = "sdpa"` leaves `a` unknown with both values, never the
                # handler's value as if it had run
                # (a handler that re-raises never reaches the code after the `try`)
                hs = [h for h in st.handlers if not (h.body and isinstance(h.body[-1], ast.Raise))]
                names = [(self.src(h.type) if h.type is not None else "an exception") for h in hs]
                if not hs:
                    self.exec_block(st.body)
                    self.exec_block(st.orelse)
                else:
                    self.join_branches([st.body + st.orelse] + [h.body for h in hs],
                                       f"whether the `try` at line {st.lineno} raises "
                                       f"{' / '.join(names)}", st.lineno,
                                       ["if it does not"] + [f"on {n}" for n in names])
            self.exec_block(st.finalbody)
        elif t is ast.Return:
            val = self.ev(st.value) if st.value is not None else V(None, "literal", st.lineno)
            if self.frames:
                self.frames[-1]["\0return"] = val
                if self.cond_depth == self.frames[-1].get("\0cond", 0):
                    raise _Return()
        elif t is ast.Import:
            for a in st.names:
                if a.asname:
                    self.bind(a.asname, Dotted(a.name))
                else:
                    top = a.name.split(".")[0]
                    self.bind(top, Dotted(top))
        elif t is ast.ImportFrom:
            mod = ("." * st.level) + (st.module or "")
            for a in st.names:
                if a.name == "*":
                    continue
                self.bind(a.asname or a.name, Dotted(f"{mod}.{a.name}" if mod else a.name))
        elif t is ast.Match:
            subject = self.ev(st.subject)
            chosen = _match_case(subject, st.cases)
            if chosen is not None:
                self.exec_block(chosen.body)
            else:
                self.join_branches([c.body for c in st.cases]
                                   + ([[]] if not _has_wildcard(st.cases) else []),
                                   f"match {self.src(st.subject)}", st.lineno,
                                   [f"case {self.src(c.pattern)}" for c in st.cases]
                                   + (["no case"] if not _has_wildcard(st.cases) else []))

    def exec_branch(self, body: list[ast.stmt], cond: str = "") -> None:
        self.cond_depth += 1
        # `if __name__ == "__main__":` guards the entry point: the script runs it
        cond = "" if "__name__" in cond else cond
        if cond:
            self.conds.append(cond)
        try:
            self.exec_block(body)
        finally:
            self.cond_depth -= 1
            if cond:
                self.conds.pop()

    def exec_if(self, st: ast.If) -> None:
        test = self.runtime(self.ev(st.test), st.test)
        if test.known:
            try:
                truth = bool(test.value) if not isinstance(test.value, (Obj, Dotted, ArgsNS, DCInst)) else True
            except Exception:  # noqa: BLE001 - a value whose truth cannot be taken
                truth = None
            if truth is not None:
                self.exec_block(st.body if truth else st.orelse)
                return
        # unknown condition: run both branches on copies and join what they assign
        self.join_branches([st.body, st.orelse], self.src(st.test), st.lineno)

    def join_branches(self, branches: list[list[ast.stmt]], cond: str, line: int,
                      labels: Optional[list[str]] = None) -> None:
        """Run alternative branches (which one runs is not known statically) each from
        the same state, then join: a name they leave equal keeps its value; one they set
        differently becomes unknown, its reason listing every alternative. Two branches
        of an `if` keep the `{"if_true", "if_false"}` alternatives."""
        if len(branches) == 2 and labels is None:
            self._join_if(branches[0], branches[1], cond, line)
            return
        labels = labels or [f"branch {i + 1}" for i in range(len(branches))]
        scope = self.scope()
        before = dict(scope)
        afters: list[dict] = []
        for body in branches:
            scope.clear()
            scope.update(before)
            self._fresh_dicts(scope, before)
            self.exec_branch(body, cond)
            afters.append(dict(scope))
        scope.clear()
        scope.update(before)
        names: list = []
        for a in afters:
            names += [n for n in a if n not in names]
        for name in names:
            vals = [a.get(name, before.get(name, _MISSING)) for a in afters]
            first = vals[0]
            if all(v is first for v in vals):
                scope[name] = first
                continue
            # a branch that leaves the name unset cannot be the one taken when it is used
            present = [(v, lab) for v, lab in zip(vals, labels) if v is not _MISSING]
            vs = [v for v, _ in present]
            if not all(isinstance(v, V) for v in vs):
                scope[name] = vs[0]
                continue
            if all(v.known for v in vs) and all(_same(v.value, vs[0].value) for v in vs):
                scope[name] = vs[0]
                continue
            shown = ", ".join(f"{_show(v)} {lab}" for v, lab in present)
            at = next((v for v in vs if v.line), vs[0])
            where = "" if f"line {line}" in cond else f" (line {line})"
            u = V(UNK, "unknown", at.line, at.col,
                  f"depends on {cond}{where}, not known statically: {shown}")
            u.default = {"alternatives": [plain(v) for v in vs]}
            scope[name] = u

    def _fresh_dicts(self, scope: dict, before: dict) -> None:
        """Dicts are written in place (`kw["x"] = …`): each branch writes its own copy."""
        for n, v in before.items():
            if isinstance(v, V) and v.known and type(v.value) in (dict, KDict):
                c = KDict()
                c.update(v.value)
                c.key_v.update(getattr(v.value, "key_v", {}))
                scope[n] = V(c, v.origin, v.line, v.col, v.reason, v.default, v.path)

    def _join_if(self, body: list[ast.stmt], orelse: list[ast.stmt], cond: str,
                 lineno: int) -> None:
        scope = self.scope()
        before = dict(scope)

        def fresh() -> None:
            # dicts are written in place (`kw["x"] = …`): each branch writes its own copy
            for n, v in before.items():
                if isinstance(v, V) and v.known and type(v.value) in (dict, KDict):
                    c = KDict()
                    c.update(v.value)
                    c.key_v.update(getattr(v.value, "key_v", {}))
                    scope[n] = V(c, v.origin, v.line, v.col, v.reason, v.default, v.path)
        fresh()
        self.exec_branch(body, f"`{cond}` is true (line {lineno})")
        after_body = dict(scope)
        scope.clear()
        scope.update(before)
        fresh()
        self.exec_branch(orelse, f"`{cond}` is false (line {lineno})")
        after_else = dict(scope)
        for name in set(after_body) | set(after_else):
            a = after_body.get(name, before.get(name, _MISSING))
            b = after_else.get(name, before.get(name, _MISSING))
            if a is b:
                scope[name] = a
                continue
            if isinstance(a, V) and isinstance(b, V) and a.known and b.known and \
                    isinstance(a.value, dict) and isinstance(b.value, dict):
                scope[name] = _join_dicts(a, b, cond, lineno)
                continue
            if isinstance(a, V) and isinstance(b, V):
                if a.known and b.known and _same(a.value, b.value):
                    scope[name] = a
                    continue
                reason = (f"depends on `{cond}` (line {lineno}), not known statically: "
                          f"{_show(a)} if true, {_show(b)} otherwise")
                default = b.value if b.known else None
                scope[name] = V(UNK, "unknown", a.line or b.line, a.col or b.col, reason, default)
                scope[name].default = {"if_true": plain(a), "if_false": plain(b)}
            else:
                scope[name] = a if a is not _MISSING else b

    def assign(self, tgt: ast.AST, val: Any, st: ast.AST) -> None:
        t = type(tgt)
        if t is ast.Name:
            self.bind(tgt.id, val)
        elif t in (ast.Tuple, ast.List):
            items = None
            if isinstance(val, V) and isinstance(val.value, (tuple, list)) and len(val.value) == len(tgt.elts):
                items = list(val.value)
            for i, e in enumerate(tgt.elts):
                if isinstance(e, ast.Starred):
                    self.assign(e.value, unk("starred assignment"), st)
                    continue
                item = items[i] if items is not None else unk(f"unpacking of `{self.src(st)}`",
                                                                 tgt.lineno, tgt.col_offset + 1)
                if not isinstance(item, (V, FuncVal, ClassVal)):
                    item = V(item, val.origin if isinstance(val, V) else "derived",
                             getattr(val, "line", 0), getattr(val, "col", 0))
                self.assign(e, item, st)
        elif t is ast.Attribute:
            obj = self.ev(tgt.value)
            if isinstance(obj, V):
                o = obj.value
                if isinstance(o, DCInst):
                    o.fields[tgt.attr] = val
                    self.patterns.on_field_set(self, o, tgt.attr, val, tgt)
                elif isinstance(o, (ArgsNS, Obj)):
                    o.attrs[tgt.attr] = val
        elif t is ast.Subscript:
            obj = self.ev(tgt.value)
            key = self.ev(tgt.slice)
            if isinstance(obj, V) and isinstance(obj.value, dict) and key.known:
                try:
                    obj.value[key.value] = val
                except TypeError:
                    pass

    def aug_assign(self, st: ast.AugAssign) -> None:
        if not isinstance(st.target, ast.Name):
            return
        cur = self.lookup(st.target.id)
        rhs = self.ev(st.value)
        if not isinstance(cur, V):
            return
        op = _BIN.get(type(st.op))
        line, col = st.lineno, st.col_offset + 1
        if cur.known and rhs.known and op is not None:
            try:
                res = op(cur.value, rhs.value)
            except bounded.TooLarge as e:
                self.bind(st.target.id, unk(f"`{_clip(self.src(st))}` not computed: {e}", line, col))
                return
            except Exception:  # noqa: BLE001
                res = UNK
            if res is not UNK:
                v = _combine([cur, rhs], res, line, col, f"`{self.src(st)}`")
                if v.origin == "literal":
                    v = V(res, "derived", line, col,
                          f"`{self.src(st)}` applied to {plain(cur)!r} (line {cur.line})")
                self.bind(st.target.id, v)
                return
        if cur.known and not rhs.known:
            reason = (f"`{self.src(st)}` (line {line}): {plain(cur)!r} (line {cur.line}) "
                      f"combined with {rhs.reason or 'an unknown value'}")
            v = V(UNK, "unknown", line, col, reason, cur.value)
            v.default = cur.value
            self.bind(st.target.id, v)
            self.patterns.on_pending(self, st.target.id, cur, rhs, st)
            return
        self.bind(st.target.id, V(UNK, "unknown", line, col, cur.reason or rhs.reason))

    # ----------------------------------------------------------------- expressions
    def ev(self, node: Optional[ast.AST]) -> V:
        if node is None:
            return V(None)
        self.steps += 1
        t = type(node)
        line = getattr(node, "lineno", 0)
        col = getattr(node, "col_offset", -1) + 1
        if self.steps > _MAX_STEPS:
            return unk(f"evaluation budget of {_MAX_STEPS:,} steps for this file spent",
                       line, col)
        if t is ast.Constant:
            return V(node.value, "literal", line, col)
        if t is ast.Name:
            val = self.lookup(node.id)
            if val is _MISSING:
                if node.id in ("True", "False", "None"):
                    return V({"True": True, "False": False, "None": None}[node.id], "literal", line, col)
                if node.id in _BUILTIN_TYPES or node.id in _BUILTIN_FUNCS:
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
                        return _combine([a, b], bounded.binop("mod", a.value, args), line, col,
                                        "string formatting")
                    except bounded.TooLarge as e:
                        return unk(f"`{_clip(self.src(node))}` not computed: {e}", line, col)
                    except Exception:  # noqa: BLE001
                        return unk(f"cannot format `{self.src(node)}`", line, col)
                op = _BIN.get(type(node.op))
                if op is not None:
                    try:
                        av = [plain(x) for x in a.value] if isinstance(a.value, (list, tuple)) else a.value
                        bv = [plain(x) for x in b.value] if isinstance(b.value, (list, tuple)) else b.value
                        res = op(av, bv)
                    except bounded.TooLarge as e:
                        return unk(f"`{_clip(self.src(node))}` not computed: {e}", line, col)
                    except Exception:  # noqa: BLE001
                        return unk(f"cannot compute `{self.src(node)}`", line, col)
                    if res is not UNK:
                        if isinstance(res, list):
                            res = [V(x, "literal", line, col) for x in res]
                        return _combine([a, b], res, line, col, f"`{self.src(node)}`")
            bad = a if not a.known else b
            return unk(bad.reason or f"cannot compute `{self.src(node)}`", line, col)
        if t is ast.UnaryOp:
            a = self.runtime(self.ev(node.operand), node.operand)
            if not a.known:
                return a
            try:
                if isinstance(node.op, ast.Not):
                    res = not _truth(a.value)
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
                tv = _truth(v.value)
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
                if not (left.known and right.known):
                    return unk(f"comparison `{self.src(node)}` depends on "
                               f"{(left if not left.known else right).reason}", line, col)
                try:
                    lv = _cmpval(left.value)
                    rv = _cmpval(right.value)
                    if not _CMP[type(op)](lv, rv):
                        res = False
                except Exception:  # noqa: BLE001
                    return unk(f"cannot compare `{self.src(node)}`", line, col)
                left = right
            return _combine(vals, res, line, col, f"`{self.src(node)}`")
        if t is ast.IfExp:
            test = self.runtime(self.ev(node.test), node.test)
            if test.known:
                return self.ev(node.body if _truth(test.value) else node.orelse)
            a, b = self.ev(node.body), self.ev(node.orelse)
            if a.known and b.known and _same(a.value, b.value):
                return a
            v = unk(f"depends on `{self.src(node.test)}` ({test.reason}): {_show(a)} if true, "
                    f"{_show(b)} otherwise", line, col)
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
                if not kv.known or not _hashable(kv.value):
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
                        return unk(f"f-string part `{_clip(self.src(p.value))}` not computed: {e}",
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
                            got = _as_v(obj.value[key.value], obj, line, col)
                            if key.origin != "literal" and got.known:
                                return V(got.value, key.origin, key.line, key.col,
                                         key.reason, None, key.path)
                            return got
                        return unk(f"key {key.value!r} not in the dict", line, col)
                    if isinstance(obj.value, (list, tuple, str)) and isinstance(key.value, int):
                        return _as_v(obj.value[key.value], obj, line, col)
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
            if name == "sys.argv":
                # the script's command line as the launcher gives it
                return V([V(self.path, "cli", line, col)] +
                         [V(a, "cli", line, col, f"{a!r} on the command line") for a in self.argv],
                         "cli", line, col, "the command line")
            return V(Dotted(name), "literal", line, col)
        if isinstance(o, ArgsNS):
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
        if isinstance(o, str) and node.attr in _STR_METHODS:
            return V(_BoundStr(o, node.attr, base), "literal", line, col)
        if isinstance(o, dict) and node.attr in ("get", "pop", "setdefault", "items", "keys",
                                                  "values", "update", "copy"):
            return V(_BoundDict(o, node.attr, base), "literal", line, col)
        return unk(f"attribute `{self.src(node)}` not known statically", line, col)

    # ----------------------------------------------------------------- argparse
    def cli_lookup(self, names: list[str]) -> Optional[tuple[str, Optional[str]]]:
        """The last command-line value given for any of these option names."""
        best = None
        for n in names:
            for key in (n, n.replace("_", "-"), n.replace("-", "_")):
                vals = self.cli_opts.get(key)
                if vals:
                    best = (key, vals[-1])
        return best

    def arg_value(self, dest: str, line: int, col: int) -> V:
        spec = self.argparse.get(dest)
        if spec is None:
            hit = self.cli_lookup([dest])
            if hit is not None and hit[1] is not None:
                return V(literal_or_str(hit[1]), "cli", line, col,
                         f"--{hit[0]} {hit[1]} on the command line")
            return unk(f"args.{dest}: no add_argument for it in this file", line, col)
        sline, scol = spec["line"], spec["col"]
        names = [o for o in spec["opts"] if o.startswith("-")]
        hit = None
        for o in names:
            key = o[2:] if o.startswith("--") else o
            vals = self.cli_opts.get(key)
            if vals:
                hit = (o, vals[-1])
        action = spec["action"]
        if hit is not None:
            self.used_cli.add(hit[0])
            o, raw = hit
            shown = f"{o} {raw}" if raw is not None else o
            if action in ("store_true", "store_false"):
                val = action == "store_true"
                return V(val, "cli", sline, scol, f"{shown} on the command line")
            if action == "store_const":
                c = self.ev(spec["kw"].get("const"))
                return V(c.value, "cli", sline, scol, f"{shown} on the command line")
            if raw is None:
                return unk(f"{o} given without a value", sline, scol)
            typ = spec["type"]
            if typ == "bool":
                # argparse's type=bool is bool(string): "--flag False" gives True
                return V(bool(raw), "cli", sline, scol,
                         f"{shown} on the command line (type=bool: any non-empty string is True)")
            try:
                val = _convert(raw, typ if typ in ("int", "float", "str", "bool") else None)
            except (ValueError, OverflowError):
                if typ in ("int", "float", "str", "bool", None):
                    return unk(f"{o} {raw}: not a valid {typ}", sline, scol)
                val = raw
            if typ not in ("int", "float", "str", "bool", None):
                if typ in ("str2bool", "strtobool", "string_to_bool", "boolean_string"):
                    try:
                        val = _convert(raw, "bool")
                    except ValueError:
                        return unk(f"{o} {raw}: not a boolean", sline, scol)
                else:
                    val = literal_or_str(raw)
            nargs = spec["kw"].get("nargs")
            if nargs is not None:
                vals = self.cli_opts.get(o[2:], [])
                val = [V(_safe_convert(x, typ), "cli", sline, scol) for x in vals if x is not None]
            return V(val, "cli", sline, scol, f"{shown} on the command line")
        if action in ("store_true", "store_false"):
            d = spec["kw"].get("default")
            if d is not None:
                dv = self.ev(d)
                return V(dv.value, "default" if dv.known else "unknown", sline, scol,
                         dv.reason if not dv.known else f"default of {names[0] if names else dest}",
                         )
            return V(action == "store_false", "default", sline, scol,
                     f"{names[0] if names else dest} not given ({action})")
        d = spec["kw"].get("default")
        if d is None:
            if spec["kw"].get("required") is not None:
                return unk(f"{names[0] if names else dest} is required and was not given",
                           sline, scol)
            return V(None, "default", sline, scol, f"{names[0] if names else dest} not given (None)")
        dv = self.ev(d)
        if not dv.known:
            out = unk(dv.reason or "default not known", sline, scol, dv.default)
            out.default = dv.default
            return out
        val = dv.value
        typ = spec["type"]
        if isinstance(val, str) and typ in ("int", "float"):
            try:
                val = _convert(val, typ)
            except ValueError:
                pass
        return V(val, "default", sline, scol,
                 f"default of {names[0] if names else dest}"
                 + (f" (from line {dv.line})" if dv.origin != "literal" and dv.line else ""))

    # ----------------------------------------------------------------- dataclasses
    def dc_instance(self, cls: Any, line: int, col: int, from_cli: bool,
                    kwargs: Optional[dict[str, V]] = None) -> DCInst:
        """An arguments dataclass: library defaults, then the file's field defaults, then
        (for parsed instances) command-line values."""
        from preflight.extract import py_patterns as P

        fields: dict[str, V] = {}
        lib = None
        field_types: dict[str, Optional[str]] = {}
        if isinstance(cls, ClassVal):
            name = cls.name
            chain = self._class_chain(cls)
            for c in chain:
                if isinstance(c, str):
                    short = c.rsplit(".", 1)[-1]
                    if short in P.LIB_DATACLASSES:
                        lib = lib or short
            if lib:
                for k, val in P.library_defaults(lib).items():
                    fields[k] = V(val, "default", line, col, f"{lib} default")
                    field_types[k] = P.LIB_FIELD_TYPES.get(k)
            for c in reversed([c for c in chain if isinstance(c, ClassVal)]):
                for fname, (st, vnode, ann) in c.fields.items():
                    field_types[fname] = _ann_type(ann)
                    fields[fname] = self._field_default(fname, st, vnode)
        else:
            name = cls.name.rsplit(".", 1)[-1] if isinstance(cls, Dotted) else str(cls)
            if name in P.LIB_DATACLASSES:
                lib = name
                for k, val in P.library_defaults(lib).items():
                    fields[k] = V(val, "default", line, col, f"{lib} default")
                    field_types[k] = P.LIB_FIELD_TYPES.get(k)
        if kwargs:
            for k, v in kwargs.items():
                fields[k] = v
        if from_cli:
            for k in list(fields) + [k for k in self.cli_opts if k not in fields]:
                vals = self.cli_opts.get(k) or self.cli_opts.get(k.replace("_", "-"))
                # a field of a library dataclass we do not tabulate still takes its value
                if not vals or (k not in fields and not lib):
                    continue
                raw = vals[-1]
                typ = field_types.get(k)
                old = fields.get(k)
                if raw is None:
                    val: Any = True
                    shown = f"--{k}"
                else:
                    shown = f"--{k} {raw}"
                    try:
                        if typ == "bool" or (old is not None and isinstance(old.value, bool)):
                            val = _convert(raw, "bool")
                        elif typ in ("int", "float", "str"):
                            val = _convert(raw, typ)
                        elif typ == "list":
                            val = [V(x, "cli", 0, 0) for x in self._cli_list(k)]
                        else:
                            val = literal_or_str(raw)
                    except (ValueError, OverflowError):
                        val = literal_or_str(raw)
                fl = old.line if old is not None and old.origin != "unknown" else line
                fc = old.col if old is not None and old.origin != "unknown" else col
                if old is not None and old.reason and old.reason.endswith(" default") and old.origin == "default":
                    fl, fc = line, col
                fields[k] = V(val, "cli", fl, fc, f"{shown} on the command line")
                self.used_cli.add(k)
        inst = DCInst(name, lib, fields, line, col)
        return inst

    def _cli_list(self, k: str) -> list[str]:
        # `--targets q_proj v_proj` : the tokens after the flag up to the next option
        out: list[str] = []
        argv = self.argv
        for i, a in enumerate(argv):
            if a in (f"--{k}", f"--{k.replace('_', '-')}"):
                out = []
                for b in argv[i + 1:]:
                    if b.startswith("--"):
                        break
                    out.append(b)
        return out

    def _class_chain(self, cls: ClassVal, depth: int = 0) -> list[Any]:
        out: list[Any] = [cls]
        if depth > 8:
            return out
        for b in cls.bases:
            short = b.rsplit(".", 1)[-1]
            if short in self.classes and self.classes[short] is not cls:
                out.extend(self._class_chain(self.classes[short], depth + 1))
            else:
                out.append(b)
        return out

    def _field_default(self, fname: str, st: ast.AST, vnode: Optional[ast.AST]) -> V:
        line, col = st.lineno, st.col_offset + 1
        if vnode is None:
            return unk(f"field {fname} has no default (required argument)", line, col)
        if isinstance(vnode, ast.Call) and self._dotted_text(vnode.func).endswith("field"):
            kw = {k.arg: k.value for k in vnode.keywords if k.arg}
            if "default" in kw:
                dv = self.ev(kw["default"])
            elif "default_factory" in kw:
                fac = kw["default_factory"]
                if isinstance(fac, ast.Lambda):
                    dv = self.ev(fac.body)
                elif isinstance(fac, ast.Name) and fac.id in ("list", "dict"):
                    dv = V([] if fac.id == "list" else {}, "literal", line, col)
                else:
                    dv = unk(f"default_factory of {fname}", line, col)
            else:
                return unk(f"field {fname} has no default (required argument)", line, col)
        else:
            dv = self.ev(vnode)
        if not dv.known:
            return unk(dv.reason or f"default of {fname}", line, col, dv.default)
        return V(dv.value, "default", line, col, f"dataclass default of {fname}")

    # ----------------------------------------------------------------- calls
    def ev_call(self, node: ast.Call, line: int, col: int) -> V:
        f = self.ev(node.func)
        args: list[V] = []
        for a in node.args:
            if isinstance(a, ast.Starred):
                sv = self.ev(a.value)
                if sv.known and isinstance(sv.value, (list, tuple)):
                    args.extend(_as_v(x, sv, line, col) for x in sv.value)
                else:
                    args.append(unk(f"*{self.src(a.value)}", line, col))
            else:
                args.append(self.ev(a))
        kwargs: dict[str, V] = {}
        kwnodes: dict[str, ast.AST] = {}
        for k in node.keywords:
            if k.arg is None:
                sv = self.ev(k.value)
                if sv.known and isinstance(sv.value, dict):
                    for kk, vv in sv.value.items():
                        if isinstance(kk, str):
                            kwargs[kk] = _as_v(vv, sv, line, col)
                elif sv.known and isinstance(sv.value, DCInst):
                    kwargs.update(sv.value.fields)
                else:
                    kwargs["\0unknown"] = unk(f"**{self.src(k.value)}: {sv.reason}", line, col)
                continue
            kwargs[k.arg] = self.ev(k.value)
            kwnodes[k.arg] = k
        fv = f.value if f.known else None
        # bound methods of str/dict values
        if isinstance(fv, _BoundStr):
            return fv.call(args, kwargs, line, col)
        if isinstance(fv, _BoundDict):
            return fv.call(self, args, kwargs, line, col, node)
        if isinstance(fv, FuncVal):
            if isinstance(fv.node, ast.Lambda):
                return unk("lambda call", line, col)
            return self.call_function(fv, args, kwargs, line, col)
        if isinstance(fv, ClassVal):
            if fv.is_dataclass and any(self._is_lib_chain(fv)):
                inst = self.dc_instance(fv, line, col, from_cli=False, kwargs=kwargs)
                self.patterns.on_dataclass(self, inst, node)
                return V(inst, "literal", line, col)
            # a class of this file: run its __init__ for the calls it makes, record the ref
            res = self.patterns.on_class_call(self, fv, args, kwargs, node)
            init = next((s for s in fv.node.body if isinstance(s, ast.FunctionDef)
                         and s.name == "__init__"), None)
            if init is not None and id(init) not in self.visited:
                self.call_function(FuncVal(init, owner=fv.name), [unk("self")] + args, kwargs,
                                   line, col)
            return res
        qual = None
        if isinstance(fv, Dotted):
            qual = fv.name
        elif isinstance(fv, Obj):
            # `x.method(...)` names the method; calling an object itself (`tokenizer(...)`,
            # `model(batch)`) is marked with "()"
            qual = fv.qual if isinstance(node.func, ast.Attribute) else fv.qual + "()"
        elif isinstance(node.func, ast.Attribute):
            # a method call on something unknown (model.half(), tokenizer(...)): keep the
            # receiver's text so patterns can still recognise the method
            qual = "?" + self.src(node.func.value)[:80] + "." + node.func.attr
        elif isinstance(node.func, ast.Name):
            qual = "?" + node.func.id
        if qual is None:
            return unk(f"call `{self.src(node.func)[:60]}`", line, col)
        if qual.startswith("builtins."):
            r = self._builtin(qual[9:], args, kwargs, line, col, node)
            if r is not None:
                return r
        else:
            # a repository's own helper that patches a library (FastChat's
            # `replace_llama_attn_with_flash_attn()`) is known by its name, followed or not
            self.patterns.on_patch(self, qual, node)
            if qual in _SPAWN:
                self._spawn(args, kwargs, line, col)
            r = self.follow(qual, args, kwargs, line, col) if not qual.startswith("?") else None
            if r is not None:
                return r
        res = self.patterns.on_call(self, qual, args, kwargs, node, kwnodes)
        if res is not None:
            return res
        return V(Obj(qual, args, kwargs, line, col), "derived", line, col, f"result of {qual}(...)")

    def _spawn(self, args: list[V], kwargs: dict[str, V], line: int, col: int) -> None:
        """`mp.spawn(main_worker, nprocs=n, args=(ngpus, args))`: each process runs
        `main_worker(i, ngpus, args)` — the worker gets the call site's arguments (its
        process index is unknown), not unknown parameters."""
        fn = args[0] if args else kwargs.get("fn")
        extra = kwargs.get("args") if "args" in kwargs else (args[2] if len(args) > 2 else None)
        if not (isinstance(fn, V) and isinstance(fn.value, FuncVal)) or \
                isinstance(fn.value.node, ast.Lambda):
            return
        rest: list[V] = []
        if extra is not None and extra.known and isinstance(extra.value, (list, tuple)):
            rest = [_as_v(x, extra, line, col) for x in extra.value]
        elif extra is not None:
            return
        self.call_function(fn.value, [unk("the process index given by spawn", line, col)] + rest,
                           {}, line, col)

    # ----------------------------------------------------------------- other modules
    def follow(self, qual: str, args: list[V], kwargs: dict[str, V], line: int,
               col: int) -> Optional[V]:
        """A call into code the script does not hold itself: a method of a class of this
        file (`model.configure_optimizers(...)` on `model = GPT(...)`), or a function or
        method of another module of the repository (`from utils import lora_config`). The
        callee runs with its arguments bound, in its own module, within a budget; None when
        it cannot be found (the call is then an opaque result, as before)."""
        m = _METHOD.fullmatch(qual)
        if m is not None:
            cls, meth = m.group(1), m.group(2)
            head, _, ctor = cls.rpartition(".")
            if head and ctor in _ALT_CONSTRUCTORS:
                # `GPT.from_pretrained(...)` builds a GPT: its methods are GPT's
                cls = head
            local = self.classes.get(cls)
            if local is not None and _CUR_PATH[0] is None:
                fn = _method(local.node, meth)
                if fn is None:
                    return None
                return self.call_function(FuncVal(fn, owner=local.name), [unk("self")] + args,
                                          kwargs, line, col)
            found = self._foreign(cls)
            if found is None or not isinstance(found[1], ast.ClassDef):
                return None
            fn = _method(found[1], meth)
            if fn is None:
                return None
            return self._call_in(found[0], fn, [unk("self")] + args, kwargs, line, col,
                                 owner=found[1].name)
        found = self._foreign(qual)
        if found is None or not isinstance(found[1], (ast.FunctionDef, ast.AsyncFunctionDef)):
            return None
        return self._call_in(found[0], found[1], args, kwargs, line, col)

    def _foreign(self, qual: str) -> Optional[tuple[Any, ast.AST]]:
        """(module, definition) for `pkg.mod.name` when pkg/mod.py is a file of the
        repository (not a library preflight models by its API)."""
        if "." not in qual or self.read_file is None:
            return None
        modname, attr = qual.rsplit(".", 1)
        level = len(modname) - len(modname.lstrip("."))
        top = modname.lstrip(".").split(".", 1)[0]
        if not level and (top in _LIBRARIES or not top):
            return None
        mod = self._module(modname)
        if mod is None:
            return None
        node = mod.defs.get(attr)
        return (mod, node) if node is not None else None

    def _module(self, modname: str) -> Optional["_Module"]:
        level = len(modname) - len(modname.lstrip("."))
        parts = [p for p in modname.lstrip(".").split(".") if p]
        here = os.path.dirname(os.path.abspath(_CUR_PATH[0] or self.path))
        if level:
            bases = [here]
            for _ in range(level - 1):
                bases = [os.path.dirname(bases[0])]
        else:
            bases, d = [], os.path.dirname(os.path.abspath(self.path))
            for _ in range(_MODULE_SEARCH_UP + 1):
                bases.append(d)
                bases.append(os.path.join(d, "src"))     # the src layout (src/pkg/mod.py)
                d = os.path.dirname(d)
        for b in bases:
            for cand in (os.path.join(b, *parts) + ".py", os.path.join(b, *parts, "__init__.py")):
                if not os.path.isfile(cand):
                    continue
                key = os.path.abspath(cand)
                if key in self.modules:
                    return self.modules[key]
                if len(self.modules) >= _MAX_MODULES or key == os.path.abspath(self.path):
                    return None
                shown = cand if os.path.isabs(self.path) else os.path.relpath(cand)
                self.modules[key] = _Module.load(shown, self.read_file, ".".join(parts))
                return self.modules[key]
        return None

    def _call_in(self, mod: "_Module", fn: ast.AST, args: list[V], kwargs: dict[str, V],
                 line: int, col: int, owner: Optional[str] = None) -> Optional[V]:
        """Run `fn` of another module with the arguments bound: its names are that
        module's, its values carry that module's path."""
        if self.followed >= _MAX_FOLLOWED:
            return None
        self.followed += 1
        saved = (self.globals, self.lines, _CUR_PATH[0], self.classes)
        if mod.globals is None:
            mod.globals = {}
            self.globals, self.classes, self.lines = mod.globals, {}, mod.lines
            _CUR_PATH[0] = mod.path
            try:
                for st in mod.tree.body:
                    if isinstance(st, (ast.Import, ast.ImportFrom, ast.FunctionDef,
                                       ast.AsyncFunctionDef)) or (
                            isinstance(st, (ast.Assign, ast.AnnAssign)) and not any(
                                isinstance(n, ast.Call) for n in ast.walk(st))):
                        self.exec_block([st])
                    elif isinstance(st, ast.ClassDef):
                        mod.globals[st.name] = Dotted(f"{mod.name}.{st.name}")
            finally:
                self.globals, self.lines, _CUR_PATH[0], self.classes = saved
        self.globals, self.classes, self.lines = mod.globals, {}, mod.lines
        _CUR_PATH[0] = mod.path
        frames, self.frames = self.frames, []
        try:
            return self.call_function(FuncVal(fn, owner=owner), args, kwargs, line, col)
        finally:
            self.frames = frames
            self.globals, self.lines, _CUR_PATH[0], self.classes = saved

    def _is_lib_chain(self, cls: ClassVal):
        from preflight.extract import py_patterns as P
        for c in self._class_chain(cls):
            if isinstance(c, str) and c.rsplit(".", 1)[-1] in P.LIB_DATACLASSES:
                yield True
        yield False

    def call_function(self, fv: FuncVal, args: list[V], kwargs: dict[str, V], line: int, col: int,
                      unbound: bool = False) -> V:
        node = fv.node
        key = id(node)
        if self.depth >= _MAX_DEPTH or (key in self.visited and not unbound and self._on_stack(key)):
            return unk(f"recursive or too deep call of {getattr(node, 'name', 'function')}", line, col)
        self.visited.add(key)
        frame: dict[str, Any] = {"\0fn": key}
        if fv.closure is not None:
            frame["\0closure"] = fv.closure
        a = node.args
        params = [p.arg for p in a.posonlyargs + a.args]
        defaults = a.defaults
        nd = len(params) - len(defaults)
        for i, p in enumerate(params):
            if i < len(args):
                frame[p] = args[i]
            elif p in kwargs:
                frame[p] = kwargs[p]
            elif i >= nd:
                d = self.ev(defaults[i - nd])
                frame[p] = d
                if d.known and d.origin == "literal":
                    frame[p] = V(d.value, "default", d.line, d.col,
                                 f"default of parameter `{p}` of {getattr(node, 'name', '')}()")
            else:
                frame[p] = unk(f"parameter `{p}` of {getattr(node, 'name', 'function')}()",
                               line, col)
        for p, d in zip(a.kwonlyargs, a.kw_defaults):
            if p.arg in kwargs:
                frame[p.arg] = kwargs[p.arg]
            elif d is not None:
                dv = self.ev(d)
                frame[p.arg] = dv if not (dv.known and dv.origin == "literal") else V(
                    dv.value, "default", dv.line, dv.col, f"default of parameter `{p.arg}`")
            else:
                frame[p.arg] = unk(f"parameter `{p.arg}`", line, col)
        if a.vararg:
            frame[a.vararg.arg] = unk(f"*{a.vararg.arg}", line, col)
        if a.kwarg:
            extra = {k: v for k, v in kwargs.items() if k not in frame}
            frame[a.kwarg.arg] = V(extra, "derived", line, col) if extra else unk(f"**{a.kwarg.arg}")
        frame["\0cond"] = self.cond_depth
        if not self.unbound:
            for p, pv in frame.items():
                if isinstance(pv, V) and _CONFIG_NAME.match(p):
                    self.local_config[p] = pv
        self.frames.append(frame)
        self.depth += 1
        try:
            self.exec_block(node.body)
        except _Return:
            pass
        finally:
            self.depth -= 1
            self.frames.pop()
        ret = frame.get("\0return")
        if ret is None:
            return V(None, "literal", line, col)
        return ret

    def _on_stack(self, key: int) -> bool:
        return any(fr.get("\0fn") == key for fr in self.frames)

    def _builtin(self, name: str, args: list[V], kwargs: dict[str, V], line: int, col: int,
                 node: ast.Call) -> Optional[V]:
        if name in ("int", "float", "str", "bool") and len(args) == 1:
            a = args[0]
            if not a.known:
                d = a.default
                out = unk(a.reason or "", a.line or line, a.col or col)
                if d is not None and not isinstance(d, dict):
                    try:
                        out.default = _convert(str(d), name) if name != "str" else str(d)
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
                    return _combine(items, res, line, col, f"{name}(...)")
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
        if name in ("getattr", "hasattr", "isinstance", "callable", "print", "setattr", "vars",
                    "globals", "locals"):
            return unk(f"{name}(...) is evaluated at run time", line, col)
        return None


class _Missing:
    pass


#: start a function in worker processes with the given arguments
_SPAWN = frozenset({"torch.multiprocessing.spawn", "torch.multiprocessing.start_processes",
                    "torch.multiprocessing.spawn.spawn"})
#: `Cls().method` — a method called on an instance
_METHOD = __import__("re").compile(r"([A-Za-z_][\w.]*)\(\)\.([A-Za-z_]\w*)")
#: class methods that, by convention, build an instance of their class
_ALT_CONSTRUCTORS = frozenset({"from_pretrained", "from_config", "from_name", "from_checkpoint",
                               "load_from_checkpoint"})
#: libraries preflight reads by their API: never followed into, even when the repository
#: being checked is the library itself
_LIBRARIES = frozenset({
    "torch", "transformers", "trl", "peft", "accelerate", "deepspeed", "datasets",
    "bitsandbytes", "lightning", "pytorch_lightning", "lightning_fabric", "torchtune",
    "composer", "llmfoundry", "megatron", "apex", "flash_attn", "liger_kernel", "numpy",
    "fire", "typer", "jsonargparse", "omegaconf", "hydra", "wandb", "tqdm", "os", "sys",
    "math", "json", "yaml", "argparse", "dataclasses", "functools", "typing", "logging",
    "torchvision", "timm", "xformers", "fairscale", "safetensors", "tokenizers", "sklearn",
})
_MAX_MODULES = 8          # other modules of the repository read per script
_MAX_FOLLOWED = 32        # calls followed into them per script
_MODULE_SEARCH_UP = 2     # folders above the script searched for top-level imports
_MAX_MODULE_BYTES = 512_000


def _method(cls: ast.ClassDef, name: str) -> Optional[ast.AST]:
    return next((s for s in cls.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))
                 and s.name == name), None)


class _Module:
    """Another module of the repository, parsed (never run) when a call leads into it."""

    __slots__ = ("path", "name", "tree", "lines", "defs", "globals")

    def __init__(self, path: str, name: str, tree: ast.Module, lines: list[str]) -> None:
        self.path, self.name, self.tree, self.lines = path, name, tree, lines
        self.defs = {st.name: st for st in tree.body
                     if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
        self.globals: Optional[dict] = None

    @classmethod
    def load(cls, path: str, read_file: Any, name: str) -> Optional["_Module"]:
        try:
            text = read_file(path)
            if not text or len(text) > _MAX_MODULE_BYTES:
                return None
            from preflight.extract.python import parse
            return cls(path, name, parse(text), text.splitlines())
        except (SyntaxError, ValueError, MemoryError, RecursionError, OSError):
            return None


_CONFIG_NAME = __import__("re").compile(
    r"(?i)(.*batch.*|.*accum.*|.*seq.*len.*|block_size|max_length|context_length|ctx_len)$")


_MISSING = _Missing()
_BUILTIN_FUNCS = {"min", "max", "abs", "round", "len", "sum", "dict", "list", "tuple", "exec",
                  "open", "getattr", "hasattr", "isinstance", "callable", "print", "setattr",
                  "vars", "globals", "locals"}
_STR_METHODS = {"format", "lower", "upper", "strip", "replace", "split", "join", "startswith",
                "endswith"}


class _BoundStr:
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
        return _combine([self.base] + vals, res, line, col, f"str.{self.meth}")


class _BoundDict:
    __slots__ = ("d", "meth", "base")

    def __init__(self, d: dict, meth: str, base: V) -> None:
        self.d, self.meth, self.base = d, meth, base

    def call(self, ev: Evaluator, args: list[V], kwargs: dict[str, V], line: int, col: int,
             node: ast.AST) -> V:
        if self.meth in ("get", "pop", "setdefault") and args and args[0].known:
            k = args[0].value
            if _hashable(k) and k in self.d:
                res = _as_v(self.d[k], self.base, line, col)
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
            self.d.update(kwargs)
            return V(None)
        if self.meth == "copy":
            return V(dict(self.d), self.base.origin, line, col)
        return unk(f"dict.{self.meth}()", line, col)


def _as_v(x: Any, parent: V, line: int, col: int) -> V:
    if isinstance(x, V):
        return x
    return V(x, parent.origin, parent.line, parent.col, parent.reason)


def _safe_convert(x: str, typ: Optional[str]) -> Any:
    try:
        return _convert(x, typ if typ in ("int", "float", "str", "bool") else None)
    except (ValueError, OverflowError):
        return x


def _statements(body: list) -> Any:
    """Every statement, nested blocks included (not expressions)."""
    stack = list(reversed(body))
    while stack:
        st = stack.pop()
        yield st
        for field in ("body", "orelse", "finalbody"):
            sub = getattr(st, field, None)
            if sub and isinstance(sub, list):
                stack.extend(reversed(sub))
        for h in getattr(st, "handlers", ()) or ():
            stack.extend(reversed(h.body))
        for c in getattr(st, "cases", ()) or ():
            stack.extend(reversed(c.body))


def _truth(x: Any) -> bool:
    if isinstance(x, (Obj, Dotted, ArgsNS, DCInst, FuncVal, ClassVal)):
        return True
    return bool(x)


def _cmpval(x: Any) -> Any:
    if isinstance(x, Dotted):
        return x.name
    if isinstance(x, (list, tuple)):
        return type(x)(plain(i) for i in x)
    if isinstance(x, dict):
        return {k: plain(v) for k, v in x.items()}
    return x


def _same(a: Any, b: Any) -> bool:
    try:
        return type(a) is type(b) and plain(a) == plain(b)
    except Exception:  # noqa: BLE001
        return False


def _hashable(x: Any) -> bool:
    try:
        hash(x)
        return True
    except TypeError:
        return False


def _match_case(subject: "V", cases: list) -> Optional[ast.match_case]:
    """The case a known subject takes, when every pattern up to it is a plain value
    (`case "llama":`) or a wildcard; None when that cannot be told."""
    if not isinstance(subject, V) or not subject.known:
        return None
    for c in cases:
        p = c.pattern
        if c.guard is not None:
            return None
        if isinstance(p, ast.MatchAs) and p.pattern is None:
            return c                                   # `case _:` / `case name:`
        if isinstance(p, ast.MatchValue) and isinstance(p.value, ast.Constant):
            if p.value.value == subject.value:
                return c
            continue
        if isinstance(p, ast.MatchOr) and all(isinstance(q, ast.MatchValue)
                                              and isinstance(q.value, ast.Constant)
                                              for q in p.patterns):
            if any(q.value.value == subject.value for q in p.patterns):
                return c
            continue
        return None
    return None


def _has_wildcard(cases: list) -> bool:
    return any(isinstance(c.pattern, ast.MatchAs) and c.pattern.pattern is None
               and c.guard is None for c in cases)


def _show(v: Any) -> str:
    if isinstance(v, V):
        if not v.known:
            return "unknown"
        if isinstance(v.value, Obj):
            return f"{v.value.short}(...)"
        p = plain(v)
        s = repr(p)
        return s if len(s) <= 60 else s[:57] + "..."
    return "unset"


def _ann_type(ann: Optional[ast.AST]) -> Optional[str]:
    if ann is None:
        return None
    text = ast.unparse(ann)
    for t in ("bool", "int", "float", "str"):
        if text == t or text in (f"Optional[{t}]", f"{t} | None", f"None | {t}"):
            return t
    if "list" in text.lower() or "List" in text:
        return "list"
    return None


_SRC_LIMIT = 200


def _clip(text: str, limit: int = 60) -> str:
    """Source quoted in a reason: long expressions are cut after `limit` characters."""
    return text if len(text) <= limit else text[:limit] + "…"


def source_text(lines: list[str], node: ast.AST) -> str:
    """The source text of a node (first line only for multi-line nodes), cheaply."""
    try:
        ln, el = node.lineno, node.end_lineno
        c0, c1 = node.col_offset, node.end_col_offset
        line = lines[ln - 1]
        if not line.isascii():
            b = line.encode()
            text = b[c0:(c1 if el == ln else len(b))].decode("utf-8", "replace")
        else:
            text = line[c0:c1] if el == ln else line[c0:].rstrip() + " ..."
        # quoted in reasons: a 10,000-term expression is not copied into each of its parts
        return text if len(text) <= _SRC_LIMIT else text[:_SRC_LIMIT] + "…"
    except (AttributeError, IndexError, TypeError):
        return "?"


def resolve_path(base_file: str, rel: str) -> Optional[str]:
    """A file named by the script: relative to the working directory, then the script.
    Only files under one of those two folders are read (`exec(open("/etc/…").read())`
    names nothing of the job's)."""
    from preflight.safe_read import within
    roots = (os.getcwd(), os.path.dirname(os.path.abspath(base_file)))
    for cand in (rel, os.path.join(os.path.dirname(base_file), rel)):
        if cand and os.path.isfile(cand) and within(cand, roots):
            return cand
    return None
