"""Dataclass command lines: a configuration dataclass of the script filled from the
command line by a library that reads its fields as flags — `tyro.cli(Config)`,
`simple_parsing.parse(Config)` / `parser.add_arguments(Config, dest="cfg")`,
`draccus.parse(Config)` / `pyrallis.parse(Config)`, and the `@draccus.wrap()` /
`@pyrallis.wrap()` decorators that hand the parsed instance to `main(cfg: Config)`.

The value of a field is, in rising precedence: its default (a nested dataclass field —
`optim: OptimConfig = field(default_factory=OptimConfig)` — is an instance with its own
defaults), the `--config_path file.yaml` document (draccus / pyrallis; origin `config`),
then the flags: `--batch_size 8` or `--batch-size 8`, `--optim.lr 1e-4` for a nested
field, a bare `--flag` or tyro's `--no-flag` for a boolean. A flag that names no field is
left alone: the libraries reject it, and nothing is guessed from it.
"""

from __future__ import annotations

import ast
from typing import Any, Optional

from preflight.lang.positions import yaml_tree
from preflight.lang.python.cli import convert, literal_or_str
from preflight.lang.python.modules import resolve_path
from preflight.lang.python.values import COMPOSED, ClassVal, DCInst, V, unk

#: calls that parse the command line into the dataclass given as their first argument
PARSE_CALLS = frozenset({"tyro.cli", "simple_parsing.parse", "draccus.parse", "pyrallis.parse",
                         "simple_parsing.helpers.serialization.parse"})
#: decorators that parse it into the first parameter of the function they wrap
WRAP_DECORATORS = frozenset({"draccus.wrap", "pyrallis.wrap"})
#: the flags that name a configuration file read under the command line's flags
CONFIG_FLAGS = ("config_path", "config-path", "config_file", "config-file")
#: nested dataclass fields followed
MAX_NESTING = 6


def _ann(ann: Optional[ast.AST]) -> str:
    if ann is None:
        return ""
    text = ast.unparse(ann)
    for wrap in ("Optional[", "typing.Optional["):
        if text.startswith(wrap) and text.endswith("]"):
            text = text[len(wrap):-1]
    return text.split(" | ")[0].strip().strip("'\"")


def _scalar_type(text: str) -> Optional[str]:
    return text if text in ("int", "float", "str", "bool") else None


class DataclassCliMixin:
    """Configuration dataclasses filled from the command line."""

    def register_add_arguments(self, node: ast.Call) -> None:
        """simple_parsing's `parser.add_arguments(Config, dest="cfg")`: `args.cfg` is the
        instance the command line makes."""
        cls = node.args[0] if node.args else None
        dest = node.args[1] if len(node.args) > 1 else next(
            (k.value for k in node.keywords if k.arg == "dest"), None)
        if isinstance(cls, ast.Name) and isinstance(dest, ast.Constant) and \
                isinstance(dest.value, str):
            self.dataclass_dests[dest.value] = cls.id

    def dataclass_dest(self, dest: str, line: int, col: int) -> Optional[V]:
        name = self.dataclass_dests.get(dest)
        cls = self.classes.get(name) if name else None
        if cls is None or not cls.is_dataclass:
            return None
        return self.cli_dataclass(cls, line, col)

    def cli_function(self, fv: Any, line: int, col: int) -> V:
        """`tyro.cli(main)`: `main` run with its parameters from the command line — a
        parameter annotated with a dataclass of the file is that dataclass filled from
        `--param.field` flags, the others `--param value`."""
        fn = fv.node
        flags = self.flags_as_kwargs(line, col)
        kwargs: dict[str, V] = {}
        for a in fn.args.args + fn.args.kwonlyargs:
            cls = self.classes.get(_ann(a.annotation))
            if cls is not None and cls.is_dataclass:
                kwargs[a.arg] = self.cli_dataclass(cls, line, col, prefix=a.arg)
            elif a.arg in flags:
                kwargs[a.arg] = flags[a.arg]
        return self.call_function(fv, [], kwargs, line, col)

    def click_arguments(self, fn: ast.AST, line: int, col: int) -> Optional[dict[str, V]]:
        """The parameters a `@click.command()` function receives from its `@click.option`
        decorators and the command line: `--batch-size 4` (type=int), a flag
        (`is_flag=True`, `--bf16/--no-bf16`), a default, a required option not given
        (unknown); None when the function is no click command."""
        decos = getattr(fn, "decorator_list", ())
        if not any(isinstance(d, ast.Call) and self._dotted_qual(self._dotted_text(d.func))
                   in ("click.command", "click.group") for d in decos):
            return None
        out: dict[str, V] = {}
        for d in decos:
            if not isinstance(d, ast.Call) or \
                    self._dotted_qual(self._dotted_text(d.func)) != "click.option":
                continue
            decls = [a.value for a in d.args if isinstance(a, ast.Constant) and
                     isinstance(a.value, str)]
            kw = {k.arg: k.value for k in d.keywords if k.arg}
            longs = [x for part in decls for x in part.split("/") if x.startswith("--")]
            # the parameter: an identifier among the declarations, else the longest `--`
            # name (of a `--flag/--no-flag` pair, the flag's own)
            ons = [part.split("/", 1)[0] for part in decls if part.startswith("--")]
            name = next((x for x in decls if x.isidentifier()), None) or (
                max((x[2:] for x in ons), key=len, default="").replace("-", "_") or None)
            if not name:
                continue
            on = [x for x in decls if "/" in x]
            on_flag, off_flag = (on[0].split("/", 1) + [""])[:2] if on else (None, None)
            dl, dc = d.lineno, d.col_offset + 1
            typ = self._dotted_text(kw["type"]) if "type" in kw else None
            given = None
            for o in longs + [x for x in decls if x.startswith("-") and not x.startswith("--")]:
                flag = o.lstrip("-")
                if flag in self.cli_opts:
                    given = (o, self.cli_opts[flag][-1])
            is_flag = bool(on) or (isinstance(kw.get("is_flag"), ast.Constant) and
                                  kw["is_flag"].value is True)
            if given is not None:
                o, raw = given
                if is_flag:
                    val: Any = o != off_flag
                else:
                    try:
                        val = convert(raw, typ) if raw is not None and typ in ("int", "float") \
                            else literal_or_str(raw) if raw is not None else None
                    except (ValueError, OverflowError):
                        out[name] = unk(f"{o} {raw}: not a valid {typ}", dl, dc)
                        continue
                out[name] = V(val, "cli", dl, dc, f"{o}{' ' + raw if raw else ''} on the "
                                                   f"command line")
            elif "default" in kw:
                dv = self.ev(kw["default"])
                out[name] = V(dv.value, "default", dl, dc, f"default of {longs[0] if longs else name}") \
                    if dv.known else unk(dv.reason or "default not known", dl, dc)
            elif is_flag:
                out[name] = V(False, "default", dl, dc, f"{longs[0] if longs else name} not given")
            elif isinstance(kw.get("required"), ast.Constant) and kw["required"].value is True:
                out[name] = unk(f"{longs[0] if longs else name} is required and was not given",
                                dl, dc)
            else:
                out[name] = V(None, "default", dl, dc, f"{longs[0] if longs else name} not given")
        return out

    def wrapped_config_class(self, fn: ast.AST) -> Optional[ClassVal]:
        """The dataclass a `@draccus.wrap()`-decorated function receives as its first
        parameter, when the parameter is annotated with a dataclass of the file."""
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or not fn.args.args:
            return None
        for d in fn.decorator_list:
            name = self._dotted_text(d.func if isinstance(d, ast.Call) else d)
            full = self._dotted_qual(name)
            if full in WRAP_DECORATORS:
                cls = self.classes.get(_ann(fn.args.args[0].annotation))
                return cls if cls is not None and cls.is_dataclass else None
        return None

    def _dotted_qual(self, name: str) -> str:
        """`wrap` → `draccus.wrap` as the file imports it."""
        head, _, rest = name.partition(".")
        bound = self.globals.get(head)
        qual = getattr(bound, "name", None)
        if isinstance(qual, str):
            return qual + ("." + rest if rest else "")
        return name

    def cli_dataclass(self, cls: ClassVal, line: int, col: int, prefix: str = "") -> V:
        """The instance the command line makes of `cls` (fields under `prefix.` for a
        parser's `dest`)."""
        inst = self._nested_instance(cls, line, col, 0)
        path = self._config_file_flag()
        if path is not None:
            self._apply_config_file(inst, path, line, col)
        used = self._apply_flags(inst, prefix)
        self.used_cli.update(used)
        if not self.unbound:
            self.config_instances.append(inst)
        return V(inst, "literal", line, col, f"{cls.name} from the command line")

    def config_fields(self) -> list[tuple[str, V]]:
        """Every field of the configuration instances the run built (nested ones
        flattened), as (field name, value)."""
        out: list[tuple[str, V]] = []
        # (fields, whether they are an OmegaConf composition, whose sections nest as dicts)
        todo = [(dict(getattr(o, "kwargs", {}), **getattr(o, "attrs", {})), False)
                if not isinstance(o, DCInst) else (o.fields, o.cls == COMPOSED)
                for o in self.config_instances]
        seen = 0
        while todo and seen < 10_000:
            fields, composed = todo.pop(0)
            for k, v in fields.items():
                seen += 1
                if not isinstance(v, V):
                    continue
                if v.known and isinstance(v.value, DCInst):
                    todo.append((v.value.fields, False))
                elif composed and v.known and isinstance(v.value, dict):
                    todo.append((v.value, True))    # a section of a composed config
                else:
                    out.append((k, v))
        # two instances that give one name different values (a train and an eval config
        # with their own `batch_size`): which one the job means is not said by the name
        by_name: dict[str, set] = {}
        unknown: dict[str, V] = {}
        for k, v in out:
            by_name.setdefault(k, set()).add(repr(v.value) if v.known else "?")
            if not v.known:
                unknown.setdefault(k, v)
        # one that leaves the name unknown (a file not known statically may set it) says
        # why, rather than that the instances differ
        return [(k, v if len(by_name[k]) == 1 else unknown.get(k) or
                 unk(f"{k}: {len(by_name[k])} configuration instances give it different values",
                     v.line, v.col)) for k, v in out]

    def _nested_instance(self, cls: ClassVal, line: int, col: int, depth: int) -> DCInst:
        inst = self.dc_instance(cls, line, col, from_cli=False)
        if depth >= MAX_NESTING:
            return inst
        for fname, (st, vnode, ann) in cls.fields.items():
            sub = self.classes.get(_ann(ann))
            if sub is None or not sub.is_dataclass or sub is cls:
                continue
            default = inst.fields.get(fname)
            if default is not None and default.known and default.value is None:
                continue                # `Optional[Sub] = None`: no instance unless given
            inst.fields[fname] = V(self._nested_instance(sub, st.lineno, st.col_offset + 1,
                                                         depth + 1),
                                   "default", st.lineno, st.col_offset + 1,
                                   f"dataclass default of {fname}")
        return inst

    def _config_file_flag(self) -> Optional[str]:
        for k in CONFIG_FLAGS:
            vals = self.cli_opts.get(k)
            if vals and vals[-1]:
                self.used_cli.add(k)
                return vals[-1]
        return None

    def _apply_config_file(self, inst: DCInst, rel: str, line: int, col: int) -> None:
        """`--config_path cfg.yaml`: its keys set the fields they name (nested mappings
        the nested dataclasses), origin `config` at the key's line."""
        path = resolve_path(self.path, rel)
        text = self.read_file(path) if path and self.read_file else None
        if not text:
            self.notes.append((line, col, f"configuration file {rel} not found: its values "
                                          f"are unknown"))
            for k, v in list(inst.fields.items()):
                inst.fields[k] = unk(f"{k} may be set by {rel} (not found)", v.line, v.col,
                                     v.value if v.known else None)
            return
        try:
            tree, pos, _ = yaml_tree(text)
        except Exception as e:  # noqa: BLE001 - a malformed file is said, never raised
            self.notes.append((line, col, f"configuration file {rel} not read: {e}"))
            return
        if isinstance(tree, dict):
            self._set_from_mapping(inst, tree, (), pos, path)

    def _set_from_mapping(self, inst: DCInst, tree: dict, at: tuple, pos: dict,
                          path: str) -> None:
        for k, v in tree.items():
            key = str(k).replace("-", "_")
            old = inst.fields.get(key)
            if old is None:
                continue
            if isinstance(v, dict) and old.known and isinstance(old.value, DCInst):
                self._set_from_mapping(old.value, v, at + (k,), pos, path)
                continue
            line, col = pos.get(at + (k,), (1, 1))
            new = V(v, "config", line, col, f"{'.'.join(map(str, at + (k,)))}: {v!r} in {path}")
            new.path = path
            inst.fields[key] = new

    def _apply_flags(self, inst: DCInst, prefix: str) -> set[str]:
        used: set[str] = set()
        for key, vals in self.cli_opts.items():
            if key.startswith("-") or not vals or key in CONFIG_FLAGS:
                continue
            parts = key.replace("-", "_").split(".")
            if prefix:
                if parts[0] != prefix:
                    continue
                parts = parts[1:]
            raw, negated = vals[-1], False
            target = inst
            for p in parts[:-1]:
                sub = target.fields.get(p)
                target = sub.value if sub is not None and sub.known and \
                    isinstance(sub.value, DCInst) else None
                if target is None:
                    break
            if target is None or not parts:
                continue
            name = parts[-1]
            if name not in target.fields and name.startswith("no_") and raw is None:
                name, negated = name[3:], True          # tyro's `--no-flag`
            old = target.fields.get(name)
            if old is None or (old.known and isinstance(old.value, DCInst)):
                continue
            st, typ = self._field_decl(target, name)
            val = self._flag_value(raw, typ, old, negated)
            shown = f"--{key}" + (f" {raw}" if raw is not None else "")
            # a flag's value is placed at the field it sets, where the field is declared
            line, col = (st.lineno, st.col_offset + 1) if st is not None else (old.line, old.col)
            new = V(val, "cli", line, col, f"{shown} on the command line")
            if st is None:
                new.path = old.path
            target.fields[name] = new if val is not None or raw is not None else old
            used.add(key)
        return used

    def _field_decl(self, inst: DCInst, name: str) -> tuple[Optional[ast.AST], Optional[str]]:
        """The statement declaring the field (in the class or a base of the file) and
        its scalar type."""
        cls, hops = self.classes.get(inst.cls), 0
        while cls is not None and hops < MAX_NESTING:
            f = cls.fields.get(name)
            if f is not None:
                return f[0], _scalar_type(_ann(f[2]))
            cls, hops = next((self.classes[b] for b in cls.bases if b in self.classes), None), hops + 1
        return None, None

    @staticmethod
    def _flag_value(raw: Optional[str], typ: Optional[str], old: V, negated: bool) -> Any:
        if raw is None:
            return not negated
        try:
            if typ == "bool" or (typ is None and old.known and isinstance(old.value, bool)):
                return convert(raw, "bool")
            if typ in ("int", "float", "str"):
                return convert(raw, typ)
        except (ValueError, OverflowError):
            pass
        return literal_or_str(raw)
