"""A hub name resolved: the project's `[tool.preflight.models]` entry first, then a saved
PEFT adapter's base model, a local directory or the Hugging Face cache holding config.json,
then the offline catalogue."""

from __future__ import annotations

from typing import Optional

from preflight.models import catalog, formulas
from preflight.plan import Diagnostic, Origin, Source
from preflight.resolve.locations import cache_config, local_config, project_entry, read_config
from preflight.resolve.model_facts import DTYPES
from preflight.resolve.shapes import head_and_overrides, shape_for_arch, shape_from_project
from preflight.resolve.values import Resolved


def resolve_name(name: str, ref: dict, src: Optional[Source], *, search_dirs: list[str],
                 project_models: dict, extra_overrides: Optional[dict] = None,
                 _depth: int = 0) -> Resolved:
    head, overrides, num_labels = head_and_overrides(ref)
    overrides.update(extra_overrides or {})
    if isinstance(name, dict) and "unknown" in name:           # the extractor's unknown
        res = Resolved(ref=ref, origin=Origin.CATALOG, source=src, name=None)
        res.unknown = f"the model name is not known statically ({name['unknown']})"
        return res
    res = Resolved(ref=ref, origin=Origin.CATALOG, source=src,
                   name=name if isinstance(name, str) else None)
    if not isinstance(name, str) or not name.strip():
        res.unknown = "the model name is not known statically"
        return res

    # the project's own description of a model comes before every other source
    entry = project_entry(name, project_models)
    if entry is not None:
        return shape_from_project(res, name, entry, overrides, head, num_labels)

    adapter = local_config(name, search_dirs, "adapter_config.json")
    if adapter is not None and local_config(name, search_dirs) is None and _depth < 3:
        # a saved PEFT adapter: its base model, plus its LoRA settings
        acfg, err = read_config(adapter)
        base = acfg.get("base_model_name_or_path") if acfg else None
        if isinstance(base, str) and base:
            inner = resolve_name(base, {**ref, "resize_vocab": None}, src,
                                 search_dirs=search_dirs, project_models=project_models,
                                 extra_overrides=extra_overrides, _depth=_depth + 1)
            inner.name = name
            if str(acfg.get("peft_type", "LORA")).upper() == "LORA":
                inner.adapter = {"kind": "lora", "r": acfg.get("r"),
                                 "alpha": acfg.get("lora_alpha"),
                                 "targets": acfg.get("target_modules"),
                                 "modules_to_save": acfg.get("modules_to_save") or [],
                                 "source": Source(path=adapter, line=1, col=1),
                                 "origin": "config"}
            return inner
        if err:
            res.diagnostics.append(Diagnostic.at(
                "PF005", f"adapter config {err}", Source(path=adapter, line=1, col=1),
                name="malformed-config", severity="warning"))

    for where, path in (("local directory", local_config(name, search_dirs)),
                        ("Hugging Face cache", cache_config(name))):
        if path is None:
            continue
        cfg, err = read_config(path)
        if cfg is None:
            res.diagnostics.append(Diagnostic.at(
                "PF005", f"model config {err}", Source(path=path, line=1, col=1),
                name="malformed-config", severity="warning"))
            continue
        res.reason = f"{name}: config.json from the {where} ({path})"
        ck = DTYPES.get(str(cfg.get("torch_dtype") or cfg.get("dtype") or ""))
        if ck:
            res.checkpoint_dtype, res.checkpoint_dtype_from = ck, f"config.json ({path})"
        return shape_for_arch(res, formulas.arch_of_config(cfg), {**cfg, **overrides}, head,
                              num_labels, res.reason)

    hit = catalog.lookup_entry(name)
    if hit is not None:
        canonical, arch, cfg = hit
        res.reason = f"{name}: offline catalogue entry {canonical}"
        ck = catalog.checkpoint_dtype(name)
        if ck:
            res.checkpoint_dtype, res.checkpoint_dtype_from = ck[0], f"catalogue entry {ck[1]}"
        if overrides:
            res.reason += " with " + ", ".join(f"{k}={v}" for k, v in sorted(overrides.items())
                                               if k != "num_labels" or head == "seq_cls")
        return shape_for_arch(res, arch, {**cfg, **overrides}, head, num_labels, res.reason)

    res.unknown = (f"model {name!r} is not a local directory with config.json, not in the "
                   f"Hugging Face cache and not in preflight's offline catalogue")
    return res
