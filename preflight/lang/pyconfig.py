"""Python config files, read statically: a module whose top level only assigns values.

Vision and detection toolkits write their training configs as Python modules that are
executed by the framework's loader, never by the job itself:

* mmengine / mmcv style — module-level assignments (`model = dict(type='X', ...)`,
  `optim_wrapper = dict(...)`, `train_dataloader = dict(batch_size=16)`), inheritance by
  `_base_ = ['../_base_/models/x.py', ...]` (each base's variables merged under the
  file's: dicts key by key, `_delete_=True` replacing instead), `{{_base_.var}}` and
  `_base_.var` references to a base's variables, and the pure-Python form `with
  read_base(): from .._base_.x import *` with `var.update(...)`;
* detectron2 LazyConfig — `from ..common.x import model` (another config file's variable),
  `LazyCall(Cls)(a=1)` / `L(Cls)(...)` (a dict with `_target_`), attribute assignments
  into those dicts (`dataloader.train.total_batch_size = 64`, `train.amp.enabled = True`).

`read(path, text, read_file)` evaluates such a file into a `PyConfig`: a nested dict of
plain values, the position of every key (and the file that wrote it, a base's or the
file's own), the files read and the diagnostics. Nothing is imported or run: the value
language is literals, `dict(...)` / `list(...)`, names bound earlier, arithmetic through
`preflight.lang.bounded`, f-strings, subscripts and attributes of dicts. Any other
expression is an `Opaque` value carrying its reason (an adapter reads it as unknown).

Budgets keep the reading linear: at most `MAX_FILES` files, `MAX_NODES` evaluated nodes
over all of them, expressions nested at most `MAX_DEPTH` deep. `is_config_module` tells a
config file from a script (only assignments, imports and `with read_base()` at its top).
"""

from __future__ import annotations

import ast
import copy
import os
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from preflight.lang import bounded
from preflight.lang.python.source import last_name

#: base and imported config files read per config (the file itself included)
MAX_FILES = 24
#: expression nodes evaluated over all of them
MAX_NODES = 200_000
#: nesting of expressions and dicts followed
MAX_DEPTH = 64
#: a larger file is not read as a config
MAX_BYTES = 512_000

Pos = tuple[str, int, int]          # (file, line, col)


class Opaque:
    """A value the reader cannot know statically: a call of a function, a comprehension,
    a name from a library; `why` says which."""

    __slots__ = ("why", "line")

    def __init__(self, why: str, line: int = 0) -> None:
        self.why, self.line = why, line

    def __repr__(self) -> str:
        return f"Opaque({self.why!r})"

    def __deepcopy__(self, memo: dict) -> "Opaque":
        return self


class Name(str):
    """A class or module named in the config (`type=ImageClassifier` imported from a
    library, `L(torch.optim.SGD)`): its dotted name, compared as a string."""


class CDict(dict):
    """A dict of the config that remembers where each key was written: key → (file, line,
    col)."""

    __slots__ = ("at",)

    def __init__(self, *a: Any, **k: Any) -> None:
        super().__init__(*a, **k)
        self.at: dict[Any, Pos] = {}

    def __deepcopy__(self, memo: dict) -> "CDict":
        out = CDict()
        memo[id(self)] = out
        for k, v in self.items():
            out[k] = copy.deepcopy(v, memo)
        out.at = dict(self.at)
        return out


@dataclass
class PyConfig:
    """A Python config file's value: `cfg` the top-level variables (private names and
    imported modules left out), `pos` every key path's (line, col), `where` its file,
    `files` the base / imported config files read, `notes` (file, line, col, message)."""

    cfg: dict
    pos: dict[tuple, tuple[int, int]] = field(default_factory=dict)
    where: dict[tuple, str] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)
    notes: list[tuple[str, int, int, str]] = field(default_factory=list)


# --------------------------------------------------------------------------- recognising

_CONFIG_HINT = re.compile(r"^(_base_\s*=|with\s+read_base\(\)|\w+(\.\w+)*\s*=\s*(dict\(|L\(|"
                          r"LazyCall\(|get_config\(|OmegaConf\.create\()|"
                          r"from\s+\.+\w*[\w.]*\s+import\s)", re.M)
#: calls a config's top level may make without running anything of the job
_TOP_CALLS = frozenset({"update", "merge", "merge_from_dict", "setdefault"})


def looks_like_config(text: str) -> bool:
    """Cheap text test: does the file assign a `_base_`, a `dict(...)`, a `LazyCall(...)`
    at its top level, or import from a relative config module?"""
    return _CONFIG_HINT.search(text) is not None


def _config_stmt(st: ast.stmt) -> bool:
    t = type(st)
    if t in (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Import, ast.ImportFrom, ast.Pass,
             ast.Delete):
        return True
    if t is ast.With:
        return all(_config_stmt(s) for s in st.body)
    if t is ast.If:
        return all(_config_stmt(s) for s in st.body + st.orelse)
    if t is ast.Expr:
        v = st.value
        if isinstance(v, ast.Constant):
            return True
        return isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute) and \
            v.func.attr in _TOP_CALLS
    return False


def is_config_module(text: str, tree: Optional[ast.Module] = None) -> bool:
    """Is this Python file a config (read as a document) rather than a script? Its top
    level holds only assignments, imports, `with read_base():` and `x.update(...)`, and it
    assigns a dict, a LazyCall or a `_base_` (a module of plain constants stays a module the
    scripts that import or `exec` it read)."""
    if not looks_like_config(text):
        return False
    if tree is None:
        try:
            tree = ast.parse(_pre_substitute(text) if "_base_" in text else text)
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            return False
    body = tree.body
    return bool(body) and all(_config_stmt(st) for st in body) and any(
        isinstance(st, (ast.Assign, ast.With, ast.ImportFrom, ast.Expr)) for st in body)


# --------------------------------------------------------------------------- reading


class _Budget:
    __slots__ = ("nodes", "files")

    def __init__(self) -> None:
        self.nodes = 0
        self.files = 0


class _Spent(Exception):
    """The node budget is spent: the rest of the file is not read."""


_BASE_REF = re.compile(r"\{\{\s*_base_\.([\w.]+)\s*\}\}")
_BASE_STR = re.compile(r"\{\{\s*_base_\.([\w.]+)\s*\}\}|\{_base_\.([\w.]+)\}")


def _pre_substitute(text: str) -> str:
    """`model = {{_base_.model}}` is not Python until the loader substitutes it: an unquoted
    reference becomes the string `"{_base_.model}"`, of the same length, so every column
    stays where it was written."""
    out, last = [], 0
    for m in _BASE_REF.finditer(text):
        before = text[m.start() - 1] if m.start() else ""
        after = text[m.end()] if m.end() < len(text) else ""
        if before in "'\"" and after in "'\"" and before:
            continue
        out.append(text[last:m.start()])
        out.append('"' + m.group(0)[1:-1] + '"')
        last = m.end()
    out.append(text[last:])
    return "".join(out)


_BIN = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "truediv",
        ast.FloorDiv: "floordiv", ast.Mod: "mod", ast.Pow: "pow"}


class _Reader:
    """One config file evaluated: its top-level names (`scope`) and where each was set."""

    def __init__(self, path: str, text: str, read_file: Callable[[str], Optional[str]],
                 budget: _Budget, out: PyConfig, depth: int = 0) -> None:
        self.path, self.read_file, self.budget, self.out = path, read_file, budget, out
        self.text = text
        self.depth = depth
        self.scope: CDict = CDict()
        self.base: CDict = CDict()          # `_base_.x` and `{{_base_.x}}` refer here
        self.modules: set[str] = set()      # names bound to imported modules
        self.chain: frozenset = frozenset({os.path.abspath(path)})   # the files above it

    # ------------------------------------------------------------- files
    def note(self, node: Any, msg: str) -> None:
        line = getattr(node, "lineno", 1) if node is not None else 1
        col = getattr(node, "col_offset", 0) + 1 if node is not None else 1
        self.out.notes.append((self.path, line, col, msg))

    def at(self, node: ast.AST) -> Pos:
        return (self.path, node.lineno, node.col_offset + 1)

    def load(self, rel: str, node: ast.AST) -> Optional[CDict]:
        """The variables of another config file (`_base_` entry, relative import)."""
        if "::" in rel:
            self.note(node, f"`{rel}` is a config of the installed {rel.split('::')[0]} "
                            "package, not of the project; not read")
            return None
        p = os.path.normpath(os.path.join(os.path.dirname(self.path), rel))
        return self.load_path(p, rel, node)

    def load_path(self, p: str, shown: str, node: ast.AST) -> Optional[CDict]:
        if os.path.abspath(p) in self.chain:
            self.note(node, f"{shown} inherits from itself; not read again")
            return None
        if self.budget.files >= MAX_FILES or self.depth >= 8:
            self.note(node, f"{shown}: more than {MAX_FILES} config files or 8 levels of "
                            "inheritance; not read")
            return None
        text = self.read_file(p)
        if text is None:
            self.note(node, f"config file {shown} not found")
            return None
        if len(text) > MAX_BYTES:
            self.note(node, f"config file {shown} is over {MAX_BYTES // 1000} KB; not read")
            return None
        self.budget.files += 1
        if p not in self.out.files:
            self.out.files.append(p)
        sub = _Reader(p, text, self.read_file, self.budget, self.out, self.depth + 1)
        sub.chain = self.chain | {os.path.abspath(p)}
        sub.run()
        return sub.scope

    # ------------------------------------------------------------- statements
    def run(self) -> None:
        text = _pre_substitute(self.text) if "_base_" in self.text else self.text
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError, MemoryError, RecursionError) as e:
            line = getattr(e, "lineno", None) or 1
            self.out.notes.append((self.path, line, getattr(e, "offset", None) or 1,
                                   f"cannot parse Python config: {getattr(e, 'msg', e)}"))
            return
        body = tree.body
        # `_base_` first: the file's own assignments are merged over its bases' variables
        for st in body:
            if isinstance(st, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "_base_"
                                                  for t in st.targets):
                self.bases(st)
        try:
            self.block(body)
        except _Spent:
            self.note(None, f"over {MAX_NODES:,} expressions in this config; the rest not read")
        if self.base:
            # the file's variables are merged over its bases' once it has run (a base's
            # variable is reached in the file only as `_base_.x` / `{{_base_.x}}`)
            combined = copy.deepcopy(self.base)
            merge(combined, self.scope)
            self.scope = combined

    def bases(self, st: ast.Assign) -> None:
        v = self.ev(st.value)
        names = [v] if isinstance(v, str) else v if isinstance(v, list) else []
        for b in names:
            if not isinstance(b, str):
                self.note(st, "a `_base_` entry that is not a path; not read")
                continue
            got = self.load(b, st)
            if got is not None:
                for k, val in got.items():
                    if k in self.base and k in got.at:
                        self.note(st, f"`{k}` is set by two base files; the later one is read")
                    self.base[k] = val
                    self.base.at[k] = got.at.get(k, self.at(st))

    def block(self, body: list[ast.stmt]) -> None:
        for st in body:
            self.stmt(st)

    def stmt(self, st: ast.stmt) -> None:
        t = type(st)
        if t is ast.Assign:
            if any(isinstance(x, ast.Name) and x.id == "_base_" for x in st.targets):
                return
            val = self.ev(st.value)
            for tgt in st.targets:
                self.assign(tgt, val, st)
        elif t is ast.AnnAssign and st.value is not None:
            self.assign(st.target, self.ev(st.value), st)
        elif t is ast.AugAssign and isinstance(st.target, ast.Name):
            cur = self.scope.get(st.target.id)
            op = _BIN.get(type(st.op))
            rhs = self.ev(st.value)
            val: Any = Opaque(f"`{st.target.id}` changed by an operation not read", st.lineno)
            if op and not isinstance(cur, Opaque) and not isinstance(rhs, Opaque):
                val = self.arith(op, cur, rhs, st)
            self.assign(st.target, val, st)
        elif t is ast.ImportFrom:
            self.import_from(st)
        elif t is ast.Import:
            for a in st.names:
                name = a.asname or a.name.split(".")[0]
                self.scope[name] = Name(a.name if a.asname else name)
                self.modules.add(name)
        elif t is ast.With:
            self.block(st.body)
        elif t is ast.Delete:
            for tgt in st.targets:
                self.delete(tgt)
        elif t is ast.If:
            self.branch(st)
        elif t is ast.Expr and isinstance(st.value, ast.Call):
            self.method_call(st.value)

    def branch(self, st: ast.If) -> None:
        test = self.ev(st.test)
        if isinstance(test, (bool, int, str)) and not isinstance(test, Opaque):
            self.block(st.body if test else st.orelse)
            return
        # a condition the file cannot decide: what either branch sets is not known
        for s in ast.walk(st):
            if isinstance(s, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                for tgt in (s.targets if isinstance(s, ast.Assign) else [s.target]):
                    if isinstance(tgt, ast.Name):
                        self.scope[tgt.id] = Opaque(
                            f"set under `if {ast.unparse(st.test)[:80]}` (line {st.lineno}), "
                            "not decided statically", s.lineno)
                        self.scope.at[tgt.id] = self.at(tgt)

    def import_from(self, st: ast.ImportFrom) -> None:
        mod = st.module or ""
        found: Optional[CDict] = None
        if st.level and mod:
            # `from ..common.train import train`: ../common/train.py beside this file
            found = self.load("/".join([".."] * (st.level - 1) + mod.split(".")) + ".py", st)
        elif not st.level:
            p = self.absolute_module(mod)
            if p is not None:
                found = self.load_path(p, mod.replace(".", "/") + ".py", st)
        for a in st.names:
            if a.name == "*":
                if found is not None:
                    for k, v in found.items():
                        if not k.startswith("_"):
                            self.scope[k] = copy.deepcopy(v)
                            self.scope.at[k] = found.at.get(k, self.at(st))
                continue
            name = a.asname or a.name
            if found is not None and a.name in found:
                self.scope[name] = copy.deepcopy(found[a.name])
                self.scope.at[name] = found.at.get(a.name, self.at(st))
            elif found is not None:
                self.scope[name] = Opaque(f"`{a.name}` is not set in {mod}", st.lineno)
            else:
                self.scope[name] = Name(f"{mod}.{a.name}" if mod else a.name)

    def absolute_module(self, mod: str) -> Optional[str]:
        """`from configs.common.x import y`: a file of the repository above the config."""
        if not mod or mod.split(".")[0] in ("mmengine", "mmcv", "detectron2", "torch"):
            return None
        d = os.path.dirname(os.path.abspath(self.path))
        parts = mod.split(".")
        for _ in range(6):
            cand = os.path.join(d, *parts) + ".py"
            if os.path.isfile(cand):
                return os.path.relpath(cand) if not os.path.isabs(self.path) else cand
            nd = os.path.dirname(d)
            if nd == d:
                break
            d = nd
        return None

    def method_call(self, call: ast.Call) -> None:
        """`model.update(dict(...))` / `train.update(k=v)`: a recursive merge."""
        f = call.func
        if not isinstance(f, ast.Attribute) or f.attr not in ("update", "merge"):
            return
        obj = self.ev(f.value)
        if not isinstance(obj, dict):
            return
        for a in call.args:
            v = self.ev(a)
            if isinstance(v, dict):
                merge(obj, v)
        kw = self.kwargs(call)
        merge(obj, kw)

    def delete(self, tgt: ast.AST) -> None:
        """`del model.head.loss` / `del cfg['k']`: the key is gone."""
        if isinstance(tgt, ast.Name):
            self.scope.pop(tgt.id, None)
            return
        obj = self.ev(tgt.value) if isinstance(tgt, (ast.Attribute, ast.Subscript)) else None
        key = tgt.attr if isinstance(tgt, ast.Attribute) else \
            self.ev(tgt.slice) if isinstance(tgt, ast.Subscript) else None
        if isinstance(obj, dict) and isinstance(key, (str, int)):
            obj.pop(key, None)

    def assign(self, tgt: ast.AST, val: Any, st: ast.AST) -> None:
        if isinstance(tgt, ast.Name):
            self.scope[tgt.id] = val
            self.scope.at[tgt.id] = self.at(tgt)
            self.modules.discard(tgt.id)
        elif isinstance(tgt, ast.Attribute):
            obj = self.ev(tgt.value)
            if isinstance(obj, dict):
                obj[tgt.attr] = val
                if isinstance(obj, CDict):
                    obj.at[tgt.attr] = self.at(tgt)
            else:
                self.note(tgt, f"`{ast.unparse(tgt)[:80]}`: not a dict of the config; not read")
        elif isinstance(tgt, ast.Subscript):
            obj = self.ev(tgt.value)
            key = self.ev(tgt.slice)
            if isinstance(obj, dict) and isinstance(key, (str, int)):
                obj[key] = val
                if isinstance(obj, CDict):
                    obj.at[key] = self.at(tgt)
        elif isinstance(tgt, (ast.Tuple, ast.List)):
            items = val if isinstance(val, (list, tuple)) and len(val) == len(tgt.elts) else None
            for i, e in enumerate(tgt.elts):
                self.assign(e, items[i] if items is not None else
                            Opaque("unpacked from a value not read", st.lineno), st)

    # ------------------------------------------------------------- expressions
    def ev(self, node: ast.AST, depth: int = 0) -> Any:
        self.budget.nodes += 1
        if self.budget.nodes > MAX_NODES:
            raise _Spent()
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
            op = _BIN.get(type(node.op))
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
        # `LazyCall(Cls)(a=1)` / `L(Cls)(...)`: a dict naming what it builds
        if isinstance(f, ast.Call) and last_name(f.func) in ("LazyCall", "L") and f.args:
            out = CDict()
            target = self.ev(f.args[0], depth)
            out["_target_"] = str(target) if isinstance(target, (str, Name)) else target
            out.at["_target_"] = self.at(f)
            out.update(self.kwargs(node, depth))
            for k, v in self.kwargs(node, depth).at.items():
                out.at[k] = v
            return out
        name = last_name(f)
        if name in ("create", "DictConfig", "ConfigDict") and len(node.args) <= 1 and \
                (name != "create" or last_name(getattr(f, "value", None)) == "OmegaConf"):
            # `OmegaConf.create()` / `OmegaConf.create({...})`: a dict of the config
            base = self.ev(node.args[0], depth) if node.args else CDict()
            if isinstance(base, dict):
                out = CDict(base)
                out.at.update(getattr(base, "at", {}))
                merge_flat(out, self.kwargs(node, depth))
                return out
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
        """`'{{_base_.model.depth}}'` (or the pre-substituted `"{_base_.model.depth}"`):
        the base's value when the string is the whole reference, else the text with each
        reference replaced by its value."""
        m = _BASE_STR.fullmatch(s)
        if m is None:
            return s
        cur: Any = self.base
        for part in (m.group(1) or m.group(2)).split("."):
            if not isinstance(cur, dict) or part not in cur:
                return Opaque(f"`{s}` names nothing the base files set", node.lineno)
            cur = cur[part]
        return copy.deepcopy(cur)


def merge(into: dict, new: dict) -> None:
    """mmengine's merge of a child's dict over its base's: key by key, recursively; a dict
    with `_delete_=True` replaces the base's instead (the key itself is dropped)."""
    for k, v in new.items():
        pos = new.at.get(k) if isinstance(new, CDict) else None
        if isinstance(v, dict) and v.get("_delete_") is True:
            rep = CDict({kk: vv for kk, vv in v.items() if kk != "_delete_"})
            rep.at = {kk: p for kk, p in getattr(v, "at", {}).items() if kk != "_delete_"}
            into[k] = rep
        elif isinstance(v, dict) and isinstance(into.get(k), dict):
            merge(into[k], v)
        else:
            into[k] = v
        if pos is not None and isinstance(into, CDict):
            into.at[k] = pos


def merge_flat(into: dict, new: dict) -> None:
    """`dict(base, k=v)` / `{**base, k: v}`: keys of `new` replace, no recursion."""
    for k, v in new.items():
        into[k] = v
        if isinstance(into, CDict) and isinstance(new, CDict) and k in new.at:
            into.at[k] = new.at[k]


def _flatten(d: dict, prefix: tuple, out: PyConfig, depth: int = 0) -> None:
    if depth > MAX_DEPTH:
        return
    at = getattr(d, "at", {})
    for k, v in d.items():
        p = prefix + (k,)
        if k in at:
            f, line, col = at[k]
            out.pos[p] = (line, col)
            out.where[p] = f
        if isinstance(v, dict):
            _flatten(v, p, out, depth + 1)


def _to_plain(v: Any, depth: int = 0) -> Any:
    """Lists and tuples as lists; dicts stay `CDict`s for their positions."""
    if depth > MAX_DEPTH:
        return Opaque("nested too deeply")
    if isinstance(v, dict):
        out = CDict({k: _to_plain(x, depth + 1) for k, x in v.items()})
        out.at = dict(getattr(v, "at", {}))
        return out
    if isinstance(v, (list, tuple)):
        return [_to_plain(x, depth + 1) for x in v]
    return v


def read(path: str, text: str, read_file: Callable[[str], Optional[str]]) -> PyConfig:
    """A Python config file's variables, merged over its bases', with every key's position
    (see the module docstring). Never raises on a file's content: what cannot be read is a
    note."""
    out = PyConfig(cfg={})
    r = _Reader(path, text, read_file, _Budget(), out)
    r.budget.files = 1
    try:
        r.run()
    except RecursionError:
        out.notes.append((path, 1, 1, "config nested too deeply to read"))
    cfg = CDict()
    for k, v in r.scope.items():
        if k.startswith("_") or k in r.modules or isinstance(v, Name) and k not in r.scope.at:
            continue
        if isinstance(v, Name) and "." in v and k == v.rsplit(".", 1)[-1]:
            continue            # `from x.y import Cls`: an imported class, not a setting
        cfg[k] = _to_plain(v)
        if k in r.scope.at:
            cfg.at[k] = r.scope.at[k]
    out.cfg = cfg
    _flatten(cfg, (), out)
    return out


def opaque_reason(v: Any) -> Optional[str]:
    """Why a value read from a Python config is not known (None when it is known)."""
    return v.why if isinstance(v, Opaque) else None


# --------------------------------------------------------------------------- examples
# Each is a test (tests/test_pyconfig.py): `files` written to a folder, `read` the config
# read, `expect` key path (dotted) → (value, "file:line") — `Opaque` values expected as
# `UNREAD`.

#: expected value of a key read as an `Opaque`
UNREAD = "<unread>"

EXAMPLES: list[dict] = [
    {"title": "`_base_` files merged key by key; `_delete_=True` replaces; a base's key keeps "
              "its file and line",
     "files": {"_base_/model.py": "model = dict(type='Net', backbone=dict(depth=50, frozen=1))\n",
               "_base_/sched.py": "optim_wrapper = dict(optimizer=dict(type='SGD', lr=0.1, momentum=0.9))\n",
               "cfg.py": "_base_ = ['./_base_/model.py', './_base_/sched.py']\n"
                         "model = dict(backbone=dict(depth=101))\n"
                         "optim_wrapper = dict(optimizer=dict(_delete_=True, type='AdamW', lr=1e-3))\n"},
     "read": "cfg.py",
     "expect": {"model.type": ("Net", "_base_/model.py:1"),
                "model.backbone.depth": (101, "cfg.py:2"),
                "model.backbone.frozen": (1, "_base_/model.py:1"),
                "optim_wrapper.optimizer.type": ("AdamW", "cfg.py:3"),
                "optim_wrapper.optimizer.momentum": (None, None)}},
    {"title": "`{{_base_.x}}` quoted or not, and `_base_.x` in code",
     "files": {"base.py": "depth = 18\nmodel = dict(type='Net', depth=depth)\n",
               "cfg.py": "_base_ = 'base.py'\nbackbone = {{_base_.model}}\n"
                         "width = '{{_base_.depth}}'\nhead = dict(in_channels=_base_.depth * 32)\n"},
     "read": "cfg.py",
     "expect": {"backbone.depth": (18, "base.py:2"), "width": (18, "cfg.py:3"),
                "head.in_channels": (576, "cfg.py:4"), "depth": (18, "base.py:1")}},
    {"title": "pure-Python style: `with read_base()` star imports and `.update(...)`",
     "files": {"_base_/data.py": "train_dataloader = dict(batch_size=32, num_workers=4)\n",
               "cfgs/x.py": "from mmengine.config import read_base\n"
                            "with read_base():\n    from .._base_.data import *\n"
                            "train_dataloader.update(batch_size=8)\n"},
     "read": "cfgs/x.py",
     "expect": {"train_dataloader.batch_size": (8, "cfgs/x.py:4"),
                "train_dataloader.num_workers": (4, "_base_/data.py:1")}},
    {"title": "LazyConfig: imported variables, LazyCall dicts, attribute assignments",
     "files": {"common/train.py": "train = dict(amp=dict(enabled=False), max_iter=100)\n",
               "cfgs/m.py": "from detectron2.config import LazyCall as L\n"
                            "from ..common.train import train\nimport torch\n"
                            "optimizer = L(torch.optim.AdamW)(lr=1e-4)\n"
                            "train.amp.enabled = True\n"},
     "read": "cfgs/m.py",
     "expect": {"train.amp.enabled": (True, "cfgs/m.py:5"), "train.max_iter": (100, "common/train.py:1"),
                "optimizer._target_": ("torch.optim.AdamW", "cfgs/m.py:4")}},
    {"title": "`OmegaConf.create()` as an empty dict filled by attribute assignments; `del`",
     "files": {"data.py": "from omegaconf import OmegaConf\nfrom detectron2.config import LazyCall as L\n"
                          "dataloader = OmegaConf.create()\n"
                          "dataloader.train = L(build_loader)(total_batch_size=16, workers=4)\n"
                          "del dataloader.train.workers\n"},
     "read": "data.py",
     "expect": {"dataloader.train.total_batch_size": (16, "data.py:4"),
                "dataloader.train.workers": (None, None)}},
    {"title": "what the file computes at load time, or under a condition, is not read",
     "files": {"cfg.py": "import os\nbs = int(os.environ.get('BS', 8))\nif os.environ.get('BIG'):\n"
                         "    depth = 101\nelse:\n    depth = 50\nmodel = dict(depth=depth, bs=bs)\n"},
     "read": "cfg.py",
     "expect": {"model.depth": (UNREAD, "cfg.py:7"), "model.bs": (UNREAD, "cfg.py:7")}},
]
