"""StarCoder 2 (`starcoder2`): grouped-query attention with RoPE, LayerNorms with biases,
a plain (not gated) GELU MLP, biases on every linear by `use_bias`, tied embeddings by
default.
"""

from __future__ import annotations

from typing import Optional

from preflight.models.shape import (Head, ModelShape, ParamCount, add_decoder_head, cfg_bool,
                                    cfg_int, finish_shape)


def starcoder2(cfg: dict, head: str, num_labels: Optional[int]) -> ModelShape:
    """Starcoder2Config's defaults: 30 layers × 3072, 24 heads, 2 KV heads (StarCoder2-3B's
    width and depth)."""
    V = cfg_int(cfg, "vocab_size", default=49152)
    h = cfg_int(cfg, "hidden_size", default=3072)
    inter = cfg_int(cfg, "intermediate_size", default=12288)
    L = cfg_int(cfg, "num_hidden_layers", default=30)
    nh = cfg_int(cfg, "num_attention_heads", default=24)
    nkv = cfg_int(cfg, "num_key_value_heads", default=2)
    hd = cfg_int(cfg, "head_dim", default=h // nh)
    bias = cfg_bool(cfg, "use_bias", True)
    tied = cfg_bool(cfg, "tie_word_embeddings", True)
    c = ParamCount()
    c.tensor(V, h)                                           # embed_tokens
    c.linear("q_proj", h, nh * hd, count=L, bias=bias)
    c.linear("k_proj", h, nkv * hd, count=L, bias=bias)
    c.linear("v_proj", h, nkv * hd, count=L, bias=bias)
    c.linear("o_proj", nh * hd, h, count=L, bias=bias)
    c.linear("c_fc", h, inter, count=L, bias=bias)
    c.linear("c_proj", inter, h, count=L, bias=bias)
    c.tensor(h, count=2 * (2 * L + 1))                       # two LayerNorms a layer, final
    rope = cfg.get("rope_parameters") if isinstance(cfg.get("rope_parameters"), dict) else {}
    frac = rope.get("partial_rotary_factor", cfg.get("partial_rotary_factor")) or 1.0
    rot = int(hd * float(frac)) // 2
    c.buffers = [(f"rotary_emb.{n}", (rot,), "float") for n in ("inv_freq", "original_inv_freq")]
    add_decoder_head(c, Head(head, V, h, tied, num_labels, cfg))
    return finish_shape(c, layers=L, hidden=h, heads=nh, kv_heads=nkv, ffn_hidden=inter, vocab=V,
                        family="starcoder2", arch="starcoder2", head_dim=hd, tied=tied,
                        head=head, rotary_dim=2 * rot)
