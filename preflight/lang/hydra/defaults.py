"""The defaults list of a Hydra config: its entries (`group: option`, `group@pkg: option`,
`/group: option`, `optional` / `override` entries, `_self_`), the package each merges at,
and the walk that merges a config and the options its groups choose, in order.
`MAX_DEFAULTS_DEPTH` bounds the nesting."""

from __future__ import annotations

import os
import posixpath
from dataclasses import dataclass
from typing import Any, Optional

from preflight.lang.hydra.values import diag
from preflight.lang.includes import Budget, load, merge_into, places
from preflight.plan import Diagnostic, Source

MAX_DEFAULTS_DEPTH = 12


def is_defaults_list(v: Any) -> bool:
    """A Hydra defaults list: a list of `_self_`, names and `group: option` entries (not a
    list of document file names, which `preflight.lang.includes` reads)."""
    if not isinstance(v, list) or not v:
        return False
    ok = False
    for e in v:
        if e == "_self_" or (isinstance(e, dict) and len(e) == 1):
            ok = True
        elif isinstance(e, str):
            if e.lower().endswith((".yaml", ".yml", ".json", ".toml")):
                return False
        else:
            return False
    return ok or all(isinstance(e, str) for e in v)


@dataclass
class _Entry:
    group: Optional[str]        # the group's path from the top of the folder (None: a config)
    option: Any                 # option name (str), list of names, None (nothing), "???"
    package: tuple
    optional: bool
    override: bool
    at: Optional[Source]


def _entries(defaults: list, group: str, package: tuple, ld_where: dict,
             diags: list) -> list[Any]:
    """A config's defaults list as `_Entry`s and the marker "_self_"."""
    out: list[Any] = []
    for i, e in enumerate(defaults):
        at = ld_where.get(("defaults", i))
        if e == "_self_":
            out.append("_self_")
            continue
        if isinstance(e, str):          # a config of this group (`- base`, `- /db/mysql`)
            name, _, pkg = e.partition("@")
            full = _norm(name[1:] if name.startswith("/") else "/".join(x for x in (group, name) if x))
            sub = tuple(x for x in os.path.dirname(name.lstrip("/")).split("/") if x)
            pk = package_path(pkg, package) if pkg else \
                (sub if name.startswith("/") else package + sub)
            out.append(_Entry(None, full, pk, False, False, at))
            continue
        if not isinstance(e, dict) or len(e) != 1:
            diags.append(diag("defaults list entry not understood; skipped", at))
            continue
        (k, v), = e.items()
        k = str(k).strip()
        optional = override = False
        while True:
            if k.startswith("optional "):
                optional, k = True, k[len("optional "):].strip()
            elif k.startswith("override "):
                override, k = True, k[len("override "):].strip()
            else:
                break
        gname, _, pkg = k.partition("@")
        absolute = gname.startswith("/")
        gpath = _norm(gname.lstrip("/") if absolute else "/".join(x for x in (group, gname) if x))
        if pkg:
            pk = package_path(pkg, package)
        else:
            pk = (tuple(gpath.split("/")) if absolute else
                  package + tuple(x for x in gname.split("/") if x not in ("", "..", ".")))
        out.append(_Entry(gpath, v, pk, optional, override, at))
    return out


def _norm(path: str) -> str:
    """A group path with `..` and `.` parts resolved (`actor/../optim` → `optim`)."""
    return posixpath.normpath(path).lstrip("/") if path else path


def package_path(pkg: str, parent: tuple) -> tuple:
    """`@pkg` of a defaults entry: relative to the containing config's package, `_global_`
    from the top, `_here_` the containing package itself."""
    if pkg.startswith("_global_"):
        rest = pkg[len("_global_"):].lstrip(".")
        return tuple(x for x in rest.split(".") if x)
    if pkg == "_here_":
        return parent
    return parent + tuple(x for x in pkg.split(".") if x)


class Composer:
    """The merge of one composition: configs read in defaults-list order into `cfg`, where
    each key was set, the files read and the option each group chose."""

    def __init__(self, folder: str, budget: Budget, choices: dict[str, Any],
                 diags: list[Diagnostic]):
        self.folder, self.budget, self.choices, self.diags = folder, budget, choices, diags
        self.cfg: dict = {}
        self.where: dict = {}
        self.files: list[str] = []
        self.chosen: dict[str, Any] = {}
        self.preloaded: dict[str, Any] = {}     # documents the caller already parsed
        #: the primary config's `hydra.searchpath` folders, searched after `folder`
        self.search: list[str] = []
        #: a config the defaults name was not found (the merge may lack its keys)
        self.incomplete = False

    def file_of(self, name: str) -> Optional[str]:
        for folder in [self.folder] + self.search:
            for ext in (".yaml", ".yml"):
                p = os.path.join(folder, name + ext) if not name.endswith((".yaml", ".yml")) \
                    else os.path.join(folder, name)
                if os.path.isfile(p):
                    return os.path.normpath(p)
                if name.endswith((".yaml", ".yml")):
                    break
        return None

    def add_search_path(self, entries: Any) -> None:
        """`hydra: searchpath: [file://verl/trainer/config, pkg://pkg.conf]`: folders Hydra
        looks in for the defaults' configs. A `file://` path is relative to where the app is
        started, a `pkg://` one a package of the repository: both are looked for from the
        config's folder up (the checkout's root among them) and the working directory."""
        if not isinstance(entries, list):
            return
        ups = [self.folder]
        for _ in range(6):
            ups.append(os.path.dirname(ups[-1]) or ".")
        ups.append(os.getcwd())
        for e in entries:
            if not isinstance(e, str) or "://" not in e:
                continue
            scheme, rest = e.split("://", 1)
            rel = rest.replace(".", os.sep) if scheme == "pkg" else rest
            if scheme not in ("file", "pkg") or not rel or os.path.isabs(rel) and scheme == "pkg":
                continue
            cands = [rel] if os.path.isabs(rel) else [os.path.join(u, rel) for u in ups]
            hit = next((c for c in cands if os.path.isdir(c)), None)
            if hit is not None and os.path.normpath(hit) not in self.search:
                self.search.append(os.path.normpath(hit))

    def config(self, name: str, package: tuple, depth: int, at: Optional[Source],
               optional: bool = False, chain: tuple = ()) -> None:
        """Merge the config `name` (a path from the top of the folder, no extension) and its
        defaults at `package`."""
        if depth > MAX_DEFAULTS_DEPTH:
            self.diags.append(diag(f"defaults lists nested over {MAX_DEFAULTS_DEPTH} deep; "
                                    f"{name!r} not read", at))
            return
        if name in chain:
            self.diags.append(diag(f"defaults cycle: {name!r} includes itself; not followed", at))
            return
        path = self.file_of(name)
        if path is None:
            if not optional:
                self.incomplete = True
                self.diags.append(diag(f"config {name!r} not found in {self.folder or '.'}", at,
                                        code="PF006", name="missing-file"))
            return
        ld = self.preloaded.pop(os.path.abspath(path), None) or load(path, self.budget, at)
        self.diags.extend(ld.diagnostics)
        if ld.value is None:
            return
        if not isinstance(ld.value, dict):
            self.diags.append(diag(f"config {name!r} is not a mapping; not merged",
                                    Source(path=path, line=1, col=1)))
            return
        self.files.append(path)
        own_where = places(ld)
        if depth == 0 and isinstance(ld.value.get("hydra"), dict):
            self.add_search_path(ld.value["hydra"].get("searchpath"))
        group = os.path.dirname(name)
        defaults = ld.value.get("defaults")
        items: list[Any] = []
        if isinstance(defaults, list):
            items = _entries(defaults, group, package, own_where, self.diags)
        elif defaults is not None:
            self.diags.append(diag("`defaults` is not a list; not read", own_where.get(("defaults",))))
        if "_self_" not in items:
            items.append("_self_")
        for it in items:            # `override` entries choose before any group is merged
            if isinstance(it, _Entry) and it.override and it.group is not None:
                self.choices.setdefault(it.group, it.option)
        own = {k: v for k, v in ld.value.items() if k != "defaults"}
        for it in items:
            if it == "_self_":
                self.put(own, own_where, package)
                continue
            if it.override or (it.group or "").split("/")[0] == "hydra":
                continue        # Hydra's own groups (launcher, sweeper, logging) ship with Hydra
            if it.group is None:
                self.config(it.option, it.package, depth + 1, it.at, False, chain + (name,))
                continue
            option = self.choices.get(it.group, it.option)
            self.chosen[it.group] = option
            for opt in (option if isinstance(option, list) else [option]):
                if opt is None:
                    continue
                if opt == "???":
                    self.diags.append(diag(f"config group {it.group!r} has no option chosen (???)",
                                            it.at, severity="info", code="PF003", name="unresolved-value"))
                    continue
                if not isinstance(opt, str):
                    self.diags.append(diag(f"option of {it.group!r} is not a name; skipped", it.at))
                    continue
                self.config(f"{it.group}/{opt}", it.package, depth + 1, it.at, it.optional,
                            chain + (name,))

    def put(self, own: dict, own_where: dict, package: tuple) -> None:
        """A config's own keys merged at its package."""
        node = self.cfg
        for k in package:
            if not isinstance(node.get(k), dict):
                node[k] = {}
            node = node[k]
        shifted = {package + p: s for p, s in own_where.items() if p[:1] != ("defaults",)}
        merge_into(node, own, self.where, shifted, package)


def config_groups(folder: str) -> set[str]:
    """The config groups of a folder: its sub-folders holding YAML files (bounded walk)."""
    out: set[str] = set()
    seen = 0
    for d, subs, files in os.walk(folder or "."):
        seen += 1
        if seen > 400:
            break
        subs[:] = sorted(s for s in subs if not s.startswith("."))[:64]
        if d != folder and any(f.endswith((".yaml", ".yml")) for f in files):
            out.add(os.path.relpath(d, folder).replace(os.sep, "/"))
        if d.count(os.sep) - folder.count(os.sep) > MAX_DEFAULTS_DEPTH:
            subs[:] = []
    return out
