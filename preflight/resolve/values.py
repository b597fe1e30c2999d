"""What the resolution stage reads and keeps: the extractor's encoded values as plain
Python values (`plain_value`, `clean_fields`: an unknown value is `MISSING`), the config field
spellings that name each shape fact, and `Resolved`, one model reference resolved."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from preflight.models.shape import ModelShape
from preflight.plan import Diagnostic, Fact, Origin, Source


SHAPE_FACTS = ("layers", "hidden", "heads", "kv_heads", "ffn_hidden", "vocab")

#: from_pretrained keywords that load, place or quantise — not config fields
LOADER_KWARGS = {
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
               "hidden_dim", "ninp", "emb_dim", "model_dim"),
    "heads": ("num_attention_heads", "n_head", "n_heads", "num_heads", "nhead", "heads"),
    "kv_heads": ("num_key_value_heads", "n_kv_heads", "n_query_groups", "num_kv_heads",
                 "n_kv_head"),
    "ffn_hidden": ("intermediate_size", "ffn_dim", "d_ff", "n_inner", "dim_feedforward",
                   "ffn_hidden_size", "nhid", "intermediate_dim"),
    "vocab": ("vocab_size", "n_vocab", "padded_vocab_size", "ntoken", "num_tokens",
              "vocab"),
}


@dataclass
class Resolved:
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
    #: other facts the model's own description states (a registry entry's `block_size`)
    more: list[tuple[str, Fact]] = field(default_factory=list)

    @property
    def known(self) -> bool:
        return self.params is not None


def source_of(src: Any) -> Optional[Source]:
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


def plain_value(v: Any) -> Any:
    """A field value as a plain Python value, or MISSING when it is not known."""
    if isinstance(v, Fact):
        return v.value if v.known else MISSING
    if isinstance(v, (bool, int, float, str)) or v is None:
        return v
    if isinstance(v, (list, tuple)):
        out = [plain_value(x) for x in v]
        return MISSING if any(x is MISSING for x in out) else out
    if isinstance(v, dict):
        # the extractor writes an unknown value as {"unknown": reason[, "default": …]}
        if "unknown" in v and set(v) <= {"unknown", "default"}:
            return MISSING
        if set(v) >= {"origin"} and v.get("origin") == "unknown":
            return MISSING
        return {k: plain_value(x) for k, x in v.items()}
    return MISSING


MISSING = object()


def clean_fields(fields: Any) -> tuple[dict, list[str]]:
    out, missing = {}, []
    for k, v in (fields or {}).items():
        pv = plain_value(v)
        if pv is MISSING:
            missing.append(str(k))
        else:
            out[str(k)] = pv
    return out, missing


def shape_facts_from_fields(cfg: dict) -> dict[str, int]:
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


def as_int(v: Any) -> Optional[int]:
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


ALL_FIELD_NAMES = {n for names in _FIELD_NAMES.values() for n in names} | {
    "head_dim", "num_local_experts", "num_experts", "num_experts_per_tok",
    "moe_intermediate_size", "shared_expert_intermediate_size", "tie_word_embeddings", "d_kv", "num_decoder_layers",
    "word_embed_proj_dim", "n_positions", "max_position_embeddings", "type_vocab_size"}


def origin_of(v: Any, default: Origin) -> Origin:
    if isinstance(v, Origin):
        return v
    try:
        return Origin(str(v))
    except ValueError:
        return default
