"""Which of Liger-Kernel's kernels a job runs with (`--loss-kernel liger`), and which of its
releases: the switch says Liger is on, the model's `model_type` says what Liger patches.

The switches (`use_liger_kernel=True` in the Trainer / TRL, LLaMA-Factory's
`enable_liger_kernel`, axolotl's `liger_*` keys, `apply_liger_kernel_to_*()`) all end in
one of Liger's `apply_liger_kernel_to_<model>` functions. transformers' Trainer calls
`_apply_liger_kernel_to_instance(model)` (transformers/integrations/liger.py), which
looks the loaded model's `model_type` up in Liger's `MODEL_TYPE_TO_APPLY_LIGER_FN` and
calls that function with its defaults; a model_type absent from the map is left as it is
(no kernel at all, the standard loss). `DEFAULTS` below is that map with each function's
default switches, transcribed from Liger-Kernel's
src/liger_kernel/transformers/monkey_patch.py at ead96b61 (v0.8.2+, lines 146-3534):
"flce" the fused linear cross-entropy (`physics.loss.liger_loss_lines`), "rms_norm",
"swiglu" and "rope" the layer kernels (`dense.norm_saved`, `activations._llama`), "geglu"
Gemma's gated-MLP kernel (saving what SwiGLU's saves).

The layer kernels change the llama table where it holds the model's own layer with them
(a dense MLP): Llama's layer (Llama, Mistral, Ministral, Qwen2, SmolLM3, Granite), Gemma
1/2/3 and Qwen3 (`LAYER_TYPES`). Other patched types (OLMo 2, Phi-3, GLM-4, the mixtures
of experts…) keep the eager table for their layers (an upper bound; the ledger says so)
and get the fused loss.

Releases differ in the loss's forward (`loss.liger_chunk_bytes`); a job that does not say
which it installs is sized with the newest release read, `CURRENT`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from preflight.physics.dense import LLAMA, layer_of

_ALL = frozenset({"flce", "rms_norm", "swiglu", "rope"})
_GEGLU = frozenset({"flce", "rms_norm", "geglu", "rope"})

#: model_type → the kernels its `apply_liger_kernel_to_*` switches on by default
#: (monkey_patch.py@ead96b61: the function's signature; the map at line 3534)
DEFAULTS: dict[str, frozenset] = {
    **{t: _ALL for t in (
        "llama", "smollm3", "llama4", "llama4_text", "mllama", "mllama_text_model",
        "ministral", "mistral", "mixtral", "qwen2", "qwen3", "qwen3_moe", "qwen2_vl",
        "qwen2_vl_text", "qwen2_5_vl", "qwen2_5_vl_text", "qwen3_vl_moe",
        "qwen3_vl_moe_text", "phi3", "olmo2", "olmo3", "falcon_h1", "hunyuan_v1_dense",
        "hunyuan_v1_moe", "exaone4")},
    **{t: _GEGLU for t in ("gemma", "gemma2", "gemma3_text", "gemma3", "paligemma")},
    **{t: _GEGLU - {"rope"} for t in ("gemma4_text", "gemma4")},
    **{t: _ALL - {"rope"} for t in ("glm4", "glm4v", "glm4v_moe", "qwen3_next", "qwen3_5",
                                     "qwen3_5_text", "qwen3_5_moe", "qwen3_5_moe_text")},
    **{t: _ALL - {"swiglu"} for t in ("gpt_oss", "qwen3_vl", "qwen3_vl_text")},
    "granite": _ALL - {"flce"},
    "pixtral": _ALL - {"flce"},
    "deepseek_v4": frozenset({"flce", "rms_norm"}),
    "internvl": frozenset({"flce", "rms_norm"}),
    "smolvlm": frozenset({"flce", "rms_norm"}),
    "llava": frozenset({"flce"}),
    "nemotron": frozenset({"flce"}),
}

#: the layer kernels a job can name (`--liger-layers`)
LAYER_KERNELS = ("rms_norm", "swiglu", "geglu", "rope")

#: model_types whose layer the llama table holds with Liger's kernels in it besides Llama's
#: own layer (`dense.layer_of` gives LLAMA): Gemma's (1 + weight) norms with its GeGLU,
#: Gemma 2's and Gemma 3's sandwich norms, Qwen3's q/k norms. The instance patch
#: (`_apply_liger_kernel_to_instance`) replaces every RMSNorm of a decoder layer, and Gemma
#: 3's q/k norms, but not Qwen3's (monkey_patch.py@ead96b61 lines 1711-1719, 1140-1146)
QK_PATCHED = ("gemma3_text", "gemma3")
LAYER_TYPES = ("gemma", "gemma2", "gemma3_text", "gemma3", "qwen3")

#: the table's names for the kernels it models (`activations.Variant.fused`), in words
TABLE_NAMES = {"rms_norm": "RMSNorm", "qk_norm": "q/k RMSNorm", "glu": "gated MLP"}

#: the newest release read (the default when a job does not pin one)
CURRENT = (0, 8, 2)


def release(text: Optional[str]) -> Optional[tuple[int, int, int]]:
    """'0.1.1', 'v0.6.2', '0.5.10.dev0' → (major, minor, patch); None when not a version."""
    m = re.match(r"\s*v?(\d+)\.(\d+)(?:\.(\d+))?", str(text or ""))
    if not m:
        return None
    return int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)


@dataclass(frozen=True)
class LigerRun:
    """What Liger changes in one job: the fused loss (`loss`), the layer kernels the
    activation table models (`layers`, a subset of rms_norm / swiglu), the release, and
    what the ledger says about it (`note`)."""

    loss: bool
    layers: frozenset
    release: tuple[int, int, int]
    note: str


def liger_run(model_type: Optional[str], family: str, named: Optional[dict],
              dense: bool) -> LigerRun:
    """The kernels Liger applies to a model of `model_type` (None: not known), given what
    the job names (`named`: the `liger` fact, {"layers": [...], "release": "..."}; absent
    keys take the defaults). `dense`: the layer is a dense llama layer the table holds
    (no mixture of experts, latent attention, sinks)."""
    named = named if isinstance(named, dict) else {}
    rel = release(named.get("release"))
    said_rel = rel is not None
    rel = rel or CURRENT
    rtext = ".".join(map(str, rel)) + ("" if said_rel else
                                       " assumed (the newest release read; --liger-release)")
    if model_type and model_type not in DEFAULTS:
        return LigerRun(False, frozenset(), rel,
                        f"Liger patches no {model_type} model (its model_type is not in "
                        "MODEL_TYPE_TO_APPLY_LIGER_FN): the standard loss and the eager "
                        "layers")
    default = DEFAULTS.get(model_type or "", _ALL)
    layers = named.get("layers")
    chosen = (frozenset(layers) if isinstance(layers, (list, tuple, set, frozenset))
              else default - {"flce"})
    loss = "flce" in default
    notes = [f"Liger-Kernel {rtext}"]
    if not model_type:
        notes.append("model_type not known: Liger's llama kernels assumed")
    if not loss:
        notes.append(f"Liger's {model_type} patch has no fused linear cross-entropy by "
                     "default: the standard loss")
    # the table's names: "rms_norm" the block's and final norms, "qk_norm" the q/k norms,
    # "glu" the gated MLP (SwiGLU's or GeGLU's kernel)
    modelled = frozenset(({"rms_norm"} if "rms_norm" in chosen else set())
                         | ({"qk_norm"} if "rms_norm" in chosen and model_type in QK_PATCHED
                            else set())
                         | ({"glu"} if chosen & {"swiglu", "geglu"} else set()))
    held = family == "llama" and dense and (layer_of(model_type) is LLAMA
                                            or model_type in LAYER_TYPES)
    if modelled and not held:
        notes.append(f"Liger's {', '.join(sorted(chosen - {'rope'}))} on these layers not "
                     "modelled: the eager table (an upper bound)")
        modelled = frozenset()
    if chosen:
        notes.append("layer kernels: " + ", ".join(k for k in LAYER_KERNELS if k in chosen)
                     + (" (RoPE rotates q and k in place and saves only cos and sin: "
                        "as eager, no saved tensor changes)" if "rope" in chosen else ""))
    else:
        notes.append("no layer kernel")
    return LigerRun(loss, modelled, rel, "; ".join(notes))
