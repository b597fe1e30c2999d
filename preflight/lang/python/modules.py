"""Following calls into code the script does not hold itself: a method of a class of the
file called on an instance, or a function or method of another module of the repository
(`from utils import lora_config`), read (never run) and evaluated in its own module,
within the budgets; and finding a file the script names (`exec(open(...).read())`).
"""

from __future__ import annotations

import ast
import contextlib
import os
import re
from typing import Any, Callable, Iterator, Optional

from preflight.lang.python.budgets import (MAX_FOLLOWED, MAX_MODULE_BYTES, MAX_MODULES,
                                           MAX_SAME_FOLLOWED, MODULE_SEARCH_UP)
from preflight.lang.python.values import (COMPOSED, CUR_PATH, SPLAT, AttrDict, DCInst, Dotted,
                                          FuncVal, Obj, V, unk)
from preflight.safe_read import within

#: `Cls().method` — a method called on an instance
_METHOD = re.compile(r"([A-Za-z_][\w.]*)\(\)\.([A-Za-z_]\w*)")
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


#: `from a import b` re-exports followed to find a definition
MAX_REEXPORTS = 4


def _is_dataclass(cls: ast.ClassDef) -> bool:
    for d in cls.decorator_list:
        f = d.func if isinstance(d, ast.Call) else d
        name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
        if name == "dataclass":
            return True
    return False


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
    def load(cls, path: str, read_file: Any, name: str,
             parse: Callable[[str], ast.Module]) -> Optional["_Module"]:
        try:
            text = read_file(path)
            if not text or len(text) > MAX_MODULE_BYTES:
                return None
            return cls(path, name, parse(text), text.splitlines())
        except (SyntaxError, ValueError, MemoryError, RecursionError, OSError):
            return None


class ModulesMixin:
    """Calls followed into the file's classes and the repository's other modules."""

    def follow(self, qual: str, args: list[V], kwargs: dict[str, V], line: int,
               col: int, receiver: Optional[V] = None) -> Optional[V]:
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
            if local is not None and CUR_PATH[0] is None:
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
            return self._call_in(found[0], fn, [receiver or unk("self")] + args, kwargs,
                                 line, col, owner=found[1].name)
        found = self._foreign(qual)
        if found is None or not isinstance(found[1], (ast.FunctionDef, ast.AsyncFunctionDef)):
            return None
        return self._call_in(found[0], found[1], args, kwargs, line, col)

    def library_base(self, qual: str) -> Optional[str]:
        """The library class a class of another module of the repository derives from
        (`class ArgumentParserPlus(HfArgumentParser)` → `transformers.HfArgumentParser`),
        through the repository's own bases; None when it has none."""
        for _ in range(MAX_REEXPORTS):
            found = self._foreign(qual) if "(" not in qual else None
            if found is None or not isinstance(found[1], ast.ClassDef):
                return None
            mod, cls = found
            self._module_globals(mod)
            nxt = None
            for b in cls.bases:
                text = self._dotted_text(b)
                head, _, rest = text.partition(".")
                bound = (mod.globals or {}).get(head)
                full = (bound.name + ("." + rest if rest else "")) if isinstance(bound, Dotted) \
                    else None
                if full is None:
                    continue
                if full.lstrip(".").split(".", 1)[0] in _LIBRARIES:
                    return full
                nxt = nxt or full
            if nxt is None:
                return None
            qual = nxt
        return None

    def repo_class(self, text: str, mod: Optional["_Module"] = None) -> Any:
        """The class a base or a dotted name (`ModelConfig`, `utils.ExperimentConfig`)
        names where another module of the repository defines it, read in that module
        (`ClassVal.module`); `mod` is the module the name is written in (None: where the
        evaluator is). None for a library class or a name not bound to an import."""
        head, _, rest = text.partition(".")
        g = self._module_globals(mod) if mod is not None else \
            {**self.globals, **(self.frames[-1] if self.frames else {})}
        bound = g.get(head)
        if isinstance(bound, V) and bound.known:
            bound = bound.value
        if not isinstance(bound, Dotted):
            return None
        full = bound.name + ("." + rest if rest else "")
        if mod is not None:
            with self._inside(mod):
                return self.repo_class_named(full)
        return self.repo_class_named(full)

    def repo_class_named(self, qual: str) -> Any:
        """`repo_class` for a name already resolved through the imports
        (`pkg.utils.ExperimentConfig`)."""
        found = self._foreign(qual) if "(" not in qual else None
        if found is None or not isinstance(found[1], ast.ClassDef):
            return None
        m, node = found
        self._module_globals(m)
        with self._inside(m):
            cv = self.class_value(node)
        cv.module = m
        return cv

    def foreign_dataclass(self, qual: str, args: list[V], kwargs: dict[str, V], line: int,
                          col: int) -> Optional[V]:
        """`TrainConfig(...)` of a dataclass of another module of the repository: the
        instance with every field; None when `qual` names no such class."""
        found = self._foreign(qual) if "(" not in qual else None
        if found is None or not isinstance(found[1], ast.ClassDef) or \
                not _is_dataclass(found[1]):
            return None
        return self._dataclass_in(found[0], found[1], qual, args, kwargs, line, col)

    def _dataclass_in(self, mod: "_Module", cls: ast.ClassDef, qual: str, args: list[V],
                      kwargs: dict[str, V], line: int, col: int) -> V:
        """An instance of a configuration dataclass of another module
        (`train_config = TRAIN_CONFIG()`): its field defaults, read in that module, then
        the call's arguments. Its fields are then read and set like any attribute."""
        if self.followed >= MAX_FOLLOWED:
            return unk(f"{cls.name}(): more calls into other modules than the budget", line, col)
        self.followed += 1
        self._module_globals(mod)
        with self._inside(mod):
            cv = self.class_value(cls)
            names = list(cv.fields)
            given = {names[i]: a for i, a in enumerate(args) if i < len(names)}
            given.update({k: v for k, v in kwargs.items()
                          if not k.startswith("\0") or k == SPLAT})
            inst = self.dc_instance(cv, line, col, from_cli=False, kwargs=given)
        # the result of a call, as a class of another module always was, now holding every
        # field: its attributes read and set by name; model resolution reads it as a config
        obj = Obj(qual, args, inst.fields, line, col)
        if not self.unbound:
            self.config_instances.append(obj)
        return V(obj, "derived", line, col, f"instance of {cls.name}")

    def _module_globals(self, mod: "_Module") -> dict:
        """The top-level names of another module, read once: imports, functions, and the
        assignments that call nothing (a module's constants); classes by their name."""
        if mod.globals is not None:
            return mod.globals
        mod.globals = {}
        with self._inside(mod):
            for st in mod.tree.body:
                if isinstance(st, (ast.Import, ast.ImportFrom, ast.FunctionDef,
                                   ast.AsyncFunctionDef)) or (
                        isinstance(st, (ast.Assign, ast.AnnAssign)) and not any(
                            isinstance(n, ast.Call) for n in ast.walk(st))):
                    self.exec_block([st])
                elif isinstance(st, ast.ClassDef):
                    mod.globals[st.name] = Dotted(f"{mod.name}.{st.name}")
            # its argparse declarations: `args.x` read wherever the parse happens
            self.prescan_arguments(mod.tree, mod.lines)
        return mod.globals

    @contextlib.contextmanager
    def _inside(self, mod: "_Module") -> Iterator[None]:
        """Evaluate in another module: its globals (`mod.globals`, read first), its lines
        and path, no frame of the caller's (its names are its own, never bound in the
        caller's function); the caller's state and statement, which its patterns still
        read, restored after."""
        saved = (self.globals, self.lines, CUR_PATH[0], self.classes, self.cur_stmt)
        self.globals, self.classes, self.lines = mod.globals, {}, mod.lines
        CUR_PATH[0] = mod.path
        frames, self.frames = self.frames, []
        try:
            yield
        finally:
            self.frames = frames
            self.globals, self.lines, CUR_PATH[0], self.classes, self.cur_stmt = saved

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
        for _ in range(MAX_REEXPORTS):
            if mod is None:
                return None
            node = mod.defs.get(attr)
            if node is not None:
                return mod, node
            # a package's `__init__` that re-exports the name
            # (`from pkg.configs.training import train_config`)
            got = self._reexported(mod, attr)
            if got is None:
                return None
            mod, attr = got
        return None

    def _reexported(self, mod: "_Module", attr: str) -> Optional[tuple[Any, str]]:
        """The module and name a `from X import name [as attr]` of `mod` binds."""
        for st in mod.tree.body:
            if not isinstance(st, ast.ImportFrom):
                continue
            for a in st.names:
                if (a.asname or a.name) != attr or a.name == "*":
                    continue
                top = (st.module or "").split(".", 1)[0]
                if not st.level and (top in _LIBRARIES or not top):
                    return None
                saved = CUR_PATH[0]
                CUR_PATH[0] = mod.path
                try:
                    target = self._module("." * st.level + (st.module or ""))
                finally:
                    CUR_PATH[0] = saved
                return (target, a.name) if target is not None else None
        return None

    def _module(self, modname: str) -> Optional["_Module"]:
        level = len(modname) - len(modname.lstrip("."))
        parts = [p for p in modname.lstrip(".").split(".") if p]
        here = os.path.dirname(os.path.abspath(CUR_PATH[0] or self.path))
        if level:
            bases = [here]
            for _ in range(level - 1):
                bases = [os.path.dirname(bases[0])]
        else:
            bases, d = [], os.path.dirname(os.path.abspath(self.path))
            for _ in range(MODULE_SEARCH_UP + 1):
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
                if len(self.modules) >= MAX_MODULES or key == os.path.abspath(self.path):
                    return None
                shown = cand if os.path.isabs(self.path) else os.path.relpath(cand)
                self.modules[key] = _Module.load(shown, self.read_file, ".".join(parts),
                                                 self.hooks.parse)
                return self.modules[key]
        return None

    def module_constants(self, qual: str, arg: V, line: int, col: int) -> Optional[V]:
        """`importlib.import_module("configs.large")` / `runpy.run_path("configs/large.py")`
        of a config module of the repository: its constants (what its assignments that
        call nothing bind, `from configs.base import *` included) by attribute or by key;
        unknown, with the reason, when the name is not known or names no file of it."""
        if not arg.known or not isinstance(arg.value, str):
            return unk(f"{qual}({arg.reason or 'a name not known statically'})", line, col)
        if self.read_file is None:
            return None
        if qual == "runpy.run_path":
            path = resolve_path(self.path, arg.value)
            mod = _Module.load(path, self.read_file, os.path.splitext(os.path.basename(
                path))[0], self.hooks.parse) if path else None
        else:
            mod = self._module(arg.value)
        if mod is None:
            return unk(f"{qual}({arg.value!r}): not a module of the repository", line, col)
        consts = {k: v for k, v in self._module_globals(mod).items()
                  if not k.startswith("_") and isinstance(v, V)}
        if not self.unbound:
            # its names count as the job's settings (`seq_len = 1024` in the config module)
            self.config_instances.append(DCInst(COMPOSED, None, dict(consts), line, col))
        return V(AttrDict(consts), "config", line, col, f"the constants of {mod.path}")

    def star_import(self, modname: str) -> None:
        """`from configs.base import *` of a module of the repository: its constants (the
        names it assigns without calling anything, public ones) become the script's, each
        at its line in that module."""
        if self.read_file is None:
            return
        level = len(modname) - len(modname.lstrip("."))
        top = modname.lstrip(".").split(".", 1)[0]
        if not top or (not level and top in _LIBRARIES):
            return
        mod = self._module(modname)
        if mod is None:
            return
        for k, v in self._module_globals(mod).items():
            if not k.startswith("_") and isinstance(v, V):
                self.bind(k, v)

    def _call_in(self, mod: "_Module", fn: ast.AST, args: list[V], kwargs: dict[str, V],
                 line: int, col: int, owner: Optional[str] = None) -> Optional[V]:
        """Run `fn` of another module with the arguments bound: its names are that
        module's, its values carry that module's path."""
        # a function followed MAX_SAME_FOLLOWED times already is an opaque result from
        # then on, and costs nothing more
        seen = self.follow_counts.get(id(fn), 0)
        if self.followed >= MAX_FOLLOWED or seen >= MAX_SAME_FOLLOWED:
            return None
        self.follow_counts[id(fn)] = seen + 1
        self.followed += 1
        self._module_globals(mod)
        with self._inside(mod):
            return self.call_function(FuncVal(fn, owner=owner), args, kwargs, line, col)

    def init_attributes(self, qual: str, args: list[V], kwargs: dict[str, V], line: int,
                        col: int) -> dict[str, V]:
        """What a class of the repository's `__init__` sets on itself for these arguments
        (`self.vocab_size = kwargs.get("vocab_size", 6400)` of a config class deriving
        from `PretrainedConfig`): its known attributes; {} when it has no `__init__` of
        its own or it is not found."""
        obj = V(Obj(qual, args, dict(kwargs), line, col), "derived", line, col)
        local = self.classes.get(qual)
        if local is not None:
            fn = _method(local.node, "__init__")
            if fn is None or id(fn) in self.visited:
                return {}
            self.call_function(FuncVal(fn, owner=local.name), [obj] + args, kwargs, line, col)
        else:
            found = self._foreign(qual)
            if found is None or not isinstance(found[1], ast.ClassDef):
                return {}
            fn = _method(found[1], "__init__")
            if fn is None:
                return {}
            self._call_in(found[0], fn, [obj] + args, kwargs, line, col, owner=found[1].name)
        return {k: v for k, v in obj.value.attrs.items()
                if isinstance(v, V) and v.known and not k.startswith("\0")}

    def function_definition(self, func: V) -> Optional[ast.FunctionDef]:
        """The `def` a called value refers to: a function of this file, or of another
        module of the repository (read, never run); None when it is neither."""
        if not func.known:
            return None
        if isinstance(func.value, FuncVal) and isinstance(func.value.node, ast.FunctionDef):
            return func.value.node
        if isinstance(func.value, Dotted):
            found = self._foreign(func.value.name)
            if found is not None and isinstance(found[1], ast.FunctionDef):
                return found[1]
        return None

    def class_definition(self, qual: str) -> Optional[ast.ClassDef]:
        """The `class` statement a dotted name refers to: a class of this file, or of
        another module of the repository (read, never run); None when it is neither."""
        local = self.classes.get(qual)
        if local is not None:
            return local.node
        found = self._foreign(qual)
        return found[1] if found is not None and isinstance(found[1], ast.ClassDef) else None


def resolve_path(base_file: str, rel: str) -> Optional[str]:
    """A file named by the script: relative to the working directory, then the script.
    Only files under one of those two folders are read (`exec(open("/etc/…").read())`
    names nothing of the job's)."""
    roots = (os.getcwd(), os.path.dirname(os.path.abspath(base_file)))
    for cand in (rel, os.path.join(os.path.dirname(base_file), rel)):
        if cand and os.path.isfile(cand) and within(cand, roots):
            return cand
    return None
