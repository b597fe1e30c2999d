"""A configuration file the script reads itself, named on its command line or in its
code: `yaml.safe_load(open(args.config))`, `json.load(f)` inside `with open(path) as f:`,
`OmegaConf.load(path)`. The document becomes a dict whose values carry origin `config` and
the file's own `path:line`, so `cfg["train"]["batch_size"]` reads as the file says.

OmegaConf's structured configs are read as OmegaConf composes them:
`OmegaConf.structured(TrainArgs())` (the dataclass's defaults, nested dataclasses as nested
keys), `OmegaConf.from_cli()` (the command line's `key.sub=value` words, origin `cli`),
`OmegaConf.create({...})`, `OmegaConf.merge(a, b, …)` (a deep merge, the later wins; a
document not known statically makes every key it could set unknown, with the value before
it as the alternative) and `OmegaConf.to_object` / `to_container` (the same keys).

Only files under the working directory or the script's folder are read (as nanoGPT's
configurator files are); a path that is not known statically, a file that is missing or
malformed, and an OmegaConf `${...}` interpolation are unknown with the reason.
"""

from __future__ import annotations

import ast
import json
import os
from typing import Any, Optional

from preflight.lang.positions import json_positions, yaml_tree
from preflight.lang.python.modules import resolve_path
from preflight.lang.python.values import COMPOSED, AttrDict, ClassVal, DCInst, Obj, V, unk

#: calls that parse a configuration document from an open file or a path
LOADERS = frozenset({"yaml.safe_load", "yaml.load", "yaml.full_load", "json.load",
                     "omegaconf.OmegaConf.load", "OmegaConf.load"})
#: values converted per document (a larger one is cut: its remaining keys are not read)
MAX_VALUES = 50_000


def _path_arg(arg: V) -> V:
    """The path a loader's argument names: `open(path)` (its first argument) or a path."""
    o = arg.value if arg.known else None
    if isinstance(o, Obj) and o.qual == "builtins.open":
        return o.args[0] if o.args else unk("open() without a path")
    return arg




#: OmegaConf's composing calls (`omegaconf.OmegaConf.merge`, …) by their method name
OMEGACONF = frozenset({"from_cli", "structured", "create", "merge", "to_object",
                       "to_container", "unsafe_merge"})
OMEGACONF_CALLS = frozenset(f"{m}.{n}" for m in ("omegaconf.OmegaConf", "OmegaConf")
                            for n in OMEGACONF)
#: nested structured configs converted per document
_MAX_NESTING = 12
#: libraries' dicts read by attribute (`EasyDict(yaml.safe_load(f))`, `Munch`, `ConfigDict`)
ATTR_DICTS = frozenset({"easydict.EasyDict", "easydict.edict", "addict.Dict", "addict.Addict",
                        "munch.Munch", "munch.munchify", "munch.DefaultMunch", "dotmap.DotMap",
                        "ml_collections.ConfigDict", "ml_collections.FrozenConfigDict",
                        "ml_collections.config_dict.ConfigDict", "box.Box", "box.ConfigBox"})


def _scalar(text: str) -> Any:
    """A dot-list value as OmegaConf reads it: YAML's scalars (`4`, `3e-4`, `true`, `null`),
    else the text."""
    import yaml
    try:
        v = yaml.safe_load(text)
    except Exception:  # noqa: BLE001 - the text itself, as OmegaConf keeps it
        return text
    return v if isinstance(v, (int, float, bool, str, type(None))) else text


class ConfigFilesMixin:
    """Configuration documents the script loads."""

    def load_config_file(self, qual: str, args: list[V], line: int, col: int) -> Optional[V]:
        if not args:
            return None
        p = _path_arg(args[0])
        if not p.known:
            return unk(f"the configuration file read at line {line}: {p.reason}", line, col)
        if not isinstance(p.value, str):
            return None                  # a stream preflight cannot name: not a file read here
        path = resolve_path(self.path, p.value)
        text = self.read_file(path) if path and self.read_file else None
        if not text:
            return unk(f"configuration file {p.value} not found", line, col)
        try:
            if qual == "json.load":
                tree, pos = json_positions(text, json.loads(text))
            else:
                tree, pos, _ = yaml_tree(text)
        except Exception as e:  # noqa: BLE001 - a malformed document is said, never raised
            return unk(f"configuration file {p.value} not read: {str(e)[:120]}", line, col)
        budget = [MAX_VALUES]
        return self._as_values(tree, (), pos, path, budget, interpolates="OmegaConf" in qual)

    def _as_values(self, x: Any, at: tuple, pos: dict, path: str, budget: list,
                   interpolates: bool) -> V:
        budget[0] -= 1
        line, col = pos.get(at, (1, 1))
        key = ".".join(map(str, at)) or "the document"
        if budget[0] < 0:
            out = unk(f"{key}: the document has more than {MAX_VALUES:,} values", line, col)
        elif isinstance(x, dict):
            d = {k: self._as_values(v, at + (k,), pos, path, budget, interpolates)
                 for k, v in x.items()}
            out = V(AttrDict(d) if interpolates else d, "config", line, col, f"{path}")
        elif isinstance(x, list):
            out = V([self._as_values(v, at + (i,), pos, path, budget, interpolates)
                     for i, v in enumerate(x)], "config", line, col, f"{path}")
        elif interpolates and isinstance(x, str) and "${" in x:
            out = unk(f"{key}: {x!r} is an OmegaConf interpolation", line, col)
        else:
            out = V(x, "config", line, col, f"{key}: {x!r} in {path}")
        out.path = path
        return out

    def attr_dict(self, args: list[V], kwargs: dict[str, V], line: int, col: int) -> Optional[V]:
        """`EasyDict(d)` / `Munch(d)` / `ConfigDict(d)` of a dict: its keys by attribute."""
        if len(args) == 1 and args[0].known and isinstance(args[0].value, dict):
            return V(_attr_tree(args[0].value), args[0].origin, args[0].line, args[0].col,
                     args[0].reason)
        if not args and kwargs and not any(k.startswith("\0") for k in kwargs):
            return V(AttrDict(kwargs), "derived", line, col, "a dict of keywords")
        if len(args) == 1 and not args[0].known:
            return args[0]
        return None

    # ----------------------------------------------------------------- OmegaConf
    def omegaconf_call(self, qual: str, args: list[V], kwargs: dict[str, V], line: int,
                       col: int) -> Optional[V]:
        meth = qual.rsplit(".", 1)[-1]
        if meth == "from_cli":
            words = args[0] if args else None
            if words is not None:
                if not words.known or not isinstance(words.value, list):
                    return unk(f"OmegaConf.from_cli: {words.reason or 'its words'}", line, col)
                texts = [w.value if isinstance(w, V) else w for w in words.value]
            else:
                texts = list(self.argv)
            return V(self._dotlist(texts, line, col), "cli", line, col, "the command line")
        if meth in ("to_object", "to_container"):
            if not args:
                return None
            if args[0].known and isinstance(args[0].value, dict) and not self.unbound:
                # the composed configuration the script runs with: its keys are read by
                # name (`grad_acc_steps`, `seq_len`) as any config object's fields are
                self.config_instances.append(DCInst(COMPOSED, None, args[0].value, line, col))
            return args[0]
        if meth in ("structured", "create"):
            if not args:
                return V(AttrDict(), "literal", line, col, "OmegaConf.create()")
            return self._as_document(args[0], line, col, 0)
        # merge / unsafe_merge
        out: AttrDict = AttrDict()
        for a in args:
            doc = self._as_document(a, line, col, 0)
            if not doc.known or not isinstance(doc.value, dict):
                why = doc.reason or f"`{qual}` argument not known statically"
                _unsettle(out, why, line, col)
                continue
            _deep_merge(out, doc.value)
        return V(out, "derived", line, col, "OmegaConf.merge(...)")

    def _dotlist(self, words: list, line: int, col: int) -> AttrDict:
        out: AttrDict = AttrDict()
        for w in words:
            if not isinstance(w, str) or "=" not in w or w.startswith("-"):
                continue
            key, _, raw = w.partition("=")
            key = key.lstrip("+~")          # Hydra's `+key=` / `~key` spellings
            parts = [k for k in key.split(".") if k]
            if not parts:
                continue
            d = out
            for k in parts[:-1]:
                nxt = d.get(k)
                if not (isinstance(nxt, V) and isinstance(nxt.value, AttrDict)):
                    nxt = V(AttrDict(), "cli", line, col, f"{key} on the command line")
                    d[k] = nxt
                d = nxt.value
            d[parts[-1]] = V(_scalar(raw), "cli", line, col, f"{w} on the command line")
        return out

    def _as_document(self, v: Any, line: int, col: int, depth: int) -> V:
        """A value OmegaConf composes as a document: a dict or an AttrDict as it is, a
        dataclass instance (or class) as its fields, nested instances as nested keys."""
        if not isinstance(v, V):
            return V(v, "literal", line, col)
        if not v.known or depth > _MAX_NESTING:
            return v
        x = v.value
        if isinstance(x, ClassVal) and x.is_dataclass:
            x = self.dc_instance(x, line, col, from_cli=False)
        fields = None
        if isinstance(x, DCInst):
            fields = x.fields
        elif isinstance(x, Obj) and x.kwargs and not x.args:
            fields = x.kwargs               # an instance of a dataclass the evaluator built
        elif isinstance(x, dict):
            fields = x
        if fields is None:
            return v
        out = AttrDict()
        for k, fv in fields.items():
            if isinstance(k, str) and not k.startswith("\0"):
                out[k] = self._as_document(fv, line, col, depth + 1) if isinstance(fv, V) and \
                    fv.known and isinstance(fv.value, (DCInst, Obj, dict)) else fv
        return V(out, v.origin, v.line, v.col, v.reason)


def _attr_tree(d: dict, depth: int = 0) -> AttrDict:
    """A dict and the dicts nested in it as attribute dicts (EasyDict converts them all),
    `_MAX_NESTING` levels deep (a dict that holds itself is cut there)."""
    out = AttrDict()
    for k, v in d.items():
        if isinstance(v, V) and v.known and isinstance(v.value, dict) and \
                not isinstance(v.value, AttrDict) and depth < _MAX_NESTING:
            nv = V(_attr_tree(v.value, depth + 1), v.origin, v.line, v.col, v.reason)
            nv.path = v.path
            out[k] = nv
        else:
            out[k] = v
    return out


def _deep_merge(into: dict, new: dict, depth: int = 0) -> None:
    for k, nv in new.items():
        old = into.get(k)
        if isinstance(old, V) and old.known and isinstance(old.value, dict) and \
                isinstance(nv, V) and nv.known and isinstance(nv.value, dict) and \
                depth < _MAX_NESTING and old.value is not nv.value:
            merged = AttrDict(old.value)
            _deep_merge(merged, nv.value, depth + 1)
            into[k] = V(merged, nv.origin, nv.line, nv.col, nv.reason)
        else:
            into[k] = nv


def _unsettle(d: dict, why: str, line: int, col: int, depth: int = 0) -> None:
    """Every key of `d` may be set by a document not known statically: unknown, the value
    it had the alternative."""
    for k, v in list(d.items()):
        if isinstance(v, V) and v.known and isinstance(v.value, dict) and depth < _MAX_NESTING:
            inner = AttrDict(v.value)
            _unsettle(inner, why, line, col, depth + 1)
            d[k] = V(inner, v.origin, v.line, v.col, v.reason)
        elif isinstance(v, V):
            u = unk(f"{k} may be set by {why}", v.line, v.col,
                    v.value if v.known else v.default)
            u.path = v.path                 # where the value it may replace is written
            d[k] = u


#: decorators of a function Hydra calls with its composed config (NeMo's `hydra_runner`)
_HYDRA_MAINS = ("hydra.main", "hydra_runner")


def _hydra_decorator(fn: ast.AST, dotted) -> Optional[ast.Call]:
    for d in getattr(fn, "decorator_list", ()):
        if isinstance(d, ast.Call) and dotted(d.func).endswith(_HYDRA_MAINS):
            return d
    return None


class HydraMixin:
    """The config a `@hydra.main` function is called with: composed as Hydra composes it
    (`preflight.lang.hydra`) from the decorator's folder and primary config and the command
    line's overrides, each value where it was set (a config file's line, origin `config`;
    an override word, origin `cli`)."""

    def hydra_config(self, fn: ast.AST, line: int, col: int) -> Optional[V]:
        deco = _hydra_decorator(fn, self._dotted_text)
        if deco is None or self.read_file is None:
            return None
        kw = {k.arg: k.value for k in deco.keywords if k.arg}
        pos = list(deco.args)
        def literal(key: str, i: int) -> Optional[str]:
            node = kw.get(key, pos[i] if i < len(pos) else None)
            return node.value if isinstance(node, ast.Constant) and \
                isinstance(node.value, str) else None
        # here: composition only for a Hydra app's function
        from preflight.lang import hydra
        over_path, over_name, words = hydra.cli_config(list(self.argv))
        cpath = over_path or literal("config_path", 0)
        cname = over_name or literal("config_name", 1)
        if not cname:
            return None
        folder = cpath if cpath and os.path.isabs(cpath) else \
            os.path.join(os.path.dirname(os.path.abspath(self.path)), cpath or "")
        name = cname if cname.endswith((".yaml", ".yml")) else cname + ".yaml"
        if not os.path.isfile(os.path.join(folder, name)):
            return unk(f"the Hydra config {name} is not in {cpath or '.'}", line, col)
        try:
            comp = hydra.compose(os.path.normpath(folder), name, words)
        except Exception as e:  # noqa: BLE001 - a config that does not compose is said
            return unk(f"the Hydra config {name} does not compose: {type(e).__name__}",
                       line, col)
        return self._composed(comp, (), comp.cfg, line, col)

    def _composed(self, comp: Any, at: tuple, x: Any, line: int, col: int) -> V:
        cli = at in comp.from_line
        # a value an override word sets is placed at the call Hydra makes (the launch
        # line's word is the job's `<command>`, which the script does not see)
        src = None if cli else comp.src(at)
        ln, cl = (src.line or 1, src.col or 1) if src is not None else (line, col)
        key = ".".join(map(str, at)) or "the config"
        if isinstance(x, dict):
            out = V(AttrDict({k: self._composed(comp, at + (k,), v, line, col)
                              for k, v in x.items() if isinstance(k, str)}),
                    "config", ln, cl, "the composed Hydra config")
        elif getattr(x, "reason", None) is not None and isinstance(x, str):
            out = unk(f"{key}: {x.reason}", ln, cl)            # an Unresolved value
        elif isinstance(x, list):
            out = V([self._composed(comp, at + (i,), v, line, col) for i, v in enumerate(x)],
                    "config", ln, cl, key)
        else:
            out = V(x, "cli" if cli else "config", ln, cl,
                    f"{key}={x!r} on the command line" if cli else f"{key}: {x!r}")
        if src is not None and src.path:
            out.path = src.path if os.path.isabs(self.path) else os.path.relpath(src.path)
        return out
