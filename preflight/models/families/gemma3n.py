"""Gemma 3n's text decoder (`gemma3n_text`): Gemma 3's layer with AltUp (several copies of
the residual stream and their predict/correct coefficients), the LAuReL low-rank residual,
per-layer input embeddings and their projections, per-layer MLP widths, and the last
`num_kv_shared_layers` layers reading an earlier layer's keys and values (no k/v
projections of their own). The full `gemma3n` model adds a MobileNet vision tower and an
audio encoder, which are not counted here.
"""

from __future__ import annotations

from typing import Any, Optional

from preflight.models.shape import (Head, ModelShape, ParamCount, add_decoder_head, cfg_bool,
                                    cfg_int, finish_shape)


#: Gemma3nTextConfig's defaults (gemma-3n-E4B's text shape)
_DEFAULTS: dict[str, Any] = dict(vocab_size=262400, vocab_size_per_layer_input=262144,
                                 hidden_size=2048, hidden_size_per_layer_input=256,
                                 intermediate_size=16384, num_hidden_layers=35,
                                 num_attention_heads=8, num_key_value_heads=2, head_dim=256,
                                 altup_num_inputs=4, laurel_rank=64, num_kv_shared_layers=15,
                                 attention_bias=False, tie_word_embeddings=True)


def _widths(d: dict, L: int) -> list[int]:
    f = d.get("intermediate_size")
    return [int(x) for x in f] if isinstance(f, (list, tuple)) else [int(f)] * L


def gemma3n_text(cfg: dict, head: str, num_labels: Optional[int]) -> ModelShape:
    d = {**_DEFAULTS, **{k: v for k, v in cfg.items() if v is not None}}
    V, Vp = cfg_int(d, "vocab_size"), cfg_int(d, "vocab_size_per_layer_input")
    h, p = cfg_int(d, "hidden_size"), cfg_int(d, "hidden_size_per_layer_input")
    L, nh = cfg_int(d, "num_hidden_layers"), cfg_int(d, "num_attention_heads")
    nkv, hd = cfg_int(d, "num_key_value_heads", default=nh), cfg_int(d, "head_dim")
    n, r = cfg_int(d, "altup_num_inputs"), cfg_int(d, "laurel_rank")
    own_kv = L - min(cfg_int(d, "num_kv_shared_layers"), L)
    bias = cfg_bool(d, "attention_bias", False)
    tied = cfg_bool(d, "tie_word_embeddings", True)
    widths = _widths(d, L)
    c = ParamCount()
    c.tensor(V, h)                                           # embed_tokens
    c.tensor(Vp, L * p)                                      # embed_tokens_per_layer
    c.linear("per_layer_model_projection", h, L * p, in_block=False)
    c.tensor(p)                                              # per_layer_projection_norm
    c.linear("altup_projections", h, h, count=n - 1, in_block=False)
    c.linear("altup_unembed_projections", h, h, count=n - 1, in_block=False)
    c.linear("q_proj", h, nh * hd, count=L, bias=bias)
    c.linear("k_proj", h, nkv * hd, count=own_kv, bias=bias)
    c.linear("v_proj", h, nkv * hd, count=own_kv, bias=bias)
    c.linear("o_proj", nh * hd, h, count=L, bias=bias)
    c.tensor(hd, count=L + own_kv)                           # q_norm; k_norm (v_norm: no scale)
    for f in sorted(set(widths)):
        k = widths.count(f)
        c.linear("gate_proj", h, f, count=k)
        c.linear("up_proj", h, f, count=k)
        c.linear("down_proj", f, h, count=k)
    c.tensor(h, count=L)                                     # altup.correct_output_scale
    c.linear("correction_coefs", n, n, count=L)
    c.linear("prediction_coefs", n, n * n, count=L)
    c.linear("modality_router", h, n, count=L)
    c.linear("linear_left", h, r, count=L)                   # laurel
    c.linear("linear_right", r, h, count=L)
    c.linear("per_layer_input_gate", h, p, count=L)
    c.linear("per_layer_projection", p, h, count=L)
    # 4 layer norms, altup.router_norm, laurel's post norm, post_per_layer_input_norm; final
    c.tensor(h, count=7 * L + 1)
    # a rotary table per kind of layer (`layer_types`; by default every fifth layer full)
    types = d.get("layer_types") or ["full_attention" if (i + 1) % 5 == 0 else
                                     "sliding_attention" for i in range(L)]
    c.buffers = [(f"rotary_emb.{k}_{n}", (hd // 2,), "float") for k in sorted(set(types))
                 for n in ("inv_freq", "original_inv_freq")]
    # the embeddings' scales, the per-layer projection's and input's, altup's router scale
    c.buffers += [("embed_scale", (), "float")] * 2 + [
        ("per_layer_projection_scale", (), "float"), ("per_layer_input_scale", (), "float")] + \
        [("router_input_scale", (), "float")] * L
    add_decoder_head(c, Head(head, V, h, tied, num_labels, d))
    return finish_shape(c, layers=L, hidden=h, heads=nh, kv_heads=nkv, ffn_hidden=max(widths),
                        vocab=V, family="llama", arch="gemma3n_text", head_dim=hd, tied=tied,
                        head=head)
