"""How the counter runs code: a class instantiated (its class attributes and `__init__`,
base classes' methods), a call's arguments bound to a function's parameters, and the
statements of a body — assignments, `if` on known values, `for` over known ranges — with
the blocks it cannot follow noted when they would build modules."""

from __future__ import annotations

import ast
from typing import Any, Optional

from preflight.models.modules.scope import FUNCTION_NODES
from preflight.models.modules.values import (MAX_DEPTH, MAX_STEPS, Abort, ClassRef, FunctionReturn,
                                             Mod, Param, Unknown, merge_into, set_attr)


_CONFIG_PARAM_NAMES = {"config", "cfg", "conf", "args", "params", "hparams", "hp", "opt",
                       "model_config", "model_args", "gptconf"}


class StatementsMixin:
    """Instantiation, binding and statements (`_Evaluator`'s part)."""

    # ----------------------------------------------------------------- instantiation
    def instantiate(self, ref: ClassRef, args: list, kwargs: dict, node: ast.AST) -> Mod:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise Abort("nesting too deep")
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
            if isinstance(stmt, FUNCTION_NODES) and stmt.name == name:
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
                    merge_into(obj, built)
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
        except FunctionReturn as r:
            return r.value
        return None

    # ----------------------------------------------------------------- statements
    def _exec_block(self, body: list, env: dict) -> None:
        for stmt in body:
            self._exec_stmt(stmt, env)

    def _exec_stmt(self, stmt: ast.stmt, env: dict) -> None:
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise Abort("evaluation too long")
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
        full = self._full(f)
        if full.startswith("torch.") and not full.startswith("torch.nn."):
            # torch's own classes outside torch.nn (`torch.Generator()`, `torch.Size`,
            # `torch.cuda.Stream()`) hold no parameters
            return False
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
            raise FunctionReturn(self._eval(s.value, env) if s.value is not None else None)

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
                set_attr(obj, name, value)
        elif isinstance(target, ast.Subscript):
            obj = self._eval(target.value, env)
            sl = _index(target.slice)
            key = self._eval(sl, env) if sl is not None else None
            if isinstance(obj, dict) and not isinstance(key, Unknown):
                obj[key] = value
            elif isinstance(obj, list) and isinstance(key, int) and -len(obj) <= key < len(obj):
                obj[key] = value
            elif isinstance(obj, Mod) and not isinstance(key, Unknown):
                set_attr(obj, str(key), value)


def _index(sl: ast.expr) -> Optional[ast.expr]:
    """The key of a subscript: its first index (`x[a, b]` reads `a`); None for a slice."""
    if isinstance(sl, ast.Tuple) and sl.elts:
        sl = sl.elts[0]
    return None if isinstance(sl, ast.Slice) else sl
