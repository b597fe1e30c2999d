"""Phi 1, 1.5 and 2 (parallel attention and MLP, biased linears, a biased LM head).
"""

from __future__ import annotations

from typing import Optional

from preflight.models.shape import Head, ModelShape, _Count, _bool, _decoder_head, _finish, _int


def phi(cfg: dict, head: str, num_labels: Optional[int]) -> ModelShape:
    V = _int(cfg, "vocab_size", default=51200)
    h = _int(cfg, "hidden_size", default=2048)
    inter = _int(cfg, "intermediate_size", default=8192)
    L = _int(cfg, "num_hidden_layers", default=24)
    nh = _int(cfg, "num_attention_heads", default=32)
    nkv = _int(cfg, "num_key_value_heads", default=nh)
    hd = h // nh
    tied = _bool(cfg, "tie_word_embeddings", False)
    c = _Count()
    c.add(V * h)
    c.linear("q_proj", h, nh * hd, count=L, bias=True)
    c.linear("k_proj", h, nkv * hd, count=L, bias=True)
    c.linear("v_proj", h, nkv * hd, count=L, bias=True)
    c.linear("dense", nh * hd, h, count=L, bias=True)
    if _bool(cfg, "qk_layernorm", False):
        c.add(L * 2 * 2 * hd)
    c.linear("fc1", h, inter, count=L, bias=True)
    c.linear("fc2", inter, h, count=L, bias=True)
    c.add(L * 2 * h + 2 * h)                       # input_layernorm per layer, final_layernorm
    if head == "causal_lm":
        if not tied:
            c.linear("lm_head", h, V, bias=True, in_block=False)
        else:
            c.add(V)
    else:
        _decoder_head(c, Head(head, V, h, tied, num_labels, cfg))
    return _finish(c, layers=L, hidden=h, heads=nh, kv_heads=nkv, ffn_hidden=inter, vocab=V,
                   family="phi", arch="phi", head_dim=hd, tied=tied, head=head)
