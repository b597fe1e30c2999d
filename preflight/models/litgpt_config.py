"""litgpt's `Config` fields (`n_layer`, `n_embd`, `n_head`, `n_query_groups`,
`intermediate_size`, `padded_vocab_size`, `_mlp_class`, `_norm_class`, `bias`, …) as the
Hugging Face config of the same layout, so that the architecture formulas count them: a
gated MLP with RMSNorm and no biases is a Llama, a plain MLP with LayerNorm and biases a
GPT-NeoX. Any other layout is not counted."""

from __future__ import annotations

from typing import Any, Optional

#: the fields that change a litgpt model's size
SHAPE_FIELDS = frozenset({
    "n_layer", "n_head", "n_embd", "n_query_groups", "intermediate_size", "vocab_size",
    "padded_vocab_size", "padding_multiple", "_mlp_class", "mlp_class_name", "_norm_class",
    "norm_class_name", "bias", "head_size", "shared_attention_norm", "lm_head_bias"})


def _int(v: Any) -> Optional[int]:
    return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else None


def padded_vocab(cfg: dict) -> Optional[int]:
    """`padded_vocab_size`, else `vocab_size` rounded up to `padding_multiple` (litgpt's
    `find_multiple`; 512 when not given)."""
    if _int(cfg.get("padded_vocab_size")):
        return cfg["padded_vocab_size"]
    v, m = _int(cfg.get("vocab_size")), _int(cfg.get("padding_multiple", 512))
    if v is None or m is None:
        return None
    return -(-v // m) * m


def as_hf_config(cfg: dict) -> Optional[tuple[str, dict]]:
    """(architecture, Hugging Face config fields) of a litgpt config, or None when its
    layout is not one of those the formulas count."""
    L, H, h = _int(cfg.get("n_layer")), _int(cfg.get("n_head")), _int(cfg.get("n_embd"))
    V = padded_vocab(cfg)
    if None in (L, H, h, V) or h % H:
        return None
    G = _int(cfg.get("n_query_groups")) or H
    hs = _int(cfg.get("head_size"))
    if hs is not None and hs != h // H or cfg.get("shared_attention_norm") or \
            cfg.get("lm_head_bias"):
        return None
    mlp = str(cfg.get("_mlp_class") or cfg.get("mlp_class_name") or "GptNeoxMLP")
    norm = str(cfg.get("_norm_class") or cfg.get("norm_class_name") or "LayerNorm")
    bias = cfg.get("bias", True)
    inter = _int(cfg.get("intermediate_size"))
    base = {"vocab_size": V, "hidden_size": h, "num_hidden_layers": L,
            "num_attention_heads": H, "tie_word_embeddings": False}
    if mlp == "LLaMAMLP" and norm.endswith("RMSNorm") and bias is False and inter:
        return "llama", {**base, "model_type": "llama", "intermediate_size": inter,
                         "num_key_value_heads": G}
    if mlp == "GptNeoxMLP" and norm == "LayerNorm" and bias is True and G == H:
        return "gpt_neox", {**base, "model_type": "gpt_neox",
                            "intermediate_size": inter or 4 * h}
    return None
