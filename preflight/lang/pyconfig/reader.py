"""A Python config file read into a `PyConfig`: its statements run in order (assignments,
attribute assignments into dicts, `del`, `if` on a decidable condition, `x.update(...)`),
its `_base_` files and relative imports read first through the same reader, and the result
flattened into every key's position. Budgets: at most `MAX_FILES` files and 8 levels of
inheritance, `MAX_BYTES` per file, the node budget of `preflight.lang.pyconfig.evaluate`."""

from __future__ import annotations

import ast
import copy
import os
from typing import Any, Callable, Optional

from preflight.lang.pyconfig.evaluate import BIN, Budget, Evaluator, Spent
from preflight.lang.pyconfig.inherit import merge, pre_substitute
from preflight.lang.pyconfig.lazyconfig import find_module
from preflight.lang.pyconfig.values import (MAX_BYTES, MAX_DEPTH, MAX_FILES, MAX_NODES, CDict,
                                            Name, Opaque, PyConfig)


class Reader(Evaluator):
    """One config file evaluated: its top-level names (`scope`) and where each was set."""

    def __init__(self, path: str, text: str, read_file: Callable[[str], Optional[str]],
                 budget: Budget, out: PyConfig, depth: int = 0) -> None:
        super().__init__(path, budget)
        self.read_file, self.out = read_file, out
        self.text = text
        self.depth = depth
        self.modules: set[str] = set()      # names bound to imported modules
        self.chain: frozenset = frozenset({os.path.abspath(path)})   # the files above it

    # ------------------------------------------------------------- files
    def note(self, node: Any, msg: str) -> None:
        line = getattr(node, "lineno", 1) if node is not None else 1
        col = getattr(node, "col_offset", 0) + 1 if node is not None else 1
        self.out.notes.append((self.path, line, col, msg))

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
        sub = Reader(p, text, self.read_file, self.budget, self.out, self.depth + 1)
        sub.chain = self.chain | {os.path.abspath(p)}
        sub.run()
        return sub.scope

    # ------------------------------------------------------------- statements
    def run(self) -> None:
        text = pre_substitute(self.text) if "_base_" in self.text else self.text
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
        except Spent:
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
            op = BIN.get(type(st.op))
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
            p = find_module(self.path, mod)
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
    r = Reader(path, text, read_file, Budget(), out)
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
