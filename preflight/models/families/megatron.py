"""Megatron-LM GPT models, counted from the launcher's command-line arguments.
"""

from __future__ import annotations

from typing import Optional

from preflight.models.shape import ModelShape, ParamCount, cfg_bool, cfg_int, finish_shape


def megatron(cfg: dict, head: str, num_labels: Optional[int]) -> ModelShape:
    """Megatron-LM GPT models from its command-line arguments (underscored names:
    num_layers, hidden_size, num_attention_heads, ffn_hidden_size, num_query_groups,
    group_query_attention, swiglu, normalization, disable_bias_linear, add_qkv_bias,
    position_embedding_type, max_position_embeddings, seq_length,
    untie_embeddings_and_output_weights, num_experts, moe_router_topk, vocab_size or
    padded_vocab_size, make_vocab_size_divisible_by, tensor_model_parallel_size)."""
    L = cfg_int(cfg, "num_layers", "num_hidden_layers")
    h = cfg_int(cfg, "hidden_size")
    nh = cfg_int(cfg, "num_attention_heads")
    hd = cfg_int(cfg, "kv_channels", default=h // nh)
    gqa = cfg_bool(cfg, "group_query_attention", False)
    ng = cfg_int(cfg, "num_query_groups", default=nh) if gqa else nh
    swiglu = cfg_bool(cfg, "swiglu", False)
    F = cfg.get("ffn_hidden_size")
    if F is None:
        F = int((4 * h * 2 / 3) / 64) * 64 if swiglu else 4 * h
    F = int(F)
    rms = str(cfg.get("normalization") or "LayerNorm").lower() == "rmsnorm"
    bias = not cfg_bool(cfg, "disable_bias_linear", False)
    qkv_bias = bias or cfg_bool(cfg, "add_qkv_bias", False)
    pos = str(cfg.get("position_embedding_type") or "learned_absolute")
    P = cfg_int(cfg, "max_position_embeddings", "seq_length", default=0)
    untied = cfg_bool(cfg, "untie_embeddings_and_output_weights", False)
    V = cfg.get("padded_vocab_size")
    if V is None:
        raw = cfg_int(cfg, "vocab_size")
        mult = cfg_int(cfg, "make_vocab_size_divisible_by", default=128) * \
            cfg_int(cfg, "tensor_model_parallel_size", default=1)
        V = -(-raw // mult) * mult
    V = int(V)
    E = cfg_int(cfg, "num_experts", default=0)
    topk = cfg_int(cfg, "moe_router_topk", default=2) if E else 0
    norm = (1 if rms else 2) * h
    c = ParamCount()
    c.add(V * h)
    if pos == "learned_absolute":
        c.add(P * h)
    c.linear("linear_qkv", h, (nh + 2 * ng) * hd, count=L, bias=qkv_bias)
    c.linear("linear_proj", nh * hd, h, count=L, bias=bias)
    up = 2 * F if swiglu else F
    if E:
        c.add(L * h * E)                                     # router
        c.experts("linear_fc1", h, up, layers=L, experts=E, active=topk, bias=bias)
        c.experts("linear_fc2", F, h, layers=L, experts=E, active=topk, bias=bias)
    else:
        c.linear("linear_fc1", h, up, count=L, bias=bias)
        c.linear("linear_fc2", F, h, count=L, bias=bias)
    c.add(L * 2 * norm + norm)
    if untied:
        c.linear("output_layer", h, V, in_block=False)
    return finish_shape(c, layers=L, hidden=h, heads=nh, kv_heads=ng, ffn_hidden=F, vocab=V,
                        family="llama" if swiglu else "gpt2", arch="megatron", head_dim=hd,
                        tied=not untied, head="causal_lm", experts=E, experts_per_token=topk,
                        expert_ffn=F if E else 0, moe_layers=L if E else 0)
