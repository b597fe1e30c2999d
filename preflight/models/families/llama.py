"""The llama-like decoders (RMSNorm, gated MLP, RoPE): Llama, Mistral, Qwen 2 / 3,
Gemma 1 / 2 / 3's text model, OLMo 2 / 3, Phi-3, and the mixture-of-experts ones among them
(Mixtral, Qwen2-MoE, Qwen3-MoE, OLMoE). Their config-class defaults, and the one formula that
counts them all.
"""

from __future__ import annotations

from typing import Any, Optional

from preflight.models.shape import (Head, ModelShape, ParamCount, add_decoder_head, cfg_bool,
                                    cfg_int, finish_shape)


#: Config-class defaults of the llama-like decoders (RMSNorm, gated MLP, RoPE).
LLAMA_DEFAULTS: dict[str, dict[str, Any]] = {
    "llama": dict(vocab_size=32000, hidden_size=4096, intermediate_size=11008,
                  num_hidden_layers=32, num_attention_heads=32, tie_word_embeddings=False),
    "mistral": dict(vocab_size=32000, hidden_size=4096, intermediate_size=14336,
                    num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=8,
                    tie_word_embeddings=False),
    "mixtral": dict(vocab_size=32000, hidden_size=4096, intermediate_size=14336,
                    num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=8,
                    num_local_experts=8, num_experts_per_tok=2, tie_word_embeddings=False),
    "qwen2": dict(vocab_size=151936, hidden_size=4096, intermediate_size=22016,
                  num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=32,
                  tie_word_embeddings=False),
    "qwen3": dict(vocab_size=151936, hidden_size=4096, intermediate_size=22016,
                  num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=32,
                  head_dim=128, tie_word_embeddings=False),
    "gemma": dict(vocab_size=256000, hidden_size=3072, intermediate_size=24576,
                  num_hidden_layers=28, num_attention_heads=16, num_key_value_heads=16,
                  head_dim=256, tie_word_embeddings=True),
    "gemma2": dict(vocab_size=256000, hidden_size=2304, intermediate_size=9216,
                   num_hidden_layers=26, num_attention_heads=8, num_key_value_heads=4,
                   head_dim=256, tie_word_embeddings=True),
    "gemma3_text": dict(vocab_size=262208, hidden_size=2304, intermediate_size=9216,
                        num_hidden_layers=26, num_attention_heads=8, num_key_value_heads=4,
                        head_dim=256, tie_word_embeddings=True),
    "olmo2": dict(vocab_size=50304, hidden_size=4096, intermediate_size=11008,
                  num_hidden_layers=32, num_attention_heads=32, tie_word_embeddings=False),
    "olmo3": dict(vocab_size=50304, hidden_size=4096, intermediate_size=11008,
                  num_hidden_layers=32, num_attention_heads=32, tie_word_embeddings=False),
    "smollm3": dict(vocab_size=128256, hidden_size=2048, intermediate_size=11008,
                    num_hidden_layers=36, num_attention_heads=16, num_key_value_heads=4,
                    tie_word_embeddings=True),
    "phi3": dict(vocab_size=32064, hidden_size=3072, intermediate_size=8192,
                 num_hidden_layers=32, num_attention_heads=32, tie_word_embeddings=False),
    "qwen2_moe": dict(vocab_size=151936, hidden_size=2048, intermediate_size=5632,
                      num_hidden_layers=24, num_attention_heads=16, num_key_value_heads=16,
                      num_experts=60, num_experts_per_tok=4, moe_intermediate_size=1408,
                      shared_expert_intermediate_size=5632, decoder_sparse_step=1,
                      norm_topk_prob=False, tie_word_embeddings=False),
    "qwen3_moe": dict(vocab_size=151936, hidden_size=2048, intermediate_size=6144,
                      num_hidden_layers=24, num_attention_heads=32, num_key_value_heads=4,
                      num_experts=128, num_experts_per_tok=8,
                      moe_intermediate_size=768, decoder_sparse_step=1,
                      norm_topk_prob=False, tie_word_embeddings=False),
    "olmoe": dict(vocab_size=50304, hidden_size=2048, intermediate_size=2048,
                  num_hidden_layers=16, num_attention_heads=16, num_experts=64,
                  num_experts_per_tok=8, norm_topk_prob=False, tie_word_embeddings=False),
}

#: the mixture-of-experts architectures among the llama-like decoders
_MOE_ARCHS = ("mixtral", "qwen2_moe", "qwen3_moe", "olmoe")
#: those whose every layer is a MoE one, each expert `intermediate_size` wide
_ALL_MOE = ("mixtral", "olmoe")


def _moe_layer_count(d: dict, L: int) -> int:
    """Layers with a sparse MoE MLP (Qwen-MoE: every `decoder_sparse_step`-th layer not in
    `mlp_only_layers`; Mixtral: all)."""
    step = cfg_int(d, "decoder_sparse_step", default=1)
    only = d.get("mlp_only_layers") or []
    if not isinstance(only, list):
        only = []
    return sum(1 for i in range(L) if i not in only and step > 0 and (i + 1) % step == 0)


def _gemma3_layer_types(d: dict, L: int) -> list[str]:
    """The kinds of attention layer gemma3's text model has (a rotary table each): its
    `layer_types`, else every `sliding_window_pattern`-th layer full, the others sliding."""
    types = d.get("layer_types")
    if not isinstance(types, list):
        every = cfg_int(d, "sliding_window_pattern", default=6)
        types = ["sliding_attention" if (i + 1) % every else "full_attention" for i in range(L)]
    return sorted(set(str(t) for t in types))


def _olmo3_layer_types(d: dict, L: int) -> list[str]:
    """The kinds of attention layer OLMo 3 has (a rotary table each): its `layer_types`,
    else every fourth layer full, the others sliding-window."""
    types = d.get("layer_types")
    if not isinstance(types, list):
        types = ["sliding_attention" if (i + 1) % 4 else "full_attention" for i in range(L)]
    return sorted(set(str(t) for t in types))


def llama_like(arch: str, cfg: dict, head: str, num_labels: Optional[int]) -> ModelShape:
    d = {**LLAMA_DEFAULTS[arch], **{k: v for k, v in cfg.items() if v is not None}}
    V, h = cfg_int(d, "vocab_size"), cfg_int(d, "hidden_size")
    L, nh = cfg_int(d, "num_hidden_layers"), cfg_int(d, "num_attention_heads")
    nkv = cfg_int(d, "num_key_value_heads", default=nh)
    hd = cfg_int(d, "head_dim", default=h // nh)
    inter = cfg_int(d, "intermediate_size")
    tied = cfg_bool(d, "tie_word_embeddings", False)
    qkv_bias = arch in ("qwen2", "qwen2_moe") or cfg_bool(d, "attention_bias", False)
    o_bias = arch not in ("qwen2", "qwen2_moe") and cfg_bool(d, "attention_bias", False)
    mlp_bias = cfg_bool(d, "mlp_bias", False) if arch in ("llama", "smollm3") else False

    c = ParamCount()
    c.tensor(V, h)                                           # embed_tokens
    if arch == "phi3":                                       # fused qkv and gate_up
        c.linear("qkv_proj", h, (nh + 2 * nkv) * hd, count=L)
        c.linear("o_proj", nh * hd, h, count=L)
    else:
        c.linear("q_proj", h, nh * hd, count=L, bias=qkv_bias)
        c.linear("k_proj", h, nkv * hd, count=L, bias=qkv_bias)
        c.linear("v_proj", h, nkv * hd, count=L, bias=qkv_bias)
        c.linear("o_proj", nh * hd, h, count=L, bias=o_bias)
    if arch in ("qwen3", "qwen3_moe", "gemma3_text"):
        c.tensor(hd, count=2 * L)                            # q_norm, k_norm
    elif arch in ("olmo2", "olmo3"):
        c.tensor(nh * hd, count=L)                           # q_norm over all heads
        c.tensor(nkv * hd, count=L)                          # k_norm
    elif arch == "olmoe":                                    # the same, sized by hidden / heads
        c.tensor(h, count=L)
        c.tensor(h // nh * nkv, count=L)
    experts = active = fe = fs = moe_layers = 0
    if arch in _MOE_ARCHS:
        experts = cfg_int(d, "num_local_experts", "num_experts")
        active = cfg_int(d, "num_experts_per_tok")
        fe = inter if arch == "olmoe" else cfg_int(d, "moe_intermediate_size", default=inter)
        fs = cfg_int(d, "shared_expert_intermediate_size", default=0) if arch == "qwen2_moe" \
            else 0
        moe_layers = L if arch in _ALL_MOE else _moe_layer_count(d, L)
        Lm = moe_layers
        c.tensor(experts, h, count=Lm)                       # router (a plain Parameter)
        # transformers >= 5 fuses each layer's experts into gate_up_proj and down_proj
        # tensors; the leaf names are those of the separate linears of earlier versions
        gate, up, down = (("w1", "w3", "w2") if arch == "mixtral" else
                          ("gate_proj", "up_proj", "down_proj"))
        c.experts(gate, h, fe, layers=Lm, experts=experts, active=active)
        c.experts(up, h, fe, layers=Lm, experts=experts, active=active)
        c.experts(down, fe, h, layers=Lm, experts=experts, active=active)
        c.fused_experts([(experts, 2 * fe, h), (experts, h, fe)], Lm)
        if fs:                                               # shared expert and its gate
            c.linear("gate_proj", h, fs, count=Lm)
            c.linear("up_proj", h, fs, count=Lm)
            c.linear("down_proj", fs, h, count=Lm)
            c.linear("shared_expert_gate", h, 1, count=Lm)
        if L > Lm:                                           # dense layers
            c.linear("gate_proj", h, inter, count=L - Lm)
            c.linear("up_proj", h, inter, count=L - Lm)
            c.linear("down_proj", inter, h, count=L - Lm)
    elif arch == "phi3":
        c.linear("gate_up_proj", h, 2 * inter, count=L)
        c.linear("down_proj", inter, h, count=L)
    else:
        c.linear("gate_proj", h, inter, count=L, bias=mlp_bias)
        c.linear("up_proj", h, inter, count=L, bias=mlp_bias)
        c.linear("down_proj", inter, h, count=L, bias=mlp_bias)
    norms = 4 if arch in ("gemma2", "gemma3_text") else 2
    c.tensor(h, count=L * norms + 1)                         # per-layer norms, final norm
    # the rotary embedding registers inv_freq and original_inv_freq (the rotated
    # dimensions / 2 each), computed in fp32
    # (gemma3's text model and OLMo 3 have one for each kind of layer, full and sliding);
    # gemma's models also register embed_scale, a 0-dim fp32 tensor
    rot = int(hd * float(d.get("partial_rotary_factor") or 1.0)) // 2
    kinds: tuple[str, ...] = ("",)
    if arch == "gemma3_text":
        kinds = tuple(f"{k}_" for k in _gemma3_layer_types(d, L))
    elif arch == "olmo3":
        kinds = tuple(f"{k}_" for k in _olmo3_layer_types(d, L))
    c.buffers = [(f"rotary_emb.{k}{n}", (rot,), "float") for k in kinds
                 for n in ("inv_freq", "original_inv_freq")]
    if arch in ("gemma", "gemma2", "gemma3_text"):
        c.buffers.append(("embed_scale", (), "float"))
    add_decoder_head(c, Head(head, V, h, tied, num_labels, d))
    return finish_shape(c, layers=L, hidden=h, heads=nh, kv_heads=nkv, ffn_hidden=inter, vocab=V,
                        family="llama", arch=arch, head_dim=hd, tied=tied, head=head,
                        rotary_dim=2 * rot,
                        experts=experts, experts_per_token=active, expert_ffn=fe,
                        shared_expert_ffn=fs, moe_layers=moe_layers,
                        norm_topk=arch == "mixtral" or cfg_bool(d, "norm_topk_prob", False),
                        weights_f32=arch == "mixtral")
