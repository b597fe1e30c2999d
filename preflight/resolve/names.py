"""A hub name resolved: the project's `[tool.preflight.models]` entry first; then a local
directory or the Hugging Face cache (a saved PEFT adapter's base model, `config.json`, the
safetensors headers beside it); then the offline catalogue; then, only when the user allows
the network, the hub itself (`preflight.resolve.hub`). A config that cannot be counted is
counted from its checkpoint's safetensors headers, else through the base model its
`_name_or_path` names."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Callable, Optional

from preflight.models import catalog, formulas
from preflight.plan import Diagnostic, Origin, Source
from preflight.resolve import checkpoints, hub as hubs
from preflight.resolve.locations import cache_config, local_config, project_entry, read_config
from preflight.resolve.model_facts import DTYPES
from preflight.resolve.shapes import head_and_overrides, shape_for_arch, shape_from_project
from preflight.resolve.values import Resolved

#: how many bases deep a fine-tune's or an adapter's base is followed
_MAX_DEPTH = 3

#: () → (tensors, what they were read from, why not)
Headers = Callable[[], tuple[Optional[checkpoints.Tensors], Optional[str], Optional[str]]]


@dataclass
class _Lookup:
    """What every step of one name's resolution shares (a base model is looked up the
    same way, one level deeper)."""

    ref: dict
    src: Optional[Source]
    search_dirs: list[str]
    project_models: dict
    extra_overrides: dict = field(default_factory=dict)
    hub: bool = False
    depth: int = 0

    def base(self, name: str) -> Resolved:
        return resolve_name(name, {**self.ref, "resize_vocab": None}, self.src,
                            search_dirs=self.search_dirs, project_models=self.project_models,
                            extra_overrides=self.extra_overrides, hub=self.hub,
                            _depth=self.depth + 1)


def resolve_name(name: str, ref: dict, src: Optional[Source], *, search_dirs: list[str],
                 project_models: dict, extra_overrides: Optional[dict] = None,
                 hub: bool = False, _depth: int = 0) -> Resolved:
    """One model name's size. `hub`: the user allows the network (`--hub`,
    `[tool.preflight] hub = true`)."""
    if isinstance(name, dict) and "unknown" in name:           # the extractor's unknown
        res = Resolved(ref=ref, origin=Origin.CATALOG, source=src, name=None)
        res.unknown = f"the model name is not known statically ({name['unknown']})"
        return res
    res = Resolved(ref=ref, origin=Origin.CATALOG, source=src,
                   name=name if isinstance(name, str) else None)
    if not isinstance(name, str) or not name.strip():
        res.unknown = "the model name is not known statically"
        return res
    look = _Lookup(ref, src, list(search_dirs or []), project_models,
                   dict(extra_overrides or {}), hub, _depth)

    # the project's own description of a model comes before every other source
    entry = project_entry(name, project_models)
    if entry is not None:
        head, overrides, num_labels = _head(look)
        return shape_from_project(res, name, entry, overrides, head, num_labels)

    local = local_config(name, look.search_dirs)
    cached = cache_config(name) if local is None else None
    adapter = None
    if local is None and cached is None:
        adapter = local_config(name, look.search_dirs, "adapter_config.json") or \
            cache_config(name, "adapter_config.json")
    if adapter is not None:
        got = _through_adapter(res, name, adapter, look)
        if got is not None:
            return got

    for where, path in (("local directory", local), ("Hugging Face cache", cached)):
        if path is None:
            continue
        cfg, err = read_config(path)
        if cfg is None:
            res.diagnostics.append(Diagnostic.at(
                "PF005", f"model config {err}", Source(path=path, line=1, col=1),
                name="malformed-config", severity="warning"))
            continue
        commit = hubs.commit_of(path) if where == "Hugging Face cache" else None
        return _counted(res, name, cfg, path, where, look,
                        lambda: _beside(path, name, commit, look.hub))

    # a folder holding a safetensors checkpoint and no config.json
    for folder in _checkpoint_dirs(name, look.search_dirs):
        got = _from_headers(res, name, lambda: checkpoints.read_dir(folder))
        if got is not None:
            return got

    hit = catalog.lookup_entry(name)
    if hit is not None:
        canonical, arch, cfg = hit
        head, overrides, num_labels = _head(look)
        res.reason = f"{name}: offline catalogue entry {canonical}"
        ck = catalog.checkpoint_dtype(name)
        if ck:
            res.checkpoint_dtype, res.checkpoint_dtype_from = ck[0], f"catalogue entry {ck[1]}"
        if overrides:
            res.reason += " with " + ", ".join(f"{k}={v}" for k, v in sorted(overrides.items())
                                               if k != "num_labels" or head == "seq_cls")
        return shape_for_arch(res, arch, {**cfg, **overrides}, head, num_labels, res.reason)

    if hubs.is_local_path(name):
        # a checkpoint directory of the machine the job runs on: no catalogue can know it
        res.unknown = (f"model {name!r} is a local path, and no config.json is there on this "
                       f"machine (preflight reads that directory's config.json where it exists, "
                       f"or a [tool.preflight.models] entry for the path)")
        return res
    res.unknown = (f"model {name!r} is not a local directory with config.json, not in the "
                   f"Hugging Face cache and not in preflight's offline catalogue")
    if not hubs.is_repo_id(name):
        return res
    if not look.hub:
        res.unknown += ("; the Hugging Face hub was not asked (the network is used only "
                        "with --hub or [tool.preflight] hub = true)")
        return res
    off = hubs.offline_variable()
    if off is not None:
        res.unknown += f"; the Hugging Face hub was not asked: {off} is set"
        return res
    return _from_hub(res, name, look)


def _head(look: _Lookup) -> tuple[Optional[str], dict, Optional[int]]:
    head, overrides, num_labels = head_and_overrides(look.ref)
    overrides.update(look.extra_overrides)
    return head, overrides, num_labels


def _through_adapter(res: Resolved, name: str, adapter: str,
                     look: _Lookup) -> Optional[Resolved]:
    """A saved PEFT adapter: its base model, plus its LoRA settings (None: not followed)."""
    if look.depth >= _MAX_DEPTH:
        return None
    acfg, err = read_config(adapter)
    base = acfg.get("base_model_name_or_path") if acfg else None
    if isinstance(base, str) and base.strip():
        inner = look.base(base)
        inner.name = name
        if inner.known:
            inner.reason = f"{name}: adapter_config.json ({adapter}) names its base {base}; " \
                           + inner.reason
        if str(acfg.get("peft_type", "LORA")).upper() == "LORA":
            inner.adapter = {"kind": "lora", "r": acfg.get("r"),
                             "alpha": acfg.get("lora_alpha"),
                             "targets": acfg.get("target_modules"),
                             "modules_to_save": acfg.get("modules_to_save") or [],
                             "dropout": acfg.get("lora_dropout"),
                             "source": Source(path=adapter, line=1, col=1),
                             "origin": "config"}
        return inner
    res.diagnostics.append(Diagnostic.at(
        "PF005", f"adapter config {err or f'{adapter} names no base_model_name_or_path'}",
        Source(path=adapter, line=1, col=1), name="malformed-config", severity="warning"))
    return None


def _counted(res: Resolved, name: str, cfg: dict, path: str, where: str, look: _Lookup,
             headers: Headers) -> Resolved:
    """A model's config.json counted by its family's formula; else its checkpoint's
    safetensors headers; else the base model its `_name_or_path` names; else unknown."""
    head, overrides, num_labels = _head(look)
    res.reason = f"{name}: config.json from the {where} ({path})"
    ck = DTYPES.get(str(cfg.get("torch_dtype") or cfg.get("dtype") or ""))
    if ck:
        res.checkpoint_dtype, res.checkpoint_dtype_from = ck, f"config.json ({path})"
    out = shape_for_arch(res, formulas.arch_of_config(cfg), {**cfg, **overrides}, head,
                         num_labels, res.reason)
    if out.known:
        return out
    why = out.unknown
    got = _from_headers(out, name, headers, because=why)
    if got is not None:
        return got
    base = cfg.get("_name_or_path")
    if isinstance(base, str) and base.strip() and base.strip("/") != name.strip("/") and \
            os.path.abspath(os.path.expanduser(base)) != os.path.dirname(os.path.abspath(path)) \
            and look.depth < _MAX_DEPTH:
        inner = look.base(base)
        if inner.known:
            inner.name = name
            inner.reason = (f"{name}: config.json from the {where} ({path}) cannot be "
                            f"counted ({why}); its _name_or_path names {base}: {inner.reason}")
            return inner
    return out


def _from_headers(res: Resolved, name: str, headers: Headers,
                  because: Optional[str] = None) -> Optional[Resolved]:
    """The exact count of a checkpoint's safetensors headers (None: there are none); a bad
    header is a located PF005 and the size stays unknown."""
    tensors, where, why = headers()
    if tensors is None:
        if why and where and os.path.isfile(where):
            res.diagnostics.append(Diagnostic.at(
                "PF005", f"safetensors checkpoint {why}", Source(path=where, line=1, col=1),
                name="malformed-config", severity="warning"))
        if why and because:
            res.unknown = f"{because}; its safetensors headers: {why}"
        return None
    n, dtype, how = checkpoints.tally(tensors)
    if n is None:
        res.unknown = (f"{because}; " if because else "") + f"its safetensors headers: {how}"
        return res if because is None else None
    res.params, res.unknown = n, None
    if because and because.startswith(f"{name}: "):
        because = because[len(name) + 2:]
    res.reason = f"{name}: safetensors headers ({where}): {how}" + (
        f"; no count from its {because}" if because else "")
    if dtype and res.checkpoint_dtype is None:
        res.checkpoint_dtype, res.checkpoint_dtype_from = dtype, f"safetensors headers ({where})"
    return res


def _beside(path: str, name: str, commit: Optional[str], hub: bool):
    """The safetensors headers of the checkpoint beside a config.json: its folder's
    files; else (a hub cache snapshot) the headers an earlier run read from the hub; else
    (the user allows the network) the hub's."""
    tensors, where, why = checkpoints.read_dir(os.path.dirname(path))
    if tensors is not None or where is not None or commit is None:
        return tensors, where, why           # read, or a bad file (a located PF005)
    kept, kept_at = hubs.kept_headers(name, commit)
    if kept is not None:
        return kept, f"kept from the hub in {kept_at}", None
    if hub and hubs.is_repo_id(name) and hubs.offline_variable() is None:
        return hubs.headers(name, commit)
    return None, None, why


def _checkpoint_dirs(name: str, search_dirs: list[str]) -> list[str]:
    found = []
    for filename in (checkpoints.SINGLE, checkpoints.INDEX):
        p = local_config(name, search_dirs, filename)
        if p is not None and os.path.dirname(p) not in found:
            found.append(os.path.dirname(p))
    return found


def _from_hub(res: Resolved, name: str, look: _Lookup) -> Resolved:
    """The hub's config.json (or adapter_config.json), downloaded into the hub's cache."""
    path, why, absent = hubs.download(name, "config.json")
    at = f"{hubs.endpoint()}/{name}"
    if path is None and absent:
        adapter, awhy, _ = hubs.download(name, "adapter_config.json")
        if adapter is not None:
            got = _through_adapter(res, name, adapter, look)
            if got is not None:
                return got
        why = f"{why}; {awhy}" if awhy else why
    if path is None:
        res.unknown += f"; the Hugging Face hub ({at}): {why}"
        return res
    cfg, err = read_config(path)
    if cfg is None:
        res.unknown += f"; the Hugging Face hub's {err}"
        return res
    commit = hubs.commit_of(path)
    res.unknown = None
    where = f"Hugging Face hub, {at}" + (f" at {commit[:12]}" if commit else "")
    if commit is None:
        return _counted(res, name, cfg, path, where, look, lambda: (None, None, None))
    return _counted(res, name, cfg, path, where, look, lambda: _beside(path, name, commit, True))
