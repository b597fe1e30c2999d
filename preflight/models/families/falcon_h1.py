"""Falcon-H1: every layer runs attention and a Mamba-2 mixer side by side on the same
normalised input, then a SwiGLU MLP.
"""

from __future__ import annotations

from typing import Any, Optional

from preflight.models.families.mamba import mamba2_mixer
from preflight.models.shape import (Head, ModelShape, ParamCount, add_decoder_head, cfg_bool,
                                    cfg_int, finish_shape)


#: FalconH1Config's defaults (transformers 5)
_DEFAULTS: dict[str, Any] = dict(vocab_size=128000, hidden_size=4096, intermediate_size=14336,
                                 num_hidden_layers=32, num_attention_heads=32,
                                 num_key_value_heads=8, mamba_d_ssm=1024, mamba_n_heads=128,
                                 mamba_n_groups=1, mamba_d_state=256, mamba_d_conv=4,
                                 mamba_expand=2, mamba_conv_bias=True, mamba_proj_bias=False,
                                 mamba_rms_norm=False, projectors_bias=False,
                                 attention_bias=False, mlp_bias=False,
                                 tie_word_embeddings=False)


def falcon_h1(cfg: dict, head: str, num_labels: Optional[int]) -> ModelShape:
    """Falcon-H1 as transformers builds it: per layer q/k/v/o projections (`head_dim`, else
    h / heads), a Mamba-2 mixer di = `mamba_d_ssm` (else expand·h) wide with
    `mamba_n_heads` heads, `mamba_n_groups` groups of `mamba_d_state` (its gated norm only
    with `mamba_rms_norm`; out_proj's bias is `projectors_bias`), a SwiGLU MLP, the input
    and pre-MLP RMSNorms; a final norm and the head."""
    d = {**_DEFAULTS, **{k: v for k, v in cfg.items() if v is not None}}
    V, h = cfg_int(d, "vocab_size"), cfg_int(d, "hidden_size")
    L, nh = cfg_int(d, "num_hidden_layers"), cfg_int(d, "num_attention_heads")
    nkv = cfg_int(d, "num_key_value_heads", default=nh)
    hd = cfg_int(d, "head_dim", default=h // nh)
    inter = cfg_int(d, "intermediate_size")
    ab, mb = cfg_bool(d, "attention_bias", False), cfg_bool(d, "mlp_bias", False)
    # mamba_d_ssm: null means expand·h
    di = int(float(d["mamba_expand"]) * h) if "mamba_d_ssm" in cfg and \
        cfg["mamba_d_ssm"] is None else cfg_int(d, "mamba_d_ssm")
    tied = cfg_bool(d, "tie_word_embeddings", False)
    c = ParamCount()
    c.add(V * h)                                             # embed_tokens
    c.linear("q_proj", h, nh * hd, count=L, bias=ab)
    c.linear("k_proj", h, nkv * hd, count=L, bias=ab)
    c.linear("v_proj", h, nkv * hd, count=L, bias=ab)
    c.linear("o_proj", nh * hd, h, count=L, bias=ab)
    mamba2_mixer(c, dict(h=h, di=di, N=cfg_int(d, "mamba_d_state"),
                         g=cfg_int(d, "mamba_n_groups"), H=cfg_int(d, "mamba_n_heads"),
                         kernel=cfg_int(d, "mamba_d_conv"),
                         bias=cfg_bool(d, "mamba_proj_bias", False),
                         conv_bias=cfg_bool(d, "mamba_conv_bias", True),
                         norm=cfg_bool(d, "mamba_rms_norm", False),
                         out_bias=cfg_bool(d, "projectors_bias", False)), L)
    c.linear("gate_proj", h, inter, count=L, bias=mb)
    c.linear("up_proj", h, inter, count=L, bias=mb)
    c.linear("down_proj", inter, h, count=L, bias=mb)
    c.add(L * 2 * h + h)                                     # per-layer norms, final norm
    add_decoder_head(c, Head(head, V, h, tied, num_labels, d))
    return finish_shape(c, layers=L, hidden=h, heads=nh, kv_heads=nkv, ffn_hidden=inter,
                        vocab=V, family="hybrid", arch="falcon_h1", head_dim=hd, tied=tied,
                        head=head)
