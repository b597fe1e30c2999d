"""Resolve the model references a job makes into exact size facts, offline.

A hub name resolves, in order, from: a local directory holding `config.json` (the name as a
path, or under one of `search_dirs`); the Hugging Face cache (`$HF_HUB_CACHE`,
`$HF_HOME/hub`, `~/.cache/huggingface/hub`: `models--org--name/snapshots/*/config.json`),
never the network; the offline catalogue; the project's `[tool.preflight.models]` table
(name → parameter count, or a table of config.json fields); `--params`. Otherwise the
size stays unknown and a PF004 finding at the reference says how to supply it.

Config objects (`LlamaConfig(...)`), `AutoConfig.from_pretrained(name, **overrides)` and
custom `nn.Module` classes (counted by `modules.count_modules`) resolve the same way.
LoRA / quantisation references turn into `trainable_params` and the `lora` fact.
"""

from __future__ import annotations

import ast
import glob
import json
import os
from dataclasses import dataclass, field
from typing import Any, Optional

from preflight import runcache, safe_read
from preflight.models import catalog, formulas
from preflight.models.shape import ModelShape, UnsupportedArchitecture
from preflight.models.lora import default_targets, lora_counts
from preflight.plan import Diagnostic, Fact, Origin, Source

SHAPE_FACTS = ("layers", "hidden", "heads", "kv_heads", "ffn_hidden", "vocab")

#: from_pretrained keywords that load, place or quantise — not config fields
_LOADER_KWARGS = {
    "torch_dtype", "dtype", "device_map", "trust_remote_code", "cache_dir", "revision",
    "attn_implementation", "token", "use_auth_token", "low_cpu_mem_usage", "load_in_4bit",
    "load_in_8bit", "quantization_config", "local_files_only", "force_download", "config",
    "use_safetensors", "variant", "offload_folder", "max_memory", "subfolder", "from_tf",
    "use_flash_attention_2", "resume_download", "proxies", "output_loading_info",
    "pretrained_model_name_or_path", "model_id", "use_cache", "ignore_mismatched_sizes",
}

#: config field spellings of custom configs (nanoGPT, litgpt, x-transformers, …) per fact
_FIELD_NAMES = {
    "layers": ("num_hidden_layers", "n_layer", "n_layers", "num_layers", "nlayers", "depth",
               "n_layer"),
    "hidden": ("hidden_size", "n_embd", "d_model", "dim", "n_embed", "embed_dim",
               "hidden_dim", "ninp", "emb_dim"),
    "heads": ("num_attention_heads", "n_head", "n_heads", "num_heads", "nhead", "heads"),
    "kv_heads": ("num_key_value_heads", "n_kv_heads", "n_query_groups", "num_kv_heads",
                 "n_kv_head"),
    "ffn_hidden": ("intermediate_size", "ffn_dim", "d_ff", "n_inner", "dim_feedforward",
                   "ffn_hidden_size", "nhid", "intermediate_dim"),
    "vocab": ("vocab_size", "n_vocab", "padded_vocab_size", "ntoken", "num_tokens",
              "vocab"),
}


@dataclass
class _Resolved:
    """One model reference resolved (fully or partly)."""

    ref: dict
    origin: Origin
    source: Optional[Source]
    name: Optional[str] = None
    shape: Optional[ModelShape] = None
    params: Optional[int] = None
    shape_facts: dict[str, int] = field(default_factory=dict)
    reason: str = ""
    unknown: Optional[str] = None              # why the size is not known
    adapter: Optional[dict] = None             # LoRA settings of a saved PEFT adapter
    family: Optional[str] = None               # the activation model's block ("llama" | "gpt2")
    #: the dtype the checkpoint's weights are stored in ("bf16" | "fp16" | "fp32") and where
    #: that was read; None when not known
    checkpoint_dtype: Optional[str] = None
    checkpoint_dtype_from: str = ""
    diagnostics: list[Diagnostic] = field(default_factory=list)
    #: a custom module's layer stack (the `layer_stack` fact), or why it is not known
    stack: Optional[Any] = None

    @property
    def known(self) -> bool:
        return self.params is not None


def _source(src: Any) -> Optional[Source]:
    if src is None or isinstance(src, Source):
        return src
    if isinstance(src, dict):
        try:
            return Source(**src)
        except Exception:
            return None
    if isinstance(src, str):
        path, _, rest = src.partition(":")
        line, _, col = rest.partition(":")
        return Source(path=path, line=int(line or 0) if line.isdigit() else 0,
                      col=int(col or 0) if col.isdigit() else 0)
    return None


def _plain(v: Any) -> Any:
    """A field value as a plain Python value, or _MISSING when it is not known."""
    if isinstance(v, Fact):
        return v.value if v.known else _MISSING
    if isinstance(v, (bool, int, float, str)) or v is None:
        return v
    if isinstance(v, (list, tuple)):
        out = [_plain(x) for x in v]
        return _MISSING if any(x is _MISSING for x in out) else out
    if isinstance(v, dict):
        # the extractor writes an unknown value as {"unknown": reason[, "default": …]}
        if "unknown" in v and set(v) <= {"unknown", "default"}:
            return _MISSING
        if set(v) >= {"origin"} and v.get("origin") == "unknown":
            return _MISSING
        return {k: _plain(x) for k, x in v.items()}
    return _MISSING


_MISSING = object()


def _clean_fields(fields: Any) -> tuple[dict, list[str]]:
    out, missing = {}, []
    for k, v in (fields or {}).items():
        pv = _plain(v)
        if pv is _MISSING:
            missing.append(str(k))
        else:
            out[str(k)] = pv
    return out, missing


def _shape_facts_from_fields(cfg: dict) -> dict[str, int]:
    out: dict[str, int] = {}
    for fact, names in _FIELD_NAMES.items():
        for n in names:
            v = cfg.get(n)
            if isinstance(v, int) and not isinstance(v, bool):
                out[fact] = v
                break
    if "heads" in out and "kv_heads" not in out:
        out["kv_heads"] = out["heads"]
    return out


# --------------------------------------------------------------------------- locations

def hf_cache_dirs() -> list[str]:
    """Where the Hugging Face hub cache may live, most specific first."""
    dirs = []
    for var in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "TRANSFORMERS_CACHE"):
        if os.environ.get(var):
            dirs.append(os.environ[var])
    if os.environ.get("HF_HOME"):
        dirs.append(os.path.join(os.environ["HF_HOME"], "hub"))
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    dirs.append(os.path.join(xdg, "huggingface", "hub"))
    seen: list[str] = []
    for d in dirs:
        if d not in seen:
            seen.append(d)
    return seen


def _local_config(name: str, search_dirs: list[str],
                  filename: str = "config.json") -> Optional[str]:
    cands = []
    expanded = os.path.expanduser(os.path.expandvars(name))
    if os.path.isabs(expanded):
        cands.append(expanded)
    else:
        cands.append(os.path.abspath(expanded))
        cands.extend(os.path.join(d, expanded) for d in search_dirs or [])
    for c in cands:
        p = os.path.join(c, filename)
        runcache.note_file(p)
        if os.path.isfile(p):
            return p
    return None


def _cache_config(name: str) -> Optional[str]:
    if name.startswith((".", "/", "~")) or name.count("/") > 1:
        return None
    repo = "models--" + name.strip("/").replace("/", "--")
    for root in hf_cache_dirs():
        runcache.note_file(root)        # a model downloaded later adds a folder here
        if not os.path.isdir(root):
            continue
        target = os.path.join(root, repo)
        if not os.path.isdir(target):
            low = repo.lower()
            try:
                match = [d for d in os.listdir(root) if d.lower() == low]
            except OSError:
                match = []
            if not match:
                continue
            target = os.path.join(root, match[0])
        ref_main = os.path.join(target, "refs", "main")
        if os.path.isfile(ref_main):
            try:
                commit = safe_read.read_text(ref_main).strip()
                p = os.path.join(target, "snapshots", commit, "config.json")
                if os.path.isfile(p):
                    return p
            except OSError:
                pass
        runcache.note_file(os.path.join(target, "snapshots"))
        snaps = glob.glob(os.path.join(target, "snapshots", "*", "config.json"))
        if snaps:
            return max(snaps, key=lambda p: os.path.getmtime(p))
    return None


def _read_config(path: str) -> tuple[Optional[dict], Optional[str]]:
    try:
        data = json.loads(safe_read.read_text(path))
    except (OSError, ValueError, RecursionError) as e:   # JSONDecodeError is a ValueError
        return None, f"cannot read {path}: {e}"
    if not isinstance(data, dict):
        return None, f"{path} is not a JSON object"
    return data, None


def _project_entry(name: str, project_models: dict) -> Optional[Any]:
    if not project_models or not isinstance(name, str):
        return None
    keys = {str(k).lower(): v for k, v in project_models.items()}
    for k in (name.lower(), name.lower().rsplit("/", 1)[-1]):
        if k in keys:
            return keys[k]
    return None


def _as_int(v: Any) -> Optional[int]:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, str):
        try:
            f = float(v.replace("_", "").replace(",", ""))
            return int(f) if f.is_integer() else None
        except ValueError:
            return None
    return None


# --------------------------------------------------------------------------- one reference

def _head_and_overrides(ref: dict) -> tuple[Optional[str], dict, Optional[int]]:
    kwargs, _ = _clean_fields(ref.get("kwargs") or {})
    head = formulas.head_of_class(ref.get("class") or ref.get("loader") or ref.get("auto_class"))
    overrides = {k: v for k, v in kwargs.items() if k not in _LOADER_KWARGS}
    num_labels = _as_int(overrides.get("num_labels"))
    resize = _as_int(ref.get("resize_vocab"))
    if resize:
        overrides["vocab_size"] = resize
    return head, overrides, num_labels


def _resized(res: _Resolved, arch: str, cfg: dict, head: Optional[str],
             num_labels: Optional[int], shape: ModelShape) -> ModelShape:
    """The shape after the script's `resize_token_embeddings(...)` (a "resize" ref the
    extractor attached to the model's reference), with the reason said."""
    rs = res.ref.get("resize") if isinstance(res.ref, dict) else None
    if not isinstance(rs, dict) or res.ref.get("resize_vocab") or "text_config" in cfg:
        return shape
    if _as_int(rs.get("vocab")):
        new: Optional[int] = _as_int(rs.get("vocab"))
        how = f"resize_token_embeddings({new})"
    else:
        mult, added = _as_int(rs.get("multiple")) or 1, bool(rs.get("added"))
        new = formulas.resized_vocab(shape.vocab, mult, added)
        if new is None:
            return shape
        how = ("tokens added to the tokenizer" + (f" ({rs['added_at']})" if rs.get("added_at")
                                                 else "") if added else "no token added")
        how += (f", embeddings resized to len(tokenizer) rounded up to a multiple of {mult}"
                if mult > 1 else ", embeddings resized to len(tokenizer)")
    if new is None or new == shape.vocab:
        return shape
    res.reason = (res.reason + "; " if res.reason else "") + f"vocab {shape.vocab} → {new}: {how}"
    return formulas.count(arch, {**cfg, "vocab_size": new}, head=head, num_labels=num_labels)


def _shape(res: _Resolved, arch: Optional[str], cfg: dict, head: Optional[str],
           num_labels: Optional[int], what: str) -> _Resolved:
    if arch is None:
        res.unknown = f"{what}: model_type {cfg.get('model_type')!r} has no parameter formula"
        res.shape_facts = _shape_facts_from_fields(cfg)
        return res
    try:
        shape = formulas.count(arch, cfg, head=head, num_labels=num_labels)
        shape = _resized(res, arch, cfg, head, num_labels, shape)
    except (UnsupportedArchitecture, KeyError, ValueError, TypeError) as e:
        res.unknown = f"{what}: {e}"
        res.shape_facts = _shape_facts_from_fields(cfg)
        return res
    res.shape, res.params = shape, shape.params
    res.shape_facts = {k: getattr(shape, k) for k in SHAPE_FACTS}
    res.shape_facts.update(moe_facts(shape))
    res.shape_facts.update(attention_facts(shape))
    res.family = formulas.activation_family(arch, cfg)
    return res


def moe_facts(shape: ModelShape) -> dict[str, Any]:
    """The mixture-of-experts facts of a counted model (none for a dense one)."""
    if not shape.experts:
        return {}
    out = {"experts": shape.experts, "experts_per_token": shape.experts_per_token,
           "expert_ffn_hidden": shape.expert_ffn or shape.ffn_hidden,
           "active_params": shape.active_params, "moe_layers": shape.moe_layers or shape.layers,
           "expert_params": shape.expert_params,
           "moe_router": ("fp32-renormalised" if shape.weights_f32 and shape.norm_topk else
                          "fp32-plain" if shape.weights_f32 else
                          "renormalised" if shape.norm_topk else "plain")}
    if shape.shared_expert_ffn:
        out["shared_expert_ffn_hidden"] = shape.shared_expert_ffn
    if shape.router_upcast:
        out["moe_routing"] = {"upcast": True, "group_mask": shape.group_mask,
                              "shared_gate": False}
    return out


def attention_facts(shape: ModelShape) -> dict[str, Any]:
    """The latent-attention fact of a counted model (none for llama-style attention)."""
    return {"latent_attention": dict(shape.latent_attention)} if shape.latent_attention \
        else {}


def _from_project(res: _Resolved, name: str, entry: Any, overrides: dict,
                  head: Optional[str], num_labels: Optional[int]) -> _Resolved:
    """A `[tool.preflight.models]` entry: a parameter count, or a table of config fields."""
    res.origin = Origin.PROJECT
    res.reason = f"{name}: [tool.preflight.models] in pyproject.toml"
    n = _as_int(entry)
    if n is not None:
        res.params = n
        return res
    if isinstance(entry, dict):
        fields, _ = _clean_fields(entry)
        if _as_int(fields.get("params")) is not None:
            res.params = _as_int(fields["params"])
            res.shape_facts = _shape_facts_from_fields(fields)
            return res
        arch = formulas.normalise_arch(str(fields.get("model_type") or
                                           fields.get("arch") or ""))
        if arch is None:
            arch = formulas.arch_of_config(fields)
        return _shape(res, arch, {**fields, **overrides}, head, num_labels, res.reason)
    res.unknown = f"{name}: [tool.preflight.models] entry is neither a count nor a table"
    return res


def _resolve_name(name: str, ref: dict, src: Optional[Source], *, search_dirs: list[str],
                  project_models: dict, extra_overrides: Optional[dict] = None,
                  _depth: int = 0) -> _Resolved:
    head, overrides, num_labels = _head_and_overrides(ref)
    overrides.update(extra_overrides or {})
    if isinstance(name, dict) and "unknown" in name:           # the extractor's unknown
        res = _Resolved(ref=ref, origin=Origin.CATALOG, source=src, name=None)
        res.unknown = f"the model name is not known statically ({name['unknown']})"
        return res
    res = _Resolved(ref=ref, origin=Origin.CATALOG, source=src,
                    name=name if isinstance(name, str) else None)
    if not isinstance(name, str) or not name.strip():
        res.unknown = "the model name is not known statically"
        return res

    # the project's own description of a model comes before every other source
    entry = _project_entry(name, project_models)
    if entry is not None:
        return _from_project(res, name, entry, overrides, head, num_labels)

    adapter = _local_config(name, search_dirs, "adapter_config.json")
    if adapter is not None and _local_config(name, search_dirs) is None and _depth < 3:
        # a saved PEFT adapter: its base model, plus its LoRA settings
        acfg, err = _read_config(adapter)
        base = acfg.get("base_model_name_or_path") if acfg else None
        if isinstance(base, str) and base:
            inner = _resolve_name(base, {**ref, "resize_vocab": None}, src,
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

    for where, path in (("local directory", _local_config(name, search_dirs)),
                        ("Hugging Face cache", _cache_config(name))):
        if path is None:
            continue
        cfg, err = _read_config(path)
        if cfg is None:
            res.diagnostics.append(Diagnostic.at(
                "PF005", f"model config {err}", Source(path=path, line=1, col=1),
                name="malformed-config", severity="warning"))
            continue
        res.reason = f"{name}: config.json from the {where} ({path})"
        ck = _DTYPES.get(str(cfg.get("torch_dtype") or cfg.get("dtype") or ""))
        if ck:
            res.checkpoint_dtype, res.checkpoint_dtype_from = ck, f"config.json ({path})"
        return _shape(res, formulas.arch_of_config(cfg), {**cfg, **overrides}, head,
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
        return _shape(res, arch, {**cfg, **overrides}, head, num_labels, res.reason)

    res.unknown = (f"model {name!r} is not a local directory with config.json, not in the "
                   f"Hugging Face cache and not in preflight's offline catalogue")
    return res


def _find_module(ref: dict, src: Optional[Source], modules: dict, search_dirs: list[str]):
    """The module (a `modules.Code`) that defines the class `ref` names: one of the job's
    files first, else a Python file beside the reference or in `search_dirs`."""
    from preflight.extract.python import parse
    from preflight.models.modules import Code, as_code
    cls = ref.get("class")
    cands = []
    if ref.get("module") is not None:
        cands.append(ref["module"])
    if src is not None and src.path in (modules or {}):
        cands.append(modules[src.path])
    cands.extend(m for p, m in (modules or {}).items() if src is None or p != src.path)
    paths = []
    if src is not None and src.path:
        paths.append(src.path)
        d = os.path.dirname(src.path) or "."
        runcache.note_file(d)
        try:
            paths.extend(sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".py")))
        except OSError:
            pass
    for d in search_dirs or []:
        runcache.note_file(d)
        try:
            paths.extend(sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".py")))
        except OSError:
            pass
    for m in cands:
        try:
            m = as_code(m)
        except (TypeError, SyntaxError, ValueError):
            continue
        if _defines(m, cls):
            return m
    seen = set()
    for p in paths:
        ap = os.path.abspath(p)
        if ap in seen or not os.path.isfile(p):
            continue
        seen.add(ap)
        try:
            if os.path.getsize(p) > 2_000_000:
                continue
            text = safe_read.read_text(p)
            if f"class {cls}" not in text:
                continue
            m = Code(text, parse(text))         # the tree the evaluator may have parsed
        except Exception:
            continue
        if _defines(m, cls):
            return m
    return None


def _defines(module: Any, cls: str) -> bool:
    return any(isinstance(s, ast.ClassDef) and s.name == cls for s in module.tree.body)


def _hf_module_arg(pa: dict) -> Any:
    """`RobertaModel(RobertaConfig.from_dict({...}))` passed into a custom class: the
    transformers model as a counted module (its input embedding reachable as
    `embeddings.word_embeddings.weight` / `embed_tokens.weight` for a tied head)."""
    from preflight.models.modules import Mod, Param
    name = str(pa.get("call") or "").rsplit(".", 1)[-1]
    head = formulas.head_of_class(name)
    if head is None or name.startswith("Auto"):
        return None
    cfg = None
    for a in list(pa.get("args") or []) + [(pa.get("kwargs") or {}).get("config")]:
        if isinstance(a, dict) and "call" in a:
            kw = a.get("kwargs") if isinstance(a.get("kwargs"), dict) and a.get("kwargs") else None
            a0 = (a.get("args") or [None])[0]
            cfg = kw or (a0 if isinstance(a0, dict) and "call" not in a0 else None)
            if cfg:
                break
    if not cfg:
        return None
    cfg, missing = _clean_fields(cfg)
    arch = formulas.normalise_arch(str(cfg.get("model_type") or ""))
    if arch is None or missing and set(missing) & _FIELD_NAMES_ALL:
        return None
    try:
        shape = formulas.count(arch, cfg, head=head)
    except Exception:  # noqa: BLE001 - no formula: the class stays unknown
        return None
    emb = shape.vocab * shape.hidden
    w = Param(emb, (shape.vocab, shape.hidden))
    word = Mod(kind="Embedding", params={"weight": w})
    return Mod(kind=name, params={"_rest": Param(shape.params - emb)},
               children={"embeddings": Mod(kind="Embeddings", children={"word_embeddings": word}),
                         "embed_tokens": word})


def _bind_init(module: Any, cls: str, args: list, kwargs: dict) -> dict:
    """Known int arguments of `cls(*args, **kwargs)` by its __init__ parameter names."""
    out: dict = {}
    for s in module.tree.body:
        if not (isinstance(s, ast.ClassDef) and s.name == cls):
            continue
        for st in s.body:
            if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)) and st.name == "__init__":
                names = [p.arg for p in st.args.args][1:]
                for n, a in zip(names, args):
                    v = _plain(a)
                    if isinstance(v, int) and not isinstance(v, bool):
                        out[n] = v
                for k, a in kwargs.items():
                    v = _plain(a)
                    if isinstance(v, int) and not isinstance(v, bool):
                        out[str(k)] = v
                return out
    return out


def _resolve_class(ref: dict, src: Optional[Source], config_fields: Optional[dict],
                   modules: dict, search_dirs: list[str]) -> _Resolved:
    cls = ref.get("class") or "?"
    res = _Resolved(ref=ref, origin=Origin.DERIVED, source=src, name=cls)
    module = _find_module(ref, src, modules, search_dirs)
    fields = dict(config_fields or {})
    res.shape_facts = _shape_facts_from_fields(fields)
    if module is None:
        res.unknown = f"class {cls} is not defined in the analysed files"
        return res
    from preflight.models.modules import CONFIG, Unknown as _Unknown

    def arg(a: Any) -> Any:
        nonlocal fields
        pa = _plain(a)
        if pa is _MISSING:
            return _Unknown("argument not known statically")
        if isinstance(pa, dict) and "call" in pa:      # an object the script built
            kw = pa.get("kwargs") if isinstance(pa.get("kwargs"), dict) else {}
            a0 = (pa.get("args") or [None])[0]
            if not kw and isinstance(a0, dict) and "call" not in a0 and \
                    str(pa["call"]).endswith(("from_dict", "Config")):
                kw = a0          # RobertaConfig.from_dict({...}), SomeConfig({...})
            if not fields:
                # a field passed but not known stays unknown: the config class's default
                # is not what the script passes
                fields = {k: (v if _plain(v) is not _MISSING else
                              _Unknown(f"{k} is not known statically"))
                          for k, v in kw.items()}
            built = _hf_module_arg(pa)
            if built is not None:      # a transformers model built from a config: counted
                return built
            return CONFIG
        return pa

    args = [arg(a) for a in ref.get("args") or []]
    kwargs = {str(k): arg(v) for k, v in (ref.get("kwargs") or {}).items()}
    res.shape_facts = _shape_facts_from_fields(fields)
    if not res.shape_facts:
        # `TransformerModel(ntoken, ninp, nhead, nhid, nlayers)`: the sizes by the names of
        # the class's own __init__ parameters (at least two of them, as for a config)
        bound = _bind_init(module, cls, ref.get("args") or [], ref.get("kwargs") or {})
        sf = _shape_facts_from_fields(bound)
        if len(set(sf) - {"kv_heads"}) >= 2:
            res.shape_facts = sf
    built = None
    if isinstance(ref.get("expr"), str) and ref["expr"].strip():
        from preflight.models.modules import count_expression
        n, pieces = count_expression(module, ref["expr"], fields)
    else:
        from preflight.models.modules import build_modules
        n, pieces, built = build_modules(module, cls, fields, args=args or None,
                                         kwargs=kwargs or None)
    if n is None:
        res.unknown = f"cannot size {cls} statically: " + "; ".join(pieces[:5])
        return res
    if n == 0:
        # a wrapper whose layers come in as arguments, or layers built where preflight does
        # not see: a model has parameters, so this count is not its size
        res.unknown = (f"{cls}: no parameters found in its source (its layers come from "
                       f"arguments or code preflight does not follow)")
        return res
    res.params = n
    res.reason = f"{cls}: counted from its source (nn.Module layers)"
    if built is not None and not res.shape_facts:
        # no transformer shape: the layers as its forward applies them size the activations
        res.stack = _layer_stack(cls, built, ref.get("input_shape"))
    if fields:
        res.reason += " with " + ", ".join(f"{k}={v}" for k, v in sorted(fields.items())
                                           if isinstance(v, (int, bool)))
    return res


def _layer_stack(cls: str, built: tuple, input_shape: Any) -> Any:
    """The `layer_stack` value of a custom module, or the reason (a str) it is unknown."""
    from dataclasses import asdict

    from preflight.models.forward import param_shapes, read_forward

    if not isinstance(input_shape, list) or not input_shape:
        return (f"{cls}: the shape of the tensor the script gives the model is not known "
                f"(e.g. x = torch.randn(batch_size, 3, 32, 32); model(x))")
    root, classes = built
    ops, why = read_forward(root, classes, tuple(input_shape))
    if ops is None:
        return f"{cls}: its forward cannot be followed: {why}"
    shapes = param_shapes(root)
    return {"class": cls, "input_shape": list(input_shape),
            "param_shapes": [list(s) for s in shapes] if shapes is not None else None,
            "ops": [{**asdict(o), "saved": [list(s) for s in o.saved],
                     "per_batch": [list(s) for s in o.per_batch]} for o in ops]}


#: vocabulary sizes of Megatron's own tokenizers (before padding)
_MEGATRON_TOKENIZERS = {"gpt2bpetokenizer": 50257, "bertwordpiecelowercase": 30522,
                        "bertwordpiececase": 28996,
                        # the Llama 2 SentencePiece model (Llama 2, Mistral, Mixtral)
                        "llama2tokenizer": 32000}


def _torchtitan_registry(module: str, src: Optional[Source], search_dirs: list[str]) -> Optional[str]:
    """config_registry.py (or the module folder) of a torchtitan model module."""
    starts = []
    if src is not None and src.path:
        if os.path.basename(src.path) == "config_registry.py":
            return src.path
        starts.append(os.path.dirname(os.path.abspath(src.path)))
    starts += [os.path.abspath(d) for d in search_dirs or []] + [os.getcwd()]
    for start in starts:
        d = start
        for _ in range(4):
            for sub in ("models", "experiments"):
                cand = os.path.join(d, "torchtitan", sub, module)
                if os.path.isdir(cand):
                    return os.path.join(cand, "config_registry.py")
            d = os.path.dirname(d)
    return None


#: torchtitan model flavors → the offline catalogue's entry of the same shape
#: (torchtitan's llama3 flavors are the Llama 3 / 3.1 models: 405B exists only as 3.1)
_TORCHTITAN_CATALOG = {
    ("llama3", "8b"): "meta-llama/Meta-Llama-3-8B",
    ("llama3", "70b"): "meta-llama/Meta-Llama-3-70B",
    ("llama3", "405b"): "meta-llama/Llama-3.1-405B",
}


def _torchtitan_catalog(module: str, flavor: str) -> Optional[tuple[str, str, dict]]:
    name = _TORCHTITAN_CATALOG.get((module.lower(), flavor.lower()))
    if name is not None:
        return catalog.lookup_entry(name)
    if module and flavor:
        return catalog.lookup_entry(f"{module}-{flavor}")       # "llama2" "7B" → llama2-7b
    return None


def _resolve_torchtitan(ref: dict, src: Optional[Source], search_dirs: list[str],
                        project_models: Optional[dict] = None) -> Optional[_Resolved]:
    """A torchtitan model flavor (`[model] name = "llama3"`, `flavor = "8B"`, or
    `model_registry("70B")` of module llama3): the project's `[tool.preflight.models]`
    entry for `llama3:8B`, else the flavor's fields from the module's flavor table when
    torchtitan's source is in the repository, else the offline catalogue's model of that
    flavor. Llama-family modules count as transformers Llama."""
    from preflight.extract.torchtitan_registry import flavor_fields
    module, flavor = str(ref.get("name") or ""), str(ref.get("flavor") or "")
    label = f"{module}:{flavor}" if flavor else module
    res = _Resolved(ref=ref, origin=Origin.DERIVED, source=src, name=label)
    entry = _project_entry(label, project_models or {})
    if entry is not None:
        return _from_project(res, label, entry, {}, None, None)
    reg = _torchtitan_registry(module, src, search_dirs)
    got = flavor_fields(reg, flavor) if reg is not None else None
    if got is None:
        hit = _torchtitan_catalog(module, flavor)
        if hit is not None:
            canonical, arch, cfg = hit
            res.origin = Origin.CATALOG
            res.reason = f"torchtitan {module} flavor {flavor}: offline catalogue entry {canonical}"
            return _shape(res, arch, dict(cfg), None, None, res.reason)
        if reg is None:
            return None
        res.unknown = f"torchtitan flavor {flavor!r} of {module} not found in the module's flavor table"
        return res
    fields, where = got
    res.source = where
    arch = "llama" if module.lower().startswith("llama") else None
    what = f"torchtitan {module} flavor {flavor}"
    need = ("hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size", "vocab_size")
    missing = [k for k in need if not isinstance(fields.get(k), int)]
    if missing == ["vocab_size"]:
        # torchtitan sets vocab_size from the tokenizer at run time: the catalogue's model of
        # the same flavor and shape has that tokenizer
        hit = _torchtitan_catalog(module, flavor)
        if hit is not None and all(hit[2].get(k) == fields.get(k) for k in need[:3]) and \
                isinstance(hit[2].get("vocab_size"), int):
            fields = dict(fields, vocab_size=hit[2]["vocab_size"])
            missing = []
            what += f" (vocab_size {hit[2]['vocab_size']}: the tokenizer of {hit[0]})"
    if arch is None or missing:
        res.unknown = (f"{what}: " + (f"field(s) {', '.join(missing)} not known statically" if missing
                                      else "no parameter formula for this model family"))
        res.shape_facts = _shape_facts_from_fields(fields)
        return res
    res.reason = what + " (" + ", ".join(f"{k}={v}" for k, v in sorted(fields.items())) + ")"
    return _shape(res, arch, dict(fields, model_type="llama"), None, None, res.reason)


def _resolve_megatron(ref: dict, src: Optional[Source]) -> _Resolved:
    """Megatron-LM command-line arguments ({"--num-layers": 24, "--swiglu": True, …})."""
    raw, missing = _clean_fields(ref.get("args") or {})
    args = {k.lstrip("-").replace("-", "_"): v for k, v in raw.items()}
    res = _Resolved(ref=ref, origin=Origin.DERIVED, source=src, name="Megatron GPT")
    if "vocab_size" not in args and "padded_vocab_size" not in args:
        tok = str(args.get("tokenizer_type") or "").lower()
        if tok in _MEGATRON_TOKENIZERS:
            args["vocab_size"] = _MEGATRON_TOKENIZERS[tok]
        elif isinstance(args.get("tokenizer_model"), str):
            hit = catalog.lookup(args["tokenizer_model"])
            if hit and hit[1].get("vocab_size"):
                args["vocab_size"] = hit[1]["vocab_size"]
        elif not tok and {"vocab_file", "merge_file"} <= set(args) | {
                m.lstrip("-").replace("-", "_") for m in missing}:
            # a BPE vocabulary + merges pair with no --tokenizer-type: Megatron's GPT-2 BPE
            # (the old default); the size is the GPT-2 file's, which the file is not read for
            args["vocab_size"] = _MEGATRON_TOKENIZERS["gpt2bpetokenizer"]
            res.origin = Origin.ASSUMED
    if "vocab_size" not in args and "padded_vocab_size" not in args:
        res.unknown = ("the vocabulary size is not known (no --vocab-size, and the tokenizer "
                       "is not one preflight knows)")
        res.shape_facts = _shape_facts_from_fields(args)
        return res
    if missing:
        shape_missing = [m for m in missing if m.lstrip("-").replace("-", "_") in (
            "num_layers", "hidden_size", "num_attention_heads", "ffn_hidden_size",
            "num_query_groups", "num_experts", "vocab_size")]
        if shape_missing:
            res.unknown = f"Megatron argument(s) {', '.join(shape_missing)} not known statically"
            res.shape_facts = _shape_facts_from_fields(args)
            return res
    res.reason = "Megatron-LM arguments: " + ", ".join(
        f"{k}={v}" for k, v in sorted(args.items()) if k in (
            "num_layers", "hidden_size", "num_attention_heads", "num_query_groups",
            "ffn_hidden_size", "vocab_size", "num_experts", "swiglu"))
    return _shape(res, "megatron", args, None, None, res.reason)


# --------------------------------------------------------------------------- entry points

def _family_facts(res: _Resolved) -> list[tuple[str, Fact]]:
    """The architecture family of the resolved model: from its architecture when it was
    counted, else from the catalogue or the words of its name (an assumption, said so)."""
    if res.family:
        arch = res.shape.arch if res.shape is not None else ""
        out = [("family", Fact(value=res.family, origin=res.origin, source=res.source,
                               reason=f"{res.name}: {arch or 'its'} architecture"))]
        if arch:
            out.append(("model_type", Fact(value=arch, origin=res.origin, source=res.source,
                                           reason=f"{res.name}: model_type {arch}")))
        return out
    fam, how = catalog.family_from_name(res.name or "")
    if fam is None:
        return []
    origin = Origin.CATALOG if how == "catalogue" else Origin.ASSUMED
    return [("family", Fact(value=fam, origin=origin, source=res.source,
                            reason=f"{res.name}: {fam} block, from the {how}"))]


def _unknown_finding(res: _Resolved) -> Diagnostic:
    name = res.name or "the model"
    if res.name is None:
        return Diagnostic.at(
            "PF004", f"cannot size the model: {res.unknown}", res.source,
            name="unknown-model", severity="warning",
            fix=("give the model name where preflight can read it, or its size: "
                 "[tool.preflight.models] \"<name>\" = <parameter count> in pyproject.toml, "
                 "or --params N"), data={})
    return Diagnostic.at(
        "PF004", f"cannot size {name}: {res.unknown}", res.source, name="unknown-model",
        severity="warning",
        fix=(f"add its size to pyproject.toml: [tool.preflight.models] \"{name}\" = "
             f"<parameter count> (or a table of its config.json fields such as "
             f"model_type, hidden_size, num_hidden_layers), or pass --params N"),
        data={"model": name})


def resolve(refs: list[dict], *, search_dirs: list[str], project_models: dict,
            params_override: Optional[int], modules: Optional[dict] = None
            ) -> tuple[list[tuple[str, Fact]], list[Diagnostic]]:
    """Facts (params, trainable_params, shape facts, lora, model) for a job's model refs.

    `refs` are the extractor's `model_refs` (kinds hub, config, auto_config, class, lora,
    quant) from every file of the job. `modules` maps file paths to their `modules.Code`
    (text and `ast` tree: where custom classes may live). Never raises on bad input.
    """
    facts: list[tuple[str, Fact]] = []
    diags: list[Diagnostic] = []
    resolved: list[_Resolved] = []
    lora_ref: Optional[dict] = None
    bits = 16
    bits_src: Optional[Source] = None
    double_quant: Optional[bool] = None
    custom_config: Optional[dict] = None
    has_class = any(isinstance(r, dict) and r.get("kind") == "class" for r in refs or [])

    # the script's `resize_token_embeddings(...)` resizes the model it trains
    resize = next((r for r in refs or [] if isinstance(r, dict) and r.get("kind") == "resize"),
                  None)
    if resize is not None:
        refs = [{**r, "resize": resize} if isinstance(r, dict) and r.get("kind") in
                ("hub", "auto_config") and r.get("role") != "secondary" else r for r in refs]

    for ref in refs or []:
        if not isinstance(ref, dict):
            continue
        kind = ref.get("kind")
        if kind is None and "bits" in ref:
            kind = "quant"
        src = _source(ref.get("source"))
        try:
            if kind == "hub":
                kw = ref.get("kwargs") or {}
                q = _quant_bits(kw)
                if q:
                    bits, bits_src = q, src
                    dq = _double_quant(kw)
                    if dq is not None:
                        double_quant = dq
                resolved.append(_resolve_name(ref.get("name"), ref, src, search_dirs=search_dirs,
                                              project_models=project_models))
            elif kind == "auto_config":
                overrides, missing = _clean_fields(ref.get("overrides") or {})
                r = _resolve_name(ref.get("name"), ref, src, search_dirs=search_dirs,
                                  project_models=project_models, extra_overrides=overrides)
                if overrides and r.origin is Origin.CATALOG:
                    r.origin = Origin.DERIVED
                resolved.append(r)
            elif kind == "config":
                cls = str(ref.get("class") or "")
                fields, missing = _clean_fields(ref.get("fields") or {})
                arch = formulas.CONFIG_CLASSES.get(cls.split(".")[-1])
                if arch is None:
                    # a model's config names at least two of its sizes (a rope or a norm
                    # config with one `dim` is not a model)
                    raw = _shape_facts_from_fields(fields)
                    looks_like_model = len(set(raw) - {"kv_heads"}) >= 2
                    if not looks_like_model:
                        continue            # a training / data config, not a model's
                    # a field the script passes but preflight cannot read is unknown to the
                    # model built from it (never the config class's default)
                    from preflight.models.modules import Unknown as _Unknown
                    custom_config = {**fields, **{k: _Unknown(f"{k} is not known statically")
                                                  for k in missing}}
                    if not has_class:
                        r = _Resolved(ref=ref, origin=Origin.DERIVED, source=src, name=cls,
                                      shape_facts=_shape_facts_from_fields(fields))
                        r.unknown = (f"{cls} is not a transformers config and no model class "
                                     f"built from it was found")
                        resolved.append(r)
                    continue
                r = _Resolved(ref=ref, origin=Origin.DERIVED, source=src, name=cls)
                shape_keys = set(_FIELD_NAMES_ALL) & set(missing)
                if shape_keys:
                    r.unknown = (f"{cls}: field(s) {', '.join(sorted(shape_keys))} not known "
                                 f"statically")
                    r.shape_facts = _shape_facts_from_fields(fields)
                    resolved.append(r)
                    continue
                r.reason = f"{cls}(" + ", ".join(f"{k}={v}" for k, v in sorted(fields.items())
                                                 if not isinstance(v, (dict, list))) + ")"
                head = formulas.head_of_class(ref.get("model_class"))
                resolved.append(_shape(r, arch, fields, head, _as_int(fields.get("num_labels")),
                                       r.reason))
            elif kind == "megatron":
                resolved.append(_resolve_megatron(ref, src))
            elif kind == "torchvision":
                from preflight.models.vision import torchvision_params
                name = str(ref.get("name") or "")
                r = _Resolved(ref=ref, origin=Origin.CATALOG, source=src,
                              name=f"torchvision.models.{name}")
                kw, _ = _clean_fields(ref.get("kwargs") or {})
                r.params = torchvision_params(name, kw)
                if r.params is None:
                    r.unknown = (f"torchvision.models.{name}("
                                 + ", ".join(f"{k}={v!r}" for k, v in kw.items())
                                 + ") is not in preflight's table of torchvision models")
                else:
                    r.reason = f"torchvision.models.{name}: torchvision's parameter count"
                resolved.append(r)
            elif kind == "torchtitan":
                r = _resolve_torchtitan(ref, src, search_dirs, project_models)
                if r is not None:       # the module's files are not in the job: nothing to say
                    resolved.append(r)
            elif kind == "class":
                resolved.append(_resolve_class(ref, src, custom_config, modules or {},
                                               search_dirs))
            elif kind == "lora":
                lora_ref = ref
            elif kind == "quant":
                b = _as_int(_plain(ref.get("bits")))
                if b in (4, 8):
                    bits, bits_src = b, src
        except Exception as e:  # never a traceback for odd refs
            r = _Resolved(ref=ref, origin=Origin.UNKNOWN, source=src,
                          name=str(ref.get("name") or ref.get("class") or kind))
            r.unknown = f"could not resolve this reference ({type(e).__name__}: {e})"
            resolved.append(r)

    for r in resolved:
        diags.extend(r.diagnostics)
    # the trained model is the first one the job loads; later loads (a reference or reward
    # model, a reload for evaluation) carry role "secondary" and never size the job, even
    # when the first one cannot be resolved
    main = [r for r in resolved if r.ref.get("role") != "secondary"] or resolved
    primary = next((r for r in main if r.known), None)
    override_src = None
    if params_override is not None:
        facts.append(("params", Fact(value=int(params_override), origin=Origin.CLI,
                                     source=override_src, reason="--params")))
    if primary is None:
        if resolved:
            first = main[0]
            if params_override is None:
                for r in main:
                    diags.append(_unknown_finding(r))
                facts.append(("params", Fact.unknown(first.unknown or "model size unknown",
                                                     source=first.source)))
            for k, v in first.shape_facts.items():
                facts.append((k, Fact(value=v, origin=first.origin, source=first.source,
                                      reason=f"{first.name}: config field")))
            facts += _family_facts(first)
            facts += load_dtype_facts(first)
        return facts, diags

    p = primary
    # the dtype is the load's: a config read first (`AutoConfig.from_pretrained(name)`) and
    # then `from_pretrained(name, config=config)` load the weights at the second call
    load = next((r for r in main if r.ref.get("kind") == "hub"), p)
    if load is not p and load.checkpoint_dtype is None and p.checkpoint_dtype:
        load.checkpoint_dtype, load.checkpoint_dtype_from = p.checkpoint_dtype, \
            p.checkpoint_dtype_from
    facts += load_dtype_facts(load)
    if p.name and p.ref.get("kind") in ("hub", "auto_config"):
        facts.append(("model", Fact(value=p.name, origin=p.origin, source=p.source,
                                    reason=p.reason or None)))
    reason = p.reason
    if p.shape is not None and p.shape.experts:
        reason += (f"; mixture of experts: {p.shape.active_params:,} active per token "
                   f"({p.shape.experts_per_token} of {p.shape.experts} experts)")
    base_params = Fact(value=p.params, origin=p.origin, source=p.source, reason=reason or None)
    for k, v in p.shape_facts.items():
        facts.append((k, Fact(value=v, origin=p.origin, source=p.source,
                              reason=p.reason or None)))
    if isinstance(p.stack, dict):
        facts.append(("layer_stack", Fact(value=p.stack, origin=Origin.DERIVED, source=p.source,
                                          reason=f"{p.stack['class']}: its forward applied to "
                                                 f"{tuple(p.stack['input_shape'])} per sample")))
    elif isinstance(p.stack, str):
        facts.append(("layer_stack", Fact.unknown(p.stack, source=p.source)))
    facts += _family_facts(p)
    facts += config_behaviour_facts(p.ref, p.source)

    if lora_ref is None and p.adapter is not None:
        lora_ref = p.adapter
    if lora_ref is None:
        facts += tensor_facts(p, p.shape.param_shapes if p.shape is not None else None)
        facts.append(("params", base_params))
        facts.append(("lora", Fact(value=None, origin=Origin.DEFAULT, source=p.source,
                                   reason="no LoRA / adapter configuration found")))
        facts.append(("trainable_params", Fact(value=p.params, origin=Origin.DEFAULT,
                                               source=p.source,
                                               reason="no adapter: every parameter trains")))
        return facts, diags

    lsrc = _source(lora_ref.get("source"))
    lorigin = _origin(lora_ref.get("origin"), Origin.LITERAL)
    r_ = _as_int(_plain(lora_ref.get("r")))
    targets = _plain(lora_ref.get("targets"))
    if targets is _MISSING:
        targets = _MISSING
    save = _plain(lora_ref.get("modules_to_save"))
    save = [] if save in (None, _MISSING) else ([save] if isinstance(save, str) else list(save))
    alpha = _plain(lora_ref.get("alpha"))
    if bits == 16:
        b = _as_int(_plain(lora_ref.get("base_bits")))
        if b in (4, 8):
            bits = b
    arch = p.shape.arch if p.shape is not None else None
    if targets in (None, [], "") and arch:
        targets = default_targets(arch)
    lora_val = {"r": r_, "alpha": alpha if alpha is not _MISSING else None,
                "targets": (targets if isinstance(targets, list) else
                            [targets] if isinstance(targets, str) else []),
                "base_bits": bits, "modules_to_save": save}
    if bits == 4 and double_quant is not None:
        lora_val["double_quant"] = double_quant     # bnb_4bit_use_double_quant
    facts.append(("lora", Fact(value=lora_val, origin=lorigin, source=lsrc,
                               reason=(f"frozen base at {bits} bits" +
                                       (f" ({bits_src})" if bits_src else "")))))
    if r_ is None or targets is _MISSING or p.shape is None:
        why = ("the LoRA rank is not known" if r_ is None else
               "the LoRA target modules are not known" if targets is _MISSING else
               f"{p.name} is not a transformers architecture: its linear layers are not "
               f"known to preflight")
        facts.append(("params", base_params))
        facts.append(("trainable_params", Fact.unknown(why, source=lsrc)))
        return facts, diags
    out = lora_counts(p.shape, {"r": r_, "targets": targets, "modules_to_save": save,
                                "train_untargeted": bool(lora_ref.get("train_untargeted"))})
    if out["trainable_params"] is not None:
        # what the ledger needs for the frozen base (lora.frozen_base_bytes)
        lora_val.update(base_params=p.params, adapter_params=out["adapters"],
                        saved_params=out["saved"],
                        quantized_params=sum(x.weight_params for x in p.shape.linears
                                             if x.in_block),
                        quantized_rows=sum(x.out_features * x.count for x in p.shape.linears
                                           if x.in_block))
        facts = [(n, Fact(value=lora_val, origin=f.origin, source=f.source, reason=f.reason)
                  if n == "lora" else f) for n, f in facts]
    if out["trainable_params"] is None:
        facts.append(("params", base_params))
        facts.append(("trainable_params", Fact.unknown("; ".join(out["unknown"]), source=lsrc)))
        return facts, diags
    facts += tensor_facts(p, out.get("trainable_shapes"))
    for u in out["unknown"]:
        diags.append(Diagnostic.at("PF003", u, lsrc, name="unresolved-value",
                                   severity="warning"))
    how = (f"LoRA r={r_} on {targets if isinstance(targets, str) else ', '.join(targets)}: "
           f"{out['adapters']:,} adapter params")
    if out["saved"]:
        how += f" + {out['saved']:,} in modules_to_save"
    facts.append(("trainable_params", Fact(value=out["trainable_params"], origin=Origin.DERIVED,
                                           source=lsrc, reason=how)))
    # params: the adapted model as peft counts it (base + adapters + saved copies), at the
    # base model's reference; the base count stays in the reason
    facts.append(("params", Fact(value=out["params"], origin=p.origin, source=p.source,
                                 reason=f"{p.params:,} base ({reason}) + "
                                        f"{out['trainable_params']:,} trainable adapter "
                                        f"params")))
    return facts, diags


def tensor_facts(res: _Resolved, trainable: Optional[list]) -> list[tuple[str, Fact]]:
    """The `model_tensors` fact of a counted architecture: the trainable parameter tensors
    (`trainable`: their shapes with counts, None when not known) and the registered buffers
    its modules create (None when not modelled); nothing when neither is known."""
    shape = res.shape
    buffers = shape.buffers if shape is not None else None
    if trainable is None and buffers is None:
        return []
    value = {"trainable": None if trainable is None else
             [[list(d), n] for d, n in trainable],
             "buffers": None if buffers is None else
             [[name, list(d), dtype] for name, d, dtype in buffers]}
    return [("model_tensors", Fact(value=value, origin=Origin.DERIVED, source=res.source,
                                   reason=f"{res.name or 'the model'}: "
                                          f"{shape.arch if shape else ''} architecture's modules"))]


_FIELD_NAMES_ALL = {n for names in _FIELD_NAMES.values() for n in names} | {
    "head_dim", "num_local_experts", "num_experts", "num_experts_per_tok",
    "moe_intermediate_size", "shared_expert_intermediate_size", "tie_word_embeddings", "d_kv", "num_decoder_layers",
    "word_embed_proj_dim", "n_positions", "max_position_embeddings", "type_vocab_size"}


#: config fields holding a dropout probability (GPT-2, BERT, Llama, T5, OPT, Falcon …)
DROPOUT_FIELDS = ("resid_pdrop", "embd_pdrop", "attn_pdrop", "hidden_dropout_prob",
                  "attention_probs_dropout_prob", "attention_dropout", "hidden_dropout",
                  "dropout", "dropout_rate", "activation_dropout", "summary_first_dropout")
#: attn_implementation spellings → the `attention` fact
ATTN_IMPLEMENTATIONS = {"eager": "eager", "sdpa": "sdpa", "flash_attention_2": "flash",
                        "flash_attention_3": "flash", "flex_attention": "sdpa"}


def config_behaviour_facts(ref: dict, src: Optional[Source]) -> list[tuple[str, Fact]]:
    """What a model's config says about its saved activations: the dropout probability (0
    removes every mask), `use_cache`, and `attn_implementation` given to the config."""
    fields, _ = _clean_fields(ref.get("fields") or ref.get("kwargs") or {})
    out: list[tuple[str, Fact]] = []
    probs = {k: fields[k] for k in DROPOUT_FIELDS
             if isinstance(fields.get(k), (int, float)) and not isinstance(fields.get(k), bool)}
    if probs:
        out.append(("dropout", Fact(value=float(max(probs.values())), origin=Origin.LITERAL,
                                    source=src, reason=", ".join(f"{k}={v}" for k, v in
                                                                 sorted(probs.items())))))
    if isinstance(fields.get("use_cache"), bool):
        out.append(("use_cache", Fact(value=fields["use_cache"], origin=Origin.LITERAL,
                                      source=src, reason="use_cache in the model's config")))
    att = fields.get("attn_implementation")
    if isinstance(att, str) and att in ATTN_IMPLEMENTATIONS and ref.get("kind") == "config":
        out.append(("attention", Fact(value=ATTN_IMPLEMENTATIONS[att], origin=Origin.LITERAL,
                                      source=src, reason=f"attn_implementation={att!r} given "
                                                         "to the config")))
    return out


def _origin(v: Any, default: Origin) -> Origin:
    if isinstance(v, Origin):
        return v
    try:
        return Origin(str(v))
    except ValueError:
        return default


def _double_quant(kwargs: dict) -> Optional[bool]:
    """bnb_4bit_use_double_quant of the quantization_config, when written."""
    kw, _ = _clean_fields(kwargs)
    q = kw.get("quantization_config")
    if isinstance(q, dict) and isinstance(q.get("kwargs"), dict):
        q = q["kwargs"]
    if isinstance(q, dict) and isinstance(q.get("bnb_4bit_use_double_quant"), bool):
        return q["bnb_4bit_use_double_quant"]
    return None


#: config.json's torch_dtype spellings → the fact's dtype names
_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32", "torch.bfloat16": "bf16",
           "torch.float16": "fp16", "torch.float32": "fp32", "half": "fp16", "float": "fp32"}
_DTYPE_WORDS = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}


def load_dtype_facts(res: _Resolved) -> list[tuple[str, Fact]]:
    """The dtype transformers' `from_pretrained` loads the trained model in, when the job
    does not say it (`dtype` / `torch_dtype` absent, or `"auto"`).

    `"auto"` is the checkpoint's dtype. Without either, the version decides: transformers
    ≥ 5 defaults to `dtype="auto"` (modeling_utils: `if dtype is None: dtype = "auto"`,
    then the config's dtype, else the first floating-point weight's), 4.x loaded float32.
    The version is the one the job pins nearest to its script (preflight.extract.pins),
    else the current major, and the fact's reason says which."""
    ref = res.ref
    if ref.get("kind") != "hub" or ref.get("library") not in ("transformers", "trl", "peft", "",
                                                              None):
        return []
    kw = ref.get("kwargs") or {}
    if _quant_bits(kw):
        return []
    given = kw.get("dtype", kw.get("torch_dtype"))
    if given is not None and given != "auto":
        return []                   # an explicit dtype: the extractor's fact
    src, name = res.source, res.name or "the model"
    ck = res.checkpoint_dtype
    known = (f"{_DTYPE_WORDS[ck]}, the checkpoint's dtype ({res.checkpoint_dtype_from})"
             if ck else None)
    if given == "auto":
        if not known:
            return []               # the extractor's unknown stands
        return [("param_dtype", Fact(value=ck, origin=Origin.CATALOG, source=src,
                                     reason=f'dtype="auto": {known}'))]
    from preflight.extract.pins import CURRENT_MAJOR, find_pin
    start = os.path.dirname(os.path.abspath(src.path)) if src and src.path else "."
    pin = find_pin("transformers", start)
    current = CURRENT_MAJOR["transformers"]
    major = pin.major if pin else current
    said = (f"transformers {major}.x ({pin.text} in {pin.where})" if pin else
            f"no transformers version pinned near the script: the current major, {current}, "
            "assumed")
    if major < 5:
        return [("param_dtype", Fact(value="fp32", origin=Origin.DEFAULT, source=src,
                                     reason=f"from_pretrained without torch_dtype loads float32 "
                                            f"weights in transformers 4.x; {said}"))]
    if not known:
        return [("param_dtype", Fact.unknown(
            f"from_pretrained without dtype loads the checkpoint's dtype in transformers ≥ 5 "
            f"(dtype=\"auto\"), and {name}'s is not known; {said}", source=src))]
    return [("param_dtype", Fact(value=ck, origin=Origin.DEFAULT, source=src,
                                 reason=f"from_pretrained without dtype loads the checkpoint's "
                                        f"dtype in transformers ≥ 5 (dtype=\"auto\"): {known}; "
                                        f"{said}"))]


def _quant_bits(kwargs: dict) -> Optional[int]:
    kw, _ = _clean_fields(kwargs)
    if kw.get("load_in_4bit") is True:
        return 4
    if kw.get("load_in_8bit") is True:
        return 8
    q = kw.get("quantization_config")
    if isinstance(q, dict) and isinstance(q.get("kwargs"), dict):   # {"call": …, "kwargs": …}
        q = q["kwargs"]
    if isinstance(q, dict):
        if q.get("load_in_4bit") is True:
            return 4
        if q.get("load_in_8bit") is True:
            return 8
    return None


def shape_overrides(shape: dict[str, int]) -> dict[str, int]:
    """Shape facts (`layers`, `hidden`, …) as config fields under every spelling the
    formulas read, so that an override wins whichever name the model's config uses."""
    return {n: v for fact, v in shape.items() for n in _OVERRIDE_NAMES.get(fact, ())}


#: the config field names the parameter formulas read, per shape fact
_OVERRIDE_NAMES = {
    "layers": ("num_hidden_layers", "n_layer"),
    "hidden": ("hidden_size", "n_embd", "d_model"),
    "heads": ("num_attention_heads", "n_head"),
    "kv_heads": ("num_key_value_heads", "num_kv_heads", "n_head_kv"),
    "ffn_hidden": ("intermediate_size", "n_inner", "ffn_dim", "d_ff"),
    "vocab": ("vocab_size",),
    "experts": ("num_local_experts", "num_experts", "n_routed_experts"),
    "experts_per_token": ("num_experts_per_tok", "moe_router_topk"),
    "expert_ffn_hidden": ("moe_intermediate_size",),
}


def facts_for_name(name: str, *, search_dirs: Optional[list[str]] = None,
                   project_models: Optional[dict] = None,
                   overrides: Optional[dict[str, int]] = None,
                   lora: Optional[dict] = None) -> Optional[list[tuple[str, Fact]]]:
    """Facts for `preflight estimate --model NAME`, or None when NAME does not resolve.
    `overrides` (shape facts) change the model's shape before it is counted."""
    ref = {"kind": "hub", "name": name, "source": None}
    if overrides:
        ref["kwargs"] = shape_overrides(overrides)
    facts, _ = resolve([ref] + ([lora] if lora else []),
                       search_dirs=search_dirs if search_dirs is not None else [os.getcwd()],
                       project_models=project_models or {}, params_override=None)
    if not any(n == "params" and f.known for n, f in facts):
        return None
    return facts
