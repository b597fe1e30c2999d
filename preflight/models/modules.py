"""Count the parameters of `nn.Module` classes statically, from their source.

A small evaluator walks a class's `__init__` (and the helper methods it calls) on the
standard library's `ast` tree — the one the Python extractor already parsed — never
importing or running the analysed code. It knows the parameter shapes of the common
`torch.nn` layers, `nn.Parameter(torch.zeros(shape))`, containers (`ModuleList`,
`Sequential`, `ModuleDict`, lists built by comprehensions or `append` loops), nested
user-defined modules, base classes, and weight tying (`self.head.weight = self.wte.weight`:
a tied parameter is counted once). Values come from the config it is given (`config.n_embd`),
dataclass defaults in the same module, `__init__` defaults and module constants.

Whatever it cannot size is reported as an unknown piece with its line, never dropped: the
count is then None.
"""

from __future__ import annotations

import ast
import math
import re
from dataclasses import dataclass, field
from typing import Any, Iterator, NamedTuple, Optional, Union

from preflight.lang import bounded

_MAX_STEPS = 200_000
#: a loop or comprehension over more items is not unrolled (its modules are not counted):
#: each item builds modules, and no model repeats a block 4,096 times
_MAX_LOOP = 4096
_MAX_DEPTH = 40


class Code(NamedTuple):
    """A Python file as the counter reads it: its text and its `ast` tree (whose positions
    index that text). The text gives each unknown piece its source as written."""

    text: Optional[str]
    tree: ast.Module


#: what the counting functions accept as a module: a `Code`, an `ast.Module`, Python
#: source text, or an object holding its source as `.code` (a libcst Module)
ModuleLike = Union[Code, ast.Module, str, Any]


def as_code(module: ModuleLike) -> Code:
    """`module` as a `Code` (source text is parsed with `ast`; SyntaxError if it does not
    parse)."""
    if isinstance(module, Code):
        return module
    if isinstance(module, ast.Module):
        return Code(None, module)
    text = module if isinstance(module, str) else getattr(module, "code", None)
    if not isinstance(text, str):
        raise TypeError(f"not a Python module: {type(module).__name__}")
    return Code(text, ast.parse(text))


class Unknown:
    def __init__(self, reason: str) -> None:
        self.reason = reason

    def __repr__(self) -> str:
        return f"<unknown: {self.reason}>"


class _Return(Exception):
    def __init__(self, value: Any) -> None:
        self.value = value


class _Abort(Exception):
    pass


@dataclass(eq=False)
class Param:
    numel: Any                      # int, or Unknown
    shape: tuple = ()


@dataclass(eq=False)
class Mod:
    kind: str
    params: dict[str, Param] = field(default_factory=dict)
    children: dict[str, "Mod"] = field(default_factory=dict)
    attrs: dict[str, Any] = field(default_factory=dict)
    unknown: list[str] = field(default_factory=list)


@dataclass
class Tensor:
    shape: tuple


@dataclass
class ClassRef:
    name: str
    node: ast.ClassDef


@dataclass
class Bound:
    obj: Any
    name: str


@dataclass
class Builtin:
    name: str


class ConfigObj:
    """`config.x` over a dict of fields, with dataclass defaults behind it."""

    def __init__(self, fields: dict, defaults: dict) -> None:
        self.fields = dict(fields or {})
        self.defaults = defaults

    def get(self, name: str) -> Any:
        if name in self.fields:
            return self.fields[name]
        if name in self.defaults:
            return self.defaults[name]
        return Unknown(f"config.{name} is not known")


#: external base classes whose __init__ makes no parameters
_PARAM_FREE_BASE = re.compile(r"(PreTrainedModel|Module|Mixin|Base|ABC|object|Generic|Protocol|"
                              r"Config|PretrainedConfig|HubMixin)$")

#: names of library classes that are nn.Modules (a base class from outside the files)
_LIBRARY_LAYER = re.compile(r"(Head|Layer|Block|Model|Embeddings|Attention|MLP|Encoder|Decoder)$")

#: stands for "the config object" in `count_modules(args=…)`
CONFIG = object()

_CONFIG_PARAM_NAMES = {"config", "cfg", "conf", "args", "params", "hparams", "hp", "opt",
                       "model_config", "model_args", "gptconf"}

_NO_PARAM_LAYERS = {
    "ReLU", "GELU", "SiLU", "Tanh", "Sigmoid", "Softmax", "LogSoftmax", "Dropout",
    "Dropout1d", "Dropout2d", "Identity", "Flatten", "Unflatten", "MaxPool1d", "MaxPool2d",
    "AvgPool1d", "AvgPool2d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveMaxPool2d",
    "LeakyReLU", "ELU", "Mish", "Hardswish", "Softplus", "Upsample", "ZeroPad2d", "ReLU6",
    "CrossEntropyLoss", "MSELoss", "NLLLoss", "PixelShuffle", "GLU", "Softsign",
}
_TENSOR_CTORS = {"zeros", "ones", "randn", "rand", "empty", "full", "eye", "arange", "tensor"}

_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)
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


def _prod(xs: Any) -> Any:
    if isinstance(xs, (list, tuple)):
        out = 1
        for x in xs:
            if not isinstance(x, int):
                return Unknown("non-integer shape")
            out *= x
        return out
    return xs


def _shape_of(args: list) -> tuple:
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        return tuple(args[0])
    return tuple(args)


def _index(sl: ast.expr) -> Optional[ast.expr]:
    """The key of a subscript: its first index (`x[a, b]` reads `a`); None for a slice."""
    if isinstance(sl, ast.Tuple) and sl.elts:
        sl = sl.elts[0]
    return None if isinstance(sl, ast.Slice) else sl


class _Evaluator:
    def __init__(self, module: ModuleLike, config: Optional[dict]) -> None:
        code = as_code(module)
        self.module = code.tree
        self.text = code.text
        self._lines: Optional[list[str]] = None
        #: nodes parsed from another text (`count_expression`'s expression) → that text
        self.foreign: dict[int, str] = {}
        self.classes: dict[str, ast.ClassDef] = {}
        self.funcs: dict[str, ast.FunctionDef] = {}
        self.imports: dict[str, str] = {}
        self.steps = 0
        self.depth = 0
        self.pieces: list[str] = []
        self.fatal = False
        self.defaults: dict[str, Any] = {}
        self.globals: dict[str, Any] = {}
        self.config = ConfigObj(config or {}, self.defaults)
        self._scan()

    # ----------------------------------------------------------------- module scan
    def _scan(self) -> None:
        for stmt in self.module.body:
            if isinstance(stmt, ast.ClassDef):
                self.classes[stmt.name] = stmt
            elif isinstance(stmt, _FUNCS):
                self.funcs[stmt.name] = stmt
            elif isinstance(stmt, ast.Import):
                for a in stmt.names:
                    local = a.asname if a.asname else a.name.split(".")[0]
                    self.imports[local] = a.name if a.asname else local
            elif isinstance(stmt, ast.ImportFrom) and not any(a.name == "*" for a in stmt.names):
                mod = stmt.module or ""
                for a in stmt.names:
                    local = a.asname if a.asname else a.name
                    self.imports[local] = f"{mod}.{a.name}" if mod else a.name
        # dataclass-style config classes: their field defaults back `config.x`
        for name, cls in self.classes.items():
            if self._is_module_class(cls):
                continue
            for s in cls.body:
                if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name) \
                        and s.value is not None:
                    v = self._safe_eval(s.value, {})
                    if not isinstance(v, Unknown):
                        self.defaults.setdefault(s.target.id, v)
        # module constants
        for s in self.module.body:
            if isinstance(s, (ast.Assign, ast.AnnAssign)):
                try:
                    self._exec_simple(s, self.globals)
                except Exception:
                    pass

    def _is_module_class(self, cls: ast.ClassDef, seen: int = 0) -> bool:
        for b in cls.bases:
            name = self._full(b)
            if name and (name.startswith("torch.nn.") or name.endswith("Module")):
                return True
            base = name.split(".")[-1] if name else ""
            if base in self.classes and seen < 10 and self._is_module_class(self.classes[base], seen + 1):
                return True
            if base and base not in self.classes and _LIBRARY_LAYER.search(base):
                return True         # a library layer (transformers' RobertaLMHead, …Model)
        return False

    def _full(self, node: ast.expr) -> str:
        """Dotted name of a Name/Attribute with import aliases expanded."""
        try:
            d = _dotted(node)
        except ValueError:
            return ""
        head, _, rest = d.partition(".")
        if head in self.imports:
            head = self.imports[head]
        return f"{head}.{rest}" if rest else head

    def line(self, node: ast.AST) -> int:
        """1-based line of `node` in the module (0 for a node from another text). A
        comprehension's `for` has no position of its own: its target's line."""
        if id(node) in self.foreign:
            return 0
        if isinstance(node, ast.comprehension):
            node = node.target
        return getattr(node, "lineno", 0)

    def code(self, node: ast.AST) -> str:
        """The source of `node` as written, its continuation lines within brackets without
        the indentation of the statement it is in (as the node would be written alone)."""
        text = self.foreign.get(id(node), self.text)
        if text is None:
            return ast.unparse(node)
        if text is not self.text:
            return ast.get_source_segment(text, node) or ast.unparse(node)
        if self._lines is None:
            self._lines = _split_lines(text)
        lines = self._lines
        l0, l1 = node.lineno - 1, node.end_lineno - 1
        if l1 >= len(lines):
            return ast.unparse(node)
        first = lines[l0].encode()
        if l0 == l1:
            return first[node.col_offset:node.end_col_offset].decode()
        rows = [first[node.col_offset:].decode(), *lines[l0 + 1:l1],
                lines[l1].encode()[:node.end_col_offset].decode()]
        stmt = self._statement_of(node)
        indent = _INDENT.match(lines[stmt.lineno - 1]).group() if stmt is not None else ""
        if indent:
            # lines inside a multi-line string, and lines after a backslash, are kept as
            # they are: their whitespace is not indentation
            kept = {n for sub in ast.walk(node) if isinstance(sub, (ast.Constant, ast.JoinedStr))
                    for n in range(sub.lineno + 1, sub.end_lineno + 1)}
            for i in range(1, len(rows)):
                n = l0 + 1 + i                                   # its 1-based line
                if n not in kept and not lines[n - 2].rstrip("\r\n").endswith("\\") \
                        and rows[i].startswith(indent):
                    rows[i] = rows[i][len(indent):]
        return "".join(rows)

    def _statement_of(self, node: ast.AST) -> Optional[ast.stmt]:
        """The innermost statement of the module that holds `node`."""
        start, end = (node.lineno, node.col_offset), (node.end_lineno, node.end_col_offset)
        found = None
        stmts: list = self.module.body
        while stmts:
            for st in stmts:
                if (st.lineno, st.col_offset) <= start and end <= (st.end_lineno, st.end_col_offset):
                    found = st
                    stmts = [c for f in ("body", "orelse", "finalbody")
                             for c in (getattr(st, f, None) or [])]
                    stmts += [c for h in (getattr(st, "handlers", None) or ()) for c in h.body]
                    stmts += [c for m in (getattr(st, "cases", None) or ()) for c in m.body]
                    break
            else:
                break
        return found

    def note(self, node: ast.AST, msg: str) -> None:
        piece = f"line {self.line(node)}: {msg}"
        if piece not in self.pieces:
            self.pieces.append(piece)

    # ----------------------------------------------------------------- instantiation
    def instantiate(self, ref: ClassRef, args: list, kwargs: dict, node: ast.AST) -> Mod:
        self.depth += 1
        if self.depth > _MAX_DEPTH:
            raise _Abort("nesting too deep")
        try:
            obj = Mod(kind=ref.name)
            self._run_init(ref.node, obj, args, kwargs, node)
            return obj
        finally:
            self.depth -= 1

    def _class_attrs(self, cls: ast.ClassDef) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for s in cls.body:
            if isinstance(s, (ast.Assign, ast.AnnAssign)):
                try:
                    self._exec_simple(s, out)
                except Exception:
                    pass
        return out

    def _method(self, cls: ast.ClassDef, name: str) -> Optional[tuple[ast.ClassDef, ast.FunctionDef]]:
        for stmt in cls.body:
            if isinstance(stmt, _FUNCS) and stmt.name == name:
                return cls, stmt
        for b in cls.bases:
            base = self._full(b).split(".")[-1]
            if base in self.classes:
                found = self._method(self.classes[base], name)
                if found:
                    return found
        return None

    def _run_init(self, cls: ast.ClassDef, obj: Mod, args: list, kwargs: dict,
                  node: ast.AST) -> None:
        obj.attrs.update({k: v for k, v in self._class_attrs(cls).items()})
        found = self._method(cls, "__init__")
        if found is None:
            # no __init__ of its own: a builtin base (nn.Linear subclass…) takes the args
            for b in cls.bases:
                full = self._full(b)
                if full.startswith("torch.nn.") and full.split(".")[-1] != "Module":
                    built = self._builtin_layer(full.split(".")[-1], args, kwargs, node)
                    _merge_into(obj, built)
            return
        owner, fn = found
        self._call_function(fn, args, kwargs, self_obj=obj, owner=owner)

    def _bind(self, fn: ast.FunctionDef, args: list, kwargs: dict, has_self: bool) -> dict:
        env: dict[str, Any] = {}
        a = fn.args
        allp = list(a.posonlyargs) + list(a.args)
        # defaults belong to the last positional parameters
        defaults = dict(zip(allp[len(allp) - len(a.defaults):], a.defaults))
        if has_self and allp:
            allp = allp[1:]
        args = list(args)
        for p in allp:
            name = p.arg
            if args:
                env[name] = args.pop(0)
            elif name in kwargs:
                env[name] = kwargs.pop(name)
            elif name in _CONFIG_PARAM_NAMES or (p.annotation is not None and self._full(
                    p.annotation).split(".")[-1] in self.classes):
                env[name] = self.config
            elif name in self.config.fields:
                env[name] = self.config.fields[name]
            elif p in defaults:
                env[name] = self._safe_eval(defaults[p], {})
            else:
                env[name] = Unknown(f"argument {name!r} of {fn.name} is not known")
        for p, default in zip(a.kwonlyargs, a.kw_defaults):
            name = p.arg
            if name in kwargs:
                env[name] = kwargs.pop(name)
            elif name in self.config.fields:
                env[name] = self.config.fields[name]
            elif default is not None:
                env[name] = self._safe_eval(default, {})
            else:
                env[name] = Unknown(f"argument {name!r} is not known")
        if a.vararg is not None:
            env[a.vararg.arg] = tuple(args)
        if a.kwarg is not None:
            env[a.kwarg.arg] = dict(kwargs)
        return env

    def _call_function(self, fn: ast.FunctionDef, args: list, kwargs: dict, *,
                       self_obj: Any = None, owner: Optional[ast.ClassDef] = None) -> Any:
        env = self._bind(fn, args, dict(kwargs), has_self=self_obj is not None)
        if self_obj is not None:
            params = list(fn.args.posonlyargs) + list(fn.args.args)
            env[params[0].arg if params else "self"] = self_obj
            env["__class__"] = owner
            env["__self__"] = self_obj
        try:
            self._exec_block(fn.body, env)
        except _Return as r:
            return r.value
        return None

    # ----------------------------------------------------------------- statements
    def _exec_block(self, body: list, env: dict) -> None:
        for stmt in body:
            self._exec_stmt(stmt, env)

    def _exec_stmt(self, stmt: ast.stmt, env: dict) -> None:
        self.steps += 1
        if self.steps > _MAX_STEPS:
            raise _Abort("evaluation too long")
        if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Expr, ast.Return)):
            self._exec_simple(stmt, env)
        elif isinstance(stmt, ast.If):
            cond = self._eval(stmt.test, env)
            if isinstance(cond, Unknown):
                if self._block_builds_params(stmt):
                    self.note(stmt, f"branch depends on an unknown value ({cond.reason})")
                    self.fatal = True
                return
            self._exec_block(stmt.body if cond else stmt.orelse, env)
        elif isinstance(stmt, (ast.For, ast.AsyncFor)):
            it = self._eval(stmt.iter, env)
            items = self._iterate(it, stmt)
            if items is None:
                if self._block_builds_params(stmt):
                    self.note(stmt, "loop over an unknown range builds modules")
                    self.fatal = True
                return
            for item in items:
                self._assign(stmt.target, item, env)
                self._exec_block(stmt.body, env)
        elif isinstance(stmt, (ast.With, ast.AsyncWith, ast.Try)):
            self._exec_block(stmt.body, env)
        elif isinstance(stmt, ast.While):
            if self._block_builds_params(stmt):
                self.note(stmt, "while loop builds modules")
                self.fatal = True

    def _looks_like_module(self, node: ast.expr) -> bool:
        """A call of a capitalised callee (`Encoder(...)`, `lib.Block(...)`)."""
        if not isinstance(node, ast.Call):
            return False
        f = node.func
        name = f.attr if isinstance(f, ast.Attribute) else (
            f.id if isinstance(f, ast.Name) else "")
        return bool(name) and name[0].isupper() and not name.isupper()

    def _block_builds_params(self, node: ast.AST) -> bool:
        """Does a block we cannot follow add modules or parameters?"""
        for n in ast.walk(node):
            if isinstance(n, ast.Assign):
                if any(isinstance(t, (ast.Attribute, ast.Subscript)) for t in n.targets):
                    return True
            elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in (
                    "append", "extend", "add_module", "register_parameter", "insert"):
                return True
        return False

    def _exec_simple(self, s: ast.stmt, env: dict) -> None:
        if isinstance(s, ast.Assign):
            value = self._eval(s.value, env)
            if isinstance(value, Unknown) and self._looks_like_module(s.value):
                for t in s.targets:
                    if isinstance(t, ast.Attribute):
                        obj = self._eval(t.value, env)
                        if isinstance(obj, Mod):
                            self.note(s, f"{self.code(s.value)} is not sized "
                                         f"({value.reason})")
                            value = Param(Unknown(value.reason))
            for t in s.targets:
                self._assign(t, value, env)
        elif isinstance(s, ast.AnnAssign):
            if s.value is not None:
                self._assign(s.target, self._eval(s.value, env), env)
        elif isinstance(s, ast.AugAssign):
            cur = self._eval(s.target, env)
            val = self._binop(cur, s.op, self._eval(s.value, env))
            self._assign(s.target, val, env)
        elif isinstance(s, ast.Expr):
            self._eval(s.value, env)
        elif isinstance(s, ast.Return):
            raise _Return(self._eval(s.value, env) if s.value is not None else None)

    def _assign(self, target: ast.expr, value: Any, env: dict) -> None:
        if isinstance(target, ast.Name):
            env[target.id] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            vals = list(value) if isinstance(value, (list, tuple)) else None
            for i, el in enumerate(target.elts):
                if isinstance(el, ast.Starred):
                    el = el.value
                self._assign(el, vals[i] if vals and i < len(vals) else
                             Unknown("unpacking"), env)
        elif isinstance(target, ast.Attribute):
            obj = self._eval(target.value, env)
            name = target.attr
            if isinstance(obj, Mod):
                _set_attr(obj, name, value)
        elif isinstance(target, ast.Subscript):
            obj = self._eval(target.value, env)
            sl = _index(target.slice)
            key = self._eval(sl, env) if sl is not None else None
            if isinstance(obj, dict) and not isinstance(key, Unknown):
                obj[key] = value
            elif isinstance(obj, list) and isinstance(key, int) and -len(obj) <= key < len(obj):
                obj[key] = value
            elif isinstance(obj, Mod) and not isinstance(key, Unknown):
                _set_attr(obj, str(key), value)

    # ----------------------------------------------------------------- expressions
    def _safe_eval(self, node: ast.expr, env: dict) -> Any:
        try:
            return self._eval(node, env)
        except (_Abort, _Return):
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
        if name in _BUILTINS:
            return Builtin(name)
        if name in self.funcs:
            return ("func", self.funcs[name])
        if name in self.imports:
            return Builtin(self.imports[name])
        return Unknown(f"name {name!r} is not known")

    def _eval(self, node: ast.expr, env: dict) -> Any:
        self.steps += 1
        if self.steps > _MAX_STEPS:
            raise _Abort("evaluation too long")
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
            except _CompUnknown as e:
                return Unknown(str(e))
            return out
        if isinstance(node, ast.DictComp):
            d = {}
            try:
                self._comp(node.generators, 0, env, lambda e: d.__setitem__(
                    self._eval(node.key, e), self._eval(node.value, e)))
            except _CompUnknown as e:
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
            raise _CompUnknown(f"comprehension over an unknown iterable at line "
                               f"{self.line(for_in)}")
        for item in items:
            e = dict(env)
            self._assign(for_in.target, item, e)
            conds = [self._eval(c, e) for c in for_in.ifs]
            if any(isinstance(c, Unknown) for c in conds):
                raise _CompUnknown("comprehension filter depends on an unknown value")
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
            if len(v) > _MAX_LOOP:
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
            return bounded.binop(_BINOP_NAMES[name], a, b)
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

    # ----------------------------------------------------------------- calls
    def _call_args(self, node: ast.Call, env: dict) -> tuple[list, dict]:
        args: list = []
        kwargs: dict = {}
        for a in node.args:
            if isinstance(a, ast.Starred):
                items = self._iterate(self._eval(a.value, env), a)
                if items is None:
                    args.append(Unknown("*args not known"))
                else:
                    args.extend(items)
            else:
                args.append(self._eval(a, env))
        for k in node.keywords:
            v = self._eval(k.value, env)
            if k.arg is not None:
                kwargs[k.arg] = v
            elif isinstance(v, dict):
                kwargs.update(v)
            elif isinstance(v, ConfigObj):
                kwargs.update({**v.defaults, **v.fields})
        return args, kwargs

    def _call(self, node: ast.Call, env: dict) -> Any:
        # super().__init__(...)
        f = node.func
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Call) and \
                isinstance(f.value.func, ast.Name) and f.value.func.id == "super":
            if f.attr == "__init__":
                args, kwargs = self._call_args(node, env)
                self._super_init(env, args, kwargs, node)
            return None
        callee = self._eval(f, env)
        args, kwargs = self._call_args(node, env)
        if isinstance(callee, ClassRef):
            if self._is_module_class(callee.node):
                return self.instantiate(callee, args, kwargs, node)
            # a config dataclass: its fields over its defaults
            fields = dict(self._class_attrs(callee.node))
            init = self._method(callee.node, "__init__")
            if init is None:
                names = [s.target.id for s in callee.node.body
                         if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)]
                fields.update(dict(zip(names, args)))
            fields.update(kwargs)
            return ConfigObj(fields, self.defaults)
        if isinstance(callee, tuple) and callee and callee[0] == "func":
            self.depth += 1
            try:
                if self.depth > _MAX_DEPTH:
                    raise _Abort("recursion too deep")
                return self._call_function(callee[1], args, kwargs)
            finally:
                self.depth -= 1
        if isinstance(callee, Bound):
            return self._call_bound(callee, args, kwargs, node, env)
        if isinstance(callee, Builtin):
            return self._call_builtin(callee.name, args, kwargs, node)
        if isinstance(callee, Unknown):
            return Unknown(f"{self.code(f)} is not defined in this file")
        return Unknown("call not modelled")

    def _super_init(self, env: dict, args: list, kwargs: dict, node: ast.AST) -> None:
        owner = env.get("__class__")
        obj = env.get("__self__")
        if owner is None or obj is None:
            return
        for b in owner.bases:
            full = self._full(b)
            base = full.split(".")[-1]
            if base in self.classes:
                self._run_init(self.classes[base], obj, args, kwargs, node)
                return
            if full.startswith("torch.nn.") and base != "Module":
                _merge_into(obj, self._builtin_layer(base, args, kwargs, node))
                return
            if base and not full.startswith("torch.") and not _PARAM_FREE_BASE.search(base):
                # a library layer (transformers' RobertaLMHead …) builds weights preflight
                # does not see: the count cannot be complete
                msg = f"{base}.__init__ (a class from outside the analysed files) builds layers"
                self.note(node, msg)
                obj.params[f"<{base}>"] = Param(Unknown(msg))
                return

    def _call_bound(self, b: Bound, args: list, kwargs: dict, node: ast.AST,
                    env: dict) -> Any:
        obj, name = b.obj, b.name
        if isinstance(obj, list):
            if name == "append":
                obj.append(args[0] if args else None)
            elif name == "extend":
                items = self._iterate(args[0], node) if args else []
                if items is None:
                    obj.append(Unknown("extend with unknown"))
                else:
                    obj.extend(items)
            elif name == "insert" and len(args) == 2:
                obj.insert(args[0], args[1])
            elif name == "copy":
                return list(obj)
            return None
        if isinstance(obj, dict):
            if name == "items":
                return list(obj.items())
            if name == "keys":
                return list(obj.keys())
            if name == "values":
                return list(obj.values())
            if name == "get":
                return obj.get(args[0], args[1] if len(args) > 1 else None)
            if name == "update" and args and isinstance(args[0], dict):
                obj.update(args[0])
            return None
        if isinstance(obj, Mod):
            if name in ("register_buffer", "apply", "to", "train", "eval", "init_weights",
                        "requires_grad_", "reset_parameters", "_init_weights", "post_init",
                        "tie_weights", "half", "float", "bfloat16", "cuda", "cpu"):
                cls = self.classes.get(obj.kind)
                if name in ("init_weights", "_init_weights", "tie_weights", "post_init") \
                        and cls is not None and self._method(cls, name):
                    owner, fn = self._method(cls, name)
                    return self._call_function(fn, args, kwargs, self_obj=obj, owner=owner)
                return obj if name in ("to", "train", "eval", "half", "float", "bfloat16",
                                       "cuda", "cpu", "requires_grad_") else None
            if name == "register_parameter" and len(args) == 2:
                if isinstance(args[1], Param):
                    obj.params[str(args[0])] = args[1]
                return None
            if name == "add_module" and len(args) == 2:
                if isinstance(args[1], Mod):
                    obj.children[str(args[0])] = args[1]
                return None
            if name in ("append", "extend") and obj.kind in ("ModuleList", "Sequential"):
                items = [args[0]] if name == "append" else (self._iterate(args[0], node) or [])
                for it in items:
                    if isinstance(it, Mod):
                        obj.children[str(len(obj.children))] = it
                return None
            if name in ("parameters", "modules", "children", "named_parameters",
                        "named_modules", "numel", "size", "forward", "state_dict"):
                return Unknown(f"{name}() at init")
            cls = self.classes.get(obj.kind)
            if cls is not None:
                found = self._method(cls, name)
                if found:
                    owner, fn = found
                    self.depth += 1
                    try:
                        if self.depth > _MAX_DEPTH:
                            raise _Abort("recursion too deep")
                        return self._call_function(fn, args, kwargs, self_obj=obj, owner=owner)
                    finally:
                        self.depth -= 1
            return Unknown(f"method {name}")
        if isinstance(obj, Param):
            return obj if name in ("data", "to", "clone", "detach") else None
        if isinstance(obj, ClassRef):
            return Unknown(f"{obj.name}.{name}()")
        return Unknown(f"method {name}")

    def _call_builtin(self, name: str, args: list, kwargs: dict, node: ast.AST) -> Any:
        short = name.split(".")[-1]
        if name.startswith("torch.nn.") and not name.startswith("torch.nn.functional") and \
                not name.startswith("torch.nn.init") and not name.startswith("torch.nn.utils"):
            if short == "Parameter":
                t = args[0] if args else kwargs.get("data")
                if isinstance(t, Tensor):
                    return Param(_prod(t.shape), t.shape)
                if isinstance(t, Param):
                    return Param(t.numel, t.shape)
                self.note(node, f"nn.Parameter of an unknown tensor: "
                                f"{self.code(node)}")
                return Param(Unknown("nn.Parameter of unknown tensor"))
            return self._builtin_layer(short, args, kwargs, node)
        if name.startswith("torch.") and short in _TENSOR_CTORS:
            if short in ("tensor",):
                v = args[0] if args else None
                return Tensor((len(v),)) if isinstance(v, (list, tuple)) else Tensor(())
            if short == "arange":
                if args and all(isinstance(a, int) for a in args[:3]):
                    return Tensor((len(range(*args[:3])),))
                return Tensor((Unknown("arange"),))
            if short == "full":
                return Tensor(_shape_of(args[:1]))
            if short == "eye":
                n = args[0] if args else Unknown("eye")
                m = args[1] if len(args) > 1 else n
                return Tensor((n, m))
            shape = _shape_of(args) if args else tuple(kwargs.get("size") or ())
            return Tensor(shape)
        if name.startswith("torch.") and short in ("zeros_like", "ones_like", "randn_like",
                                                   "empty_like"):
            src = args[0] if args else None
            if isinstance(src, (Tensor, Param)):
                return Tensor(src.shape)
            return Tensor((Unknown("like"),))
        if name.startswith("transformers.") or name.split(".")[0] in ("transformers",):
            return self._hf_model(name, args, kwargs, node)
        if short == "OrderedDict":
            src = args[0] if args else []
            try:
                return dict(src)
            except Exception:
                return Unknown("OrderedDict of unknown items")
        if name.startswith("copy.deepcopy") or name == "deepcopy" or name.endswith(".deepcopy"):
            return _deepcopy(args[0]) if args else None
        if short in _BUILTINS and "." not in name:
            try:
                _check_builtin_args(short, args)
                return bounded.check_size(_BUILTINS[short](*args, **kwargs))
            except bounded.TooLarge as e:
                return Unknown(f"{short}() not computed: {e}")
            except Exception:
                return Unknown(f"{short}() of unknown values")
        if name.startswith("math."):
            fn = getattr(math, short, None)
            if fn is not None and not any(isinstance(a, Unknown) for a in args):
                try:
                    _check_builtin_args(short, args)
                    return bounded.check_size(fn(*args))
                except bounded.TooLarge as e:
                    return Unknown(f"math.{short}() not computed: {e}")
                except Exception:
                    pass
            return Unknown(f"math.{short}")
        return Unknown(f"{name} is not defined in this file")

    def _hf_model(self, name: str, args: list, kwargs: dict, node: ast.AST) -> Any:
        from preflight.models import catalog, formulas
        short = name.split(".")[-1]
        cls = name.split(".")[-2] if short == "from_pretrained" else short
        shape = None
        if cls.endswith("Config"):
            fields: dict = {}
            if short == "from_pretrained" and args and isinstance(args[0], str):
                hit = catalog.lookup(args[0])
                if hit is None:
                    return Unknown(f"config {args[0]!r} is not in the catalogue")
                fields = dict(hit[1])
            fields.update({k: v for k, v in kwargs.items() if not isinstance(v, Unknown)})
            return ConfigObj(fields, {})
        try:
            if short == "from_pretrained" and args and isinstance(args[0], str):
                hit = catalog.lookup(args[0])
                if hit:
                    shape = formulas.count(hit[0], hit[1], head=formulas.head_of_class(cls))
            elif args and isinstance(args[0], (ConfigObj, dict)):
                cfg = args[0].fields if isinstance(args[0], ConfigObj) else args[0]
                prefix = cls.lower()
                arch = next((a for c, a in formulas.CONFIG_CLASSES.items()
                             if prefix.startswith(c[:-len("Config")].lower())), None)
                if arch:
                    shape = formulas.count(arch, cfg, head=formulas.head_of_class(cls))
        except Exception:
            shape = None
        if shape is None:
            if cls.endswith("Config") or cls.endswith("Tokenizer"):
                return Unknown(cls)
            self.note(node, f"{self.code(node)} is not sized")
            return Mod(kind=cls, params={"_all": Param(Unknown(cls))})
        # expose the input embedding so that tying to it (`x.weight = enc.embeddings.
        # word_embeddings.weight`) shares one parameter
        emb = Param(shape.vocab * shape.hidden, (shape.vocab, shape.hidden))
        out = Mod(kind=cls, params={"_rest": Param(shape.params - emb.numel)})
        leaf = Mod(kind="Embedding", params={"weight": emb})
        if shape.family == "bert":
            out.children["embeddings"] = Mod(kind="Embeddings",
                                             children={"word_embeddings": leaf})
        elif shape.family == "gpt2":
            out.children["wte"] = leaf
        elif shape.family == "t5":
            out.children["shared"] = leaf
        else:
            out.children["embed_tokens"] = leaf
        return out

    # ----------------------------------------------------------------- torch.nn layers
    def _builtin_layer(self, name: str, args: list, kwargs: dict, node: ast.AST) -> Mod:
        code = self.code(node) if isinstance(node, ast.AST) else name
        sig = _LAYER_SIGS.get(name)
        m = Mod(kind=name)
        if name not in ("ModuleList", "Sequential", "ModuleDict", "ParameterList",
                        "ParameterDict"):
            # the layer's arguments as written, for the forward's shapes (models.forward)
            m.attrs["call"] = (list(args), dict(kwargs))
        if name in _NO_PARAM_LAYERS:
            return m
        if name in ("ModuleList", "Sequential", "ModuleDict", "ParameterList", "ParameterDict"):
            items: Any
            if name == "Sequential":
                items = args
                if len(args) == 1 and isinstance(args[0], dict):
                    items = args[0]
            else:
                items = args[0] if args else kwargs.get("modules", kwargs.get("values", []))
            if isinstance(items, dict):
                pairs = list(items.items())
            elif isinstance(items, (list, tuple)):
                pairs = [(str(i), v) for i, v in enumerate(items)]
            else:
                self.note(node, f"{name} of unknown contents: {code}")
                m.unknown.append(code)
                m.params["_unknown"] = Param(Unknown(name))
                return m
            for k, v in pairs:
                if isinstance(v, Mod):
                    m.children[str(k)] = v
                elif isinstance(v, Param):
                    m.params[str(k)] = v
                elif isinstance(v, Unknown):
                    self.note(node, f"{name} entry not known ({v.reason}): {code}")
                    m.unknown.append(code)
                    m.params[f"_unknown{k}"] = Param(Unknown(name))
            return m
        if sig is None:
            self.note(node, f"nn.{name} is not modelled: {code}")
            m.unknown.append(code)
            m.params["_unknown"] = Param(Unknown(name))
            return m
        a = _bind_sig(sig, args, kwargs)
        missing = [k for k, v in a.items() if isinstance(v, Unknown)]
        needed = _LAYER_NEEDS.get(name, set(sig_names(sig)))
        bad = [k for k in missing if k in needed]
        if bad:
            reasons = "; ".join(a[k].reason for k in bad)
            self.note(node, f"nn.{name} with unknown {', '.join(bad)} ({reasons}): {code}")
            m.params["_unknown"] = Param(Unknown(name))
            return m
        try:
            _LAYER_BUILD[name](m, a)
        except Exception as e:
            self.note(node, f"nn.{name} arguments not understood ({e}): {code}")
            m.params["_unknown"] = Param(Unknown(name))
        return m




def _split_lines(text: str) -> list[str]:
    """`text`'s lines with their endings, split where `ast` counts lines."""
    return re.split(r"(?<=\r\n)|(?<=\r)(?!\n)|(?<=\n)", text)


_INDENT = re.compile(r"[ \t\f]*")


def _kind(node: ast.AST) -> str:
    """A node's kind, as unknown pieces name it."""
    name = type(node).__name__
    return _KIND_NAMES.get(name, name)


class _CompUnknown(Exception):
    pass


def _dotted(node: Any) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    raise ValueError("not a dotted name")


def _set_attr(obj: Mod, name: str, value: Any) -> None:
    for d in (obj.params, obj.children, obj.attrs):
        d.pop(name, None)
    if isinstance(value, Mod):
        obj.children[name] = value
    elif isinstance(value, Param):
        obj.params[name] = value
    else:
        obj.attrs[name] = value


def _merge_into(obj: Mod, built: Mod) -> None:
    obj.params.update(built.params)
    obj.children.update(built.children)
    obj.attrs.update(built.attrs)
    obj.unknown.extend(built.unknown)


def _deepcopy(v: Any, memo: Optional[dict] = None) -> Any:
    memo = {} if memo is None else memo
    if id(v) in memo:
        return memo[id(v)]
    if isinstance(v, Mod):
        out = Mod(kind=v.kind, attrs=dict(v.attrs), unknown=list(v.unknown))
        memo[id(v)] = out
        out.params = {k: _deepcopy(p, memo) for k, p in v.params.items()}
        out.children = {k: _deepcopy(c, memo) for k, c in v.children.items()}
        return out
    if isinstance(v, Param):
        out = Param(v.numel, v.shape)
        memo[id(v)] = out
        return out
    if isinstance(v, list):
        return [_deepcopy(x, memo) for x in v]
    return v


# ----------------------------------------------------------------- layer signatures

def sig_names(sig: list) -> list[str]:
    return [s if isinstance(s, str) else s[0] for s in sig]


_REQ = object()

#: name → [param or (param, default)], in torch's positional order.
_LAYER_SIGS: dict[str, list] = {
    "Linear": ["in_features", "out_features", ("bias", True)],
    "Bilinear": ["in1_features", "in2_features", "out_features", ("bias", True)],
    "LazyLinear": ["out_features", ("bias", True)],
    "Embedding": ["num_embeddings", "embedding_dim", ("padding_idx", None)],
    "EmbeddingBag": ["num_embeddings", "embedding_dim"],
    "LayerNorm": ["normalized_shape", ("eps", 1e-5), ("elementwise_affine", True),
                  ("bias", True)],
    "RMSNorm": ["normalized_shape", ("eps", None), ("elementwise_affine", True)],
    "GroupNorm": ["num_groups", "num_channels", ("eps", 1e-5), ("affine", True)],
    "BatchNorm1d": ["num_features", ("eps", 1e-5), ("momentum", 0.1), ("affine", True)],
    "BatchNorm2d": ["num_features", ("eps", 1e-5), ("momentum", 0.1), ("affine", True)],
    "BatchNorm3d": ["num_features", ("eps", 1e-5), ("momentum", 0.1), ("affine", True)],
    "InstanceNorm1d": ["num_features", ("eps", 1e-5), ("momentum", 0.1), ("affine", False)],
    "InstanceNorm2d": ["num_features", ("eps", 1e-5), ("momentum", 0.1), ("affine", False)],
    "Conv1d": ["in_channels", "out_channels", "kernel_size", ("stride", 1), ("padding", 0),
               ("dilation", 1), ("groups", 1), ("bias", True)],
    "Conv2d": ["in_channels", "out_channels", "kernel_size", ("stride", 1), ("padding", 0),
               ("dilation", 1), ("groups", 1), ("bias", True)],
    "Conv3d": ["in_channels", "out_channels", "kernel_size", ("stride", 1), ("padding", 0),
               ("dilation", 1), ("groups", 1), ("bias", True)],
    "ConvTranspose1d": ["in_channels", "out_channels", "kernel_size", ("stride", 1),
                        ("padding", 0), ("output_padding", 0), ("groups", 1), ("bias", True)],
    "ConvTranspose2d": ["in_channels", "out_channels", "kernel_size", ("stride", 1),
                        ("padding", 0), ("output_padding", 0), ("groups", 1), ("bias", True)],
    "MultiheadAttention": ["embed_dim", "num_heads", ("dropout", 0.0), ("bias", True),
                           ("add_bias_kv", False), ("add_zero_attn", False), ("kdim", None),
                           ("vdim", None)],
    "RNN": ["input_size", "hidden_size", ("num_layers", 1), ("nonlinearity", "tanh"),
            ("bias", True), ("batch_first", False), ("dropout", 0.0),
            ("bidirectional", False)],
    "GRU": ["input_size", "hidden_size", ("num_layers", 1), ("bias", True),
            ("batch_first", False), ("dropout", 0.0), ("bidirectional", False)],
    "LSTM": ["input_size", "hidden_size", ("num_layers", 1), ("bias", True),
             ("batch_first", False), ("dropout", 0.0), ("bidirectional", False),
             ("proj_size", 0)],
    "GRUCell": ["input_size", "hidden_size", ("bias", True)],
    "LSTMCell": ["input_size", "hidden_size", ("bias", True)],
    "RNNCell": ["input_size", "hidden_size", ("bias", True)],
    "PReLU": [("num_parameters", 1)],
    "TransformerEncoderLayer": ["d_model", "nhead", ("dim_feedforward", 2048),
                                ("dropout", 0.1), ("activation", "relu"),
                                ("layer_norm_eps", 1e-5), ("batch_first", False),
                                ("norm_first", False), ("bias", True)],
    "TransformerDecoderLayer": ["d_model", "nhead", ("dim_feedforward", 2048),
                                ("dropout", 0.1), ("activation", "relu"),
                                ("layer_norm_eps", 1e-5), ("batch_first", False),
                                ("norm_first", False), ("bias", True)],
    "TransformerEncoder": ["encoder_layer", "num_layers", ("norm", None)],
    "TransformerDecoder": ["decoder_layer", "num_layers", ("norm", None)],
    "Transformer": [("d_model", 512), ("nhead", 8), ("num_encoder_layers", 6),
                    ("num_decoder_layers", 6), ("dim_feedforward", 2048), ("dropout", 0.1),
                    ("activation", "relu"), ("custom_encoder", None),
                    ("custom_decoder", None), ("layer_norm_eps", 1e-5),
                    ("batch_first", False), ("norm_first", False), ("bias", True)],
}

#: the arguments that change the parameter count (others may stay unknown)
_LAYER_NEEDS: dict[str, set[str]] = {
    "Linear": {"in_features", "out_features", "bias"},
    "Embedding": {"num_embeddings", "embedding_dim"},
    "LayerNorm": {"normalized_shape", "elementwise_affine", "bias"},
    "RMSNorm": {"normalized_shape", "elementwise_affine"},
    "MultiheadAttention": {"embed_dim", "bias", "add_bias_kv", "kdim", "vdim"},
    "TransformerEncoderLayer": {"d_model", "dim_feedforward", "bias"},
    "TransformerDecoderLayer": {"d_model", "dim_feedforward", "bias"},
    "Transformer": {"d_model", "num_encoder_layers", "num_decoder_layers",
                    "dim_feedforward", "bias", "custom_encoder", "custom_decoder"},
    "RNN": {"input_size", "hidden_size", "num_layers", "bias", "bidirectional"},
    "GRU": {"input_size", "hidden_size", "num_layers", "bias", "bidirectional"},
    "LSTM": {"input_size", "hidden_size", "num_layers", "bias", "bidirectional",
             "proj_size"},
}
for _n in ("BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "InstanceNorm1d", "InstanceNorm2d"):
    _LAYER_NEEDS[_n] = {"num_features", "affine"}
for _n in ("Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d"):
    _LAYER_NEEDS[_n] = {"in_channels", "out_channels", "kernel_size", "groups", "bias"}


def _bind_sig(sig: list, args: list, kwargs: dict) -> dict[str, Any]:
    out: dict[str, Any] = {}
    args = list(args)
    for s in sig:
        name, default = (s, _REQ) if isinstance(s, str) else s
        if args:
            out[name] = args.pop(0)
        elif name in kwargs:
            out[name] = kwargs[name]
        elif default is not _REQ:
            out[name] = default
        else:
            out[name] = Unknown(f"{name} not given")
    return out


def _p(m: Mod, name: str, *shape: int) -> None:
    m.params[name] = Param(_prod(shape), tuple(shape))


def _ntuple(v: Any, n: int) -> tuple:
    return tuple(v) if isinstance(v, (list, tuple)) else (v,) * n


def _linear(m: Mod, a: dict) -> None:
    i, o = a["in_features"], a["out_features"]
    m.attrs.update(in_features=i, out_features=o)
    _p(m, "weight", o, i)
    if a["bias"]:
        _p(m, "bias", o)


def _embedding(m: Mod, a: dict) -> None:
    m.attrs.update(num_embeddings=a["num_embeddings"], embedding_dim=a["embedding_dim"])
    _p(m, "weight", a["num_embeddings"], a["embedding_dim"])


def _norm(m: Mod, a: dict, *, has_bias: bool) -> None:
    shape = _ntuple(a["normalized_shape"], 1)
    if a.get("elementwise_affine", True):
        _p(m, "weight", *shape)
        if has_bias and a.get("bias", True):
            _p(m, "bias", *shape)


def _batchnorm(m: Mod, a: dict) -> None:
    if a["affine"]:
        _p(m, "weight", a["num_features"])
        _p(m, "bias", a["num_features"])


def _groupnorm(m: Mod, a: dict) -> None:
    if a["affine"]:
        _p(m, "weight", a["num_channels"])
        _p(m, "bias", a["num_channels"])


def _conv(n: int, transpose: bool = False):
    def build(m: Mod, a: dict) -> None:
        k = _ntuple(a["kernel_size"], n)
        i, o, g = a["in_channels"], a["out_channels"], a["groups"]
        if transpose:
            _p(m, "weight", i, o // g, *k)
        else:
            _p(m, "weight", o, i // g, *k)
        if a["bias"]:
            _p(m, "bias", o)
    return build


def _mha(m: Mod, a: dict) -> None:
    E = a["embed_dim"]
    kd = a["kdim"] if a["kdim"] is not None else E
    vd = a["vdim"] if a["vdim"] is not None else E
    if kd == E and vd == E:
        _p(m, "in_proj_weight", 3 * E, E)
    else:
        _p(m, "q_proj_weight", E, E)
        _p(m, "k_proj_weight", E, kd)
        _p(m, "v_proj_weight", E, vd)
    if a["bias"]:
        _p(m, "in_proj_bias", 3 * E)
    out = Mod(kind="NonDynamicallyQuantizableLinear")
    _linear(out, {"in_features": E, "out_features": E, "bias": a["bias"]})
    m.children["out_proj"] = out
    if a["add_bias_kv"]:
        _p(m, "bias_k", 1, 1, E)
        _p(m, "bias_v", 1, 1, E)


def _rnn(gates: int):
    def build(m: Mod, a: dict) -> None:
        H, L = a["hidden_size"], a["num_layers"]
        dirs = 2 if a["bidirectional"] else 1
        proj = a.get("proj_size", 0) or 0
        out_h = proj if proj else H
        for layer in range(L):
            inp = a["input_size"] if layer == 0 else out_h * dirs
            for d in range(dirs):
                sfx = f"_l{layer}" + ("_reverse" if d else "")
                _p(m, "weight_ih" + sfx, gates * H, inp)
                _p(m, "weight_hh" + sfx, gates * H, out_h)
                if a["bias"]:
                    _p(m, "bias_ih" + sfx, gates * H)
                    _p(m, "bias_hh" + sfx, gates * H)
                if proj:
                    _p(m, "weight_hr" + sfx, proj, H)
    return build


def _cell(gates: int):
    def build(m: Mod, a: dict) -> None:
        H = a["hidden_size"]
        _p(m, "weight_ih", gates * H, a["input_size"])
        _p(m, "weight_hh", gates * H, H)
        if a["bias"]:
            _p(m, "bias_ih", gates * H)
            _p(m, "bias_hh", gates * H)
    return build


def _enc_layer(m: Mod, a: dict, decoder: bool = False) -> None:
    d, ff, bias = a["d_model"], a["dim_feedforward"], a["bias"]
    attn = Mod(kind="MultiheadAttention")
    _mha(attn, {"embed_dim": d, "kdim": None, "vdim": None, "bias": bias,
                "add_bias_kv": False})
    m.children["self_attn"] = attn
    if decoder:
        cross = Mod(kind="MultiheadAttention")
        _mha(cross, {"embed_dim": d, "kdim": None, "vdim": None, "bias": bias,
                     "add_bias_kv": False})
        m.children["multihead_attn"] = cross
    for name, i, o in (("linear1", d, ff), ("linear2", ff, d)):
        lin = Mod(kind="Linear")
        _linear(lin, {"in_features": i, "out_features": o, "bias": bias})
        m.children[name] = lin
    for k in range(3 if decoder else 2):
        n = Mod(kind="LayerNorm")
        _norm(n, {"normalized_shape": d, "bias": bias}, has_bias=True)
        m.children[f"norm{k + 1}"] = n


def _stack(m: Mod, a: dict, key: str) -> None:
    layer = a[key]
    if not isinstance(layer, Mod) or not isinstance(a["num_layers"], int):
        raise ValueError("layer or num_layers not known")
    layers = Mod(kind="ModuleList")
    for i in range(a["num_layers"]):
        layers.children[str(i)] = _deepcopy(layer)
    m.children["layers"] = layers
    if isinstance(a["norm"], Mod):
        m.children["norm"] = a["norm"]


def _transformer(m: Mod, a: dict) -> None:
    d, ff, bias = a["d_model"], a["dim_feedforward"], a["bias"]

    def norm() -> Mod:
        n = Mod(kind="LayerNorm")
        _norm(n, {"normalized_shape": d, "bias": bias}, has_bias=True)
        return n
    for key, count, dec in (("encoder", a["num_encoder_layers"], False),
                            ("decoder", a["num_decoder_layers"], True)):
        custom = a[f"custom_{key}"]
        if isinstance(custom, Mod):
            m.children[key] = custom
            continue
        layer = Mod(kind="TransformerDecoderLayer" if dec else "TransformerEncoderLayer")
        _enc_layer(layer, {"d_model": d, "dim_feedforward": ff, "bias": bias}, decoder=dec)
        stack = Mod(kind=key)
        _stack(stack, {"layer": layer, "num_layers": count, "norm": norm()}, "layer")
        m.children[key] = stack


_LAYER_BUILD = {
    "Linear": _linear,
    "Bilinear": lambda m, a: (_p(m, "weight", a["out_features"], a["in1_features"],
                                 a["in2_features"]),
                              a["bias"] and _p(m, "bias", a["out_features"])),
    "Embedding": _embedding,
    "EmbeddingBag": _embedding,
    "LayerNorm": lambda m, a: _norm(m, a, has_bias=True),
    "RMSNorm": lambda m, a: _norm(m, a, has_bias=False),
    "GroupNorm": _groupnorm,
    "BatchNorm1d": _batchnorm, "BatchNorm2d": _batchnorm, "BatchNorm3d": _batchnorm,
    "InstanceNorm1d": _batchnorm, "InstanceNorm2d": _batchnorm,
    "Conv1d": _conv(1), "Conv2d": _conv(2), "Conv3d": _conv(3),
    "ConvTranspose1d": _conv(1, True), "ConvTranspose2d": _conv(2, True),
    "MultiheadAttention": _mha,
    "RNN": _rnn(1), "GRU": _rnn(3), "LSTM": _rnn(4),
    "RNNCell": _cell(1), "GRUCell": _cell(3), "LSTMCell": _cell(4),
    "PReLU": lambda m, a: _p(m, "weight", a["num_parameters"]),
    "TransformerEncoderLayer": _enc_layer,
    "TransformerDecoderLayer": lambda m, a: _enc_layer(m, a, decoder=True),
    "TransformerEncoder": lambda m, a: _stack(m, a, "encoder_layer"),
    "TransformerDecoder": lambda m, a: _stack(m, a, "decoder_layer"),
    "Transformer": _transformer,
}

_BUILTINS: dict[str, Any] = {
    "range": range, "len": len, "int": int, "float": float, "min": min, "max": max,
    "abs": abs, "sum": sum, "list": list, "tuple": tuple, "dict": dict, "zip":
    lambda *a: list(zip(*a)), "enumerate": lambda *a: list(enumerate(*a)), "str": str,
    "bool": bool, "round": round, "reversed": lambda x: list(reversed(x)),
    "sorted": sorted, "isinstance": lambda *a: Unknown("isinstance"), "print":
    lambda *a, **k: None, "divmod": divmod, "pow": pow, "any": any, "all": all,
    "getattr": lambda o, n, *d: (o.get(n) if isinstance(o, ConfigObj) and not d else
                                 (o.fields.get(n, o.defaults.get(n, d[0]))
                                  if isinstance(o, ConfigObj) else Unknown("getattr"))),
    "hasattr": lambda o, n: (n in o.fields or n in o.defaults) if isinstance(o, ConfigObj)
    else Unknown("hasattr"),
}


_BINOP_NAMES = {"Add": "add", "Subtract": "sub", "Multiply": "mul", "Divide": "truediv",
                "FloorDivide": "floordiv", "Modulo": "mod", "Power": "pow", "BitOr": "or",
                "BitAnd": "and", "BitXor": "xor", "LeftShift": "lshift",
                "RightShift": "rshift"}
#: builtins whose cost grows with an integer argument (not with a sequence's length)
_COSTLY_INT_ARG = {"factorial", "comb", "perm", "pow", "isqrt", "prod"}


def _check_builtin_args(name: str, args: list) -> None:
    """TooLarge when a builtin would walk a huge range (`sum(range(10**12))`) or grow a
    huge integer (`math.factorial(10**6)`, `pow(10, 10**9)`)."""
    for a in args:
        if isinstance(a, range):
            try:
                n = len(a)
            except OverflowError:
                n = bounded.MAX_ITEMS + 1
            if n > bounded.MAX_ITEMS and name not in ("range", "len"):
                raise bounded.TooLarge(f"a range of over {bounded.MAX_ITEMS:,} items")
        bounded.check_size(a)
    if name == "pow" and len(args) == 2:
        bounded.binop("pow", args[0], args[1])
    elif name in _COSTLY_INT_ARG and any(isinstance(a, int) and abs(a) > 10_000 for a in args):
        raise bounded.TooLarge(f"{name}() of an argument over 10,000")


# ----------------------------------------------------------------- totals

def distinct_params(root: Mod) -> Iterator[Any]:
    """Every parameter of the module tree once (a shared module or a tied weight counts
    once, as `nn.Module.parameters()` yields it)."""
    seen: set[int] = set()
    visited: set[int] = set()
    stack = [root]
    while stack:
        m = stack.pop()
        if id(m) in visited:
            continue
        visited.add(id(m))
        for p in m.params.values():
            if id(p) not in seen:
                seen.add(id(p))
                yield p
        stack.extend(m.children.values())


def _total(root: Mod) -> tuple[Any, list[str]]:
    numels = [p.numel for p in distinct_params(root)]
    known = all(isinstance(n, int) for n in numels)
    return (sum(numels) if known else None), []


def count_modules(module: ModuleLike, class_name: str, config: Optional[dict] = None, *,
                  args: Optional[list] = None, kwargs: Optional[dict] = None
                  ) -> tuple[Optional[int], list[str]]:
    """Parameters of `class_name(*args, **kwargs)` defined in `module`, built with `config`.

    `config` holds the resolved config fields (the object its `__init__` reads as
    `config.x`). Returns (count or None, unknown pieces with their lines). A count of None
    always comes with at least one unknown piece saying why.
    """
    n, pieces, _ = build_modules(module, class_name, config, args=args, kwargs=kwargs)
    return n, pieces


def build_modules(module: ModuleLike, class_name: str, config: Optional[dict] = None, *,
                  args: Optional[list] = None, kwargs: Optional[dict] = None
                  ) -> tuple[Optional[int], list[str], Optional[tuple[Mod, dict]]]:
    """`count_modules`, and the module tree built with the module's classes (name → `ast`
    ClassDef), for a reading of its `forward` (None when the count failed)."""
    try:
        ev = _Evaluator(module, config)
    except Exception as e:  # a module that does not parse
        return None, [f"cannot read the module: {e}"], None
    if class_name not in ev.classes:
        return None, [f"class {class_name!r} is not defined in this file"], None
    cls = ev.classes[class_name]
    def conv1(a: Any) -> Any:
        if a is CONFIG:
            return ev.config
        if isinstance(a, str) and a in ev.classes and a != class_name:
            return ClassRef(a, ev.classes[a])
        return a
    conv = [conv1(a) for a in args or []]
    kwargs = {k: conv1(v) for k, v in (kwargs or {}).items()}
    try:
        root = ev.instantiate(ClassRef(class_name, cls), conv, dict(kwargs or {}), cls)
    except _Abort as e:
        return None, [*ev.pieces, f"{class_name}: {e}"], None
    except _CompUnknown as e:
        return None, [*ev.pieces, str(e)], None
    except Exception as e:  # never a traceback for odd code
        return None, [*ev.pieces, f"{class_name}: construct not modelled ({type(e).__name__}: {e})"], None
    total, _ = _total(root)
    if ev.fatal:
        total = None
    if total is None:
        return None, ev.pieces or [f"{class_name}: a parameter size is not known"], None
    return total, ev.pieces, (root, dict(ev.classes))


def module_classes(module: ModuleLike) -> list[str]:
    """Names of the nn.Module subclasses defined at the top level of `module`."""
    try:
        ev = _Evaluator(module, {})
    except Exception:
        return []
    return [n for n, c in ev.classes.items() if ev._is_module_class(c)]


def count_expression(module: ModuleLike, expression: str, config: Optional[dict] = None
                     ) -> tuple[Optional[int], list[str]]:
    """Parameters of the model an expression builds in `module`'s scope.

    `expression` is Python source such as `"ResNet(Bottleneck, [3, 4, 6, 3])"` or
    `"create_model()"` (a factory function defined in the module).
    """
    try:
        node = ast.parse(expression.strip(), mode="eval").body
        ev = _Evaluator(module, config)
        # the expression's own nodes have no line in the module
        ev.foreign = {id(n): expression.strip() for n in ast.walk(node)}
        value = ev._eval(node, {})
    except _Abort as e:
        return None, [f"{expression}: {e}"]
    except Exception as e:
        return None, [f"{expression}: not understood ({type(e).__name__}: {e})"]
    if not isinstance(value, Mod):
        reason = value.reason if isinstance(value, Unknown) else "it does not build a module"
        return None, [*ev.pieces, f"{expression}: {reason}"]
    total, _ = _total(value)
    if ev.fatal or total is None:
        return None, ev.pieces or [f"{expression}: a parameter size is not known"]
    return total, ev.pieces
