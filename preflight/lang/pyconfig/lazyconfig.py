"""detectron2 LazyConfig and OmegaConf: `LazyCall(Cls)(a=1)` / `L(Cls)(...)` (a dict naming
with `_target_` what it builds), `OmegaConf.create({...})` (a dict of the config), and
`from configs.common.x import y` (another config file of the repository, found above the
config)."""

from __future__ import annotations

import ast
import os
from typing import Any, Optional

from preflight.lang.pyconfig.inherit import merge_flat
from preflight.lang.pyconfig.values import CDict, Name
from preflight.lang.python.source import last_name

#: the packages whose config modules are the library's own, never a file of the repository
_LIBRARIES = ("mmengine", "mmcv", "detectron2", "torch")


def lazy_call(ev: Any, node: ast.Call, depth: int) -> Optional[CDict]:
    """`LazyCall(Cls)(a=1)` / `L(Cls)(...)` evaluated by `ev` (a
    `preflight.lang.pyconfig.evaluate.Evaluator`): a dict naming what it builds; None when
    the call is not one."""
    f = node.func
    if isinstance(f, ast.Call) and last_name(f.func) in ("LazyCall", "L") and f.args:
        out = CDict()
        target = ev.ev(f.args[0], depth)
        out["_target_"] = str(target) if isinstance(target, (str, Name)) else target
        out.at["_target_"] = ev.at(f)
        out.update(ev.kwargs(node, depth))
        for k, v in ev.kwargs(node, depth).at.items():
            out.at[k] = v
        return out
    return None


def omegaconf_create(ev: Any, node: ast.Call, depth: int) -> Optional[CDict]:
    """`OmegaConf.create()` / `OmegaConf.create({...})` (or `DictConfig(...)` /
    `ConfigDict(...)`) evaluated by `ev`: a dict of the config; None when the call is not
    one or its argument is not a dict."""
    f = node.func
    name = last_name(f)
    if name in ("create", "DictConfig", "ConfigDict") and len(node.args) <= 1 and \
            (name != "create" or last_name(getattr(f, "value", None)) == "OmegaConf"):
        base = ev.ev(node.args[0], depth) if node.args else CDict()
        if isinstance(base, dict):
            out = CDict(base)
            out.at.update(getattr(base, "at", {}))
            merge_flat(out, ev.kwargs(node, depth))
            return out
    return None


def find_module(path: str, mod: str) -> Optional[str]:
    """`from configs.common.x import y` in the config at `path`: a file of the repository
    above the config."""
    if not mod or mod.split(".")[0] in _LIBRARIES:
        return None
    d = os.path.dirname(os.path.abspath(path))
    parts = mod.split(".")
    for _ in range(6):
        cand = os.path.join(d, *parts) + ".py"
        if os.path.isfile(cand):
            return os.path.relpath(cand) if not os.path.isabs(path) else cand
        nd = os.path.dirname(d)
        if nd == d:
            break
        d = nd
    return None
