"""OPT: learned positions offset by 2, the optional project_in / project_out.
"""

from __future__ import annotations

from typing import Optional

from preflight.models.shape import (Head, ModelShape, ParamCount, add_decoder_head, cfg_bool,
                                    cfg_int, finish_shape)


def opt(cfg: dict, head: str, num_labels: Optional[int]) -> ModelShape:
    V = cfg_int(cfg, "vocab_size", default=50272)
    h = cfg_int(cfg, "hidden_size", default=768)
    L = cfg_int(cfg, "num_hidden_layers", default=12)
    nh = cfg_int(cfg, "num_attention_heads", default=12)
    F = cfg_int(cfg, "ffn_dim", default=3072)
    P = cfg_int(cfg, "max_position_embeddings", default=2048)
    wp = cfg_int(cfg, "word_embed_proj_dim", default=h)
    bias = cfg_bool(cfg, "enable_bias", True)
    affine = cfg_bool(cfg, "layer_norm_elementwise_affine", True)
    before = cfg_bool(cfg, "do_layer_norm_before", True)
    final_ln = before and not cfg_bool(cfg, "_remove_final_layer_norm", False)
    tied = cfg_bool(cfg, "tie_word_embeddings", True)
    ln = 2 * h if affine else 0
    c = ParamCount()
    c.add(V * wp + (P + 2) * h)                              # tokens, learned positions (+2)
    if wp != h:
        c.linear("project_in", wp, h, in_block=False)
        c.linear("project_out", h, wp, in_block=False)
    for name in ("k_proj", "v_proj", "q_proj", "out_proj"):
        c.linear(name, h, h, count=L, bias=bias)
    c.linear("fc1", h, F, count=L, bias=bias)
    c.linear("fc2", F, h, count=L, bias=bias)
    c.add(L * 2 * ln + (ln if final_ln else 0))
    add_decoder_head(c, Head(head, V, wp, tied, num_labels, cfg))
    return finish_shape(c, layers=L, hidden=h, heads=nh, kv_heads=nh, ffn_hidden=F, vocab=V,
                        family="opt", arch="opt", head_dim=h // nh, tied=tied, head=head)
