"""What sets one llama-style architecture's layer apart from Llama's, for the activation
tables: the kind of norm, q/k norms, norms after attention and the MLP, Gemma 2's
soft-capped attention scores, GLM's per-layer rotary copies, Phi-3's fused q/k/v.

`LAYERS` maps transformers' `model_type` to its `Layer`; `norm_saved` and `qk_norm_saved`
are the entries those traits add to or change in the llama table of `activations`, each
checked against the storages autograd saves on CPU (tests/test_families_dense_saved.py):

rms (Llama, Mistral, Qwen, SmolLM, GLM, Phi-3) — the input upcast to fp32 (4h), the
    normalised tensor cast back to 16 bits (d·h) for the weight's product, rstd (4).
rms32 (OLMo 2 / 3) — the weight's product taken in fp32 before the cast: the normalised
    tensor is fp32 (4h).
rms1p (Gemma 1/2/3) — the product with (1 + weight) is taken in fp32: the normalised
    tensor is fp32 (4h), and the (1 + weight) tensor itself is saved once per norm, 4h
    bytes that do not grow with the tokens.
ln (OLMo) — a LayerNorm without weight or bias on the fp32 input: the input (4h), mean and
    rstd (8); its output, cast back, is the next linear's input.
layernorm (StableLM) — nn.LayerNorm (weight and bias) on the residual stream as it is: the
    stream itself (d·h; fp32 under autocast), mean and rstd (8); its output is the next
    linear's input.
qk_norm "head" (Qwen3, Gemma 3) normalises each head's q and k over head_dim, "full"
    (OLMo 2 / 3, OLMoE) all of q (and of k) at once: the norm's entries over Q's and K's widths,
    with one rstd per head (or per token).
fused_qkv, fused_gate_up (Phi-3; GLM's gate_up) — one linear where Llama has three (two):
    the same tensors, but under autocast one 16-bit copy of its input, not one per
    projection.
post_norms (Gemma 2/3, GLM-4: "sandwich") — a norm on the attention output and on the MLP
    output before each residual add; pre_norms False (OLMo 2 / 3): those are the only norms,
    and the projections read the residual stream itself.
softcap (Gemma 2, eager) — tanh(scores / cap) keeps its output, d·as² more.
rotary_copies (GLM, GLM-4) — each layer re-lays out cos and sin for its interleaved
    rotation (`repeat_interleave`): two tensors of s × rotary width per sequence (the
    positions' batch dimension is 1), kept by q's and k's products.
rotary_cat (GLM, GLM-4, Phi-3) — the rotation is applied to a slice of each head and
    concatenated with the rest, so Q is a new (b, heads, s, d) tensor; sdpa's output then
    follows that layout and o_proj reads a re-laid-out copy of it: one more Q-wide tensor
    (measured on CPU, where llama's rotated Q keeps the (b, s, heads, d) layout and
    o_proj reads the kernel's output in place).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from preflight.physics.saved import Saved


@dataclass(frozen=True)
class Layer:
    norm: str = "rms"              # "rms" | "rms32" | "rms1p" | "ln" | "layernorm"
    qk_norm: str = ""              # "" | "head" | "full"
    post_norms: bool = False
    pre_norms: bool = True
    softcap: bool = False
    rotary_copies: bool = False
    rotary_cat: bool = False
    fused_qkv: bool = False
    fused_gate_up: bool = False


LLAMA = Layer()

#: model_type → its layer's traits (a llama-style type absent here is Llama's layer)
LAYERS: dict[str, Layer] = {
    "qwen3": Layer(qk_norm="head"),
    # Qwen3-VL's language model is Qwen3's layer (its interleaved multimodal rotary and
    # the deep-stacked visual features keep nothing more per layer on text)
    "qwen3_vl": Layer(qk_norm="head"),
    "olmo": Layer(norm="ln"),
    "olmo2": Layer(norm="rms32", qk_norm="full", post_norms=True, pre_norms=False),
    "olmo3": Layer(norm="rms32", qk_norm="full", post_norms=True, pre_norms=False),
    "olmoe": Layer(qk_norm="full"),
    "gemma": Layer(norm="rms1p"),
    "gemma2": Layer(norm="rms1p", post_norms=True, softcap=True),
    "gemma3_text": Layer(norm="rms1p", qk_norm="head", post_norms=True),
    "gemma3": Layer(norm="rms1p", qk_norm="head", post_norms=True),
    "glm": Layer(rotary_copies=True, rotary_cat=True, fused_gate_up=True),
    "glm4": Layer(rotary_copies=True, rotary_cat=True, fused_gate_up=True, post_norms=True),
    "phi3": Layer(rotary_cat=True, fused_qkv=True, fused_gate_up=True),
    # partial rotary by concatenation (transformers' StableLM concatenates the rotated and
    # the passed-through slices even when nothing passes through)
    "stablelm": Layer(norm="layernorm", rotary_cat=True),
}


def layer_of(model_type: Optional[str]) -> Layer:
    """The layer traits of a transformers `model_type` (Llama's when not listed)."""
    return LAYERS.get(model_type or "", LLAMA)


def norm_saved(layer: Layer, name: str, width: str, stage: int,
               fp32_in: bool, liger: bool = False) -> list[Saved]:
    """What one norm over `width` ('h', or Q's / K's width for q/k norms) keeps: its fp32
    input, the normalised tensor and rstd (rms), fp32 normalised and (1 + weight) (rms1p),
    or mean and rstd (ln). `fp32_in`: the norm reads an fp32 tensor under autocast (the
    residual stream: a pre-norm), so llama's normalised tensor, cast back to the input's
    dtype, stays fp32; a norm of a linear's output (post-norms, q/k norms) reads 16 bits.
    `liger`: Liger-Kernel's RMSNorm in its place (physics.liger), which saves its input as
    it is and one fp32 rstd per row."""
    rows = {"q": "a", "hk": "kvh"}.get(width, "1") if layer.qk_norm == "head" else "1"
    if liger:
        # LigerRMSNormFunction.forward: ctx.save_for_backward(X, W, RSTD)
        # (src/liger_kernel/ops/rms_norm.py@ead96b61 line 657; @03fd6032 line 170), RSTD
        # fp32 in the llama and gemma casting modes (line 452; from v0.3.0, 7382a876)
        return [Saved(f"{name} input (Liger RMSNorm: as it is)", width,
                      kind="f32" if fp32_in else "act", tp=width != "h", stage=stage),
                Saved(f"{name} rstd (fp32)", rows, kind="f32", tp=False, stage=stage)]
    if layer.norm == "layernorm":
        return [Saved(f"{name} input (nn.LayerNorm: as it is)", width,
                      kind="f32" if fp32_in else "act", tp=width != "h", stage=stage),
                Saved(f"{name} mean and rstd (fp32)", "1", mult=2, kind="f32", tp=False,
                      stage=stage)]
    t = [Saved(f"{name} fp32 input", width, kind="f32", tp=width != "h", stage=stage)]
    if layer.norm == "ln":
        return t + [Saved(f"{name} mean and rstd (fp32)", "1", mult=2, kind="f32", tp=False,
                          stage=stage)]
    normed = "f32" if (fp32_in or layer.norm in ("rms1p", "rms32")) else "act"
    t += [Saved(f"{name} normalised", width, kind=normed, tp=width != "h",
                weight_of=("norm",), stage=stage),
          Saved(f"{name} rstd (fp32)", rows, kind="f32", tp=False, stage=stage)]
    if layer.norm == "rms1p":
        # (1 + weight) in fp32, one tensor per norm whatever the tokens
        t.append(Saved(f"{name} (1 + weight) (fp32)", "h/sb" if width == "h" else "hd/sb",
                       kind="f32", tp=False, stage=stage))
    return t


def qk_norm_saved(layer: Layer, liger: bool = False) -> list[Saved]:
    """The q and k norms' entries (none without q/k norms): they read q_proj's and
    k_proj's outputs, 16-bit under autocast (`liger`: Liger's RMSNorm in their place)."""
    if not layer.qk_norm:
        return []
    return (norm_saved(layer, "q_norm", "q", 2, False, liger)
            + norm_saved(layer, "k_norm", "hk", 2, False, liger))
