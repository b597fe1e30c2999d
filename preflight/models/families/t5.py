"""T5 (and mT5): encoder and decoder stacks with relative attention bias, the tied LM head.
"""

from __future__ import annotations

from typing import Optional

from preflight.models.shape import (ModelShape, ParamCount, UnsupportedArchitecture, cfg_int,
                                    finish_shape)


def t5(cfg: dict, head: str, num_labels: Optional[int]) -> ModelShape:
    V = cfg_int(cfg, "vocab_size", default=32128)
    d = cfg_int(cfg, "d_model", default=512)
    dkv = cfg_int(cfg, "d_kv", default=64)
    dff = cfg_int(cfg, "d_ff", default=2048)
    Le = cfg_int(cfg, "num_layers", default=6)
    Ld = cfg_int(cfg, "num_decoder_layers", default=Le)
    nh = cfg_int(cfg, "num_heads", default=8)
    buckets = cfg_int(cfg, "relative_attention_num_buckets", default=32)
    gated = str(cfg.get("feed_forward_proj") or "relu").startswith("gated-")
    # transformers >= 5 always ties T5's lm_head to the shared embedding (T5Config forces
    # tie_word_embeddings=True; a False in config.json only switches off output scaling).
    # Under transformers 4, T5 v1.1 / Flan-T5 checkpoints carried an untied head (+V·d).
    tied = True
    inner = nh * dkv
    c = ParamCount()
    c.add(V * d)                                             # shared embedding
    for stack, L, attn in (("encoder", Le, 1), ("decoder", Ld, 2)):
        for name in ("q", "k", "v"):
            c.linear(name, d, inner, count=L * attn)
        c.linear("o", inner, d, count=L * attn)
        c.add(buckets * nh)                                  # relative bias, first block
        if gated:
            c.linear("wi_0", d, dff, count=L)
            c.linear("wi_1", d, dff, count=L)
        else:
            c.linear("wi", d, dff, count=L)
        c.linear("wo", dff, d, count=L)
        c.add(L * (attn + 1) * d + d)                        # RMS-style norms, final norm
    if head in ("seq2seq_lm", "causal_lm"):
        if not tied:
            c.linear("lm_head", d, V, in_block=False)
        head = "seq2seq_lm"
    elif head != "base":
        raise UnsupportedArchitecture(f"head {head!r} not modelled for t5")
    return finish_shape(c, layers=Le + Ld, hidden=d, heads=nh, kv_heads=nh, ffn_hidden=dff,
                        vocab=V, family="t5", arch="t5", head_dim=dkv, tied=tied, head=head)
