"""BLOOM: ALiBi (no position embedding), a LayerNorm after the embeddings.
"""

from __future__ import annotations

from typing import Optional

from preflight.models.shape import (Head, ModelShape, ParamCount, add_decoder_head, cfg_bool,
                                    cfg_int, finish_shape)


def bloom(cfg: dict, head: str, num_labels: Optional[int]) -> ModelShape:
    V = cfg_int(cfg, "vocab_size", default=250880)
    h = cfg_int(cfg, "hidden_size", "n_embed", default=64)
    L = cfg_int(cfg, "n_layer", "num_hidden_layers", default=2)
    nh = cfg_int(cfg, "n_head", "num_attention_heads", default=8)
    tied = cfg_bool(cfg, "tie_word_embeddings", True)
    c = ParamCount()
    c.add(V * h + 2 * h)                                     # embeddings + their LayerNorm
    c.linear("query_key_value", h, 3 * h, count=L, bias=True)
    c.linear("dense", h, h, count=L, bias=True)
    c.linear("dense_h_to_4h", h, 4 * h, count=L, bias=True)
    c.linear("dense_4h_to_h", 4 * h, h, count=L, bias=True)
    c.add(L * 4 * h + 2 * h)
    add_decoder_head(c, Head(head, V, h, tied, num_labels, cfg))
    return finish_shape(c, layers=L, hidden=h, heads=nh, kv_heads=nh, ffn_hidden=4 * h, vocab=V,
                        family="bloom", arch="bloom", head_dim=h // nh, tied=tied, head=head)
