"""Calls: a call's arguments evaluated, then what is called — a function of the file
(inlined with its arguments bound, within the depth budget), a class of the file (its
`__init__` run), a worker started by `torch.multiprocessing.spawn`, a builtin, a function
of another module of the repository (`modules`), or a library API, handed to the hook
object (`patterns.on_call`) and otherwise kept as an opaque result (`Obj`).
"""

from __future__ import annotations

import ast
import posixpath
from typing import Any, Optional

from preflight.lang.python.budgets import MAX_DEPTH, MAX_RECURSION, MAX_RECURSIVE_CALLS
from preflight.lang.python.builtin_calls import BoundDict, BoundStr
from preflight.lang.python.config_files import ATTR_DICTS, LOADERS, OMEGACONF_CALLS
from preflight.lang.python.pymath import MATH_CALLS, math_call
from preflight.lang.python.dataclass_cli import PARSE_CALLS
from preflight.lang.python.scopes import CONFIG_NAME
from preflight.lang.python.statements import Returned
from preflight.lang.python.values import (SPLAT, ClassVal, DCInst, Dotted, FuncVal, Obj, V, as_v,
                                          unk)

#: start a function in worker processes with the given arguments
#: the pure path functions of `os.path` read on known strings (`path_call`)
PATH_CALLS = frozenset({"os.path.join", "os.path.normpath", "os.path.abspath",
                        "os.path.realpath", "os.path.basename", "os.path.dirname",
                        "os.path.expanduser"})


def path_call(qual: str, args: list[V], line: int, col: int) -> Optional[V]:
    """An `os.path` function of known strings (None when an argument is not one, or the
    result depends on the machine: `~` in `expanduser`)."""
    if not args or not all(a.known and isinstance(a.value, str) for a in args):
        return None
    vals = [a.value for a in args]
    name = qual.rsplit(".", 1)[-1]
    if name == "join":
        out = posixpath.join(*vals)
    elif len(vals) != 1:
        return None
    elif name in ("normpath", "abspath", "realpath"):
        out = posixpath.normpath(vals[0])
    elif name == "expanduser":
        if vals[0].startswith("~"):
            return None
        out = vals[0]
    else:
        out = getattr(posixpath, name)(vals[0])
    first = args[0]
    return V(out, first.origin, first.line or line, first.col or col, first.reason)


#: calls whose result forwards every attribute to the module they are given
#: (`torch.compile`'s OptimizedModule reads `_orig_mod`'s attributes)
RETURNS_ITS_MODULE = frozenset({"torch.compile"})
SPAWN_CALLS = frozenset({"torch.multiprocessing.spawn", "torch.multiprocessing.start_processes",
                         "torch.multiprocessing.spawn.spawn"})


class CallsMixin:
    """Evaluating calls and running the functions of the file."""

    def ev_call(self, node: ast.Call, line: int, col: int) -> V:
        f = self.ev(node.func)
        args: list[V] = []
        for a in node.args:
            if isinstance(a, ast.Starred):
                sv = self.ev(a.value)
                if sv.known and isinstance(sv.value, (list, tuple)):
                    args.extend(as_v(x, sv, line, col) for x in sv.value)
                else:
                    args.append(unk(f"*{self.src(a.value)}", line, col))
            else:
                args.append(self.ev(a))
        kwargs: dict[str, V] = {}
        kwnodes: dict[str, ast.AST] = {}
        for k in node.keywords:
            if k.arg is None:
                sv = self.ev(k.value)
                if sv.known and isinstance(sv.value, dict):
                    for kk, vv in sv.value.items():
                        if isinstance(kk, str):
                            kwargs[kk] = as_v(vv, sv, line, col)
                elif sv.known and isinstance(sv.value, DCInst):
                    kwargs.update(sv.value.fields)
                else:
                    kwargs[SPLAT] = unk(f"**{self.src(k.value)}: {sv.reason}", line, col)
                continue
            kwargs[k.arg] = self.ev(k.value)
            kwnodes[k.arg] = k
        if isinstance(node.func, ast.Attribute) and node.func.attr == "set_defaults" and \
                any(k.arg is None for k in node.keywords):
            # `parser.set_defaults(**yaml.safe_load(f))` as the script runs it: the
            # document's keys become the arguments' defaults
            self.run_set_defaults(kwargs, line, col)
        fv = f.value if f.known else None
        # bound methods of str/dict values
        if isinstance(fv, BoundStr):
            return fv.call(args, kwargs, line, col)
        if isinstance(fv, BoundDict):
            return fv.call(self, args, kwargs, line, col, node)
        if isinstance(fv, FuncVal):
            if isinstance(fv.node, ast.Lambda):
                return unk("lambda call", line, col)
            return self.call_function(fv, args, kwargs, line, col)
        if isinstance(fv, ClassVal):
            if fv.is_dataclass and any(self._is_lib_chain(fv)):
                inst = self.dc_instance(fv, line, col, from_cli=False, kwargs=kwargs)
                self.patterns.on_dataclass(self, inst, node)
                return V(inst, "literal", line, col)
            # a class of this file: run its __init__ for the calls it makes, record the ref
            res = self.patterns.on_class_call(self, fv, args, kwargs, node)
            if fv.is_dataclass and isinstance(res.value, Obj) and not res.value.kwargs:
                # a configuration dataclass of the file: every field readable and settable
                names = list(fv.fields)
                given = {names[i]: a for i, a in enumerate(args) if i < len(names)}
                given.update({k: v for k, v in kwargs.items()
                              if not k.startswith("\0") or k == SPLAT})
                res.value.kwargs = self.dc_instance(fv, line, col, from_cli=False,
                                                    kwargs=given).fields
                if not self.unbound:
                    self.config_instances.append(res.value)
            init = next((s for s in fv.node.body if isinstance(s, ast.FunctionDef)
                         and s.name == "__init__"), None)
            if init is not None and id(init) not in self.visited:
                self.call_function(FuncVal(init, owner=fv.name), [unk("self")] + args, kwargs,
                                   line, col)
            return res
        qual = None
        if isinstance(fv, Dotted):
            qual = fv.name
        elif isinstance(fv, Obj):
            # `x.method(...)` names the method; calling an object itself (`tokenizer(...)`,
            # `model(batch)`) is marked with "()"
            qual = fv.qual if isinstance(node.func, ast.Attribute) else fv.qual + "()"
        elif isinstance(node.func, ast.Attribute):
            # a method call on something unknown (model.half(), tokenizer(...)): keep the
            # receiver's text so patterns can still recognise the method
            qual = "?" + self.src(node.func.value)[:80] + "." + node.func.attr
        elif isinstance(node.func, ast.Name):
            qual = "?" + node.func.id
        if qual is None:
            return unk(f"call `{self.src(node.func)[:60]}`", line, col)
        if qual in MATH_CALLS and args and all(a.known for a in args):
            out = math_call(qual, [a.value for a in args])
            if out is not None:
                return V(out, "derived", line, col, f"{qual}(...)")
        if qual in PATH_CALLS:
            # `os.path.abspath(sys.argv[1])`: the path a later `open` / `parse_yaml_file`
            # reads, computed from known strings (an absolute path's folder is the run's
            # working directory, where the relative one is found too)
            r = path_call(qual, args, line, col)
            if r is not None:
                return r
        if qual in LOADERS:
            # `yaml.safe_load(open(args.config))`: the document, each value at its line
            r = self.load_config_file(qual, args, line, col)
            if r is not None:
                return r
        if qual in ("importlib.import_module", "runpy.run_path") and args:
            # a config module the script picks by name (`--config configs.large`)
            r = self.module_constants(qual, args[0], line, col)
            if r is not None:
                return r
        if qual in ATTR_DICTS:
            r = self.attr_dict(args, kwargs, line, col)
            if r is not None:
                return r
        if qual in OMEGACONF_CALLS:
            # OmegaConf's structured configs: defaults, file and command line merged
            r = self.omegaconf_call(qual, args, kwargs, line, col)
            if r is not None:
                return r
        if qual in PARSE_CALLS and args and args[0].known and \
                isinstance(args[0].value, ClassVal) and args[0].value.is_dataclass:
            # `tyro.cli(Config)`: the dataclass filled from the command line
            return self.cli_dataclass(args[0].value, line, col)
        if qual in PARSE_CALLS and args and args[0].known and isinstance(args[0].value, FuncVal) \
                and not isinstance(args[0].value.node, ast.Lambda):
            return self.cli_function(args[0].value, line, col)
        if qual.startswith("builtins."):
            r = self._builtin(qual[9:], args, kwargs, line, col, node)
            if r is not None:
                return r
        else:
            # a repository's own helper that patches a library (FastChat's
            # `replace_llama_attn_with_flash_attn()`) is known by its name, followed or not
            self.patterns.on_patch(self, qual, node)
            if qual in SPAWN_CALLS:
                self._spawn(args, kwargs, line, col)
            r = self.follow(qual, args, kwargs, line, col,
                            self._receiver(node)) if not qual.startswith("?") else None
            if r is not None:
                return r
        res = self.patterns.on_call(self, qual, args, kwargs, node, kwnodes, func=f)
        if not qual.startswith("?"):
            # a configuration dataclass of the repository (the patterns have seen the call:
            # a model config is still handed to model resolution): every field readable
            inst = self.foreign_dataclass(qual, args, kwargs, line, col)
            if inst is not None:
                return inst
        if res is not None:
            return res
        if qual in RETURNS_ITS_MODULE and args and args[0].known and \
                isinstance(args[0].value, Obj):
            # `model = torch.compile(model)`: the compiled module forwards its attributes
            # to the module it wraps, so `model.setup_optimizer(...)` is the module's method
            return args[0]
        obj = Obj(qual, args, kwargs, line, col)
        base = self.library_base(qual) if not qual.startswith("?") and qual[:1].isalpha() and \
            qual.rsplit(".", 1)[-1][:1].isupper() else None
        if base is not None:
            # an instance of the repository's subclass of a library class: the adapters
            # read it as that class (its own methods are still followed by its name)
            obj.attrs["\0base"] = V(base)
        return V(obj, "derived", line, col, f"result of {qual}(...)")

    def _receiver(self, node: ast.Call) -> Optional[V]:
        """`self` for a method of the repository's subclass of a library class called on
        an instance of it (`parser.parse()` on `parser = H4ArgumentParser(...)`): the
        instance, so that its own calls of the library's methods (`self.parse_yaml_file`)
        are read as the library's; None otherwise (the method runs with `self` unknown)."""
        if not isinstance(node.func, ast.Attribute):
            return None
        v = self.ev(node.func.value)
        if v.known and isinstance(v.value, Obj) and "\0base" in v.value.attrs:
            return v
        return None

    def _spawn(self, args: list[V], kwargs: dict[str, V], line: int, col: int) -> None:
        """`mp.spawn(main_worker, nprocs=n, args=(ngpus, args))`: each process runs
        `main_worker(i, ngpus, args)` — the worker gets the call site's arguments (its
        process index is unknown), not unknown parameters."""
        fn = args[0] if args else kwargs.get("fn")
        extra = kwargs.get("args") if "args" in kwargs else (args[2] if len(args) > 2 else None)
        if not (isinstance(fn, V) and isinstance(fn.value, FuncVal)) or \
                isinstance(fn.value.node, ast.Lambda):
            return
        rest: list[V] = []
        if extra is not None and extra.known and isinstance(extra.value, (list, tuple)):
            rest = [as_v(x, extra, line, col) for x in extra.value]
        elif extra is not None:
            return
        self.call_function(fn.value, [unk("the process index given by spawn", line, col)] + rest,
                           {}, line, col)

    def call_function(self, fv: FuncVal, args: list[V], kwargs: dict[str, V], line: int, col: int,
                      unbound: bool = False) -> V:
        node = fv.node
        key = id(node)
        if args and self.sets_fields_by_name(node) and self.set_fields_by_name(args[0], kwargs):
            # `update_config((train_cfg, fsdp_cfg), **kwargs)`: the flags set the fields
            # they name (the loop itself is not followed)
            return V(None, "literal", line, col)
        if self.depth >= MAX_DEPTH or (key in self.visited and not unbound and self._on_stack(key)
                                       and not self._may_recurse(key, args, kwargs)):
            return unk(f"recursive or too deep call of {getattr(node, 'name', 'function')}", line, col)
        self.visited.add(key)
        # the statement that called it and the definition: what a recogniser reads of a
        # value the function returns to its caller (`model = build(cfg)`)
        frame: dict[str, Any] = {"\0fn": key, "\0caller": self.cur_stmt, "\0def": node}
        if fv.closure is not None:
            frame["\0closure"] = fv.closure
        a = node.args
        params = [p.arg for p in a.posonlyargs + a.args]
        defaults = a.defaults
        nd = len(params) - len(defaults)
        if not args and params and params[0] not in kwargs and \
                getattr(node, "decorator_list", None):
            # `@hydra.main(config_path=…, config_name=…) def main(cfg)` called bare: Hydra
            # passes the config it composes from the command line's overrides
            composed = self.hydra_config(node, line, col)
            if composed is not None:
                args = [composed]
            clicked = self.click_arguments(node, line, col) if composed is None else None
            if clicked:
                # `@click.command() @click.option("--batch-size", ...) def main(batch_size)`
                kwargs = {**clicked, **kwargs}
        for i, p in enumerate(params):
            if i < len(args):
                frame[p] = args[i]
            elif p in kwargs:
                frame[p] = kwargs[p]
            elif i >= nd:
                d = self.ev(defaults[i - nd])
                frame[p] = d
                if d.known and d.origin == "literal":
                    frame[p] = V(d.value, "default", d.line, d.col,
                                 f"default of parameter `{p}` of {getattr(node, 'name', '')}()")
            else:
                frame[p] = unk(f"parameter `{p}` of {getattr(node, 'name', 'function')}()",
                               line, col)
        for p, d in zip(a.kwonlyargs, a.kw_defaults):
            if p.arg in kwargs:
                frame[p.arg] = kwargs[p.arg]
            elif d is not None:
                dv = self.ev(d)
                frame[p.arg] = dv if not (dv.known and dv.origin == "literal") else V(
                    dv.value, "default", dv.line, dv.col, f"default of parameter `{p.arg}`")
            else:
                frame[p.arg] = unk(f"parameter `{p.arg}`", line, col)
        if not args and params and params[0] not in kwargs:
            wrapped = self.wrapped_config_class(node)
            if wrapped is not None:
                # `@draccus.wrap() def main(cfg: TrainConfig)` called as `main()`
                frame[params[0]] = self.cli_dataclass(wrapped, line, col)
        if a.vararg:
            # the positional arguments past the named ones (none: an empty tuple)
            rest = args[len(params):]
            frame[a.vararg.arg] = V((), "derived", line, col) if not rest and not unbound \
                else unk(f"*{a.vararg.arg}", line, col)
        if a.kwarg:
            # the keywords no parameter takes (none: an empty dict, so that
            # `kwargs.get("vocab_size", 6400)` is its default)
            extra = {k: v for k, v in kwargs.items() if k not in frame}
            frame[a.kwarg.arg] = V(extra, "derived", line, col) if extra or not unbound \
                else unk(f"**{a.kwarg.arg}")
        frame["\0cond"] = self.cond_depth
        if not self.unbound:
            for p, pv in frame.items():
                if isinstance(pv, V) and CONFIG_NAME.match(p):
                    self.local_config[p] = pv
        self.frames.append(frame)
        self.depth += 1
        try:
            self.exec_block(node.body)
        except Returned:
            pass
        finally:
            self.depth -= 1
            self.frames.pop()
        ret = frame.get("\0return")
        if ret is None:
            return V(None, "literal", line, col)
        return ret

    def _on_stack(self, key: int) -> bool:
        return any(fr.get("\0fn") == key for fr in self.frames)

    def _may_recurse(self, key: int, args: list, kwargs: dict) -> bool:
        """A recursive call is run when every argument is known and the function is not yet
        MAX_RECURSION deep: a config loader that loads its `base:` file first
        (`load_config(join(dirname(path), cfg["base"]))`) ends with the chain of files; a
        recursion over values not known could not tell where it stops."""
        depth = sum(fr.get("\0fn") == key for fr in self.frames)
        if depth >= MAX_RECURSION or not all(
                isinstance(v, V) and v.known for v in list(args) + list(kwargs.values())):
            return False
        # a recursion over every key of a nested dict (`deep_update(d, u)` in a loop) runs
        # as many times as the tree has nodes: a few re-entries per function, then unknown
        runs = getattr(self, "_recursions", None)
        if runs is None:
            runs = self._recursions = {}
        runs[key] = runs.get(key, 0) + 1
        return runs[key] <= MAX_RECURSIVE_CALLS
