"""Phi 1, 1.5 and 2 (parallel attention and MLP, biased linears, a biased LM head).
"""

from __future__ import annotations

from typing import Optional

from preflight.models.shape import (Head, ModelShape, ParamCount, add_decoder_head, cfg_bool,
                                    cfg_int, finish_shape)


def phi(cfg: dict, head: str, num_labels: Optional[int]) -> ModelShape:
    V = cfg_int(cfg, "vocab_size", default=51200)
    h = cfg_int(cfg, "hidden_size", default=2048)
    inter = cfg_int(cfg, "intermediate_size", default=8192)
    L = cfg_int(cfg, "num_hidden_layers", default=24)
    nh = cfg_int(cfg, "num_attention_heads", default=32)
    nkv = cfg_int(cfg, "num_key_value_heads", default=nh)
    hd = h // nh
    tied = cfg_bool(cfg, "tie_word_embeddings", False)
    c = ParamCount()
    c.add(V * h)
    c.linear("q_proj", h, nh * hd, count=L, bias=True)
    c.linear("k_proj", h, nkv * hd, count=L, bias=True)
    c.linear("v_proj", h, nkv * hd, count=L, bias=True)
    c.linear("dense", nh * hd, h, count=L, bias=True)
    if cfg_bool(cfg, "qk_layernorm", False):
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
        add_decoder_head(c, Head(head, V, h, tied, num_labels, cfg))
    return finish_shape(c, layers=L, hidden=h, heads=nh, kv_heads=nkv, ffn_hidden=inter, vocab=V,
                        family="phi", arch="phi", head_dim=hd, tied=tied, head=head)
