"""GLM-4.5 / GLM-4.6 (`glm4_moe`): grouped-query attention with optional q/k/v biases and
q/k norms, dense MLPs in the first layers, then routed and shared experts.
"""

from __future__ import annotations

from typing import Any, Optional

from preflight.models.shape import (Head, ModelShape, ParamCount, add_decoder_head, cfg_bool,
                                    cfg_int, finish_shape)


#: Glm4MoeConfig's defaults (transformers 5)
_DEFAULTS: dict[str, Any] = dict(vocab_size=151552, hidden_size=4096, intermediate_size=10944,
                                 num_hidden_layers=46, num_attention_heads=96,
                                 num_key_value_heads=8, moe_intermediate_size=1408,
                                 num_experts_per_tok=8, n_shared_experts=1,
                                 n_routed_experts=128, first_k_dense_replace=1,
                                 norm_topk_prob=True, attention_bias=False, use_qk_norm=False,
                                 tie_word_embeddings=False)


def glm4_moe(cfg: dict, head: str, num_labels: Optional[int]) -> ModelShape:
    """GLM-4 MoE as transformers builds it: q/k/v with biases when `attention_bias` (o_proj
    never), per-head q/k RMSNorms when `use_qk_norm`, a SwiGLU MLP in the first
    `first_k_dense_replace` layers, then a router (fp32 weight E·h; its score-correction
    bias is a buffer), E experts fused as gate_up and down, and `n_shared_experts` shared
    experts as one MLP n_shared·fe wide. The multi-token-prediction layers
    (`num_nextn_predict_layers`) are not built: transformers drops their weights on load."""
    d = {**_DEFAULTS, **{k: v for k, v in cfg.items() if v is not None}}
    V, h = cfg_int(d, "vocab_size"), cfg_int(d, "hidden_size")
    L, nh = cfg_int(d, "num_hidden_layers"), cfg_int(d, "num_attention_heads")
    nkv = cfg_int(d, "num_key_value_heads", default=nh)
    hd = cfg_int(d, "head_dim", default=h // nh)
    inter, fe = cfg_int(d, "intermediate_size"), cfg_int(d, "moe_intermediate_size")
    E, k = cfg_int(d, "n_routed_experts"), cfg_int(d, "num_experts_per_tok")
    fs = fe * cfg_int(d, "n_shared_experts", default=0)
    dense = min(L, max(0, cfg_int(d, "first_k_dense_replace", default=0)))
    Lm = L - dense
    ab = cfg_bool(d, "attention_bias", False)
    tied = cfg_bool(d, "tie_word_embeddings", False)
    c = ParamCount()
    c.add(V * h)                                             # embed_tokens
    c.linear("q_proj", h, nh * hd, count=L, bias=ab)
    c.linear("k_proj", h, nkv * hd, count=L, bias=ab)
    c.linear("v_proj", h, nkv * hd, count=L, bias=ab)
    c.linear("o_proj", nh * hd, h, count=L)
    if cfg_bool(d, "use_qk_norm", False):
        c.add(L * 2 * hd)                                    # q_norm, k_norm
    if dense:
        c.linear("gate_proj", h, inter, count=dense)
        c.linear("up_proj", h, inter, count=dense)
        c.linear("down_proj", inter, h, count=dense)
    if Lm:
        c.add(Lm * E * h)                                    # router weight (fp32)
        c.experts("gate_proj", h, fe, layers=Lm, experts=E, active=k)
        c.experts("up_proj", h, fe, layers=Lm, experts=E, active=k)
        c.experts("down_proj", fe, h, layers=Lm, experts=E, active=k)
        if fs:
            c.linear("gate_proj", h, fs, count=Lm)
            c.linear("up_proj", h, fs, count=Lm)
            c.linear("down_proj", fs, h, count=Lm)
    c.add(L * 2 * h + h)                                     # per-layer norms, final norm
    add_decoder_head(c, Head(head, V, h, tied, num_labels, d))
    return finish_shape(c, layers=L, hidden=h, heads=nh, kv_heads=nkv, ffn_hidden=inter, vocab=V,
                        family="llama", arch="glm4_moe", head_dim=hd, tied=tied, head=head,
                        experts=E if Lm else 0, experts_per_token=k if Lm else 0,
                        expert_ffn=fe if Lm else 0, shared_expert_ffn=fs if Lm else 0,
                        moe_layers=Lm, norm_topk=cfg_bool(d, "norm_topk_prob", True),
                        weights_f32=True, router_upcast=True)
