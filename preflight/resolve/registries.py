"""Models chosen through a framework's own registry: torchtitan model flavors (the
project's entry, the flavor table of torchtitan's source in the repository, else the
offline catalogue's model of that flavor), Megatron-LM GPT models from their
command-line arguments (the vocabulary from the tokenizer they name) and GPT-NeoX models from
their YAML keys."""

from __future__ import annotations

import json
import os
from typing import Optional

from preflight import runcache, safe_read
from preflight.lazy import lazy
from preflight.models import catalog
from preflight.plan import Origin, Source
from preflight.resolve.locations import project_entry
from preflight.resolve.shapes import shape_for_arch, shape_from_project
from preflight.resolve.values import Resolved, clean_fields, shape_facts_from_fields, source_of

torchtitan_registry = lazy("preflight.extract.torchtitan_registry")


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


def resolve_torchtitan(ref: dict, src: Optional[Source], search_dirs: list[str],
                       project_models: Optional[dict] = None) -> Optional[Resolved]:
    """A torchtitan model flavor (`[model] name = "llama3"`, `flavor = "8B"`, or
    `model_registry("70B")` of module llama3): the project's `[tool.preflight.models]`
    entry for `llama3:8B`, else the flavor's fields from the module's flavor table when
    torchtitan's source is in the repository, else the offline catalogue's model of that
    flavor. Llama-family modules count as transformers Llama."""
    module, flavor = str(ref.get("name") or ""), str(ref.get("flavor") or "")
    label = f"{module}:{flavor}" if flavor else module
    res = Resolved(ref=ref, origin=Origin.DERIVED, source=src, name=label)
    entry = project_entry(label, project_models or {})
    if entry is not None:
        return shape_from_project(res, label, entry, {}, None, None)
    reg = _torchtitan_registry(module, src, search_dirs)
    got = torchtitan_registry.flavor_fields(reg, flavor) if reg is not None else None
    if got is None:
        hit = _torchtitan_catalog(module, flavor)
        if hit is not None:
            canonical, arch, cfg = hit
            res.origin = Origin.CATALOG
            res.reason = f"torchtitan {module} flavor {flavor}: offline catalogue entry {canonical}"
            return shape_for_arch(res, arch, dict(cfg), None, None, res.reason)
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
        res.shape_facts = shape_facts_from_fields(fields)
        return res
    res.reason = what + " (" + ", ".join(f"{k}={v}" for k, v in sorted(fields.items())) + ")"
    return shape_for_arch(res, arch, dict(fields, model_type="llama"), None, None, res.reason)


def resolve_megatron(ref: dict, src: Optional[Source]) -> Resolved:
    """Megatron-LM command-line arguments ({"--num-layers": 24, "--swiglu": True, …})."""
    raw, missing = clean_fields(ref.get("args") or {})
    args = {k.lstrip("-").replace("-", "_"): v for k, v in raw.items()}
    res = Resolved(ref=ref, origin=Origin.DERIVED, source=src, name="Megatron GPT")
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
        res.shape_facts = shape_facts_from_fields(args)
        return res
    if missing:
        shape_missing = [m for m in missing if m.lstrip("-").replace("-", "_") in (
            "num_layers", "hidden_size", "num_attention_heads", "ffn_hidden_size",
            "num_query_groups", "num_experts", "vocab_size")]
        if shape_missing:
            res.unknown = f"Megatron argument(s) {', '.join(shape_missing)} not known statically"
            res.shape_facts = shape_facts_from_fields(args)
            return res
    res.reason = "Megatron-LM arguments: " + ", ".join(
        f"{k}={v}" for k, v in sorted(args.items()) if k in (
            "num_layers", "hidden_size", "num_attention_heads", "num_query_groups",
            "ffn_hidden_size", "vocab_size", "num_experts", "swiglu"))
    return shape_for_arch(res, "megatron", args, None, None, res.reason)


#: vocabulary sizes of GPT-NeoX's tokenizers that need no file (before padding)
_NEOX_TOKENIZERS = {"gpt2bpetokenizer": 50257, "hfgpt2tokenizer": 50257,
                    "charleveltokenizer": 512}
#: tokenizer files published with GPT-NeoX models, by name, when the file is not at hand
_NEOX_TOKENIZER_FILES = {"20b_tokenizer.json": 50277, "gpt2-vocab.json": 50257}
_MAX_TOKENIZER_BYTES = 20_000_000


def _tokenizer_file_size(path: str) -> Optional[int]:
    """The number of tokens of a tokenizer.json (its vocabulary and added tokens) or a
    vocab.json, or None when it cannot be read."""
    try:
        if os.path.getsize(path) > _MAX_TOKENIZER_BYTES:
            return None
        doc = json.loads(safe_read.read_text(path))
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict):
        return None
    model = doc.get("model")
    vocab = model.get("vocab") if isinstance(model, dict) else doc
    if not isinstance(vocab, dict) or not vocab:
        return None
    ids = [v for v in vocab.values() if isinstance(v, int)]
    ids += [t.get("id") for t in doc.get("added_tokens") or [] if isinstance(t, dict)
            and isinstance(t.get("id"), int)]
    return max(ids) + 1 if ids else None


def _neox_vocab(cfg: dict, search_dirs: list[str]) -> tuple[Optional[int], Origin, str]:
    """(tokenizer vocabulary before padding, how sure, why)."""
    tok = str(cfg.get("tokenizer_type") or "GPT2BPETokenizer")
    if tok.lower() in _NEOX_TOKENIZERS:
        return _NEOX_TOKENIZERS[tok.lower()], Origin.DERIVED, f"tokenizer_type {tok}"
    vf = cfg.get("vocab_file")
    if not isinstance(vf, str) or not vf:
        return None, Origin.UNKNOWN, f"tokenizer_type {tok} without a vocab_file"
    for d in [os.getcwd()] + list(search_dirs or []):
        p = os.path.join(d, vf)
        runcache.note_file(p)
        if os.path.isfile(p):
            n = _tokenizer_file_size(p)
            if n is not None:
                return n, Origin.DERIVED, f"{tok} {vf}: {n} tokens"
    n = _NEOX_TOKENIZER_FILES.get(os.path.basename(vf).lower())
    if n is not None:
        return n, Origin.ASSUMED, (f"{tok} {vf} is not at hand: {n} tokens, the published "
                                   f"file of that name")
    return None, Origin.UNKNOWN, f"the tokenizer file {vf} is not at hand"


def resolve_neox(refs: list[dict], search_dirs: list[str]) -> Resolved:
    """A GPT-NeoX model from its YAML keys (the job's files merged in order, as deepy.py
    merges them): Megatron's GPT layout, the tokenizer's vocabulary padded to a multiple
    of `make_vocab_size_divisible_by` × the model-parallel size."""
    cfg: dict = {}
    src = None
    for r in refs:
        cfg.update(clean_fields(r.get("fields") or {})[0])
        if src is None and "num_layers" in (r.get("fields") or {}):
            src = source_of(r.get("source"))
    src = src or source_of(refs[0].get("source"))
    res = Resolved(ref=refs[0], origin=Origin.DERIVED, source=src, name="GPT-NeoX")
    act = str(cfg.get("activation") or "gelu").lower()
    if act not in ("gelu", "relu") or cfg.get("mlp_type") not in (None, "regular"):
        res.unknown = f"GPT-NeoX activation {act!r} / mlp_type: not a layout preflight counts"
        res.shape_facts = shape_facts_from_fields(cfg)
        return res
    V = cfg.get("padded_vocab_size")
    how = "padded_vocab_size"
    if not isinstance(V, int):
        raw, origin, why = _neox_vocab(cfg, search_dirs)
        if raw is None:
            res.unknown = f"GPT-NeoX vocabulary not known: {why}"
            res.shape_facts = shape_facts_from_fields(cfg)
            return res
        div = cfg.get("make_vocab_size_divisible_by", 128)
        tp = cfg.get("model_parallel_size", 1)
        if not (isinstance(div, int) and isinstance(tp, int) and div > 0 and tp > 0):
            res.unknown = "GPT-NeoX make_vocab_size_divisible_by / model_parallel_size not known"
            return res
        V = -(-raw // (div * tp)) * div * tp
        how = f"{why}, padded to a multiple of {div} × model_parallel_size {tp}"
        if origin is Origin.ASSUMED:
            res.origin = Origin.ASSUMED
    args = {"num_layers": cfg.get("num_layers"), "hidden_size": cfg.get("hidden_size"),
            "num_attention_heads": cfg.get("num_attention_heads"), "padded_vocab_size": V,
            "untie_embeddings_and_output_weights": bool(cfg.get("no_weight_tying", False)),
            "position_embedding_type": "learned_absolute"
            if str(cfg.get("pos_emb") or "learned") == "learned" else "none",
            "max_position_embeddings": cfg.get("max_position_embeddings") or
            cfg.get("seq_length"),
            "normalization": "RMSNorm" if str(cfg.get("norm") or "").lower() == "rmsnorm"
            else "LayerNorm"}
    if isinstance(cfg.get("intermediate_size"), int):
        args["ffn_hidden_size"] = cfg["intermediate_size"]
    kv = cfg.get("num_kv_heads")
    if isinstance(kv, int) and kv != cfg.get("num_attention_heads"):
        args.update(group_query_attention=True, num_query_groups=kv)
    missing = [k for k in ("num_layers", "hidden_size", "num_attention_heads")
               if not isinstance(args.get(k), int)]
    if missing:
        res.unknown = f"GPT-NeoX key(s) {', '.join(missing)} not known statically"
        res.shape_facts = shape_facts_from_fields(cfg)
        return res
    res.reason = f"GPT-NeoX keys: vocab {V} ({how})"
    return shape_for_arch(res, "megatron", args, None, None, res.reason)
