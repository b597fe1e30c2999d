"""DeepSeek-V2 / V3, GLM-4.7-Flash (`glm4_moe_lite`, DeepSeek-V3's layer under GLM's
defaults) and GLM-5 (`glm_moe_dsa`: the same with a sparse-attention indexer): multi-head
latent attention, dense then mixture-of-experts layers with shared experts.
"""

from __future__ import annotations

from typing import Any, Optional

from preflight.models.shape import (Head, ModelShape, ParamCount, add_decoder_head, cfg_bool,
                                    cfg_int, finish_shape)


#: DeepseekV2Config / DeepseekV3Config defaults (transformers 5)
_DEEPSEEK_DEFAULTS: dict[str, dict[str, Any]] = {
    "deepseek_v2": dict(vocab_size=102400, hidden_size=4096, intermediate_size=11008,
                        num_hidden_layers=32, num_attention_heads=32, first_k_dense_replace=0,
                        kv_lora_rank=512, q_lora_rank=1536, n_routed_experts=64,
                        n_shared_experts=2, qk_nope_head_dim=128, qk_rope_head_dim=64,
                        v_head_dim=128, moe_intermediate_size=1407, topk_method="greedy",
                        tie_word_embeddings=False),
    "deepseek_v3": dict(vocab_size=129280, hidden_size=7168, intermediate_size=18432,
                        num_hidden_layers=61, num_attention_heads=128,
                        first_k_dense_replace=3, kv_lora_rank=512, q_lora_rank=1536,
                        n_routed_experts=256, n_shared_experts=1, qk_nope_head_dim=128,
                        qk_rope_head_dim=64, v_head_dim=128, moe_intermediate_size=2048,
                        num_experts_per_tok=8, n_group=8, topk_group=4, norm_topk_prob=True,
                        tie_word_embeddings=False),
    "glm4_moe_lite": dict(vocab_size=154880, hidden_size=2048, intermediate_size=10240,
                          num_hidden_layers=47, num_attention_heads=20, kv_lora_rank=512,
                          q_lora_rank=768, n_routed_experts=64, n_shared_experts=1,
                          qk_nope_head_dim=192, qk_rope_head_dim=64, v_head_dim=256,
                          moe_intermediate_size=1536, num_experts_per_tok=4,
                          norm_topk_prob=True, tie_word_embeddings=False),
    "glm_moe_dsa": dict(vocab_size=154880, hidden_size=6144, intermediate_size=12288,
                        num_hidden_layers=78, num_attention_heads=64, kv_lora_rank=512,
                        q_lora_rank=2048, n_routed_experts=256, n_shared_experts=1,
                        qk_nope_head_dim=192, qk_rope_head_dim=64, v_head_dim=256,
                        moe_intermediate_size=2048, num_experts_per_tok=8,
                        first_k_dense_replace=3, norm_topk_prob=True, index_head_dim=128,
                        index_n_heads=32, tie_word_embeddings=False),
}


def _dense_layers(arch: str, d: dict, L: int) -> int:
    """The layers with a dense MLP: DeepSeek's first `first_k_dense_replace`; GLM-4.7-Flash's
    `mlp_layer_types` entries "dense" (by default the first layer alone; transformers does
    not read its `first_k_dense_replace`)."""
    types = d.get("mlp_layer_types")
    if arch in ("glm4_moe_lite", "glm_moe_dsa") and isinstance(types, list):
        return sum(1 for t in types[:L] if t == "dense")
    if arch == "glm4_moe_lite":
        return min(L, 1)
    return min(L, max(0, cfg_int(d, "first_k_dense_replace", default=0)))


def _indexer_layers(d: dict, L: int) -> int:
    """GLM-5's layers that run their own indexer (`indexer_types` "full"; the "shared" ones
    reuse the previous one's mask): else `index_topk_pattern` (F / S), else every
    `index_topk_freq`-th layer from `index_skip_topk_offset` on (by default all)."""
    types = d.get("indexer_types")
    if not isinstance(types, list):
        pattern = d.get("index_topk_pattern")
        if pattern is not None:
            types = [{"F": "full", "S": "shared"}[x] for x in pattern] \
                if isinstance(pattern, str) else list(pattern)
        else:
            freq = max(cfg_int(d, "index_topk_freq", default=1), 1)
            off = cfg_int(d, "index_skip_topk_offset", default=2)
            types = ["full" if max(i - off + 1, 0) % freq == 0 else "shared" for i in range(L)]
    return sum(1 for t in types[:L] if t == "full")


def _indexer(c: ParamCount, d: dict, n: int, ql: int) -> None:
    """`n` GLM-5 indexers: wq_b from the query latent, wk, k_norm (a LayerNorm) and the
    per-head weights_proj."""
    h, hi, ni = cfg_int(d, "hidden_size"), cfg_int(d, "index_head_dim"), \
        cfg_int(d, "index_n_heads")
    c.linear("wq_b", ql, ni * hi, count=n)
    c.linear("wk", h, hi, count=n)
    c.add(n * 2 * hi)                                        # k_norm weight and bias
    c.linear("weights_proj", h, ni, count=n)


def deepseek(arch: str, cfg: dict, head: str, num_labels: Optional[int]) -> ModelShape:
    """DeepSeek-V2 / V3 as transformers builds them: multi-head latent attention
    (`physics.mla`), dense SwiGLU MLPs in the first `first_k_dense_replace` layers, then a
    router (fp32 weight E·h), E routed experts fused as gate_up (E·2fe·h) and down (E·h·fe)
    and `n_shared_experts` shared experts as one MLP fs = n_shared·fe wide. V3's
    multi-token-prediction layers (`num_nextn_predict_layers`) are not built: transformers
    drops their weights on load. (`moe_layer_freq` is not read by transformers either.)"""
    d = {**_DEEPSEEK_DEFAULTS[arch], **{k: v for k, v in cfg.items() if v is not None}}
    V, h = cfg_int(d, "vocab_size"), cfg_int(d, "hidden_size")
    L, nh = cfg_int(d, "num_hidden_layers"), cfg_int(d, "num_attention_heads")
    inter = cfg_int(d, "intermediate_size")
    # q_lora_rank: null (DeepSeek-V2-Lite) means a plain q_proj, not the default latent
    ql = 0 if "q_lora_rank" in cfg and cfg["q_lora_rank"] is None else \
        cfg_int(d, "q_lora_rank", default=0)
    kl, dr = cfg_int(d, "kv_lora_rank"), cfg_int(d, "qk_rope_head_dim")
    dn, dv = cfg_int(d, "qk_nope_head_dim"), cfg_int(d, "v_head_dim")
    E = cfg_int(d, "n_routed_experts", "num_experts", "num_local_experts")
    k = cfg_int(d, "num_experts_per_tok", default=0)
    fe = cfg_int(d, "moe_intermediate_size")
    fs = fe * cfg_int(d, "n_shared_experts", default=0)
    dense = _dense_layers(arch, d, L)
    Lm = L - dense
    tied = cfg_bool(d, "tie_word_embeddings", False)
    ab = cfg_bool(d, "attention_bias", False)
    mb = cfg_bool(d, "mlp_bias", False) if arch == "deepseek_v2" else False
    qk = dn + dr
    c = ParamCount()
    c.add(V * h)                                             # embed_tokens
    if ql:
        c.linear("q_a_proj", h, ql, count=L, bias=ab)
        c.add(L * ql)                                        # q_a_layernorm
        c.linear("q_b_proj", ql, nh * qk, count=L)
    else:
        c.linear("q_proj", h, nh * qk, count=L)
    c.linear("kv_a_proj_with_mqa", h, kl + dr, count=L, bias=ab)
    c.add(L * kl)                                            # kv_a_layernorm
    c.linear("kv_b_proj", kl, nh * (dn + dv), count=L)
    c.linear("o_proj", nh * dv, h, count=L, bias=ab)
    if arch == "glm_moe_dsa":
        _indexer(c, d, _indexer_layers(d, L), ql)
    if dense:
        c.linear("gate_proj", h, inter, count=dense, bias=mb)
        c.linear("up_proj", h, inter, count=dense, bias=mb)
        c.linear("down_proj", inter, h, count=dense, bias=mb)
    if Lm:
        c.add(Lm * h * E)                                    # router weight (fp32)
        active = k if k else E
        c.experts("gate_proj", h, fe, layers=Lm, experts=E, active=active)
        c.experts("up_proj", h, fe, layers=Lm, experts=E, active=active)
        c.experts("down_proj", fe, h, layers=Lm, experts=E, active=active)
        if fs:
            c.linear("gate_proj", h, fs, count=Lm, bias=mb)
            c.linear("up_proj", h, fs, count=Lm, bias=mb)
            c.linear("down_proj", fs, h, count=Lm, bias=mb)
    c.add(L * 2 * h + h)                                     # per-layer norms, final norm
    add_decoder_head(c, Head(head, V, h, tied, num_labels, d))
    group_mask = arch == "deepseek_v2" and d.get("topk_method") == "group_limited_greedy"
    return finish_shape(c, layers=L, hidden=h, heads=nh, kv_heads=nh, ffn_hidden=inter, vocab=V,
                        family="llama", arch=arch, head_dim=qk, tied=tied, head=head,
                        experts=E if Lm else 0, experts_per_token=k if Lm else 0,
                        expert_ffn=fe if Lm else 0, shared_expert_ffn=fs if Lm else 0,
                        moe_layers=Lm,
                        norm_topk=arch != "deepseek_v2" and cfg_bool(d, "norm_topk_prob", True),
                        weights_f32=True,
                        latent_attention={"kv_lora_rank": kl, "q_lora_rank": ql,
                                          "qk_nope_head_dim": dn, "qk_rope_head_dim": dr,
                                          "v_head_dim": dv},
                        router_upcast=True, group_mask=group_mask and Lm > 0)
