"""State-space models: Mamba (selective scan, `mamba`) and Mamba-2 (`mamba2`), a stack of
one mixer and one RMSNorm per layer, and the Mamba-2 mixer that Falcon-H1 runs beside its
attention.
"""

from __future__ import annotations

import math
from typing import Any, Optional

from preflight.models.shape import (Head, ModelShape, ParamCount, add_decoder_head, cfg_bool,
                                    cfg_int, finish_shape)


#: MambaConfig's and Mamba2Config's defaults (transformers 5)
_DEFAULTS: dict[str, dict[str, Any]] = {
    "mamba": dict(vocab_size=50280, hidden_size=768, state_size=16, num_hidden_layers=32,
                  expand=2, conv_kernel=4, use_bias=False, use_conv_bias=True,
                  time_step_rank="auto", tie_word_embeddings=True),
    "mamba2": dict(vocab_size=32768, hidden_size=4096, state_size=128, num_hidden_layers=64,
                   num_heads=128, head_dim=64, expand=2, conv_kernel=4, n_groups=8,
                   use_bias=False, use_conv_bias=True, tie_word_embeddings=False),
}


def mamba2_mixer(c: ParamCount, spec: dict, layers: int) -> None:
    """`layers` Mamba-2 mixers: in_proj h → 2·di + 2·g·N + H (gate, x, B, C, dt), a
    depthwise conv over di + 2·g·N channels, dt_bias, A_log and D per head, the gated
    RMSNorm over di (`norm`: when present) and out_proj di → h. `spec`: h, di, N, g, H,
    conv kernel, in/out and conv biases, norm."""
    h, di, N, g, H = spec["h"], spec["di"], spec["N"], spec["g"], spec["H"]
    conv = di + 2 * g * N
    c.linear("in_proj", h, di + conv + H, count=layers, bias=spec["bias"])
    c.add(layers * (conv * spec["kernel"] + (conv if spec["conv_bias"] else 0)))
    c.add(layers * 3 * H)                                    # dt_bias, A_log, D
    if spec["norm"]:
        c.add(layers * di)
    c.linear("out_proj", di, h, count=layers, bias=spec["out_bias"])


def mamba(arch: str, cfg: dict, head: str, num_labels: Optional[int]) -> ModelShape:
    """Mamba / Mamba-2 as transformers builds them: the embedding, per layer an RMSNorm and
    the mixer, a final norm and the head (tied by default for Mamba, untied for Mamba-2).
    Mamba's mixer: in_proj h → 2·di, a depthwise conv over di, x_proj di → r + 2N (no bias),
    dt_proj r → di with bias, A_log di·N, D di, out_proj di → h, with di = expand·h and
    r = `time_step_rank` (auto: ⌈h/16⌉)."""
    d = {**_DEFAULTS[arch], **{k: v for k, v in cfg.items() if v is not None}}
    V, h, L = cfg_int(d, "vocab_size"), cfg_int(d, "hidden_size"), cfg_int(d, "num_hidden_layers")
    N, kernel = cfg_int(d, "state_size"), cfg_int(d, "conv_kernel")
    di = int(float(d["expand"]) * h)            # both configs derive it; a given one is ignored
    bias, conv_bias = cfg_bool(d, "use_bias", False), cfg_bool(d, "use_conv_bias", True)
    tied = cfg_bool(d, "tie_word_embeddings", arch == "mamba")
    c = ParamCount()
    c.add(V * h)                                             # embeddings
    heads = 0
    if arch == "mamba":
        r = d.get("time_step_rank")
        r = math.ceil(h / 16) if r in (None, "auto") else int(r)
        c.linear("in_proj", h, 2 * di, count=L, bias=bias)
        c.add(L * (di * kernel + (di if conv_bias else 0)))  # conv1d (depthwise)
        c.linear("x_proj", di, r + 2 * N, count=L)
        c.linear("dt_proj", r, di, count=L, bias=True)
        c.add(L * (di * N + di))                             # A_log, D
        c.linear("out_proj", di, h, count=L, bias=bias)
    else:
        heads = cfg_int(d, "num_heads")
        mamba2_mixer(c, dict(h=h, di=di, N=N, g=cfg_int(d, "n_groups"), H=heads, kernel=kernel,
                             bias=bias, conv_bias=conv_bias, norm=True, out_bias=bias), L)
    c.add(L * h + h)                                         # per-layer norm, norm_f
    add_decoder_head(c, Head(head, V, h, tied, num_labels, d))
    return finish_shape(c, layers=L, hidden=h, heads=heads, kv_heads=heads, ffn_hidden=di,
                        vocab=V, family="ssm", arch=arch, tied=tied, head=head)
