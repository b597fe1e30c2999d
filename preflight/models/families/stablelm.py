"""StableLM (`stablelm`: StableLM-3B-4E1T, StableLM-2, StableCode): LayerNorms with biases,
partial rotary (a quarter of each head by default), q/k/v biases by `use_qkv_bias`, optional
per-head q/k LayerNorms, a gated SiLU MLP, and with `use_parallel_residual` one norm feeding
attention and MLP side by side.
"""

from __future__ import annotations

from typing import Optional

from preflight.models.shape import (Head, ModelShape, ParamCount, add_decoder_head, cfg_bool,
                                    cfg_int, finish_shape)


def stablelm(cfg: dict, head: str, num_labels: Optional[int]) -> ModelShape:
    """StableLmConfig's defaults are StableLM-3B-4E1T's shape."""
    V = cfg_int(cfg, "vocab_size", default=50304)
    h = cfg_int(cfg, "hidden_size", default=2560)
    inter = cfg_int(cfg, "intermediate_size", default=6912)
    L = cfg_int(cfg, "num_hidden_layers", default=32)
    nh = cfg_int(cfg, "num_attention_heads", default=32)
    nkv = cfg_int(cfg, "num_key_value_heads", default=32)
    hd = h // nh                                             # the attention's head width
    qkv_bias = cfg_bool(cfg, "use_qkv_bias", False)
    parallel = cfg_bool(cfg, "use_parallel_residual", False)
    tied = cfg_bool(cfg, "tie_word_embeddings", False)
    c = ParamCount()
    c.tensor(V, h)                                           # embed_tokens
    c.linear("q_proj", h, nh * hd, count=L, bias=qkv_bias)
    c.linear("k_proj", h, nkv * hd, count=L, bias=qkv_bias)
    c.linear("v_proj", h, nkv * hd, count=L, bias=qkv_bias)
    c.linear("o_proj", h, h, count=L)
    if cfg_bool(cfg, "qk_layernorm", False):                 # a bias-free LayerNorm per head
        c.tensor(hd, count=L * (nh + nkv))
    c.linear("gate_proj", h, inter, count=L)
    c.linear("up_proj", h, inter, count=L)
    c.linear("down_proj", inter, h, count=L)
    norms = L * (1 if parallel else 2) + 1                   # input (and post-attention), final
    c.tensor(h, count=2 * norms)                             # weight and bias each
    # the rotary table covers partial_rotary_factor of each head (rope_parameters' value
    # first, then the config's top-level one, else 0.25)
    rope = cfg.get("rope_parameters") if isinstance(cfg.get("rope_parameters"), dict) else {}
    frac = rope.get("partial_rotary_factor", cfg.get("partial_rotary_factor"))
    frac = 0.25 if frac is None else float(frac)
    rot_hd = cfg_int(cfg, "head_dim", default=hd)
    rot = -(-int(rot_hd * frac) // 2)
    c.buffers = [(f"rotary_emb.{n}", (rot,), "float") for n in ("inv_freq", "original_inv_freq")]
    add_decoder_head(c, Head(head, V, h, tied, num_labels, cfg))
    return finish_shape(c, layers=L, hidden=h, heads=nh, kv_heads=nkv, ffn_hidden=inter, vocab=V,
                        family="stablelm", arch="stablelm", head_dim=hd, tied=tied, head=head,
                        rotary_dim=int(hd * frac))
