"""A configuration file the script reads itself, named on its command line or in its
code: `yaml.safe_load(open(args.config))`, `json.load(f)` inside `with open(path) as f:`,
`OmegaConf.load(path)`. The document becomes a dict whose values carry origin `config` and
the file's own `path:line`, so `cfg["train"]["batch_size"]` reads as the file says.

Only files under the working directory or the script's folder are read (as nanoGPT's
configurator files are); a path that is not known statically, a file that is missing or
malformed, and an OmegaConf `${...}` interpolation are unknown with the reason.
"""

from __future__ import annotations

import json
from typing import Any, Optional

from preflight.lang.positions import json_positions, yaml_tree
from preflight.lang.python.modules import resolve_path
from preflight.lang.python.values import Obj, V, unk

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
