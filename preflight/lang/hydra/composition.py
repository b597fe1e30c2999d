"""A Hydra config composed with the launch line's overrides: group choices, added and
removed groups chosen before the merge, value overrides applied after it, then every
interpolation resolved. `MAX_OVERRIDES` bounds the words applied."""

from __future__ import annotations

import os
from typing import Any, Callable, Optional

from preflight.lang import overrides
from preflight.lang.hydra.defaults import Composer, config_groups, package_path
from preflight.lang.hydra.interpolation import resolve_all
from preflight.lang.hydra.values import Composed, diag
from preflight.lang.includes import Budget, Loaded
from preflight.lang.overrides import Override
from preflight.plan import Diagnostic, Source

#: override words of one command line applied (a line is not longer in practice)
MAX_OVERRIDES = 1_000


def compose(folder: str, name: str, words: Optional[list[str]] = None, *,
            locate: Optional[Callable[[Override], Optional[Source]]] = None,
            env: Optional[dict[str, Any]] = None, values: bool = True,
            loaded: Optional[Loaded] = None) -> Composed:
    """The config `name` of `folder` composed with the override words (`words`, as on the
    launch line; `locate(override)` places each on the line). `env`: what the launcher
    sets in the environment (None: nothing known). `values=False` applies only the group
    choices and deletions of the words (the caller reads the value overrides itself).
    `loaded`: the primary config, when the caller has parsed it already."""
    diags: list[Diagnostic] = []
    budget = Budget()
    ovs = overrides.parse(words or [])[:MAX_OVERRIDES]
    where_of = locate or (lambda o: None)
    groups = config_groups(folder) if ovs else set()
    choices: dict[str, Any] = {}
    extra: list[Override] = []
    value_ovs: list[Override] = []
    removed: set[str] = set()
    for o in ovs:
        g = o.key.split("@", 1)[0].replace(".", "/")
        if g in groups and (o.value is None or isinstance(o.value, (str, list))):
            if o.op == "delete":
                removed.add(g)
            elif o.op == "add":
                extra.append(o)
            else:
                choices[g] = o.value
            continue
        value_ovs.append(o)
    c = Composer(folder, budget, choices, diags)
    for g in removed:
        c.choices[g] = None
    if loaded is not None:
        c.preloaded[os.path.abspath(loaded.path)] = loaded
    c.config(name.removesuffix(".yaml").removesuffix(".yml"), (), 0,
             Source(path=os.path.join(folder, name), line=1, col=1))
    for o in extra:
        g = o.key.split("@", 1)[0].replace(".", "/")
        pkg = package_path(o.key.split("@", 1)[1], ()) if "@" in o.key else tuple(g.split("/"))
        for opt in (o.value if isinstance(o.value, list) else [o.value]):
            c.config(f"{g}/{opt}", pkg, 1, where_of(o))
    out = Composed(cfg=c.cfg, where=c.where, files=c.files, choices=dict(c.chosen), diagnostics=diags,
                   incomplete=c.incomplete)
    for o in value_ovs:
        if o.op != "delete" and not values:
            continue
        _apply(out, o, where_of(o))
    resolve_all(out, env)
    return out


def _apply(out: Composed, o: Override, at: Optional[Source]) -> None:
    """A value override applied to the composed config (a finding where Hydra would stop)."""
    path = tuple(o.key.split("."))
    node: Any = out.cfg
    for k in path[:-1]:
        if not isinstance(node, dict):
            return
        if k not in node:
            if (o.op == "set" or o.op == "delete") and not out.incomplete:
                out.diagnostics.append(diag(f"override {o.key}: no key {o.key!r} in the config "
                                             f"(Hydra needs +{o.key}=… to add one)", at, "warning"))
                return
            if o.op == "delete":
                return
            node[k] = {}
        node = node[k]
    if not isinstance(node, dict):
        return
    last = path[-1]
    if o.op == "delete":
        node.pop(last, None)
        return
    if o.op == "set" and last not in node and not out.incomplete:
        out.diagnostics.append(diag(f"override {o.key}: no key {o.key!r} in the config "
                                     f"(Hydra needs +{o.key}=… to add one)", at, "warning"))
    if o.op == "add" and last in node:
        out.diagnostics.append(diag(f"override +{o.key}: the config already has {o.key!r} "
                                     f"(Hydra needs ++{o.key}=… to replace it)", at, "warning"))
    node[last] = o.value
    if at is not None:
        for q in [q for q in out.where if q[:len(path)] == path]:
            del out.where[q]
        out.where[path] = at
    out.from_line.add(path)
