"""DeepSeek-V4 (`deepseek_v4`): shared-KV multi-query attention with a low-rank query, a
per-head sink and a grouped low-rank output projection; per layer a sliding-window
attention alone or with a KV compressor (CSA: with a lightning indexer; HCA: heavily
compressed); mixture-of-experts MLPs with one shared expert in every layer; and the
hyper-connections (mHC) that mix `hc_mult` residual streams around attention and MLP.
"""

from __future__ import annotations

from typing import Any, Optional

from preflight.models.shape import (Head, ModelShape, ParamCount, add_decoder_head, cfg_bool,
                                    cfg_int, finish_shape)


#: DeepseekV4Config's defaults (transformers 5; V4-Flash's shape)
_DEFAULTS: dict[str, Any] = dict(vocab_size=129280, hidden_size=4096, moe_intermediate_size=2048,
                                 num_hidden_layers=43, num_attention_heads=64, head_dim=512,
                                 q_lora_rank=1024, num_experts_per_tok=6, n_routed_experts=256,
                                 hc_mult=4, o_groups=8, o_lora_rank=1024, index_n_heads=64,
                                 index_head_dim=128, mlp_bias=False, tie_word_embeddings=False)
_CSA, _HCA = "compressed_sparse_attention", "heavily_compressed_attention"
_BY_RATIO = {0: "sliding_attention", 4: _CSA, 128: _HCA}


def layer_types(d: dict, L: int) -> list[str]:
    """`layer_types`, else the older per-layer `compress_ratios` (0 / 4 / 128), else two HCA
    layers then CSA and HCA in turn."""
    types = d.get("layer_types")
    if not isinstance(types, list) and isinstance(d.get("compress_ratios"), list):
        types = [_BY_RATIO[int(r)] for r in d["compress_ratios"]]
    if not isinstance(types, list):
        types = [_HCA] * min(L, 2) + [_CSA if i % 2 else _HCA for i in range(max(L - 2, 0))]
    return [str(t) for t in types[:L]]


def _rates(d: dict) -> tuple[int, int]:
    """(CSA, HCA) compression rates: `compress_rates`, the older scalar fields, 4 and 128."""
    rates = d.get("compress_rates") if isinstance(d.get("compress_rates"), dict) else {}
    csa = cfg_int(d, "compress_rate_csa", default=rates.get(_CSA, 4))
    return csa, cfg_int(d, "compress_rate_hca", default=rates.get(_HCA, 128))


def _compressors(c: ParamCount, d: dict, csa: int, hca: int) -> None:
    """`csa` CSA and `hca` HCA compressors: kv and gate projections, an fp32 position bias
    per compressed slot and a kv norm (CSA's two windows wide, with its indexer: the same
    compressor at the indexer's width and its query projection and scoring weights)."""
    h, hd, ql = cfg_int(d, "hidden_size"), cfg_int(d, "head_dim"), cfg_int(d, "q_lora_rank")
    ih, inh = cfg_int(d, "index_head_dim"), cfg_int(d, "index_n_heads")
    r_csa, r_hca = _rates(d)
    for n, w, norm, rate in ((hca, hd, hd, r_hca), (csa, 2 * hd, hd, r_csa),
                             (csa, 2 * ih, ih, r_csa)):
        c.linear("kv_proj", h, w, count=n)
        c.linear("gate_proj", h, w, count=n)
        c.tensor(rate, w, count=n)                           # position_bias
        c.tensor(norm, count=n)                              # kv_norm
    c.linear("q_b_proj", ql, inh * ih, count=csa)            # the indexer's queries
    c.linear("weights_proj", h, inh, count=csa)              # its scorer


def _buffers(d: dict, types: list[str], E: int, k: int) -> list[tuple[str, tuple[int, ...], str]]:
    """The registered buffers: a rotary table (main and compress, each inv_freq and
    original_inv_freq over the rotated part of a head) in the model, each compressor and
    each indexer; the top-k routers' score-correction bias (fp32) and the hash routers'
    token-to-expert table (int64, vocabulary × k), the first `num_hash_layers` (3) layers
    routing by hash unless `mlp_layer_types` says otherwise."""
    L, hd = len(types), cfg_int(d, "head_dim")
    prf = d.get("partial_rotary_factor")
    rope = cfg_int(d, "qk_rope_head_dim", default=64) if prf is None else int(hd * float(prf))
    tables = 1 + sum(1 for t in types if t != "sliding_attention") + types.count(_CSA)
    out = [(f"rotary_emb.{kind}_{n}", (rope // 2,), "float") for kind in ("main", "compress")
           for n in ("inv_freq", "original_inv_freq")] * tables
    mlp = d.get("mlp_layer_types")
    if not isinstance(mlp, list):
        n_hash = cfg_int(d, "num_hash_layers", default=3)
        mlp = ["hash_moe"] * min(L, n_hash) + ["moe"] * max(0, L - n_hash)
    hashed = sum(1 for t in mlp[:L] if t == "hash_moe")
    out += [("e_score_correction_bias", (E,), "float")] * (L - hashed)
    out += [("tid2eid", (cfg_int(d, "vocab_size"), k), "int64")] * hashed
    return out


def deepseek_v4(cfg: dict, head: str, num_labels: Optional[int]) -> ModelShape:
    """DeepSeek-V4 as `DeepseekV4ForCausalLM` builds it: per layer the attention (q_a, its
    norm, q_b; one kv_proj and kv_norm; o_a grouped `o_groups` ways, o_b; the sinks) and
    its compressor, the router (E·h, top-k or hash: the same weight), E experts fused as
    gate_up and down, the shared expert (`moe_intermediate_size` wide), two norms and two
    hyper-connections; the final norm, the hyper-connection head and the LM head. The
    multi-token-prediction layers are not built."""
    d = {**_DEFAULTS, **{k: v for k, v in cfg.items() if v is not None}}
    V, h, L = cfg_int(d, "vocab_size"), cfg_int(d, "hidden_size"), cfg_int(d, "num_hidden_layers")
    nh, hd = cfg_int(d, "num_attention_heads"), cfg_int(d, "head_dim")
    ql = cfg_int(d, "q_lora_rank")
    g, olr = cfg_int(d, "o_groups"), cfg_int(d, "o_lora_rank")
    E, k = cfg_int(d, "n_routed_experts", "num_local_experts"), cfg_int(d, "num_experts_per_tok")
    fe, N = cfg_int(d, "moe_intermediate_size", "intermediate_size"), cfg_int(d, "hc_mult")
    mb, tied = cfg_bool(d, "mlp_bias", False), cfg_bool(d, "tie_word_embeddings", False)
    types = layer_types(d, L)
    c = ParamCount()
    c.tensor(V, h)                                           # embed_tokens
    c.linear("q_a_proj", h, ql, count=L)
    c.tensor(ql, count=L)                                    # q_a_norm
    c.linear("q_b_proj", ql, nh * hd, count=L)
    c.linear("kv_proj", h, hd, count=L)
    c.tensor(hd, count=L)                                    # kv_norm
    c.linear("o_a_proj", nh * hd // g, g * olr, count=L)
    c.linear("o_b_proj", g * olr, h, count=L)
    c.tensor(nh, count=L)                                    # sinks
    _compressors(c, d, types.count(_CSA), types.count(_HCA))
    c.tensor(E, h, count=L)                                  # router
    c.experts("gate_proj", h, fe, layers=L, experts=E, active=k)
    c.experts("up_proj", h, fe, layers=L, experts=E, active=k)
    c.experts("down_proj", fe, h, layers=L, experts=E, active=k)
    c.fused_experts([(E, 2 * fe, h), (E, h, fe)], L)
    c.linear("gate_proj", h, fe, count=L, bias=mb)           # shared_experts
    c.linear("up_proj", h, fe, count=L, bias=mb)
    c.linear("down_proj", fe, h, count=L, bias=mb)
    c.tensor(h, count=2 * L + 1)                             # per-layer norms, final norm
    mix = (2 + N) * N                                        # pre, post and comb weights
    c.tensor(mix, N * h, count=2 * L)                        # attn_hc.fn, ffn_hc.fn
    c.tensor(mix, count=2 * L)                               # their base
    c.tensor(3, count=2 * L)                                 # their scale
    c.tensor(N, N * h)                                       # hc_head.hc_fn
    c.tensor(N)                                              # hc_base
    c.tensor(1)                                              # hc_scale
    c.buffers = _buffers(d, types, E, k)
    add_decoder_head(c, Head(head, V, h, tied, num_labels, d))
    return finish_shape(c, layers=L, hidden=h, heads=nh, kv_heads=1, ffn_hidden=fe, vocab=V,
                        family="llama", arch="deepseek_v4", head_dim=hd, tied=tied, head=head,
                        experts=E, experts_per_token=k, expert_ffn=fe, shared_expert_ffn=fe,
                        moe_layers=L, norm_topk=cfg_bool(d, "norm_topk_prob", True),
                        router_upcast=True)
