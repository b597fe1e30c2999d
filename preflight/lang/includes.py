"""Documents that include other documents: YAML / JSON / TOML configs built from a base.

Read without running anything:

- `!include other.yaml` (a YAML tag on a value): the value is the other document;
- a base named at the top of the document — `_base_: base.yaml` (also a list, merged in
  order), `extends: base.yaml`, `base_config: base.yaml`, or `defaults: base.yaml` /
  `defaults: [a.yaml, b.yaml]` when the entries are file names (a Hydra defaults list of
  `group: option` entries is `preflight.lang.hydra`'s): the bases are merged first, in
  order, and the document's own keys over them (mappings merge key by key, anything else
  is replaced; `_delete_: true` in a mapping drops what the bases had there).

Paths are relative to the including document. Every value keeps the place it was written
(`where`: key path → file, line, column), so a fact read from a merged document points at
the file that set it. A missing file, an include cycle, a document past the budgets (depth
of includes, files, total bytes) or a malformed one is a located diagnostic at the naming
key, and the rest is read.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, Optional

from preflight import safe_read
from preflight.project import find_root
from preflight.lang.positions import (flow_depth, json_positions, MAX_YAML_FLOW_DEPTH,
                                      toml_positions, yaml_tree)
from preflight.plan import Diagnostic, Source

#: includes nested deeper than this are not followed
MAX_DEPTH = 16
#: documents read for one composition
MAX_FILES = 64
#: bytes read for one composition, all documents together
MAX_TOTAL_BYTES = 4 * 1024 * 1024
#: the keys that name a base document at the top of a document
BASE_KEYS = ("_base_", "extends", "base_config", "defaults")
INCLUDE_TAG = "!include"
DOC_EXT = (".yaml", ".yml", ".json", ".toml")


class Budget:
    """What one composition may still read: files, bytes, and the folders they must lie in
    (the project's root and the working directory: a document elsewhere, `../x.yaml` or
    `/etc/…`, is not read — its text would reach reports and CI logs)."""

    def __init__(self, files: int = MAX_FILES, total: int = MAX_TOTAL_BYTES,
                 roots: Optional[list[str]] = None):
        self.files, self.bytes = files, total
        self.roots = roots

    def allows(self, path: str) -> bool:
        if self.roots is None:
            self.roots = [find_root(path), os.getcwd()]
        return safe_read.within(path, self.roots)


@dataclass
class Loaded:
    """One document as read: its value, the position of each key path, the tags written on
    values (`!include`), its findings."""

    path: str
    value: Any = None
    pos: dict = field(default_factory=dict)
    tags: dict = field(default_factory=dict)
    diagnostics: list = field(default_factory=list)


def _diag(message: str, src: Source, severity: str = "warning", code: str = "PF005",
          name: str = "malformed-config") -> Diagnostic:
    return Diagnostic.at(code, message, src, name=name, severity=severity)


def load(path: str, budget: Budget, named_at: Optional[Source] = None) -> Loaded:
    """One YAML / JSON / TOML document with its positions (a diagnostic, at the place that
    named it, instead of a value when it cannot be read)."""
    import yaml

    at = named_at or Source(path=path, line=1, col=1)
    out = Loaded(path)
    if not budget.allows(path):
        out.diagnostics.append(_diag(f"{path!r} is outside the project root; not read", at,
                                     code="PF001", name="unreadable-file"))
        return out
    if budget.files <= 0:
        out.diagnostics.append(_diag(f"{path}: more than {MAX_FILES} included documents; not read", at))
        return out
    try:
        text = safe_read.read_text(path, max(budget.bytes, 0))
    except (OSError, ValueError) as e:
        missing = not os.path.exists(path)
        out.diagnostics.append(_diag(
            f"included document {path!r} does not exist" if missing else
            f"included document {path!r} not read: {e}", at,
            code="PF006" if missing else "PF001", name="missing-file" if missing else "unreadable-file"))
        return out
    budget.files -= 1
    budget.bytes -= len(text)
    low = path.lower()
    try:
        if low.endswith(".json"):
            out.value = json.loads(text)
            _, out.pos = json_positions(text, out.value)
        elif low.endswith(".toml"):
            try:
                import tomllib
            except ModuleNotFoundError:  # pragma: no cover - Python 3.10
                import tomli as tomllib  # type: ignore[no-redef]
            out.value = tomllib.loads(text)
            out.pos = toml_positions(text)
        else:
            deep = flow_depth(text)
            if deep is not None:
                out.diagnostics.append(_diag(f"YAML nested over {MAX_YAML_FLOW_DEPTH} levels deep; not read",
                                             Source(path=path, line=deep[0], col=deep[1]), "error"))
                return out
            out.value, out.pos, _ = yaml_tree(text, tagged=out.tags)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        src = Source(path=path, line=mark.line + 1, col=mark.column + 1) if mark else Source(path=path, line=1)
        out.diagnostics.append(_diag(f"malformed YAML: {getattr(e, 'problem', None) or e}", src, "error"))
    except (ValueError, RecursionError) as e:      # JSON / TOML syntax, numbers past the limit
        out.diagnostics.append(_diag(f"document not read: {str(e).splitlines()[0] if str(e) else type(e).__name__}",
                                     Source(path=path, line=getattr(e, "lineno", 1) or 1), "error"))
    return out


# --------------------------------------------------------------------------- merging


def merge_into(dst: dict, src: dict, where: dict, src_where: dict, prefix: tuple = ()) -> None:
    """`src` merged over `dst` in place (mappings key by key, anything else replaced;
    `_delete_: true` replaces instead of merging), `where` taking `src_where`'s places."""
    if src.get("_delete_") is True:
        for k in list(dst):
            del dst[k]
    for k, v in src.items():
        if k == "_delete_":
            continue
        p = prefix + (k,)
        if isinstance(v, dict) and isinstance(dst.get(k), dict) and v.get("_delete_") is not True:
            if p in src_where:
                where.setdefault(p, src_where[p])
            merge_into(dst[k], v, where, src_where, p)
            continue
        dst[k] = _copy(v)
        _copy_places(v, p, src_where, where)


def _copy_places(v: Any, p: tuple, src_where: dict, where: dict) -> None:
    """The places of value `v` (at `p`) and of everything inside it, in time linear in its
    size."""
    if p in src_where:
        where[p] = src_where[p]
    if isinstance(v, dict):
        for k, x in v.items():
            _copy_places(x, p + (k,), src_where, where)
    elif isinstance(v, list):
        for i, x in enumerate(v):
            _copy_places(x, p + (i,), src_where, where)


def _copy(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _copy(x) for k, x in v.items() if k != "_delete_"}
    if isinstance(v, list):
        return [_copy(x) for x in v]
    return v


def places(loaded: Loaded, prefix: tuple = ()) -> dict:
    """A loaded document's positions as {key path: Source}, under `prefix`."""
    return {prefix + p: Source(path=loaded.path, line=lc[0], col=lc[1]) for p, lc in loaded.pos.items()}


# --------------------------------------------------------------------------- includes


@dataclass
class Document:
    """A document with everything it includes merged: its value, where each key path was
    set, the files read (the document first) and the findings."""

    value: Any
    where: dict
    files: list
    diagnostics: list

    def src(self, p: tuple) -> Optional[Source]:
        q = tuple(p)
        while q and q not in self.where:
            q = q[:-1]
        return self.where.get(q)


def base_names(value: Any) -> tuple[Optional[str], list[str]]:
    """(the key, the file names) of the bases a document names at its top, or (None, [])."""
    if not isinstance(value, dict):
        return None, []
    for k in BASE_KEYS:
        v = value.get(k)
        names = [v] if isinstance(v, str) else v if isinstance(v, list) else []
        if names and all(isinstance(n, str) and n.lower().endswith(DOC_EXT) for n in names):
            return k, names
    return None, []


def has_includes(value: Any, tags: dict) -> bool:
    """Does a parsed document include others (a base key or an `!include` tag)?"""
    return base_names(value)[0] is not None or any(t == INCLUDE_TAG for t in tags.values())


def resolve(path: str, loaded: Optional[Loaded] = None, budget: Optional[Budget] = None) -> Document:
    """The document at `path` (or `loaded`, already read) with its includes merged."""
    budget = budget or Budget()
    doc = Document(value=None, where={}, files=[], diagnostics=[])
    value, where = _resolve(path, loaded, budget, (), doc, None)
    doc.value, doc.where = value, where
    return doc


def _resolve(path: str, loaded: Optional[Loaded], budget: Budget, chain: tuple, doc: Document,
             named_at: Optional[Source]) -> tuple[Any, dict]:
    key = os.path.normpath(os.path.abspath(path))
    if key in chain:
        doc.diagnostics.append(_diag(f"include cycle: {path!r} includes itself (through "
                                     f"{len(chain)} document{'s' if len(chain) != 1 else ''}); not followed",
                                     named_at or Source(path=path, line=1)))
        return None, {}
    if len(chain) >= MAX_DEPTH:
        doc.diagnostics.append(_diag(f"includes nested over {MAX_DEPTH} deep; {path!r} not read",
                                     named_at or Source(path=path, line=1)))
        return None, {}
    ld = loaded if loaded is not None else load(path, budget, named_at)
    doc.diagnostics.extend(ld.diagnostics)
    if ld.value is None and ld.diagnostics:
        return None, {}
    doc.files.append(path)
    chain = chain + (key,)
    own_where = places(ld)
    value = _expand_tags(ld, budget, chain, doc, own_where)
    bkey, names = base_names(value)
    if bkey is None:
        return value, own_where
    merged: dict = {}
    where: dict = {}
    for i, name in enumerate(names):
        at = own_where.get((bkey, i) if isinstance(value[bkey], list) else (bkey,)) or \
            own_where.get((bkey,)) or Source(path=path, line=1)
        bpath = name if os.path.isabs(name) else os.path.join(os.path.dirname(path), name)
        bval, bwhere = _resolve(os.path.normpath(bpath), None, budget, chain, doc, at)
        if isinstance(bval, dict):
            merge_into(merged, bval, where, bwhere)
    own = {k: v for k, v in value.items() if k != bkey}
    merge_into(merged, own, where, own_where)
    return merged, where


def _expand_tags(ld: Loaded, budget: Budget, chain: tuple, doc: Document, where: dict) -> Any:
    """`ld.value` with each `!include file` value replaced by that document (its places
    added to `where`)."""
    value = ld.value
    for p, tag in sorted(ld.tags.items(), key=lambda kv: len(kv[0])):
        if tag != INCLUDE_TAG:
            continue
        parent = value
        for part in p[:-1]:
            parent = parent[part] if isinstance(parent, (dict, list)) else None
            if parent is None:
                break
        if parent is None:
            continue
        name = parent[p[-1]]
        at = where.get(p) or Source(path=ld.path, line=1)
        if not isinstance(name, str) or not name.strip():
            doc.diagnostics.append(_diag("!include needs a file name", at))
            continue
        ipath = os.path.normpath(os.path.join(os.path.dirname(ld.path), name.strip()))
        ival, iwhere = _resolve(ipath, None, budget, chain, doc, at)
        parent[p[-1]] = ival
        for q, s in iwhere.items():
            where[p + q] = s
    return value


# --------------------------------------------------------------------------- examples

from preflight.lang.overrides import LangExample  # noqa: E402 - the examples' shape only

EXAMPLES = [
    LangExample(title="`_base_` chain: the base first, the document's keys over it, each at its file",
                run="resolve",
                files={"configs/base.yaml": "model:\n  name: gpt2\n  layers: 12\nbatch_size: 8\n",
                       "configs/run.yaml": "_base_: base.yaml\nmodel:\n  layers: 24\n"},
                given={"path": "configs/run.yaml"},
                expect={"model.name": ("gpt2", "configs/base.yaml:2"),
                        "model.layers": (24, "configs/run.yaml:3"),
                        "batch_size": (8, "configs/base.yaml:4")}),
    LangExample(title="`!include` of a section, and `extends` in JSON",
                run="resolve",
                files={"train.yaml": "optimizer: !include optim.yaml\nseq_len: 2048\n",
                       "optim.yaml": "name: adamw\nlr: 0.0001\n",
                       "a.json": '{"extends": "b.json", "micro_batch": 2}',
                       "b.json": '{"micro_batch": 1,\n "zero_stage": 3}'},
                given={"path": "train.yaml"},
                expect={"optimizer.name": ("adamw", "optim.yaml:1"), "seq_len": (2048, "train.yaml:2")}),
    LangExample(title="a cycle and a missing base: located findings, the rest still read",
                run="resolve",
                files={"x.yaml": "_base_: [y.yaml, gone.yaml]\nlayers: 4\n", "y.yaml": "_base_: x.yaml\nhidden: 64\n"},
                given={"path": "x.yaml"},
                expect={"layers": (4, "x.yaml:2"), "hidden": (64, "y.yaml:2"),
                        "!diagnostics": ["include cycle", "does not exist"]}),
]
