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

import json
from typing import Any, Optional

from preflight.lang.positions import json_positions, yaml_tree
from preflight.lang.python.modules import resolve_path
from preflight.lang.python.values import ClassVal, DCInst, Obj, V, unk

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


class AttrDict(dict):
    """An OmegaConf document: its keys are also read as attributes (`cfg.train.lr`)."""

    __slots__ = ()


#: OmegaConf's composing calls (`omegaconf.OmegaConf.merge`, …) by their method name
OMEGACONF = frozenset({"from_cli", "structured", "create", "merge", "to_object",
                       "to_container", "unsafe_merge"})
OMEGACONF_CALLS = frozenset(f"{m}.{n}" for m in ("omegaconf.OmegaConf", "OmegaConf")
                            for n in OMEGACONF)
#: nested structured configs converted per document
_MAX_NESTING = 12


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
                self.config_instances.append(DCInst("OmegaConf", None, args[0].value, line, col))
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


def _deep_merge(into: dict, new: dict) -> None:
    for k, nv in new.items():
        old = into.get(k)
        if isinstance(old, V) and old.known and isinstance(old.value, dict) and \
                isinstance(nv, V) and nv.known and isinstance(nv.value, dict):
            merged = AttrDict(old.value)
            _deep_merge(merged, nv.value)
            into[k] = V(merged, nv.origin, nv.line, nv.col, nv.reason)
        else:
            into[k] = nv


def _unsettle(d: dict, why: str, line: int, col: int) -> None:
    """Every key of `d` may be set by a document not known statically: unknown, the value
    it had the alternative."""
    for k, v in list(d.items()):
        if isinstance(v, V) and v.known and isinstance(v.value, dict):
            inner = AttrDict(v.value)
            _unsettle(inner, why, line, col)
            d[k] = V(inner, v.origin, v.line, v.col, v.reason)
        elif isinstance(v, V):
            u = unk(f"{k} may be set by {why}", v.line, v.col,
                    v.value if v.known else v.default)
            u.path = v.path                 # where the value it may replace is written
            d[k] = u
