"""Vision towers: SigLIP's (the image encoder of Gemma 3), added to a multimodal model's
count by the family module that builds it.
"""

from __future__ import annotations

from preflight.models.shape import ParamCount, cfg_bool, cfg_int


#: SiglipVisionConfig's own defaults (a Gemma 3 config without `vision_config` builds these).
_SIGLIP_DEFAULTS = dict(hidden_size=768, intermediate_size=3072, num_hidden_layers=12,
                        num_attention_heads=12, num_channels=3, image_size=224, patch_size=16,
                        vision_use_head=True)


def siglip_vision(c: ParamCount, cfg: dict) -> int:
    """Adds a SigLIP vision tower (patch and position embeddings, pre-norm encoder blocks
    with biased linears, the post-LayerNorm and, with `vision_use_head`, the attention
    pooling head); returns its hidden size."""
    d = {**_SIGLIP_DEFAULTS, **{k: v for k, v in cfg.items() if v is not None}}
    h, inter = cfg_int(d, "hidden_size"), cfg_int(d, "intermediate_size")
    L, ch = cfg_int(d, "num_hidden_layers"), cfg_int(d, "num_channels")
    patch, image = cfg_int(d, "patch_size"), cfg_int(d, "image_size")
    c.add(ch * patch * patch * h + h)                        # patch_embedding (a Conv2d)
    c.add((image // patch) ** 2 * h)                         # position_embedding
    for name in ("q_proj", "k_proj", "v_proj", "out_proj"):
        c.linear(name, h, h, count=L, bias=True)
    c.linear("fc1", h, inter, count=L, bias=True)
    c.linear("fc2", inter, h, count=L, bias=True)
    c.add(L * 2 * 2 * h + 2 * h)                             # layer_norm1/2 per block, post
    if cfg_bool(d, "vision_use_head", True):                    # attention pooling head
        c.add(h + 3 * h * h + 3 * h + 2 * h)                 # probe, in_proj, its bias, LN
        c.linear("out_proj", h, h, bias=True, in_block=False)
        c.linear("fc1", h, inter, bias=True, in_block=False)
        c.linear("fc2", inter, h, bias=True, in_block=False)
    return h
