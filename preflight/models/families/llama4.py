"""Llama 4: a decoder whose MoE layers (a router, top-k routed experts and a shared expert)
are interleaved with dense ones, with no-RoPE layers, and, in the image-text model, a ViT
vision tower with a pixel-shuffle adapter and a projector.
"""

from __future__ import annotations

from typing import Any, Optional

from preflight.models.shape import (Head, ModelShape, ParamCount, add_decoder_head, cfg_bool,
                                    cfg_int, finish_shape)


#: Llama4TextConfig's defaults (transformers 5)
_TEXT: dict[str, Any] = dict(vocab_size=202048, hidden_size=5120, intermediate_size=8192,
                             intermediate_size_mlp=16384, num_hidden_layers=48,
                             num_attention_heads=40, num_key_value_heads=8, head_dim=128,
                             num_experts_per_tok=1, num_local_experts=16,
                             interleave_moe_layer_step=1, attention_bias=False,
                             tie_word_embeddings=False)
#: Llama4VisionConfig's defaults
_VISION: dict[str, Any] = dict(hidden_size=768, num_hidden_layers=34, num_attention_heads=16,
                               num_channels=3, intermediate_size=5632, vision_output_dim=7680,
                               image_size=448, patch_size=14, projector_input_dim=4096,
                               projector_output_dim=4096)


def moe_layer_indices(d: dict, L: int) -> list[int]:
    """The MoE layers: `moe_layers` when given, else every `interleave_moe_layer_step`-th
    layer counting from step − 1 (step 1: all)."""
    given = d.get("moe_layers")
    if isinstance(given, list):
        return [i for i in given if isinstance(i, int) and 0 <= i < L]
    step = cfg_int(d, "interleave_moe_layer_step", default=1)
    return list(range(step - 1, L, step)) if step > 0 else []


def layer_kinds(d: dict, L: int) -> dict[str, int]:
    """The `llama4_layers` fact: how many layers of each kind (RoPE with the L2 q/k norm or
    NoPE; MoE or dense MLP; `no_rope_layers`, else every `no_rope_layer_interval`-th layer
    NoPE), the chunk size of the RoPE layers' attention and the switches the tables read."""
    rope = d.get("no_rope_layers")
    if not isinstance(rope, list) or not rope:
        n = cfg_int(d, "no_rope_layer_interval", default=4)
        rope = [int((i + 1) % n != 0) for i in range(L)]
    moe = set(moe_layer_indices(d, L))
    out = {"l2_moe": 0, "l2_dense": 0, "nope_moe": 0, "nope_dense": 0}
    for i in range(L):
        key = ("l2_" if i < len(rope) and rope[i] else "nope_") + ("moe" if i in moe else "dense")
        out[key] += 1
    out["chunk"] = int(d["attention_chunk_size"] or 0) if "attention_chunk_size" in d else 8192
    out["qk_norm"] = int(cfg_bool(d, "use_qk_norm", True))
    out["temperature"] = int(cfg_bool(d, "attn_temperature_tuning", True))
    return out


def _text(c: ParamCount, d: dict) -> tuple[int, int, int, int, int, int, int, int, int]:
    """Adds the text decoder (without its head); returns its V, h, L, heads, kv heads,
    head_dim, experts, top-k and MoE-layer count."""
    V, h = cfg_int(d, "vocab_size"), cfg_int(d, "hidden_size")
    L, nh = cfg_int(d, "num_hidden_layers"), cfg_int(d, "num_attention_heads")
    nkv = cfg_int(d, "num_key_value_heads", default=nh)
    hd = cfg_int(d, "head_dim", default=h // nh)
    fe, fd = cfg_int(d, "intermediate_size"), cfg_int(d, "intermediate_size_mlp")
    E, k = cfg_int(d, "num_local_experts"), cfg_int(d, "num_experts_per_tok")
    ab = cfg_bool(d, "attention_bias", False)
    Lm = len(moe_layer_indices(d, L))
    c.add(V * h)                                             # embed_tokens
    c.linear("q_proj", h, nh * hd, count=L, bias=ab)
    c.linear("k_proj", h, nkv * hd, count=L, bias=ab)
    c.linear("v_proj", h, nkv * hd, count=L, bias=ab)
    c.linear("o_proj", nh * hd, h, count=L, bias=ab)
    if Lm:
        c.linear("router", h, E, count=Lm)
        c.experts("gate_proj", h, fe, layers=Lm, experts=E, active=k)
        c.experts("up_proj", h, fe, layers=Lm, experts=E, active=k)
        c.experts("down_proj", fe, h, layers=Lm, experts=E, active=k)
        c.linear("gate_proj", h, fe, count=Lm)               # the shared expert
        c.linear("up_proj", h, fe, count=Lm)
        c.linear("down_proj", fe, h, count=Lm)
    if L > Lm:                                               # dense layers
        c.linear("gate_proj", h, fd, count=L - Lm)
        c.linear("up_proj", h, fd, count=L - Lm)
        c.linear("down_proj", fd, h, count=L - Lm)
    c.add(L * 2 * h + h)                                     # per-layer norms, final norm
    return V, h, L, nh, nkv, hd, E, k, Lm


def _vision(c: ParamCount, cfg: dict, text_hidden: int) -> None:
    """The vision tower (unfold-convolution patch embedding, class and position embeddings,
    pre/post LayerNorms, encoder blocks with biased linears, the pixel-shuffle MLP) and the
    projector into the text model's width."""
    d = {**_VISION, **{k: v for k, v in cfg.items() if v is not None}}
    h, inter = cfg_int(d, "hidden_size"), cfg_int(d, "intermediate_size")
    L, ch = cfg_int(d, "num_hidden_layers"), cfg_int(d, "num_channels")
    patch, image = cfg_int(d, "patch_size"), cfg_int(d, "image_size")
    pin, pout = cfg_int(d, "projector_input_dim"), cfg_int(d, "projector_output_dim")
    c.linear("linear", ch * patch * patch, h, in_block=False)   # patch_embedding
    c.add(h + ((image // patch) ** 2 + 1) * h)               # class and position embeddings
    c.add(2 * 2 * h)                                         # layernorm_pre, layernorm_post
    for name in ("q_proj", "k_proj", "v_proj", "o_proj"):
        c.linear(name, h, h, count=L, bias=True)
    c.linear("fc1", h, inter, count=L, bias=True)
    c.linear("fc2", inter, h, count=L, bias=True)
    c.add(L * 2 * 2 * h)                                     # two LayerNorms per block
    c.linear("fc1", inter, pin, in_block=False)              # vision_adapter.mlp
    c.linear("fc2", pout, pout, in_block=False)
    c.linear("linear_1", cfg_int(d, "vision_output_dim"), text_hidden, in_block=False)


def llama4(cfg: dict, head: str, num_labels: Optional[int]) -> ModelShape:
    """Llama 4 as transformers builds it. The MoE layers (`moe_layers`, else every
    `interleave_moe_layer_step`-th) hold a router (E·h), E experts fused as gate_up and
    down (`intermediate_size` wide) and a shared expert as wide; the other layers a dense
    SwiGLU MLP `intermediate_size_mlp` wide. No-RoPE layers and the L2 q/k norm have no
    weights. A `llama4` config (text_config and vision_config) builds the text decoder
    alone through AutoModelForCausalLM (`causal_lm`), and the image-text model with its
    vision tower and projector through `Llama4ForConditionalGeneration` (`seq2seq_lm`)."""
    full = "text_config" in cfg or "vision_config" in cfg
    tc = dict(cfg.get("text_config") or {}) if full else dict(cfg)
    d = {**_TEXT, **{k: v for k, v in tc.items() if v is not None}}
    if "attention_chunk_size" in tc:                        # null: no chunking
        d["attention_chunk_size"] = tc["attention_chunk_size"]
    c = ParamCount()
    V, h, L, nh, nkv, hd, E, k, Lm = _text(c, d)
    if full and head == "seq2seq_lm":
        _vision(c, dict(cfg.get("vision_config") or {}), h)
        head = "causal_lm"
    elif head == "seq2seq_lm":
        head = "causal_lm"
    tied = cfg_bool(d, "tie_word_embeddings", False)
    add_decoder_head(c, Head(head, V, h, tied, num_labels, d))
    return finish_shape(c, layers=L, hidden=h, heads=nh, kv_heads=nkv,
                        ffn_hidden=cfg_int(d, "intermediate_size_mlp"), vocab=V, family="llama",
                        arch="llama4", head_dim=hd, tied=tied, head=head,
                        experts=E if Lm else 0, experts_per_token=k if Lm else 0,
                        expert_ffn=cfg_int(d, "intermediate_size") if Lm else 0,
                        shared_expert_ffn=cfg_int(d, "intermediate_size") if Lm else 0,
                        moe_layers=Lm, norm_topk=False, weights_f32=False,
                        llama4_layers=layer_kinds(d, L))
