"""gpt-oss: a mixture-of-experts decoder with attention sinks, biased attention, router and
experts, and sliding-window attention in every other layer.
"""

from __future__ import annotations

from typing import Any, Optional

from preflight.models.shape import (Head, ModelShape, ParamCount, add_decoder_head, cfg_bool,
                                    cfg_int, finish_shape)


#: GptOssConfig's defaults (transformers 5: the 120B model's shape)
_DEFAULTS: dict[str, Any] = dict(vocab_size=201088, hidden_size=2880, intermediate_size=2880,
                                 num_hidden_layers=36, num_attention_heads=64,
                                 num_key_value_heads=8, head_dim=64, num_local_experts=128,
                                 num_experts_per_tok=4, attention_bias=True,
                                 tie_word_embeddings=False)


def gpt_oss(cfg: dict, head: str, num_labels: Optional[int]) -> ModelShape:
    """gpt-oss as transformers builds it: q/k/v/o projections with biases
    (`attention_bias`), one learned sink logit per head, a router with a bias (E·h + E),
    E experts fused as gate_up (E·h·2fe, bias E·2fe) and down (E·fe·h, bias E·h) in every
    layer, two RMSNorms per layer. The sliding-window layers (`layer_types`) hold the same
    weights as the full-attention ones."""
    d = {**_DEFAULTS, **{k: v for k, v in cfg.items() if v is not None}}
    V, h = cfg_int(d, "vocab_size"), cfg_int(d, "hidden_size")
    L, nh = cfg_int(d, "num_hidden_layers"), cfg_int(d, "num_attention_heads")
    nkv = cfg_int(d, "num_key_value_heads", default=nh)
    hd = cfg_int(d, "head_dim", default=h // nh)
    fe = cfg_int(d, "intermediate_size")
    E, k = cfg_int(d, "num_local_experts"), cfg_int(d, "num_experts_per_tok")
    ab = cfg_bool(d, "attention_bias", True)
    tied = cfg_bool(d, "tie_word_embeddings", False)
    c = ParamCount()
    c.add(V * h)                                             # embed_tokens
    c.linear("q_proj", h, nh * hd, count=L, bias=ab)
    c.linear("k_proj", h, nkv * hd, count=L, bias=ab)
    c.linear("v_proj", h, nkv * hd, count=L, bias=ab)
    c.linear("o_proj", nh * hd, h, count=L, bias=ab)
    c.add(L * nh)                                            # sinks
    c.add(L * (E * h + E))                                   # router weight and bias
    c.experts("gate_proj", h, fe, layers=L, experts=E, active=k, bias=True)
    c.experts("up_proj", h, fe, layers=L, experts=E, active=k, bias=True)
    c.experts("down_proj", fe, h, layers=L, experts=E, active=k, bias=True)
    c.add(L * 2 * h + h)                                     # per-layer norms, final norm
    add_decoder_head(c, Head(head, V, h, tied, num_labels, d))
    return finish_shape(c, layers=L, hidden=h, heads=nh, kv_heads=nkv, ffn_hidden=fe, vocab=V,
                        family="llama", arch="gpt_oss", head_dim=hd, tied=tied, head=head,
                        experts=E, experts_per_token=k, expert_ffn=fe, moe_layers=L,
                        norm_topk=True, weights_f32=False, attention_sinks=True)
