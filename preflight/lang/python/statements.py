"""Statements and control flow: assignments, imports, definitions, and the branches whose
choice is not known statically (`if` on an unknown test, `try` / `except`, `match`), run
each from the same state and joined — a name they leave equal keeps its value, one they
set differently becomes unknown with every alternative in its reason.
"""

from __future__ import annotations

import ast
from typing import Any, Optional

from preflight.lang import bounded
from preflight.lang.python.budgets import MAX_STEPS
from preflight.lang.python.expressions import BIN
from preflight.lang.python.builtin_calls import unsettle
from preflight.lang.python.values import AttrDict
from preflight.lang.python.source import clip
from preflight.lang.python.values import (CUR_PATH, MISSING, UNK, ArgsNS, ClassVal, DCInst, Dotted,
                                          FuncVal, KDict, Obj, V, combine, plain, same, show, unk)


class Returned(Exception):
    """A `return` reached: unwinds the statements of the function being run."""


def _join_dicts(a: "V", b: "V", cond: str, line: int) -> "V":
    """Two branches' versions of one dict: keys they agree on stay, the others are unknown."""
    out = KDict()
    for k in list(a.value) + [k for k in b.value if k not in a.value]:
        va, vb = a.value.get(k, MISSING), b.value.get(k, MISSING)
        if va is vb or (isinstance(va, V) and isinstance(vb, V) and va.known and vb.known
                        and same(va.value, vb.value)):
            out[k] = va
            continue
        sa = show(va) if isinstance(va, V) else "unset"
        sb = show(vb) if isinstance(vb, V) else "unset"
        at = va if isinstance(va, V) else vb
        u = V(UNK, "unknown", getattr(at, "line", line), getattr(at, "col", 0),
              f"[{k!r}] depends on `{cond}` (line {line}), not known statically: {sa} if true, "
              f"{sb} otherwise")
        u.default = {"if_true": plain(va) if isinstance(va, V) else None,
                     "if_false": plain(vb) if isinstance(vb, V) else None}
        u.path = getattr(at, "path", None)      # where the value it may be is written
        out[k] = u
    for src in (a.value, b.value):
        for k, kv in getattr(src, "key_v", {}).items():
            out.key_v.setdefault(k, kv)
    return V(out, a.origin, a.line, a.col, a.reason, a.default, a.path)


class StatementsMixin:
    """Running statements and joining the branches of unknown conditions."""

    def exec_block(self, body: list[ast.stmt]) -> None:
        # a function body run from inside an expression (`Net(cfg=Cfg(...))` runs Cfg's
        # __init__) returns to the statement that called it: what the recognisers read of
        # "the current statement" (the assignment target) stays the caller's
        outer = self.cur_stmt
        try:
            for st in body:
                self.steps += 1
                if self.steps > MAX_STEPS:
                    return
                self.cur_stmt = st
                try:
                    self.exec_stmt(st)
                except Returned:
                    raise
                except (RecursionError, MemoryError, OverflowError, ValueError, TypeError,
                        ZeroDivisionError, AttributeError, KeyError, IndexError):
                    continue
        finally:
            self.cur_stmt = outer

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
            if CUR_PATH[0] is None:
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
            it = self.ev(st.iter)
            items = _unrollable(st, it)
            if items is not None:
                # `for k, v in vars(args).items(): cfg[k] = v` over a known dict or a
                # literal list: each item in turn, as it runs
                for x in items:
                    self.assign(st.target, x if isinstance(x, V) else V(x, it.origin, it.line,
                                                                        it.col), st)
                    self.exec_loop(st.body)
                self.exec_branch(st.orelse)
                return
            self.assign(st.target, unk("loop variable", st.lineno, st.col_offset + 1), st)
            self.exec_loop(st.body)
            self.exec_branch(st.orelse)
        elif t is ast.While:
            self.ev(st.test)
            self.exec_loop(st.body)
            self.exec_branch(st.orelse)
        elif t in (ast.With, ast.AsyncWith):
            for item in st.items:
                cm = self.ev(item.context_expr)
                if item.optional_vars is not None:
                    # `with open(path) as f:` — the open file, which a loader may read
                    opened = cm.known and isinstance(cm.value, Obj) and \
                        cm.value.qual == "builtins.open"
                    self.assign(item.optional_vars, cm if opened else unk("context manager value"),
                                st)
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
                                       ["if it does not"] + [f"on {n}" for n in names],
                                       choice=False)
            self.exec_block(st.finalbody)
        elif t is ast.Return:
            val = self.ev(st.value) if st.value is not None else V(None, "literal", st.lineno)
            if self.frames:
                self.frames[-1]["\0return"] = val
                if self.cond_depth == self.frames[-1].get("\0cond", 0):
                    raise Returned()
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
                    # a module of constants of the repository (`from configs.x import *`)
                    self.star_import(mod)
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

    def exec_loop(self, body: list[ast.stmt]) -> None:
        self.loops += 1
        try:
            self.exec_branch(body)
        finally:
            self.loops -= 1

    def exec_choice(self, body: list[ast.stmt], cond: str, choice: str) -> None:
        """One arm of an undecided `if` / `match`: what it sets is one alternative (the
        entry point's `if __name__ == "__main__":` runs: no choice)."""
        if "__name__" in cond:
            self.exec_branch(body, cond)
            return
        self.choices.append(choice)
        try:
            self.exec_branch(body, cond)
        finally:
            self.choices.pop()

    def exec_if(self, st: ast.If) -> None:
        self.if_stack.append((st, self.loops, self.depth))
        try:
            self._exec_if(st)
        finally:
            self.if_stack.pop()

    def _exec_if(self, st: ast.If) -> None:
        test = self.runtime(self.ev(st.test), st.test)
        if test.known:
            try:
                truth = bool(test.value) if not isinstance(test.value, (Obj, Dotted, ArgsNS, DCInst)) else True
            except Exception:  # noqa: BLE001 - a value whose truth cannot be taken
                truth = None
            if truth is not None:
                skipped = st.orelse if truth else st.body
                if skipped and CUR_PATH[0] is None and not self.choices:
                    # an arm the launch certainly does not take (`if args.grad_ckpt:` with
                    # the flag not given): what it would set is not the job's
                    self.skipped.append((skipped[0].lineno,
                                         skipped[-1].end_lineno or skipped[0].lineno,
                                         f"`{clip(self.src(st.test))}` is "
                                         f"{'true' if truth else 'false'} (line {st.lineno})"))
                self.exec_block(st.body if truth else st.orelse)
                return
        # unknown condition: run both branches on copies and join what they assign
        self.join_branches([st.body, st.orelse], self.src(st.test), st.lineno)

    def join_branches(self, branches: list[list[ast.stmt]], cond: str, line: int,
                      labels: Optional[list[str]] = None, choice: bool = True) -> None:
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
        for body, label in zip(branches, labels):
            scope.clear()
            scope.update(before)
            self._fresh_dicts(scope, before)
            if choice:
                # `try` bodies are the path a job normally takes; `match` arms are choices
                self.exec_choice(body, cond, f"{cond} (line {line}): {label}")
            else:
                self.exec_branch(body, cond)
            afters.append(dict(scope))
        scope.clear()
        scope.update(before)
        names: list = []
        for a in afters:
            names += [n for n in a if n not in names]
        for name in names:
            vals = [a.get(name, before.get(name, MISSING)) for a in afters]
            first = vals[0]
            if all(v is first for v in vals):
                scope[name] = first
                continue
            # a branch that leaves the name unset cannot be the one taken when it is used
            present = [(v, lab) for v, lab in zip(vals, labels) if v is not MISSING]
            vs = [v for v, _ in present]
            if not all(isinstance(v, V) for v in vs):
                scope[name] = vs[0]
                continue
            if all(v.known for v in vs) and all(same(v.value, vs[0].value) for v in vs):
                scope[name] = vs[0]
                continue
            shown = ", ".join(f"{show(v)} {lab}" for v, lab in present)
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
        self.exec_choice(body, f"`{cond}` is true (line {lineno})",
                         f"`{cond}` is true (line {lineno})")
        after_body = dict(scope)
        scope.clear()
        scope.update(before)
        fresh()
        self.exec_choice(orelse, f"`{cond}` is false (line {lineno})",
                         f"`{cond}` is false (line {lineno})")
        after_else = dict(scope)
        for name in set(after_body) | set(after_else):
            a = after_body.get(name, before.get(name, MISSING))
            b = after_else.get(name, before.get(name, MISSING))
            if a is b:
                scope[name] = a
                continue
            if isinstance(a, V) and isinstance(b, V) and a.known and b.known and \
                    isinstance(a.value, dict) and isinstance(b.value, dict):
                scope[name] = _join_dicts(a, b, cond, lineno)
                continue
            if isinstance(a, V) and isinstance(b, V):
                if a.known and b.known and same(a.value, b.value):
                    scope[name] = a
                    continue
                reason = (f"depends on `{cond}` (line {lineno}), not known statically: "
                          f"{show(a)} if true, {show(b)} otherwise")
                default = b.value if b.known else None
                scope[name] = V(UNK, "unknown", a.line or b.line, a.col or b.col, reason, default)
                scope[name].default = {"if_true": plain(a), "if_false": plain(b)}
            else:
                scope[name] = a if a is not MISSING else b

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
                elif isinstance(o, ArgsNS):
                    o.attrs[tgt.attr] = val
                    self.note_arg_set(tgt.attr, val, tgt)
                elif isinstance(o, Obj):
                    o.attrs[tgt.attr] = val
                    hook = getattr(self.patterns, "on_obj_attr_set", None)
                    if hook is not None:
                        hook(self, o, tgt.attr, val)
                elif isinstance(o, AttrDict):
                    # `args.model.vocab_size = tokenizer.n_words` on a composed config
                    o[tgt.attr] = val
        elif t is ast.Subscript:
            obj = self.ev(tgt.value)
            key = self.ev(tgt.slice)
            if isinstance(obj, V) and isinstance(obj.value, dict) and key.known:
                try:
                    obj.value[key.value] = val
                except TypeError:
                    pass
            elif isinstance(obj, V) and obj.known and isinstance(obj.value, dict) and \
                    not key.known:
                # `cfg[k] = v` with a key not known statically: any key may be the one set
                unsettle(obj.value, f"`{clip(self.src(tgt))} = …` (line {tgt.lineno})",
                         tgt.lineno, tgt.col_offset + 1)

    def aug_assign(self, st: ast.AugAssign) -> None:
        if not isinstance(st.target, ast.Name):
            return
        cur = self.lookup(st.target.id)
        rhs = self.ev(st.value)
        if not isinstance(cur, V):
            return
        op = BIN.get(type(st.op))
        line, col = st.lineno, st.col_offset + 1
        if cur.known and rhs.known and op is not None:
            try:
                res = op(cur.value, rhs.value)
            except bounded.TooLarge as e:
                self.bind(st.target.id, unk(f"`{clip(self.src(st))}` not computed: {e}", line, col))
                return
            except Exception:  # noqa: BLE001
                res = UNK
            if res is not UNK:
                v = combine([cur, rhs], res, line, col, f"`{self.src(st)}`")
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


#: a loop is run item by item over at most this many items of a known dict or literal list
_MAX_UNROLLED = 64
_NOT_UNROLLED = (ast.Break, ast.Continue, ast.Return, ast.Yield, ast.YieldFrom,
                 ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.For, ast.While)


def _unrollable(st: ast.For, it: "V") -> Optional[list]:
    """The items of a `for` to run one by one: a known dict's keys / items / values or a
    literal list or tuple, small, whose body neither leaves the loop early nor nests
    another loop; None for any other loop (its variable is then unknown)."""
    if not it.known or not isinstance(it.value, (list, tuple, dict)) or \
            len(it.value) > _MAX_UNROLLED or len(st.body) > 30:
        return None
    from_dict = isinstance(it.value, dict) or (it.reason or "").startswith("dict.")
    if not from_dict and not isinstance(st.iter, (ast.List, ast.Tuple)):
        return None
    if any(isinstance(n, _NOT_UNROLLED) for b in st.body for n in ast.walk(b)):
        return None
    if isinstance(it.value, dict):
        return [k for k in it.value if not (isinstance(k, str) and k.startswith("\0"))]
    return list(it.value)


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
