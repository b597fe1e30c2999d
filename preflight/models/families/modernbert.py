"""ModernBERT: a pre-norm encoder with bias-free LayerNorms (`norm_bias`), a fused `Wqkv`,
a GeGLU MLP (`Wi` makes input and gate), rotary positions, no norm before the first
layer's attention, and the masked-LM head's dense + norm before the tied decoder.
"""

from __future__ import annotations

from typing import Optional

from preflight.models.shape import (ModelShape, ParamCount, UnsupportedArchitecture, cfg_bool,
                                    cfg_int, cfg_num_labels, finish_shape)


def modernbert(cfg: dict, head: str, num_labels: Optional[int]) -> ModelShape:
    """ModernBertConfig's defaults are ModernBERT-base's shape."""
    V = cfg_int(cfg, "vocab_size", default=50368)
    h = cfg_int(cfg, "hidden_size", default=768)
    L = cfg_int(cfg, "num_hidden_layers", default=22)
    nh = cfg_int(cfg, "num_attention_heads", default=12)
    inter = cfg_int(cfg, "intermediate_size", default=1152)
    attn_bias = cfg_bool(cfg, "attention_bias", False)
    mlp_bias = cfg_bool(cfg, "mlp_bias", False)
    per_norm = 2 if cfg_bool(cfg, "norm_bias", False) else 1     # weight, and bias
    c = ParamCount()
    c.tensor(V, h)                                           # tok_embeddings
    c.tensor(h, count=per_norm)                              # embeddings.norm
    c.linear("Wqkv", h, 3 * h, count=L, bias=attn_bias)
    c.linear("Wo", h, h, count=L, bias=attn_bias)            # attn.Wo
    c.linear("Wi", h, 2 * inter, count=L, bias=mlp_bias)
    c.linear("Wo", inter, h, count=L, bias=mlp_bias)         # mlp.Wo
    c.tensor(h, count=2 * L * per_norm)                      # attn_norm from layer 1, mlp_norm,
    #                                                          final_norm
    # the rotary tables: inv_freq and original_inv_freq per kind of layer (every
    # `global_attn_every_n_layers`-th one global, the others sliding-window)
    every = cfg_int(cfg, "global_attn_every_n_layers", default=3)
    kinds = cfg.get("layer_types") or ["full_attention" if i % every == 0 else
                                       "sliding_attention" for i in range(L)]
    c.buffers = [(f"rotary_emb.{k}_{n}", ((h // nh) // 2,), "float") for k in sorted(set(kinds))
                 for n in ("inv_freq", "original_inv_freq")]
    if head != "base":                                       # the head: dense, act, norm
        c.linear("dense", h, h, bias=cfg_bool(cfg, "classifier_bias", False), in_block=False)
        c.tensor(h, count=per_norm)
    if head == "masked_lm":
        if cfg_bool(cfg, "decoder_bias", True):
            c.tensor(V)                                      # decoder bias (weight tied)
        if not cfg_bool(cfg, "tie_word_embeddings", True):
            c.linear("decoder", h, V, in_block=False)
    elif head in ("seq_cls", "token_cls"):
        c.linear("classifier", h, cfg_num_labels(cfg, num_labels), bias=True, in_block=False)
    elif head != "base":
        raise UnsupportedArchitecture(f"head {head!r} not modelled for modernbert")
    return finish_shape(c, layers=L, hidden=h, heads=nh, kv_heads=nh, ffn_hidden=inter, vocab=V,
                        family="modernbert", arch="modernbert", head_dim=h // nh,
                        tied=cfg_bool(cfg, "tie_word_embeddings", True), head=head)
