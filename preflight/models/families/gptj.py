"""GPT-J: one LayerNorm feeding attention and MLP side by side, bias-free q/k/v/out, a
biased GELU MLP `n_inner` wide (4·n_embd by default) and a biased LM head.
"""

from __future__ import annotations

from typing import Optional

from preflight.models.shape import (Head, ModelShape, ParamCount, add_decoder_head, cfg_bool,
                                    cfg_int, finish_shape)


def gptj(cfg: dict, head: str, num_labels: Optional[int]) -> ModelShape:
    """GPT-J as `GPTJForCausalLM` builds it (GPTJConfig's defaults: gpt-j-6b's shape)."""
    V = cfg_int(cfg, "vocab_size", default=50400)
    h = cfg_int(cfg, "n_embd", "hidden_size", default=4096)
    L = cfg_int(cfg, "n_layer", "num_hidden_layers", default=28)
    nh = cfg_int(cfg, "n_head", "num_attention_heads", default=16)
    inter = cfg_int(cfg, "n_inner", default=4 * h)
    tied = cfg_bool(cfg, "tie_word_embeddings", False)
    c = ParamCount()
    c.tensor(V, h)                                           # wte
    for name in ("q_proj", "k_proj", "v_proj", "out_proj"):
        c.linear(name, h, h, count=L)
    c.linear("fc_in", h, inter, count=L, bias=True)
    c.linear("fc_out", inter, h, count=L, bias=True)
    c.tensor(h, count=2 * L + 2)                             # ln_1 per layer, ln_f (w, b)
    rot = cfg_int(cfg, "rotary_dim", default=64)
    # the sinusoidal table of the rotated dimensions, one row per position, created fp32
    c.buffers = [("embed_positions", (cfg_int(cfg, "n_positions", default=2048), rot), "float")]
    add_decoder_head(c, Head(head, V, h, tied, num_labels, cfg, bias=head == "causal_lm"))
    return finish_shape(c, layers=L, hidden=h, heads=nh, kv_heads=nh, ffn_hidden=inter, vocab=V,
                        family="gpt2", arch="gptj", head_dim=h // nh, tied=tied, head=head,
                        rotary_dim=rot)
