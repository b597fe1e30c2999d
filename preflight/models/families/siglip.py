"""Vision towers: SigLIP's (the image encoder of Gemma 3), CLIP's (LLaVA's) and Pixtral's
(Mistral 3's), added to a multimodal model's count by the family module that builds it.
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


#: CLIPVisionConfig's own defaults (a `vision_config` dict without these fields builds them)
CLIP_DEFAULTS = dict(hidden_size=768, intermediate_size=3072, num_hidden_layers=12,
                     num_channels=3, image_size=224, patch_size=32)
#: PixtralVisionConfig's own defaults
PIXTRAL_DEFAULTS = dict(hidden_size=1024, intermediate_size=4096, num_hidden_layers=24,
                        num_attention_heads=16, num_channels=3, patch_size=16)


def clip_vision(c: ParamCount, cfg: dict) -> int:
    """Adds CLIP's vision tower as `CLIPVisionModel` builds it (the class token, a bias-free
    patch convolution, a position embedding per patch and for the class token, the
    pre-LayerNorm, pre-norm encoder blocks with biased linears, the post-LayerNorm) and its
    `position_ids` buffer; returns its hidden size."""
    d = {**CLIP_DEFAULTS, **{k: v for k, v in cfg.items() if v is not None}}
    h, inter = cfg_int(d, "hidden_size"), cfg_int(d, "intermediate_size")
    L, ch = cfg_int(d, "num_hidden_layers"), cfg_int(d, "num_channels")
    patch, image = cfg_int(d, "patch_size"), cfg_int(d, "image_size")
    positions = (image // patch) ** 2 + 1
    c.tensor(h)                                              # class_embedding
    c.tensor(h, ch, patch, patch)                            # patch_embedding (a Conv2d)
    c.tensor(positions, h)                                   # position_embedding
    for name in ("q_proj", "k_proj", "v_proj", "out_proj"):
        c.linear(name, h, h, count=L, bias=True)
    c.linear("fc1", h, inter, count=L, bias=True)
    c.linear("fc2", inter, h, count=L, bias=True)
    c.tensor(h, count=2 * (2 * L + 2))                       # layer_norm1/2, pre and post
    c.buffers = (c.buffers or []) + [("position_ids", (1, positions), "int64")]
    return h


def pixtral_vision(c: ParamCount, cfg: dict) -> int:
    """Adds Pixtral's vision tower as `PixtralVisionModel` builds it (a bias-free patch
    convolution, the pre-RMSNorm, blocks of bias-free attention and a gated MLP between two
    RMSNorms) and its 2-D rotary tables (hidden / heads / 2 frequencies, fp32); returns its
    hidden size."""
    d = {**PIXTRAL_DEFAULTS, **{k: v for k, v in cfg.items() if v is not None}}
    h, inter = cfg_int(d, "hidden_size"), cfg_int(d, "intermediate_size")
    L, ch = cfg_int(d, "num_hidden_layers"), cfg_int(d, "num_channels")
    patch, nh = cfg_int(d, "patch_size"), cfg_int(d, "num_attention_heads")
    c.tensor(h, ch, patch, patch)                            # patch_conv
    for name in ("q_proj", "k_proj", "v_proj", "o_proj"):
        c.linear(name, h, h, count=L)
    c.linear("gate_proj", h, inter, count=L)
    c.linear("up_proj", h, inter, count=L)
    c.linear("down_proj", inter, h, count=L)
    c.tensor(h, count=2 * L + 1)                             # attention / ffn norms, ln_pre
    # the config's head_dim is always hidden / heads (PixtralVisionConfig sets it so)
    rot = (h // nh + 1) // 2
    c.buffers = (c.buffers or []) + [(f"patch_positional_embedding.{n}", (rot,), "float")
                                     for n in ("inv_freq", "original_inv_freq")]
    return h
