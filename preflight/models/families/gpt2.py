"""GPT-2 (transformers' Conv1D linears, learned positions, a tied LM head).
"""

from __future__ import annotations

from typing import Optional

from preflight.models.shape import (Head, ModelShape, ParamCount, add_decoder_head, cfg_bool,
                                    cfg_int, finish_shape)


def gpt2(cfg: dict, head: str, num_labels: Optional[int]) -> ModelShape:
    V = cfg_int(cfg, "vocab_size", default=50257)
    P = cfg_int(cfg, "n_positions", "max_position_embeddings", default=1024)
    h = cfg_int(cfg, "n_embd", "hidden_size", default=768)
    L = cfg_int(cfg, "n_layer", "num_hidden_layers", default=12)
    nh = cfg_int(cfg, "n_head", "num_attention_heads", default=12)
    inter = cfg_int(cfg, "n_inner", default=4 * h)
    tied = cfg_bool(cfg, "tie_word_embeddings", True)
    c = ParamCount()
    c.tensor(V, h)                                           # wte
    c.tensor(P, h)                                           # wpe
    c.linear("c_attn", h, 3 * h, count=L, bias=True, conv1d=True)
    c.linear("c_proj", h, h, count=L, bias=True, conv1d=True)         # attn.c_proj
    c.linear("c_fc", h, inter, count=L, bias=True, conv1d=True)
    c.linear("c_proj", inter, h, count=L, bias=True, conv1d=True)     # mlp.c_proj
    c.tensor(h, count=L * 4 + 2)                             # ln_1, ln_2, ln_f
    c.buffers = []                                           # transformers ≥ 5: no causal-mask buffer
    add_decoder_head(c, Head(head, V, h, tied, num_labels, cfg))
    return finish_shape(c, layers=L, hidden=h, heads=nh, kv_heads=nh, ffn_hidden=inter, vocab=V,
                        family="gpt2", arch="gpt2", head_dim=h // nh, tied=tied, head=head)
