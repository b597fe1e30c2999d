"""Gemma 4 (`gemma4`, its decoder `gemma4_text`): Gemma 3's sandwich-normed layer with
sliding and full attention layers of their own head width and KV heads (full layers may use
the keys as values, `attention_k_eq_v`), the last `num_kv_shared_layers` layers reading an
earlier layer's keys and values (with, `use_double_wide_mlp`, a twice-wide MLP), per-layer
input embeddings as in Gemma 3n, and, with `enable_moe_block`, routed experts beside the
dense MLP in every layer. The image-text model adds its vision encoder and the projection
into the decoder's width; its audio encoder is not counted here.
"""

from __future__ import annotations

from typing import Any, Optional

from preflight.models.shape import (Head, ModelShape, ParamCount, UnsupportedArchitecture,
                                    add_decoder_head, cfg_bool, cfg_int, finish_shape)


#: Gemma4TextConfig's defaults (transformers 5; `global_head_dim` is read by its
#: constructor, 512 when absent)
_TEXT: dict[str, Any] = dict(vocab_size=262144, hidden_size=2304, intermediate_size=9216,
                             num_hidden_layers=30, num_attention_heads=8, num_key_value_heads=4,
                             head_dim=256, global_head_dim=512, attention_bias=False,
                             vocab_size_per_layer_input=262144, hidden_size_per_layer_input=256,
                             attention_k_eq_v=False, num_kv_shared_layers=0,
                             enable_moe_block=False, use_double_wide_mlp=False)
#: Gemma4VisionConfig's defaults
_VISION: dict[str, Any] = dict(hidden_size=768, intermediate_size=3072, num_hidden_layers=16,
                               num_attention_heads=12, num_key_value_heads=12, head_dim=64,
                               patch_size=16, position_embedding_size=10240)


def _layer_types(d: dict, L: int) -> list[str]:
    """`layer_types`, else every sixth layer full; the last layer is always full."""
    types = d.get("layer_types")
    if not isinstance(types, list):
        types = ["sliding_attention" if (i + 1) % 6 else "full_attention" for i in range(L)]
    types = [str(t) for t in types[:L]]
    if types:
        types[-1] = "full_attention"
    return types


def _attention(c: ParamCount, d: dict, types: list[str]) -> None:
    """Each layer's attention: q_proj and q_norm; k_proj, k_norm and v_proj (none when a
    full layer uses its keys as values) unless the layer reuses an earlier layer's keys and
    values; o_proj. A full layer's head width is `global_head_dim` and, when
    `attention_k_eq_v`, its KV heads `num_global_key_value_heads`."""
    h, nh, L = cfg_int(d, "hidden_size"), cfg_int(d, "num_attention_heads"), len(types)
    nkv, hd = cfg_int(d, "num_key_value_heads", default=nh), cfg_int(d, "head_dim")
    k_eq_v, ab = cfg_bool(d, "attention_k_eq_v", False), cfg_bool(d, "attention_bias", False)
    gnkv = d.get("num_global_key_value_heads") if k_eq_v else None
    shared = min(cfg_int(d, "num_kv_shared_layers", default=0), L)
    for i, t in enumerate(types):
        full = t == "full_attention"
        dh = cfg_int(d, "global_head_dim") if full else hd
        kv = int(gnkv) if full and gnkv is not None else nkv
        c.linear("q_proj", h, nh * dh, bias=ab)
        c.linear("o_proj", nh * dh, h, bias=ab)
        c.tensor(dh)                                         # q_norm
        if i < L - shared:
            c.linear("k_proj", h, kv * dh, bias=ab)
            if not (k_eq_v and full):
                c.linear("v_proj", h, kv * dh, bias=ab)
            c.tensor(dh)                                     # k_norm (v_norm: no scale)


def gemma4_text(cfg: dict, head: str, num_labels: Optional[int]) -> ModelShape:
    """Gemma 4's decoder as `Gemma4ForCausalLM` builds it (`_attention` above; the dense
    gated MLP in every layer; the MoE block: a router with its scale and per-expert scale,
    E experts fused as gate_up and down, three more norms; the per-layer input embedding,
    its projection and norm, and per layer its gate, projection and norm)."""
    d = {**_TEXT, **{k: v for k, v in cfg.items() if v is not None}}
    if d.get("per_layer_config"):
        raise UnsupportedArchitecture("gemma4: a per_layer_config is not read")
    V, h, L = cfg_int(d, "vocab_size"), cfg_int(d, "hidden_size"), cfg_int(d, "num_hidden_layers")
    p, f = cfg_int(d, "hidden_size_per_layer_input", default=0), cfg_int(d, "intermediate_size")
    types = _layer_types(d, L)
    shared = min(cfg_int(d, "num_kv_shared_layers", default=0), L)
    tied = cfg_bool(d, "tie_word_embeddings", True)
    c = ParamCount()
    c.tensor(V, h)                                           # embed_tokens
    _attention(c, d, types)
    wide = 2 * f if cfg_bool(d, "use_double_wide_mlp", False) else f
    for width, n in ((f, L - shared), (wide, shared)):
        c.linear("gate_proj", h, width, count=n)
        c.linear("up_proj", h, width, count=n)
        c.linear("down_proj", width, h, count=n)
    norms = 4
    E = k = fe = 0
    if cfg_bool(d, "enable_moe_block", False):
        E, k, fe = (cfg_int(d, "num_experts"), cfg_int(d, "top_k_experts"),
                    cfg_int(d, "moe_intermediate_size"))
        c.linear("proj", h, E, count=L)                      # router.proj
        c.tensor(h, count=L)                                 # router.scale
        c.tensor(E, count=L)                                 # router.per_expert_scale
        c.experts("gate_proj", h, fe, layers=L, experts=E, active=k)
        c.experts("up_proj", h, fe, layers=L, experts=E, active=k)
        c.experts("down_proj", fe, h, layers=L, experts=E, active=k)
        c.fused_experts([(E, 2 * fe, h), (E, h, fe)], L)
        norms += 3
    if p:
        c.tensor(cfg_int(d, "vocab_size_per_layer_input"), L * p)   # embed_tokens_per_layer
        c.linear("per_layer_model_projection", h, L * p, in_block=False)
        c.tensor(p)                                          # per_layer_projection_norm
        c.linear("per_layer_input_gate", h, p, count=L)
        c.linear("per_layer_projection", p, h, count=L)
        norms += 1                                           # post_per_layer_input_norm
    c.tensor(h, count=norms * L + 1)                         # per-layer norms, final norm
    # a rotary table per kind of layer (half its head width), the embeddings' scales and
    # each layer's scalar, all created fp32
    widths = {"full_attention": cfg_int(d, "global_head_dim"), "sliding_attention":
              cfg_int(d, "head_dim")}
    c.buffers = [(f"rotary_emb.{t}_{n}", (widths.get(t, cfg_int(d, "head_dim")) // 2,), "float")
                 for t in sorted(set(types)) for n in ("inv_freq", "original_inv_freq")]
    c.buffers += [("embed_scale", (), "float")] * (2 if p else 1) + \
        [("layer_scalar", (1,), "float")] * L
    add_decoder_head(c, Head(head, V, h, tied, num_labels, d))
    return finish_shape(c, layers=L, hidden=h, heads=cfg_int(d, "num_attention_heads"),
                        kv_heads=cfg_int(d, "num_key_value_heads"), ffn_hidden=f, vocab=V,
                        family="llama", arch="gemma4_text", head_dim=cfg_int(d, "head_dim"),
                        tied=tied, head=head, experts=E, experts_per_token=k, expert_ffn=fe,
                        moe_layers=L if E else 0)


def _vision(c: ParamCount, cfg: dict) -> int:
    """Gemma 4's vision encoder (patch projection, the 2-D position table, pre/post-normed
    blocks with q/k norms and a gated MLP, no biases); returns its width."""
    d = {**_VISION, **{k: v for k, v in cfg.items() if v is not None}}
    h, inter, L = cfg_int(d, "hidden_size"), cfg_int(d, "intermediate_size"), \
        cfg_int(d, "num_hidden_layers")
    nh = cfg_int(d, "num_attention_heads")
    nkv, hd = cfg_int(d, "num_key_value_heads", default=nh), cfg_int(d, "head_dim")
    ps = cfg_int(d, "patch_size")
    c.linear("input_proj", 3 * ps * ps, h, in_block=False)
    c.tensor(2, cfg_int(d, "position_embedding_size"), h)   # position_embedding_table
    c.linear("q_proj", h, nh * hd, count=L)
    c.linear("k_proj", h, nkv * hd, count=L)
    c.linear("v_proj", h, nkv * hd, count=L)
    c.linear("o_proj", nh * hd, h, count=L)
    c.tensor(hd, count=2 * L)                                # q_norm, k_norm
    c.linear("gate_proj", h, inter, count=L)
    c.linear("up_proj", h, inter, count=L)
    c.linear("down_proj", inter, h, count=L)
    c.tensor(h, count=4 * L)
    return h


def gemma4(cfg: dict, head: str, num_labels: Optional[int]) -> ModelShape:
    """`Gemma4ForConditionalGeneration`: the decoder of `text_config`, the vision encoder
    of `vision_config` (none without one) and its projection, the LM head tied when the
    config says `tie_word_embeddings` (the default)."""
    if cfg.get("audio_config"):
        raise UnsupportedArchitecture("gemma4: the audio encoder is not counted")
    text = gemma4_text({**dict(cfg.get("text_config") or {}), "tie_word_embeddings": True},
                       "base", None)
    c = ParamCount()
    c.total, c.inactive, c.linears = text.params, text.params - text.active_params, \
        list(text.linears)
    c.shapes = list(text.param_shapes or [])
    c.unshaped = 0 if text.param_shapes is not None else text.params
    c.buffers = text.buffers
    if isinstance(cfg.get("vision_config"), dict):
        c.buffers = None                                     # the encoder's: not modelled
        vh = _vision(c, cfg["vision_config"])
        c.linear("embedding_projection", vh, text.hidden, in_block=False)
    tied = cfg_bool(cfg, "tie_word_embeddings", True)
    if head in ("causal_lm", "seq2seq_lm"):
        head = "causal_lm"
    add_decoder_head(c, Head(head, text.vocab, text.hidden, tied, num_labels, cfg))
    return finish_shape(c, layers=text.layers, hidden=text.hidden, heads=text.heads,
                        kv_heads=text.kv_heads, ffn_hidden=text.ffn_hidden, vocab=text.vocab,
                        family="llama", arch="gemma4", head_dim=text.head_dim, tied=tied,
                        head=head, experts=text.experts, experts_per_token=text.experts_per_token,
                        expert_ffn=text.expert_ffn, moe_layers=text.moe_layers)
