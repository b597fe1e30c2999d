"""Falcon (RefinedWeb): multi-query or grouped attention, the new decoder architecture.
"""

from __future__ import annotations

from typing import Optional

from preflight.models.shape import Head, ModelShape, _Count, _bool, _decoder_head, _finish, _int


def falcon(cfg: dict, head: str, num_labels: Optional[int]) -> ModelShape:
    V = _int(cfg, "vocab_size", default=65024)
    h = _int(cfg, "hidden_size", "n_embed", default=4544)
    L = _int(cfg, "num_hidden_layers", "n_layer", default=32)
    nh = _int(cfg, "num_attention_heads", "n_head", default=71)
    new = _bool(cfg, "new_decoder_architecture", False)
    mq = _bool(cfg, "multi_query", True)
    nkv_cfg = _int(cfg, "num_kv_heads", "n_head_kv", default=nh)
    parallel = _bool(cfg, "parallel_attn", True)
    bias = _bool(cfg, "bias", False)
    F = _int(cfg, "ffn_hidden_size", default=4 * h)
    n_ln = cfg.get("num_ln_in_parallel_attn")
    if n_ln is None and new:
        n_ln = 2
    tied = _bool(cfg, "tie_word_embeddings", True)
    hd = h // nh
    if new:
        qkv, nkv = (2 * nkv_cfg + nh) * hd, nkv_cfg
    elif mq:
        qkv, nkv = h + 2 * hd, 1
    else:
        qkv, nkv = 3 * h, nh
    c = _Count()
    c.add(V * h)
    c.linear("query_key_value", h, qkv, count=L, bias=bias)
    c.linear("dense", h, h, count=L, bias=bias)
    c.linear("dense_h_to_4h", h, F, count=L, bias=bias)
    c.linear("dense_4h_to_h", F, h, count=L, bias=bias)
    norms = 2 if (not parallel or n_ln == 2) else 1
    c.add(L * norms * 2 * h + 2 * h)
    _decoder_head(c, Head(head, V, h, tied, num_labels, cfg))
    return _finish(c, layers=L, hidden=h, heads=nh, kv_heads=nkv, ffn_hidden=F, vocab=V,
                   family="falcon", arch="falcon", head_dim=hd, tied=tied, head=head)
