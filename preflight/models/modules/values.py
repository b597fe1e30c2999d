"""The values the static module counter computes with: a module's source (`Code`), the
modules and parameters it builds (`Mod`, `Param`), the tensors, class references, bound
methods, library callables and config objects its expressions evaluate to, `Unknown` for
whatever it cannot know, and the limits that keep one evaluation small."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Optional, Union


MAX_STEPS = 200_000
#: a loop or comprehension over more items is not unrolled (its modules are not counted):
#: each item builds modules, and no model repeats a block 4,096 times
MAX_LOOP = 4096
MAX_DEPTH = 40


class Code(NamedTuple):
    """A Python file as the counter reads it: its text and its `ast` tree (whose positions
    index that text). The text gives each unknown piece its source as written. `linked`:
    the repository's modules it imports from, as (path, text, tree), whose classes and
    functions the counter follows where the file itself does not define the name."""

    text: Optional[str]
    tree: ast.Module
    linked: tuple = ()


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


class FunctionReturn(Exception):
    def __init__(self, value: Any) -> None:
        self.value = value


class Abort(Exception):
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

#: stands for "the config object" in `count_modules(args=…)`
CONFIG = object()


def shape_prod(xs: Any) -> Any:
    if isinstance(xs, (list, tuple)):
        out = 1
        for x in xs:
            if not isinstance(x, int):
                return Unknown("non-integer shape")
            out *= x
        return out
    return xs


def shape_of(args: list) -> tuple:
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        return tuple(args[0])
    return tuple(args)


class CompUnknown(Exception):
    pass


def set_attr(obj: Mod, name: str, value: Any) -> None:
    for d in (obj.params, obj.children, obj.attrs):
        d.pop(name, None)
    if isinstance(value, Mod):
        obj.children[name] = value
    elif isinstance(value, Param):
        obj.params[name] = value
    else:
        obj.attrs[name] = value


def merge_into(obj: Mod, built: Mod) -> None:
    obj.params.update(built.params)
    obj.children.update(built.children)
    obj.attrs.update(built.attrs)
    obj.unknown.extend(built.unknown)


def deepcopy_value(v: Any, memo: Optional[dict] = None) -> Any:
    memo = {} if memo is None else memo
    if id(v) in memo:
        return memo[id(v)]
    if isinstance(v, Mod):
        out = Mod(kind=v.kind, attrs=dict(v.attrs), unknown=list(v.unknown))
        memo[id(v)] = out
        out.params = {k: deepcopy_value(p, memo) for k, p in v.params.items()}
        out.children = {k: deepcopy_value(c, memo) for k, c in v.children.items()}
        return out
    if isinstance(v, Param):
        out = Param(v.numel, v.shape)
        memo[id(v)] = out
        return out
    if isinstance(v, list):
        return [deepcopy_value(x, memo) for x in v]
    return v
