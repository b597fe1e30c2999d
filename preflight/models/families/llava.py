"""LLaVA (`llava`) and Mistral 3 (`mistral3`: Mistral-Small-3.1 / 3.2, Magistral-Small,
Ministral-3): a vision tower, a two-linear projector into the language model's width
(Mistral 3's with an RMSNorm and a patch merger before it) and a decoder language model
whose model_type the text config names.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from preflight.models.families.llama import llama_like
from preflight.models.families.siglip import clip_vision, pixtral_vision, siglip_vision
from preflight.models.shape import (Head, ModelShape, ParamCount, UnsupportedArchitecture,
                                    add_decoder_head, cfg_bool, cfg_int, finish_shape)


#: what each builds when its config has no `text_config` / `vision_config` at all (the
#: config class's own sub-config defaults); a sub-config given as a dict is built by its
#: `model_type`'s class (these defaults do not apply to it), by default the one named here
_TEXT_TYPE = {"llava": "llama", "mistral3": "mistral"}
_VISION_TYPE = {"llava": "clip_vision_model", "mistral3": "pixtral"}
_TEXT_UNSET: dict[str, dict[str, Any]] = {
    "llava": {},                                             # LlamaConfig's defaults
    "mistral3": dict(head_dim=128, hidden_size=5120, intermediate_size=32768,
                     num_attention_heads=32, num_hidden_layers=40, num_key_value_heads=8,
                     vocab_size=131072, sliding_window=None),
}
_VISION_UNSET: dict[str, dict[str, Any]] = {
    "llava": dict(intermediate_size=4096, hidden_size=1024, patch_size=14, image_size=336,
                  num_hidden_layers=24, num_attention_heads=16),
    "mistral3": dict(intermediate_size=4096, hidden_size=1024, patch_size=14, image_size=1540,
                     num_hidden_layers=24, num_attention_heads=16),
}
#: Ministral3Config's defaults: Ministral-3's language model (Mistral's layer; its queries
#: scaled by position hold no parameters), counted as a Mistral decoder
_MINISTRAL3 = dict(vocab_size=131072, hidden_size=4096, intermediate_size=14336,
                   num_hidden_layers=34, num_attention_heads=32, num_key_value_heads=8,
                   head_dim=128, tie_word_embeddings=False)
#: the vision towers counted, by the vision config's model_type
_TOWERS = {"clip_vision_model": clip_vision, "pixtral": pixtral_vision,
           "siglip_vision_model": siglip_vision}
#: the projector's bias and the head's tying when the config does not say
_PROJECTOR_BIAS = {"llava": True, "mistral3": False}
_TIED = {"llava": False, "mistral3": True}


def text_config(arch: str, cfg: dict) -> tuple[str, dict]:
    """The language model's model_type and config fields."""
    tc = cfg.get("text_config")
    if not isinstance(tc, dict):
        return _TEXT_TYPE[arch], dict(_TEXT_UNSET[arch])
    return str(tc.get("model_type") or _TEXT_TYPE[arch]), dict(tc)


def llava(arch: str, cfg: dict, head: str, num_labels: Optional[int],
          count_text: Callable[[str, dict], Optional[ModelShape]]) -> ModelShape:
    """`LlavaForConditionalGeneration` / `Mistral3ForConditionalGeneration` as transformers
    builds them (the image-text class is the one causal-LM class they have): the vision
    tower of `vision_config` (CLIP, SigLIP or Pixtral), the projector (linear_1 from the
    tower's width times the number of `vision_feature_layer`s, the activation, linear_2;
    biased by `multimodal_projector_bias`; Mistral 3 first normalises the tower's output and
    merges each `spatial_merge_size`² block of patches with one bias-free linear), the
    language model of `text_config` and the LM head, tied by the top-level
    `tie_word_embeddings` (LLaVA's also by its text config's, that config class's default
    when unset; Mistral3Config's own default is tied). `count_text(model_type, fields)`
    counts the language model without its head (None: no formula for that model_type)."""
    t_type, t_cfg = text_config(arch, cfg)
    if t_type == "ministral3":
        text = llama_like("mistral", {**_MINISTRAL3, **t_cfg}, "base", None)
    else:
        found = count_text(t_type, t_cfg)
        if found is None:
            raise UnsupportedArchitecture(f"no parameter formula for the {arch} language "
                                          f"model {t_type!r}")
        text = found
    vc = cfg.get("vision_config")
    v_type = str(vc.get("model_type") or _VISION_TYPE[arch]) if isinstance(vc, dict) \
        else _VISION_TYPE[arch]
    v_cfg = dict(vc) if isinstance(vc, dict) else dict(_VISION_UNSET[arch])
    if v_type not in _TOWERS:
        raise UnsupportedArchitecture(f"no parameter formula for the {arch} vision tower "
                                      f"{v_type!r}")

    c = ParamCount()
    c.total, c.linears = text.params, list(text.linears)
    c.inactive = text.params - text.active_params
    if text.param_shapes is None:
        c.unshaped = text.params
    else:
        c.shapes = list(text.param_shapes)
    vh = _TOWERS[v_type](c, v_cfg)
    th = text.hidden
    layers = cfg.get("vision_feature_layer", -2 if arch == "llava" else -1)
    n_feat = len(layers) if isinstance(layers, list) else 1
    bias = cfg_bool(cfg, "multimodal_projector_bias", _PROJECTOR_BIAS[arch])
    if arch == "mistral3":
        m = cfg_int(cfg, "spatial_merge_size", default=2)
        c.tensor(vh)                                         # the projector's RMSNorm
        c.linear("merging_layer", vh * m * m, vh, in_block=False)
    c.linear("linear_1", vh * n_feat, th, bias=bias, in_block=False)
    c.linear("linear_2", th, th, bias=bias, in_block=False)
    c.buffers = None if text.buffers is None or c.buffers is None else \
        list(text.buffers) + c.buffers

    tied = cfg_bool(cfg, "tie_word_embeddings", _TIED[arch]) or (
        arch == "llava" and text.tied)                      # the text config's, or its default
    if head in ("causal_lm", "seq2seq_lm"):
        head = "causal_lm"
    add_decoder_head(c, Head(head, text.vocab, th, tied, num_labels, cfg))
    return finish_shape(c, layers=text.layers, hidden=th, heads=text.heads,
                        kv_heads=text.kv_heads, ffn_hidden=text.ffn_hidden, vocab=text.vocab,
                        family=text.family, arch=arch, head_dim=text.head_dim,
                        rotary_dim=text.rotary_dim, tied=tied, head=head)
