"""Qwen2-VL, Qwen2.5-VL, Qwen3-VL (dense and MoE) and Qwen3.5 (dense and MoE): a ViT vision
tower (3-D patch convolution, plain, windowed or position-embedded blocks), a patch merger
into the language model's width (Qwen3-VL adds its DeepStack mergers), and the language
model: Qwen2, Qwen3, Qwen3-MoE or Qwen3.5's hybrid linear-attention decoder.
"""

from __future__ import annotations

from typing import Any, Optional

from preflight.models.families.llama import llama_like
from preflight.models.families.qwen3_5 import qwen3_5_text
from preflight.models.shape import (Head, ModelShape, ParamCount, add_decoder_head, cfg_bool,
                                    cfg_int, finish_shape)


#: the text and vision config classes' defaults (transformers 5)
_TEXT: dict[str, dict[str, Any]] = {
    "qwen2_vl": dict(vocab_size=152064, hidden_size=8192, intermediate_size=29568,
                     num_hidden_layers=80, num_attention_heads=64, num_key_value_heads=8),
    "qwen2_5_vl": dict(vocab_size=152064, hidden_size=8192, intermediate_size=29568,
                       num_hidden_layers=80, num_attention_heads=64, num_key_value_heads=8),
    "qwen3_vl": dict(vocab_size=151936, hidden_size=4096, intermediate_size=22016,
                     num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=32,
                     head_dim=128, attention_bias=False),
    "qwen3_vl_moe": dict(vocab_size=151936, hidden_size=2048, intermediate_size=5632,
                         num_hidden_layers=24, num_attention_heads=16, num_key_value_heads=16,
                         decoder_sparse_step=1, moe_intermediate_size=1408,
                         num_experts_per_tok=4, num_experts=60, attention_bias=False),
    "qwen3_5": {}, "qwen3_5_moe": {},      # models.families.qwen3_5 holds their defaults
}
_QWEN3_VISION = dict(depth=27, hidden_size=1152, intermediate_size=4304, in_channels=3,
                     patch_size=16, spatial_merge_size=2, temporal_patch_size=2,
                     out_hidden_size=3584, num_position_embeddings=2304)
_VISION: dict[str, dict[str, Any]] = {
    # Qwen2-VL's blocks are `embed_dim` wide; its `hidden_size` is the merger's output
    "qwen2_vl": dict(depth=32, embed_dim=1280, hidden_size=3584, mlp_ratio=4, in_channels=3,
                     patch_size=14, spatial_merge_size=2, temporal_patch_size=2),
    "qwen2_5_vl": dict(depth=32, hidden_size=3584, intermediate_size=3420, in_channels=3,
                       patch_size=14, spatial_merge_size=2, temporal_patch_size=2,
                       out_hidden_size=3584),
    "qwen3_vl": dict(_QWEN3_VISION, deepstack_visual_indexes=[8, 16, 24]),
    "qwen3_vl_moe": dict(_QWEN3_VISION, deepstack_visual_indexes=[8, 16, 24]),
    "qwen3_5": _QWEN3_VISION, "qwen3_5_moe": _QWEN3_VISION,
}
#: the language model each builds
_LM = {"qwen2_vl": "qwen2", "qwen2_5_vl": "qwen2", "qwen3_vl": "qwen3", "qwen3_vl_moe": "qwen3_moe",
       "qwen3_5": "qwen3_5_text", "qwen3_5_moe": "qwen3_5_moe_text"}
#: Qwen3.5's vision tower builds no DeepStack mergers (whatever its config lists)
_NO_DEEPSTACK = ("qwen3_5", "qwen3_5_moe")

#: the text fields a flat Qwen2-VL / Qwen2.5-VL config.json holds at its top level
_FLAT = ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
         "num_attention_heads", "num_key_value_heads", "head_dim", "attention_bias")


def _vision_qwen2(c: ParamCount, d: dict) -> None:
    """Qwen2-VL's tower: `depth` pre-LN blocks `embed_dim` wide (biased fused qkv and proj,
    LayerNorms, a biased fc1 / fc2 MLP `mlp_ratio` × wide), a bias-free Conv3d patch
    embedding, and the merger (a LayerNorm, then two biased linears over a merged patch)
    into `hidden_size`."""
    e, L = cfg_int(d, "embed_dim"), cfg_int(d, "depth")
    inter = e * cfg_int(d, "mlp_ratio")
    ch, p = cfg_int(d, "in_channels"), cfg_int(d, "patch_size")
    t = cfg_int(d, "temporal_patch_size")
    em = e * cfg_int(d, "spatial_merge_size") ** 2
    c.add(e * ch * t * p * p)                                # patch_embed.proj
    c.linear("qkv", e, 3 * e, count=L, bias=True)
    c.linear("proj", e, e, count=L, bias=True)
    c.linear("fc1", e, inter, count=L, bias=True)
    c.linear("fc2", inter, e, count=L, bias=True)
    c.add(L * 2 * 2 * e)                                     # norm1, norm2 (LayerNorms)
    c.add(2 * e)                                             # the merger's ln_q
    c.linear("0", em, em, bias=True, in_block=False)
    c.linear("2", em, cfg_int(d, "hidden_size"), bias=True, in_block=False)


def _vision(arch: str, c: ParamCount, cfg: dict) -> None:
    d = {**_VISION[arch], **{k: v for k, v in cfg.items() if v is not None}}
    if arch == "qwen2_vl":
        return _vision_qwen2(c, d)
    h, inter, L = cfg_int(d, "hidden_size"), cfg_int(d, "intermediate_size"), cfg_int(d, "depth")
    ch, p, t = cfg_int(d, "in_channels"), cfg_int(d, "patch_size"), cfg_int(d, "temporal_patch_size")
    hm = h * cfg_int(d, "spatial_merge_size") ** 2           # a merged 2×2 patch
    out = cfg_int(d, "out_hidden_size")
    v3 = arch != "qwen2_5_vl"
    c.add(h * ch * t * p * p + (h if v3 else 0))             # patch_embed (Conv3d)
    if v3:
        c.add(cfg_int(d, "num_position_embeddings") * h)     # pos_embed
    norm = 2 * h if v3 else h                                # LayerNorm / RMSNorm
    c.linear("qkv", h, 3 * h, count=L, bias=True)
    c.linear("proj", h, h, count=L, bias=True)
    if v3:
        c.linear("linear_fc1", h, inter, count=L, bias=True)
        c.linear("linear_fc2", inter, h, count=L, bias=True)
    else:
        c.linear("gate_proj", h, inter, count=L, bias=True)
        c.linear("up_proj", h, inter, count=L, bias=True)
        c.linear("down_proj", inter, h, count=L, bias=True)
    c.add(L * 2 * norm)                                      # norm1, norm2
    c.add(norm)                                              # the merger's norm (over h)
    c.linear("linear_fc1" if v3 else "0", hm, hm, bias=True, in_block=False)
    c.linear("linear_fc2" if v3 else "2", hm, out, bias=True, in_block=False)
    if v3:                                                   # DeepStack mergers (norm over hm)
        n = 0 if arch in _NO_DEEPSTACK else len(d.get("deepstack_visual_indexes") or [])
        c.add(n * 2 * hm)
        c.linear("linear_fc1", hm, hm, count=n, bias=True, in_block=False)
        c.linear("linear_fc2", hm, out, count=n, bias=True, in_block=False)


def qwen_vl(arch: str, cfg: dict, head: str, num_labels: Optional[int]) -> ModelShape:
    """Qwen2.5-VL / Qwen3-VL as `…ForConditionalGeneration` builds them (the image-text
    class is the one causal-LM class they have): the vision tower and merger of
    `vision_config`, the language model of `text_config` (a flat config.json holds its
    fields at the top level) and the LM head, tied when the config or its text config says
    `tie_word_embeddings`."""
    tc = cfg.get("text_config")
    text_cfg = dict(tc) if isinstance(tc, dict) else {k: cfg[k] for k in _FLAT if k in cfg}
    text_cfg = {**_TEXT[arch], **{k: v for k, v in text_cfg.items() if v is not None}}
    if arch == "qwen2_vl":
        text_cfg.pop("head_dim", None)                       # its heads are hidden / heads wide
    untied = {**text_cfg, "tie_word_embeddings": False}
    text = qwen3_5_text(_LM[arch], untied, "base", None) if arch in _NO_DEEPSTACK else \
        llama_like(_LM[arch], untied, "base", None)
    c = ParamCount()
    c.total, c.unshaped, c.linears = text.params, text.params, list(text.linears)
    c.inactive = text.params - text.active_params           # the experts a token skips
    _vision(arch, c, dict(cfg.get("vision_config") or {}))
    tied = cfg_bool(cfg, "tie_word_embeddings", False) or (
        arch in ("qwen2_vl", "qwen2_5_vl") and cfg_bool(text_cfg, "tie_word_embeddings", False))
    if head in ("causal_lm", "seq2seq_lm"):
        head = "causal_lm"
    add_decoder_head(c, Head(head, text.vocab, text.hidden, tied, num_labels, cfg))
    return finish_shape(c, layers=text.layers, hidden=text.hidden, heads=text.heads,
                        kv_heads=text.kv_heads, ffn_hidden=text.ffn_hidden, vocab=text.vocab,
                        family=text.family, arch=arch, head_dim=text.head_dim, tied=tied,
                        head=head, **_moe_facts(text))


def _moe_facts(text: ModelShape) -> dict[str, Any]:
    """The language model's mixture-of-experts facts (none for a dense one). The routers of
    Qwen3-VL-MoE and Qwen3.5-MoE renormalise the top-k probabilities whatever
    `norm_topk_prob` says."""
    if not text.experts:
        return {}
    return dict(experts=text.experts, experts_per_token=text.experts_per_token,
                expert_ffn=text.expert_ffn, shared_expert_ffn=text.shared_expert_ffn,
                moe_layers=text.moe_layers, norm_topk=True, weights_f32=text.weights_f32)
