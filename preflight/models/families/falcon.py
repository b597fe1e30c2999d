"""Falcon (RefinedWeb): multi-query or grouped attention, the new decoder architecture.
"""

from __future__ import annotations

from typing import Optional

from preflight.models.shape import (Head, ModelShape, ParamCount, add_decoder_head, cfg_bool,
                                    cfg_int, finish_shape)


def falcon(cfg: dict, head: str, num_labels: Optional[int]) -> ModelShape:
    V = cfg_int(cfg, "vocab_size", default=65024)
    h = cfg_int(cfg, "hidden_size", "n_embed", default=4544)
    L = cfg_int(cfg, "num_hidden_layers", "n_layer", default=32)
    nh = cfg_int(cfg, "num_attention_heads", "n_head", default=71)
    new = cfg_bool(cfg, "new_decoder_architecture", False)
    mq = cfg_bool(cfg, "multi_query", True)
    nkv_cfg = cfg_int(cfg, "num_kv_heads", "n_head_kv", default=nh)
    parallel = cfg_bool(cfg, "parallel_attn", True)
    bias = cfg_bool(cfg, "bias", False)
    F = cfg_int(cfg, "ffn_hidden_size", default=4 * h)
    n_ln = cfg.get("num_ln_in_parallel_attn")
    if n_ln is None and new:
        n_ln = 2
    tied = cfg_bool(cfg, "tie_word_embeddings", True)
    hd = h // nh
    if new:
        qkv, nkv = (2 * nkv_cfg + nh) * hd, nkv_cfg
    elif mq:
        qkv, nkv = h + 2 * hd, 1
    else:
        qkv, nkv = 3 * h, nh
    c = ParamCount()
    c.add(V * h)
    c.linear("query_key_value", h, qkv, count=L, bias=bias)
    c.linear("dense", h, h, count=L, bias=bias)
    c.linear("dense_h_to_4h", h, F, count=L, bias=bias)
    c.linear("dense_4h_to_h", F, h, count=L, bias=bias)
    norms = 2 if (not parallel or n_ln == 2) else 1
    c.add(L * norms * 2 * h + 2 * h)
    add_decoder_head(c, Head(head, V, h, tied, num_labels, cfg))
    return finish_shape(c, layers=L, hidden=h, heads=nh, kv_heads=nkv, ffn_hidden=F, vocab=V,
                        family="falcon", arch="falcon", head_dim=hd, tied=tied, head=head)
