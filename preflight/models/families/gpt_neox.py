"""GPT-NeoX (Pythia and friends): fused query_key_value, an untied `embed_out` head.
"""

from __future__ import annotations

from typing import Optional

from preflight.models.shape import (Head, ModelShape, ParamCount, add_decoder_head, cfg_bool,
                                    cfg_int, finish_shape)


def gpt_neox(cfg: dict, head: str, num_labels: Optional[int]) -> ModelShape:
    V = cfg_int(cfg, "vocab_size", default=50432)
    h = cfg_int(cfg, "hidden_size", default=6144)
    L = cfg_int(cfg, "num_hidden_layers", default=44)
    nh = cfg_int(cfg, "num_attention_heads", default=64)
    inter = cfg_int(cfg, "intermediate_size", default=24576)
    bias = cfg_bool(cfg, "attention_bias", True)
    tied = cfg_bool(cfg, "tie_word_embeddings", False)
    c = ParamCount()
    c.add(V * h)                                             # embed_in
    c.linear("query_key_value", h, 3 * h, count=L, bias=bias)
    c.linear("dense", h, h, count=L, bias=bias)
    c.linear("dense_h_to_4h", h, inter, count=L, bias=True)
    c.linear("dense_4h_to_h", inter, h, count=L, bias=True)
    c.add(L * 4 * h + 2 * h)                                 # two LayerNorms per layer, final
    add_decoder_head(c, Head(head, V, h, tied, num_labels, cfg, name="embed_out"))
    return finish_shape(c, layers=L, hidden=h, heads=nh, kv_heads=nh, ffn_hidden=inter, vocab=V,
                        family="gpt_neox", arch="gpt_neox", head_dim=h // nh, tied=tied, head=head)
