"""OLMo (the first release, `model_type` olmo): a llama-like decoder whose LayerNorms have
no weight and no bias, and q/k/v/o linears biased together by `attention_bias`.
"""

from __future__ import annotations

from typing import Optional

from preflight.models.shape import (Head, ModelShape, ParamCount, add_decoder_head, cfg_bool,
                                    cfg_int, finish_shape)


def olmo(cfg: dict, head: str, num_labels: Optional[int]) -> ModelShape:
    """OlmoConfig's defaults are OLMo-7B's shape; `clip_qkv` clamps values, no parameters."""
    V = cfg_int(cfg, "vocab_size", default=50304)
    h = cfg_int(cfg, "hidden_size", default=4096)
    L = cfg_int(cfg, "num_hidden_layers", default=32)
    nh = cfg_int(cfg, "num_attention_heads", default=32)
    nkv = cfg_int(cfg, "num_key_value_heads", default=nh)
    inter = cfg_int(cfg, "intermediate_size", default=11008)
    hd = h // nh
    bias = cfg_bool(cfg, "attention_bias", False)
    tied = cfg_bool(cfg, "tie_word_embeddings", False)
    c = ParamCount()
    c.tensor(V, h)                                           # embed_tokens
    c.linear("q_proj", h, nh * hd, count=L, bias=bias)
    c.linear("k_proj", h, nkv * hd, count=L, bias=bias)
    c.linear("v_proj", h, nkv * hd, count=L, bias=bias)
    c.linear("o_proj", nh * hd, h, count=L, bias=bias)
    c.linear("gate_proj", h, inter, count=L)
    c.linear("up_proj", h, inter, count=L)
    c.linear("down_proj", inter, h, count=L)
    # the norms (two per layer and the final one) hold no parameters
    rot = int(hd * float(cfg.get("partial_rotary_factor") or 1.0)) // 2
    c.buffers = [(f"rotary_emb.{n}", (rot,), "float") for n in ("inv_freq", "original_inv_freq")]
    add_decoder_head(c, Head(head, V, h, tied, num_labels, cfg))
    return finish_shape(c, layers=L, hidden=h, heads=nh, kv_heads=nkv, ffn_hidden=inter, vocab=V,
                        family="llama", arch="olmo", head_dim=hd, tied=tied, head=head)
