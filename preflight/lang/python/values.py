"""The values of the static evaluator: what a name holds while a script is read.

Every value is a `V`: the value, how it was known (origin) and where it was written
(line, col, and the path of another module of the repository when a call was followed
into one). What cannot be known statically is a `V` with value `UNK` and a reason. The
evaluator's own objects — a module attribute by name (`Dotted`), the result of a call it
cannot run (`Obj`), a function or class of the file (`FuncVal`, `ClassVal`), the parsed
command line (`ArgsNS`), an arguments dataclass (`DCInst`) — live inside `V`s; `plain`
turns any of them into a JSON-able value. The small helpers that compare, show and combine
values are here too.
"""

from __future__ import annotations

import ast
from typing import Any, Optional

#: the file whose code is being evaluated, when it is not the analysed file itself
CUR_PATH: list = [None]


def current_path() -> Optional[str]:
    """The other module being followed into, or None for the analysed file."""
    return CUR_PATH[0]


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
        self.path = path if path is not None else CUR_PATH[0]

    @property
    def known(self) -> bool:
        return self.value is not UNK

    def __repr__(self) -> str:
        return f"V({self.value!r}, {self.origin}, {self.line}:{self.col})"


def unk(reason: str, line: int = 0, col: int = 0, default: Any = None) -> V:
    return V(UNK, "unknown", line, col, reason, default)


#: the key under which a call's `**mapping` not known statically is kept among its keywords
SPLAT = "\0unknown"


def splat_fields(fields: dict[str, V], given: Any, kwargs: dict[str, V], line: int,
                 col: int) -> dict[str, V]:
    """A config's fields when its call passes `**mapping` that is not known statically
    (`Config(**meta["model_config"])`): a field the call does not set by name may be set by
    the mapping, so its default is unknown. `given` names the fields set explicitly."""
    splat = kwargs.get(SPLAT)
    if splat is None:
        return fields
    return {k: v if k in given else unk(f"{k}: may be set by {splat.reason}", line, col)
            for k, v in fields.items()}


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
    __slots__ = ("node", "name", "bases", "fields", "is_dataclass", "module")

    def __init__(self, node: ast.ClassDef, bases: list[str], is_dataclass: bool) -> None:
        self.node = node
        self.name = node.name
        self.bases = bases
        self.fields: dict[str, tuple[ast.AST, Optional[ast.AST], Optional[ast.AST]]] = {}
        self.is_dataclass = is_dataclass
        #: the other module of the repository it is defined in (its names, lines and path
        #: read there); None for a class of the file being read
        self.module: Any = None


class ArgsNS:
    """`args` from `parser.parse_args()`: attributes come from the file's add_argument calls."""

    __slots__ = ("attrs",)

    def __init__(self) -> None:
        self.attrs: dict[str, V] = {}


class AttrDict(dict):
    """A document read by attribute as well as by key (`cfg.train.lr`): an OmegaConf
    config, an EasyDict, a config module's constants."""

    __slots__ = ()


#: the `cls` of a DCInst that stands for a composed configuration (an OmegaConf merge, a
#: config module's constants): its sections nest as dicts, read by name like fields
COMPOSED = "<composed configuration>"


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


class _Missing:
    pass


MISSING = _Missing()


def combine(vals: list[V], value: Any, line: int, col: int, what: str) -> V:
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


def as_v(x: Any, parent: V, line: int, col: int) -> V:
    if isinstance(x, V):
        return x
    return V(x, parent.origin, parent.line, parent.col, parent.reason)


def truthy(x: Any) -> bool:
    if isinstance(x, (Obj, Dotted, ArgsNS, DCInst, FuncVal, ClassVal)):
        return True
    return bool(x)


def cmpval(x: Any) -> Any:
    if isinstance(x, Dotted):
        return x.name
    if isinstance(x, (list, tuple)):
        return type(x)(plain(i) for i in x)
    if isinstance(x, dict):
        return {k: plain(v) for k, v in x.items()}
    return x


def same(a: Any, b: Any) -> bool:
    try:
        return type(a) is type(b) and plain(a) == plain(b)
    except Exception:  # noqa: BLE001
        return False


def hashable(x: Any) -> bool:
    try:
        hash(x)
        return True
    except TypeError:
        return False


def show(v: Any) -> str:
    if isinstance(v, V):
        if not v.known:
            return "unknown"
        if isinstance(v.value, Obj):
            return f"{v.value.short}(...)"
        p = plain(v)
        s = repr(p)
        return s if len(s) <= 60 else s[:57] + "..."
    return "unset"
