"""Qwen3.5's language model (`qwen3_5_text`, `qwen3_5_moe_text`): a hybrid of Gated
DeltaNet linear-attention layers and gated full-attention layers (`layer_types`; by default
every fourth layer full), with a SwiGLU MLP (Qwen3.5) or routed experts, a shared expert and
its gate (Qwen3.5-MoE) in every layer. The image-text models (`qwen3_5`, `qwen3_5_moe`) add
Qwen3-VL's vision tower (`models.families.qwen_vl`).
"""

from __future__ import annotations

from typing import Any, Optional

from preflight.models.shape import (Head, ModelShape, ParamCount, add_decoder_head, cfg_bool,
                                    cfg_int, finish_shape)


_COMMON: dict[str, Any] = dict(vocab_size=248320, num_attention_heads=16, head_dim=256,
                               linear_conv_kernel_dim=4, linear_key_head_dim=128,
                               linear_value_head_dim=128, linear_num_key_heads=16,
                               linear_num_value_heads=32, attention_bias=False,
                               tie_word_embeddings=False)
#: Qwen3_5TextConfig's and Qwen3_5MoeTextConfig's defaults (transformers 5)
DEFAULTS: dict[str, dict[str, Any]] = {
    "qwen3_5_text": dict(_COMMON, hidden_size=4096, intermediate_size=12288,
                         num_hidden_layers=32, num_key_value_heads=4),
    "qwen3_5_moe_text": dict(_COMMON, hidden_size=2048, num_hidden_layers=40,
                             num_key_value_heads=2, moe_intermediate_size=512,
                             shared_expert_intermediate_size=512, num_experts_per_tok=8,
                             num_experts=256),
}


def layer_kinds(d: dict, L: int) -> tuple[int, int]:
    """(linear-attention layers, full-attention layers): `layer_types`, else every
    `full_attention_interval`-th layer (default 4) full."""
    types = d.get("layer_types")
    if not isinstance(types, list):
        every = cfg_int(d, "full_attention_interval", default=4)
        types = ["linear_attention" if (i + 1) % every else "full_attention" for i in range(L)]
    full = sum(1 for t in types[:L] if t == "full_attention")
    return L - full, full


def _delta_net(c: ParamCount, d: dict, h: int, n: int) -> None:
    """`n` Gated DeltaNet layers: the q/k/v, z, b and a input projections, the depthwise
    causal convolution over q, k and v (no bias), dt_bias and A_log per value head, the
    gated RMSNorm over a value head and the output projection."""
    nk, nv = cfg_int(d, "linear_num_key_heads"), cfg_int(d, "linear_num_value_heads")
    kd = nk * cfg_int(d, "linear_key_head_dim")
    dv = cfg_int(d, "linear_value_head_dim")
    vd = nv * dv
    c.linear("in_proj_qkv", h, 2 * kd + vd, count=n)
    c.linear("in_proj_z", h, vd, count=n)
    c.linear("in_proj_b", h, nv, count=n)
    c.linear("in_proj_a", h, nv, count=n)
    c.tensor(2 * kd + vd, 1, cfg_int(d, "linear_conv_kernel_dim"), count=n)   # conv1d
    c.tensor(nv, count=2 * n)                                # dt_bias, A_log
    c.tensor(dv, count=n)                                    # norm
    c.linear("out_proj", vd, h, count=n)


def qwen3_5_text(arch: str, cfg: dict, head: str, num_labels: Optional[int]) -> ModelShape:
    """Qwen3.5 / Qwen3.5-MoE's decoder as `Qwen3_5(Moe)ForCausalLM` builds it. The full
    attention's q_proj also yields the output gate (2·heads·head_dim wide); q/k/v/o carry
    biases when `attention_bias`; q_norm and k_norm per head. The MoE MLP: a router (E·h),
    E experts fused as gate_up and down, the shared expert's SwiGLU and its 1-wide gate.
    The multi-token-prediction layers (`mtp_num_hidden_layers`) are not built."""
    d = {**DEFAULTS[arch], **{k: v for k, v in cfg.items() if v is not None}}
    V, h = cfg_int(d, "vocab_size"), cfg_int(d, "hidden_size")
    L, nh = cfg_int(d, "num_hidden_layers"), cfg_int(d, "num_attention_heads")
    nkv, hd = cfg_int(d, "num_key_value_heads", default=nh), cfg_int(d, "head_dim")
    lin, full = layer_kinds(d, L)
    ab = cfg_bool(d, "attention_bias", False)
    tied = cfg_bool(d, "tie_word_embeddings", False)
    c = ParamCount()
    c.tensor(V, h)                                           # embed_tokens
    _delta_net(c, d, h, lin)
    c.linear("q_proj", h, 2 * nh * hd, count=full, bias=ab)
    c.linear("k_proj", h, nkv * hd, count=full, bias=ab)
    c.linear("v_proj", h, nkv * hd, count=full, bias=ab)
    c.linear("o_proj", nh * hd, h, count=full, bias=ab)
    c.tensor(hd, count=2 * full)                             # q_norm, k_norm
    moe = arch == "qwen3_5_moe_text"
    E = k = fe = fs = 0
    if moe:
        E, k = cfg_int(d, "num_experts"), cfg_int(d, "num_experts_per_tok")
        fe, fs = cfg_int(d, "moe_intermediate_size"), cfg_int(d, "shared_expert_intermediate_size")
        c.tensor(E, h, count=L)                              # router
        c.experts("gate_proj", h, fe, layers=L, experts=E, active=k)
        c.experts("up_proj", h, fe, layers=L, experts=E, active=k)
        c.experts("down_proj", fe, h, layers=L, experts=E, active=k)
        c.fused_experts([(E, 2 * fe, h), (E, h, fe)], L)
        c.linear("gate_proj", h, fs, count=L)                # shared_expert
        c.linear("up_proj", h, fs, count=L)
        c.linear("down_proj", fs, h, count=L)
        c.linear("shared_expert_gate", h, 1, count=L)
        inter = fs
    else:
        inter = cfg_int(d, "intermediate_size")
        c.linear("gate_proj", h, inter, count=L)
        c.linear("up_proj", h, inter, count=L)
        c.linear("down_proj", inter, h, count=L)
    c.tensor(h, count=2 * L + 1)                             # per-layer norms, final norm
    # the rotary table: inv_freq and original_inv_freq over the rotated quarter of a head
    rope = d.get("rope_parameters") if isinstance(d.get("rope_parameters"), dict) else {}
    prf = float(d.get("partial_rotary_factor") or rope.get("partial_rotary_factor") or 0.25)
    rot = int(hd * prf) // 2
    c.buffers = [(f"rotary_emb.{n}", (rot,), "float") for n in ("inv_freq", "original_inv_freq")]
    add_decoder_head(c, Head(head, V, h, tied, num_labels, d))
    return finish_shape(c, layers=L, hidden=h, heads=nh, kv_heads=nkv, ffn_hidden=inter,
                        vocab=V, family="hybrid", arch=arch, head_dim=hd, tied=tied, head=head,
                        rotary_dim=2 * rot,
                        experts=E, experts_per_token=k, expert_ffn=fe, shared_expert_ffn=fs,
                        moe_layers=L if moe else 0,
                        norm_topk=True)                  # always renormalised
