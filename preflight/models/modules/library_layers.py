"""Layers of transformers a repository's module may subclass (`class Head(RobertaLMHead)`
with `super().__init__(config)`), built from the config they are given, with their
children named as transformers names them so that a tie written after them
(`self.decoder.weight = embedding_weight`) shares one parameter."""

from __future__ import annotations

from typing import Any, Optional

from preflight.models.modules.values import ConfigObj, Mod, Param


def _int(config: Any, name: str) -> Optional[int]:
    v = config.get(name) if isinstance(config, ConfigObj) else (
        config.get(name) if isinstance(config, dict) else None)
    return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else None


def _linear(i: int, o: int, bias: bool = True) -> Mod:
    m = Mod(kind="Linear", params={"weight": Param(i * o, (o, i))})
    if bias:
        m.params["bias"] = Param(o, (o,))
    return m


def _layer_norm(h: int) -> Mod:
    return Mod(kind="LayerNorm", params={"weight": Param(h, (h,)), "bias": Param(h, (h,))})


def _masked_lm_head(config: Any, transform: bool) -> Optional[Mod]:
    """BERT / RoBERTa's masked-LM prediction head: dense h→h, LayerNorm, decoder h→V whose
    bias is the head's own `bias` (one parameter)."""
    h, V = _int(config, "hidden_size"), _int(config, "vocab_size")
    if h is None or V is None:
        return None
    bias = Param(V, (V,))
    decoder = Mod(kind="Linear", params={"weight": Param(h * V, (V, h)), "bias": bias})
    out = Mod(kind="LMHead", params={"bias": bias}, children={"decoder": decoder})
    if transform:       # BertLMPredictionHead keeps dense and LayerNorm in `transform`
        out.children["transform"] = Mod(kind="Transform", children={
            "dense": _linear(h, h), "LayerNorm": _layer_norm(h)})
    else:
        out.children.update(dense=_linear(h, h), layer_norm=_layer_norm(h))
    return out


#: transformers class name → its layers built from (config)
LIBRARY_LAYERS = {
    "RobertaLMHead": lambda cfg: _masked_lm_head(cfg, transform=False),
    "XLMRobertaLMHead": lambda cfg: _masked_lm_head(cfg, transform=False),
    "CamembertLMHead": lambda cfg: _masked_lm_head(cfg, transform=False),
    "BertLMPredictionHead": lambda cfg: _masked_lm_head(cfg, transform=True),
}


def library_layer(base: str, args: list, kwargs: dict) -> Optional[Mod]:
    """The layers of `base.__init__(config)`, or None when `base` is not one preflight
    builds or its config is not known."""
    build = LIBRARY_LAYERS.get(base)
    config = args[0] if args else kwargs.get("config")
    if build is None or not isinstance(config, (ConfigObj, dict)):
        return None
    return build(config)
