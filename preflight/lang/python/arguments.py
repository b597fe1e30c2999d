"""The script's arguments: argparse's `add_argument` calls (found before the run, anywhere
in the file) and what `args.x` is given the command line, and arguments dataclasses
(`HfArgumentParser` / `TrlParser` / a direct call): library defaults — which the hooks the
extractor hands the evaluator know — then the file's field defaults, then the command line.
"""

from __future__ import annotations

import ast
import contextlib
from typing import Any, Optional

from preflight.lang.python.builtin_calls import BUILTIN_TYPES
from preflight.lang.python.cli import convert, literal_or_str, parse_cli, safe_convert
from preflight.lang.python.values import (CUR_PATH, SPLAT, ClassVal, DCInst, Dotted, Obj, V,
                                          splat_fields, unk)


def _norm(opt: str) -> str:
    return opt.lstrip("-").replace("-", "_")


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


class ArgumentsMixin:
    """argparse arguments and arguments dataclasses."""

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
            typ = BUILTIN_TYPES.get(t.id, t.id)
        elif isinstance(t, ast.Attribute):
            typ = t.attr
        if dest not in self.argparse:
            self.argparse_order.append(dest)
        recv = node.func.value if isinstance(node.func, ast.Attribute) else None
        sub = self.subcommands.get(recv.id) if isinstance(recv, ast.Name) else None
        spec = {"opts": opts, "kw": kw, "action": action, "type": typ, "sub": sub,
                "line": node.lineno, "col": node.col_offset + 1, "node": node,
                "path": CUR_PATH[0]}
        old = self.argparse.get(dest)
        if old is not None and old.get("path") is None and spec["path"] is not None:
            return                        # the entry script's own declaration stands
        if old is not None and old.get("sub") != sub:
            # the same option in two sub-commands: which one holds is the command's word
            self.argparse_alts.setdefault(dest, [old]).append(spec)
        self.argparse[dest] = spec

    def register_subcommand(self, st: ast.Assign) -> None:
        """`train_p = subparsers.add_parser("train")`: the options added to `train_p`
        belong to the `train` sub-command."""
        call = st.value
        if len(st.targets) == 1 and isinstance(st.targets[0], ast.Name) and call.args and \
                isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, str):
            self.subcommands[st.targets[0].id] = call.args[0].value

    def _spec(self, dest: str) -> Optional[dict]:
        """The `add_argument` that declares `dest` for the sub-command the command line
        names (its first positional word); None when that cannot be told."""
        alts = self.argparse_alts.get(dest)
        if not alts:
            return self.argparse.get(dest)
        word = self.cli_pos[0] if self.cli_pos else None
        return next((a for a in alts if a.get("sub") == word), None)

    def note_arg_set(self, dest: str, val: Any, tgt: ast.AST) -> None:
        """`args.x = expr` after the parse. Under a condition the evaluator cannot decide,
        the flag's own value may still hold: the attribute is then unknown."""
        if not isinstance(val, V) or self.unbound:
            return
        if self.conds:
            # (`if __name__ == "__main__":` is no condition: the launch runs it)
            val = unk(f"args.{dest} is set at line {tgt.lineno} only if {self.conds[-1]}",
                      tgt.lineno, tgt.col_offset + 1)
        self.args_set[dest] = val

    def arg_final(self, dest: str) -> V:
        """What `args.dest` holds once the script has run its assignments: the last
        `args.dest = ...` the launch takes, else the command line's value or the default."""
        got = self.args_set.get(dest)
        if got is not None:
            return got
        spec = self._spec(dest)
        return self.arg_value(dest, spec["line"] if spec else 0, spec["col"] if spec else 0)

    def flags_as_kwargs(self, line: int, col: int) -> dict[str, V]:
        """The command line as the keyword arguments a function CLI (python-fire) binds:
        `--lr 1e-4` → lr=0.0001, a bare `--enable_fsdp` → True, `--a-b` → a_b, and a
        dotted `--fsdp_config.pure_bf16` kept whole for the function to route."""
        out: dict[str, V] = {}
        for key, vals in self.cli_opts.items():
            if key.startswith("-") or not vals:
                continue                      # a short option (`-c`): not a keyword
            raw = vals[-1]
            name = key.replace("-", "_")
            val = True if raw is None else literal_or_str(raw)
            shown = f"--{key}" + (f" {raw}" if raw is not None else "")
            out[name] = V(val, "cli", line, col, f"{shown} on the command line")
        return out

    def cli_lookup(self, names: list[str]) -> Optional[tuple[str, Optional[str]]]:
        """The last command-line value given for any of these option names."""
        best = None
        for n in names:
            for key in (n, n.replace("_", "-"), n.replace("-", "_")):
                vals = self.cli_opts.get(key)
                if vals:
                    best = (key, vals[-1])
        return best

    def register_set_defaults(self, node: ast.Call) -> None:
        for k in node.keywords:
            if k.arg:
                self.set_defaults[k.arg] = k.value

    def run_set_defaults(self, kwargs: dict[str, V], line: int, col: int) -> None:
        for k, v in kwargs.items():
            if k == SPLAT:
                self.run_defaults_unknown = unk(
                    f"may be set by parser.set_defaults(...) at line {line}: {v.reason}",
                    line, col)
            elif not k.startswith("\0"):
                self.run_defaults[k] = v

    def argparse_argv(self, given: V, line: int, col: int) -> None:
        """The argument list a script passes `parse_args` (in place of the launch's).
        `parse_args(None)` reads the launch's line; a walk of a function no code calls
        (its parameters not known) changes nothing."""
        if (given.known and given.value is None) or self.unbound:
            return
        items = given.value if given.known and isinstance(given.value, (list, tuple)) else None
        words = [x.value if isinstance(x, V) else x for x in items] if items is not None else None
        if words is None or not all(isinstance(w, str) for w in words) or \
                any(isinstance(x, V) and not x.known for x in items):
            self.argv_unknown = unk(f"parse_args is given an argument list not known "
                                    f"statically (line {line}): {given.reason or ''}".rstrip(": "),
                                    line, col)
            return
        self.cli_opts, self.cli_pos = parse_cli(words)
        # a slice of sys.argv is still the launch's command line
        self.argv_written = None if given.origin == "cli" else line

    def arg_value(self, dest: str, line: int, col: int) -> V:
        """What `args.dest` is given the command line: the flag's value (`cli`), else its
        default (`default`), at the line that declares it — in another module of the
        repository when that module declares it."""
        out = self._arg_value(dest, line, col)
        if self.argv_unknown is not None and out.origin in ("cli", "default"):
            u = unk(self.argv_unknown.reason or "", out.line, out.col,
                    out.value if out.known else None)
            u.path = out.path
            out = u
        elif self.argv_written is not None and out.origin == "cli":
            out = V(out.value, "literal", out.line, out.col,
                    (out.reason or "").replace("on the command line",
                                               f"in the list parse_args is given at line "
                                               f"{self.argv_written}"))
        spec = self._spec(dest)
        if spec is not None and spec.get("path") is not None and out.line == spec["line"]:
            out.path = spec["path"]
        return out

    def _arg_value(self, dest: str, line: int, col: int) -> V:
        spec = self._spec(dest)
        if spec is None and dest in self.argparse_alts:
            subs = ", ".join(sorted(str(a.get("sub")) for a in self.argparse_alts[dest]))
            first = self.argparse_alts[dest][0]
            return unk(f"--{dest} is declared by the sub-commands {subs}: its value depends "
                       f"on which one the command line runs", first["line"], first["col"])
        if spec is None and dest in self.dataclass_dests:
            got = self.dataclass_dest(dest, line, col)
            if got is not None:
                return got
        if spec is None and dest in self.set_defaults:
            d = self.ev(self.set_defaults[dest])
            if d.known:
                return V(d.value, "default", d.line, d.col, f"parser.set_defaults({dest}=...)")
            return unk(d.reason or f"set_defaults({dest}=...)", d.line, d.col)
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
                val = convert(raw, typ if typ in ("int", "float", "str", "bool") else None)
            except (ValueError, OverflowError):
                if typ in ("int", "float", "str", "bool", None):
                    return unk(f"{o} {raw}: not a valid {typ}", sline, scol)
                val = raw
            if typ not in ("int", "float", "str", "bool", None):
                if typ in ("str2bool", "strtobool", "string_to_bool", "boolean_string"):
                    try:
                        val = convert(raw, "bool")
                    except ValueError:
                        return unk(f"{o} {raw}: not a boolean", sline, scol)
                else:
                    val = literal_or_str(raw)
            nargs = spec["kw"].get("nargs")
            if nargs is not None:
                vals = self.cli_opts.get(o[2:], [])
                val = [V(safe_convert(x, typ), "cli", sline, scol) for x in vals if x is not None]
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
        if dest in self.run_defaults:
            # `parser.set_defaults(**cfg)` with the key: the document's value
            rv = self.run_defaults[dest]
            if not rv.known:
                return rv
            val = rv.value
            if isinstance(val, str) and spec["type"] in ("int", "float"):
                val = safe_convert(val, spec["type"])
            out = V(val, rv.origin if rv.origin != "literal" else "default", rv.line, rv.col,
                    rv.reason or f"parser.set_defaults({dest}=...)")
            out.path = rv.path
            return out
        d = spec["kw"].get("default")
        if dest in self.set_defaults:
            # `parser.set_defaults(dest=...)` wins over the argument's own `default=`
            d = self.set_defaults[dest]
            sline, scol = d.lineno, d.col_offset + 1
        if self.run_defaults_unknown is not None:
            u = self.run_defaults_unknown
            alt = self.ev(d) if d is not None else None
            return unk(u.reason or "", u.line, u.col,
                       alt.value if alt is not None and alt.known else None)
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
                val = convert(val, typ)
            except ValueError:
                pass
        return V(val, "default", sline, scol,
                 f"default of {names[0] if names else dest}"
                 + (f" (from line {dv.line})" if dv.origin != "literal" and dv.line else ""))

    # ----------------------------------------------------------------- kwargs onto configs
    def sets_fields_by_name(self, fn: ast.AST) -> bool:
        """Whether `fn` is a configuration updater: it takes `**kwargs` and copies them
        onto an object by name (`for k, v in kwargs.items(): ... setattr(config, k, v)`),
        as fire / plain-function CLIs do to their config dataclasses."""
        key = id(fn)
        if key in self._updaters:
            return self._updaters[key]
        kw = fn.args.kwarg.arg if isinstance(fn, ast.FunctionDef) and fn.args.kwarg else None
        found = False
        if kw is not None and fn.args.args:
            for n in ast.walk(fn):
                if isinstance(n, ast.For) and isinstance(n.iter, ast.Call) and \
                        isinstance(n.iter.func, ast.Attribute) and n.iter.func.attr == "items" and \
                        isinstance(n.iter.func.value, ast.Name) and n.iter.func.value.id == kw:
                    found = any(isinstance(c, ast.Call) and isinstance(c.func, ast.Name)
                                and c.func.id == "setattr" for c in ast.walk(n))
                    if found:
                        break
        self._updaters[key] = found
        return found

    def set_fields_by_name(self, target: V, kwargs: dict[str, V]) -> bool:
        """Apply `update(config_or_configs, **flags)`: a flag named as a field sets it on
        every instance that has it; `--Cls.field` (a dotted flag) sets the field of the
        instance of class `Cls` only. False when the target holds no config instance."""
        items = target.value if isinstance(target.value, (list, tuple)) else [target]
        # (class name, the fields as read, where a set goes) of each config instance
        insts = []
        for x in items:
            o = x.value if isinstance(x, V) else None
            if isinstance(o, DCInst):
                insts.append((o.cls, o.fields, o.fields))
            elif isinstance(o, Obj) and o.kwargs:
                insts.append((o.short, {**o.kwargs, **o.attrs}, o.attrs))
        if not target.known or not insts:
            return False
        unknown = kwargs.get("\0unknown")
        for cls, fields, out in insts:
            if unknown is not None and not self.unbound:
                for k, old in list(fields.items()):
                    if isinstance(old, V):
                        out[k] = unk(f"{cls}.{k} may be set by {unknown.reason}", old.line,
                                     old.col, old.value if old.known else None)
                continue
            for k, v in kwargs.items():
                field = k
                if field not in fields and "." in k:
                    owner, _, field = k.partition(".")
                    if owner != cls:
                        continue
                old = fields.get(field)
                if not isinstance(old, V) or not isinstance(v, V):
                    continue
                new = V(v.value, v.origin, old.line, old.col, v.reason or f"{k} given")
                new.path = old.path           # where the field is declared
                out[field] = new
        return True

    # ----------------------------------------------------------------- dataclasses
    def dc_instance(self, cls: Any, line: int, col: int, from_cli: bool,
                    kwargs: Optional[dict[str, V]] = None) -> DCInst:
        """An arguments dataclass: library defaults, then the file's field defaults, then
        (for parsed instances) command-line values."""
        fields: dict[str, V] = {}
        lib = None
        field_types: dict[str, Optional[str]] = {}
        if isinstance(cls, Dotted):
            # a dataclass of another module of the repository (`HfArgumentParser((utils.
            # ExperimentConfig,))`): its fields and its bases' fields, read where declared
            found = self.repo_class_named(cls.name)
            if found is not None and found.is_dataclass:
                cls = found
        if isinstance(cls, ClassVal):
            name = cls.name
            chain = self._class_chain(cls)
            for c in chain:
                if isinstance(c, str):
                    short = c.rsplit(".", 1)[-1]
                    if short in self.hooks.lib_dataclasses:
                        lib = lib or short
            if lib:
                for k, val in self.hooks.library_defaults(lib).items():
                    fields[k] = V(val, "default", line, col, f"{lib} default")
                    field_types[k] = self.hooks.lib_field_types.get(k)
            for c in reversed([c for c in chain if isinstance(c, ClassVal)]):
                # a base of another module: its defaults are that module's names
                with (self._inside(c.module) if c.module is not None
                      else contextlib.nullcontext()):
                    for fname, (st, vnode, ann) in c.fields.items():
                        field_types[fname] = _ann_type(ann)
                        fields[fname] = self._field_default(fname, st, vnode)
        else:
            name = cls.name.rsplit(".", 1)[-1] if isinstance(cls, Dotted) else str(cls)
            if name in self.hooks.lib_dataclasses:
                lib = name
                for k, val in self.hooks.library_defaults(lib).items():
                    fields[k] = V(val, "default", line, col, f"{lib} default")
                    field_types[k] = self.hooks.lib_field_types.get(k)
        if kwargs:
            fields = splat_fields(fields, kwargs, kwargs, line, col)
            for k, v in kwargs.items():
                if k != SPLAT:
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
                            val = convert(raw, "bool")
                        elif typ in ("int", "float", "str"):
                            val = convert(raw, typ)
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
            if cls.module is None and short in self.classes and self.classes[short] is not cls:
                out.extend(self._class_chain(self.classes[short], depth + 1))
                continue
            # a base imported from another module of the repository (the dataclass CLIs
            # that compose `ModelConfig`, `TrainingConfig`, … kept in a module of their own)
            found = self.repo_class(b, cls.module)
            if found is not None and found.node is not cls.node:
                out.extend(self._class_chain(found, depth + 1))
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
                elif isinstance(fac, (ast.Name, ast.Attribute)):
                    # `field(default_factory=DataArgs)`: a nested config's own defaults
                    call = ast.Call(func=fac, args=[], keywords=[])
                    ast.copy_location(call, fac)
                    dv = self.ev(call)
                else:
                    dv = unk(f"default_factory of {fname}", line, col)
            else:
                return unk(f"field {fname} has no default (required argument)", line, col)
        else:
            dv = self.ev(vnode)
        if not dv.known:
            return unk(dv.reason or f"default of {fname}", line, col, dv.default)
        return V(dv.value, "default", line, col, f"dataclass default of {fname}")

    def _is_lib_chain(self, cls: ClassVal):
        for c in self._class_chain(cls):
            if isinstance(c, str) and c.rsplit(".", 1)[-1] in self.hooks.lib_dataclasses:
                yield True
        yield False
