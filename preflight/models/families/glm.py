"""GLM (`glm`, GLM-4-9B's first transformers port) and GLM-4 (`glm4`, the 0414 models and
GLM-Z1): llama-like decoders with biased q/k/v (not o), one fused `gate_up_proj` and
partial rotary embeddings; GLM-4 adds a norm after attention and after the MLP.
"""

from __future__ import annotations

from typing import Optional

from preflight.models.shape import (Head, ModelShape, ParamCount, add_decoder_head, cfg_bool,
                                    cfg_int, finish_shape)


#: GlmConfig / Glm4Config defaults (GLM-4-9B's shape; the two classes share them)
_GLM_DEFAULTS = dict(vocab_size=151552, hidden_size=4096, intermediate_size=13696,
                     num_hidden_layers=40, num_attention_heads=32, num_key_value_heads=2,
                     head_dim=128, partial_rotary_factor=0.5, attention_bias=True,
                     tie_word_embeddings=False)


def glm(arch: str, cfg: dict, head: str, num_labels: Optional[int]) -> ModelShape:
    d = {**_GLM_DEFAULTS, **{k: v for k, v in cfg.items() if v is not None}}
    V, h = cfg_int(d, "vocab_size"), cfg_int(d, "hidden_size")
    L, nh = cfg_int(d, "num_hidden_layers"), cfg_int(d, "num_attention_heads")
    nkv = cfg_int(d, "num_key_value_heads", default=nh)
    hd = cfg_int(d, "head_dim", default=h // nh)
    inter = cfg_int(d, "intermediate_size")
    bias = cfg_bool(d, "attention_bias", True)
    tied = cfg_bool(d, "tie_word_embeddings", False)
    c = ParamCount()
    c.tensor(V, h)                                           # embed_tokens
    c.linear("q_proj", h, nh * hd, count=L, bias=bias)
    c.linear("k_proj", h, nkv * hd, count=L, bias=bias)
    c.linear("v_proj", h, nkv * hd, count=L, bias=bias)
    c.linear("o_proj", nh * hd, h, count=L)                  # never biased
    c.linear("gate_up_proj", h, 2 * inter, count=L)
    c.linear("down_proj", inter, h, count=L)
    norms = 4 if arch == "glm4" else 2                       # glm4: post_self_attn, post_mlp
    c.tensor(h, count=L * norms + 1)
    rot = int(hd * float(d.get("partial_rotary_factor") or 1.0)) // 2
    c.buffers = [(f"rotary_emb.{n}", (rot,), "float") for n in ("inv_freq", "original_inv_freq")]
    add_decoder_head(c, Head(head, V, h, tied, num_labels, d))
    return finish_shape(c, layers=L, hidden=h, heads=nh, kv_heads=nkv, ffn_hidden=inter, vocab=V,
                        family="llama", arch=arch, head_dim=hd, tied=tied, head=head,
                        rotary_dim=2 * rot)
