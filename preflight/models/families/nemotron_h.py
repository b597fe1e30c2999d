"""Nemotron-H (`nemotron_h`): a stack of pre-normed blocks, each one mixer — a Mamba-2
mixer, grouped-query attention, a squared-ReLU MLP (up and down, no gate) or a mixture of
experts of such MLPs with one shared MLP and, with `moe_latent_size`, the experts working in
a narrower latent space — as `layers_block_type` (or the older `hybrid_override_pattern`)
orders them.
"""

from __future__ import annotations

from typing import Any, Optional

from preflight.models.families.mamba import mamba2_mixer
from preflight.models.shape import (Head, ModelShape, ParamCount, add_decoder_head, cfg_bool,
                                    cfg_int, finish_shape)


#: NemotronHConfig's defaults (transformers 5)
_DEFAULTS: dict[str, Any] = dict(vocab_size=131072, hidden_size=4096, num_attention_heads=32,
                                 num_key_value_heads=8, head_dim=128, intermediate_size=21504,
                                 mlp_bias=False, ssm_state_size=128, mamba_num_heads=128,
                                 mamba_head_dim=64, n_groups=8, conv_kernel=4,
                                 use_conv_bias=True, use_bias=False, n_routed_experts=8,
                                 moe_intermediate_size=7688,
                                 moe_shared_expert_intermediate_size=7688,
                                 num_experts_per_tok=2)
#: the block letters of `hybrid_override_pattern` and the legacy block names
_PATTERN = {"M": "linear_attention", "E": "moe", "*": "full_attention", "-": "mlp"}
_LEGACY = {"mamba": "linear_attention", "attention": "full_attention"}


def block_types(d: dict) -> list[str]:
    """Each block's mixer: `layers_block_type` (or `layer_types`), else the pattern string,
    else the config class's four blocks; `num_hidden_layers` is not read."""
    types = d.get("layers_block_type") or d.get("layer_types")
    if isinstance(types, list):
        return [_LEGACY.get(str(t), str(t)) for t in types]
    pattern = d.get("hybrid_override_pattern")
    if isinstance(pattern, str):
        return [_PATTERN[ch] for ch in pattern]
    return ["linear_attention", "moe", "full_attention", "mlp"]


def _moe(c: ParamCount, d: dict, n: int) -> tuple[int, int, int]:
    """`n` MoE blocks: the fp32 router (E·h), E experts (up, down) over the latent width,
    the shared MLP and the latent projections; returns (E, k, expert width)."""
    h, mb = cfg_int(d, "hidden_size"), cfg_bool(d, "mlp_bias", False)
    E, k = cfg_int(d, "n_routed_experts", "num_local_experts"), cfg_int(d, "num_experts_per_tok")
    fe, fs = cfg_int(d, "moe_intermediate_size"), cfg_int(d, "moe_shared_expert_intermediate_size")
    lat = d.get("moe_latent_size")
    w = int(lat) if lat is not None else h
    c.add(n * E * h)                                         # gate.weight
    c.experts("up_proj", w, fe, layers=n, experts=E, active=k)
    c.experts("down_proj", fe, w, layers=n, experts=E, active=k)
    c.linear("up_proj", h, fs, count=n, bias=mb)             # shared_experts
    c.linear("down_proj", fs, h, count=n, bias=mb)
    if lat is not None:
        c.linear("fc1_latent_proj", h, w, count=n, bias=mb)
        c.linear("fc2_latent_proj", w, h, count=n, bias=mb)
    return E, k, fe


def nemotron_h(cfg: dict, head: str, num_labels: Optional[int]) -> ModelShape:
    """Nemotron-H as `NemotronHForCausalLM` builds it: the embedding, per block an RMSNorm
    and its mixer (attention without biases whatever `attention_bias` says; the MLP's biases
    by `mlp_bias`; the Mamba-2 mixer's by `use_bias` and `use_conv_bias`, its heads
    `mamba_num_heads` × `mamba_head_dim`), the final norm and the head. The
    multi-token-prediction layers are not built; the head is never tied."""
    d = {**_DEFAULTS, **{k: v for k, v in cfg.items() if v is not None}}
    V, h = cfg_int(d, "vocab_size"), cfg_int(d, "hidden_size")
    nh = cfg_int(d, "num_attention_heads")
    nkv, hd = cfg_int(d, "num_key_value_heads", default=nh), cfg_int(d, "head_dim")
    types = block_types(d)
    n = {t: types.count(t) for t in ("linear_attention", "full_attention", "mlp", "moe")}
    tied = False                 # NemotronHForCausalLM ties no weights, whatever the config says
    c = ParamCount()
    c.add(V * h)                                             # embeddings
    H = cfg_int(d, "mamba_num_heads")
    bias = cfg_bool(d, "use_bias", False)
    mamba2_mixer(c, dict(h=h, di=H * cfg_int(d, "mamba_head_dim"), N=cfg_int(d, "ssm_state_size"),
                         g=cfg_int(d, "n_groups"), H=H, kernel=cfg_int(d, "conv_kernel"),
                         bias=bias, conv_bias=cfg_bool(d, "use_conv_bias", True), norm=True,
                         out_bias=bias), n["linear_attention"])
    c.linear("q_proj", h, nh * hd, count=n["full_attention"])
    c.linear("k_proj", h, nkv * hd, count=n["full_attention"])
    c.linear("v_proj", h, nkv * hd, count=n["full_attention"])
    c.linear("o_proj", nh * hd, h, count=n["full_attention"])
    inter, mb = cfg_int(d, "intermediate_size"), cfg_bool(d, "mlp_bias", False)
    c.linear("up_proj", h, inter, count=n["mlp"], bias=mb)
    c.linear("down_proj", inter, h, count=n["mlp"], bias=mb)
    E, k, fe = _moe(c, d, n["moe"]) if n["moe"] else (0, 0, 0)
    c.add(len(types) * h + h)                                # per-block norm, norm_f
    add_decoder_head(c, Head(head, V, h, tied, num_labels, d))
    return finish_shape(c, layers=len(types), hidden=h, heads=nh, kv_heads=nkv,
                        ffn_hidden=inter, vocab=V, family="hybrid", arch="nemotron_h",
                        head_dim=hd, tied=tied, head=head, experts=E, experts_per_token=k,
                        expert_ffn=fe,
                        shared_expert_ffn=cfg_int(d, "moe_shared_expert_intermediate_size")
                        if E else 0, moe_layers=n["moe"],
                        norm_topk=cfg_bool(d, "norm_topk_prob", True), router_upcast=True)
