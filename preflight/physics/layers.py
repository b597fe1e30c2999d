"""Which activation table a plan's model uses, and one layer's saved bytes under it: the
frozen base of a LoRA job (and what its bitsandbytes release keeps), the architecture's
traits (`dense`, `decoders`, litgpt's own model in `litgpt_block`, Liger's kernels), the
embedding's and head's share, Llama 4's mixed layers and a counted layer stack."""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction
from typing import Optional

from preflight.physics import bnb, litgpt_block, llama4, sac
from preflight.physics.activations import (LayerActivations, Shape, Variant,
                                           embedding_and_head_bytes, layer_activation_bytes)
from preflight.physics.decoders import decoder_of
from preflight.physics.dense import layer_of
from preflight.physics.inputs import Inputs
from preflight.physics.lora import FrozenBase, frozen_base
from preflight.physics.phases import gradients_kept
from preflight.physics.result import LedgerLine
from preflight.physics.stack import stack_activations
from preflight.physics.states import precision_of


def frozen_of(x: Inputs) -> tuple[Optional[FrozenBase], int, str]:
    """A LoRA job's frozen base for the activation tables: (FrozenBase, rank, note), or
    (None, 0, "") when every weight trains."""
    if not x.lora:
        return None, 0, ""
    p = x.lora.get("dropout")
    notes = ["frozen base (LoRA): frozen linears and norms keep no input for a weight "
             "gradient; " + (
                 f"lora_dropout {p:g}: each adapter keeps a dropped copy of its input and "
                 "a 1-byte mask" if p else "lora_dropout 0" if p == 0 else
                 "lora_dropout not known: 0 assumed (with p > 0 each adapter also keeps "
                 "a dropped copy of its input and a mask; --lora-dropout)")]
    targets = x.lora.get("targets") or None
    if not targets:
        targets = "all-linear"
        notes.append("LoRA targets not known: every block linear counted as adapted "
                     "(an upper bound)")
    r = x.lora.get("r")
    if not isinstance(r, int) or isinstance(r, bool) or r < 1:
        r = 0
        notes.append("LoRA rank not known: the adapters' r-wide tensors not counted")
    bits = int(x.lora.get("base_bits") or 16)
    f32 = x.lora.get("adapter_dtype") == "fp32"
    if f32:
        # the tables ignore it in fp32 compute and under autocast (lora_A casts back)
        # peft's default since 0.12, which the installed version is not read to confirm
        notes.append("fp32 adapters (peft's autocast_adapter_dtype, its default since peft "
                     "0.12, assumed unless the call says; --lora-adapter-dtype): over 16-bit "
                     "compute each adapter keeps an fp32 copy of its input and an fp32 lora_A "
                     "output")
    if bits in (4, 8):
        notes.append(bnb_note(bits, x.lora.get("bnb_version"), x.checkpointing))
    return (frozen_base(x.family, targets, bits, x.lora.get("modules_to_save") or (),
                        bool(p), adapter_f32=f32, bnb_version=x.lora.get("bnb_version")),
            r, "; ".join(notes))


def bnb_note(bits: int, version, checkpointing: str) -> str:
    """What the bitsandbytes release (`physics.bnb`) makes a frozen quantised linear keep."""
    edge = bnb.dotted(bnb.version_matters(bits))
    said = f"bitsandbytes {version}" if bnb.parse_version(version) else (
        f"bitsandbytes version not known: the current one (≥ {edge}) assumed "
        f"(--bitsandbytes)")
    if bits == 4:
        what = ("each 4-bit linear keeps its input (MatMul4Bit before 0.43.2)"
                if bnb.keeps_input(4, version) else
                "4-bit linears keep no input (MatMul4Bit from 0.43.2; before it each keeps "
                "its input)")
    else:
        what = ("each 8-bit linear keeps its input and an int8 copy of it (MatMul8bitLt "
                "before 0.45.0)" if bnb.keeps_int8_copy(8, version) else
                "8-bit linears keep their input (MatMul8bitLt; before 0.45.0 also an int8 "
                "copy of it)")
    note = f"{said}: {what}"
    if checkpointing == "full" and bnb.keeps_input(bits, version):
        note += ("; reentrant checkpointing assumed (non-reentrant checkpointing does not "
                 "free what bitsandbytes keeps on its autograd context)")
    return note


def layer_shape(x: Inputs, p, ffn: int, r: int) -> Shape:
    """One micro-batch through one layer of the plan's model, as the activation tables
    read it (`r`: the LoRA rank of a frozen base, 0 without)."""
    dims = x.attention_dims if isinstance(x.attention_dims, dict) else {}
    return Shape(s=x.seq_len, b=x.micro_batch, h=x.hidden, a=x.heads, f=ffn,
                 k=x.kv or x.heads, d=p.act, autocast=p.autocast, r=r,
                 cpu_autocast=x.autocast_device == "cpu", moe=x.moe, mla=x.mla,
                 hd=int(dims.get("head_dim") or 0), rot=int(dims.get("rotary_dim") or 0),
                 sinks=x.attention_sinks, out_copy=x.model_type == "glm4_moe")


def variant_of(x: Inputs, frozen: Optional[FrozenBase]) -> Variant:
    """The plan's model's layer as the activation tables tell it apart (`Variant`)."""
    return Variant(dropout=x.has_dropout, gelu=x.gelu, kv_cache=x.kv_cache_copies,
                   frozen=frozen, layer=layer_of(x.model_type),
                   decoder=decoder_of(x.model_type),
                   fused=x.liger.layers if x.liger is not None else frozenset(),
                   litgpt=litgpt_layer(x))


def head_kernels(x: Inputs) -> frozenset:
    """Liger's kernels at the model's head (`embedding_and_head_bytes`): "flce" with its
    fused loss, "rms_norm" with its RMSNorm as the final norm."""
    lay = x.liger.layers if x.liger is not None else frozenset()
    return (lay & {"rms_norm"}) | ({"flce"} if x.loss_kernel == "liger" else frozenset())


def litgpt_layer(x: Inputs) -> Optional[litgpt_block.Layer]:
    """litgpt's layer when the job trains litgpt's own model and it has a table."""
    if x.implementation != "litgpt":
        return None
    targets = (x.lora or {}).get("targets") or None
    return litgpt_block.layer_for(x.model_type, x.family, targets)


def head_bytes(x: Inputs, sh: Shape, part: str, fz: Optional[FrozenBase]) -> tuple[int, str]:
    """The embedding's, final norm's and lm_head's saved bytes (litgpt's own model's when
    the job trains it)."""
    lit = litgpt_layer(x)
    if lit is not None:
        return litgpt_block.head_saved(sh, fz, lit.block.norm, part)
    return embedding_and_head_bytes(x.block, sh, x.has_dropout, x.tp, x.sp, part=part,
                                    frozen=fz, liger=head_kernels(x))


def layer_activations(x: Inputs) -> Optional[LayerActivations]:
    """One layer's saved activations for one micro-batch of the plan's model (None when a
    shape fact is missing): `.total` after the checkpointing policy, `.full` without it,
    `.scores` the eager s² part. Case C compares `.full` with capacity."""
    p = precision_of(x)
    ffn = x.ffn_hidden or (4 * x.hidden if x.family == "gpt2" and x.hidden else None)
    if None in (x.micro_batch, x.seq_len, x.hidden, x.heads, ffn):
        return None
    if x.experts and (x.moe is None or x.family != "llama"):
        return None
    if x.mla is not None and p.autocast:
        return None                 # latent attention under autocast: not measured
    if x.llama4_layers and llama4.not_modelled(x.llama4_layers, x.seq_len, p.autocast,
                                               x.attention):
        return None
    if block_not_modelled(x, p.autocast) or x.family_unknown:
        return None
    fz, r, _ = frozen_of(x)
    sh = layer_shape(x, p, ffn, r)
    if x.llama4_layers:
        return llama4_mean(x, sh, variant_of(x, fz))
    return layer_activation_bytes(x.block, sh, x.attention, x.checkpointing, x.tp, x.sp,
                                  variant_of(x, fz))


def block_not_modelled(x: Inputs, autocast: bool) -> str:
    """Why gpt-oss's or GLM-4 MoE's table, or op-level selective checkpointing, does not
    give this run's layers ("" when it does, or for another model)."""
    if x.checkpointing == sac.MODE and sac.not_modelled(x):
        return sac.not_modelled(x)
    if x.attention_sinks:
        if autocast:
            return "gpt-oss's layers are modelled in 16-bit and fp32 compute, not under autocast"
        if x.attention != "eager":
            return (f"gpt-oss's attention with sinks is modelled for eager attention (its "
                    f"transformers default), not {x.attention}")
    elif x.model_type == "glm4_moe":
        if autocast:
            return "GLM-4 MoE's layers are modelled in 16-bit and fp32 compute, not under autocast"
        if x.attention not in ("sdpa", "eager"):
            return f"GLM-4 MoE's attention is modelled for sdpa and eager, not {x.attention}"
    return ""


def llama4_mean(x: Inputs, sh: Shape, variant: Variant) -> LayerActivations:
    """The mean layer of Llama 4 (`physics.llama4`): each kind of layer by its own table
    (RoPE with the L2 q/k norm or NoPE with temperature; the MoE or the dense MLP), averaged
    over the counts of the `llama4_layers` fact."""
    la: Optional[LayerActivations] = None
    n, first = 0, ""
    for kind, moe, m in llama4.layer_kinds(x.llama4_layers or {}):
        one = layer_activation_bytes(x.block, replace(sh, llama4=kind,
                                                      moe=sh.moe if moe else None),
                                     x.attention, x.checkpointing, x.tp, x.sp, variant)
        name = ("RoPE" if kind == "l2" else "NoPE") + (" MoE" if moe else " dense")
        if la is None:
            la, first = one, name
        else:
            # the first mix names both kinds; a later one weighs the mean so far
            la = mixed_layers(la, one, n, m, names=(first or None, name))
            first = ""
        n += m
    assert la is not None
    return la


def mixed_layers(moe: LayerActivations, dense: LayerActivations, n_moe: int,
                 n_dense: int, names: tuple[Optional[str], Optional[str]] = (None, None)
                 ) -> LayerActivations:
    """The mean layer of a model whose MLP is a mixture of experts in `n_moe` layers and
    dense in `n_dense` (Qwen-MoE's `mlp_only_layers`, DeepSeek's first dense layers), as one
    layer's worth: totals are averaged exactly when the line multiplies them by the layer
    count (the caller multiplies by n_moe + n_dense); the recompute working set is the larger
    layer's."""
    n = n_moe + n_dense
    first = f"{n_moe} {names[0]}: {{}}" if names[0] else (
        f"{n_moe} × {{}}" if names[1] else f"{n_moe} MoE layers: {{}}")
    both = f"({first}; {n_dense} {names[1] or 'dense'}: {{}}) / {n}"
    return LayerActivations(
        total=Fraction(n_moe * moe.total + n_dense * dense.total, n),
        scores=Fraction(n_moe * moe.scores + n_dense * dense.scores, n),
        full=max(moe.full, dense.full), coefficient=moe.coefficient,
        terms=both.format(moe.terms, dense.terms),
        terms_rest=both.format(moe.terms_rest, dense.terms_rest),
        terms_scores=both.format(moe.terms_scores, dense.terms_scores)
        if moe.terms_scores else "", layer_input=moe.layer_input,
        terms_full=moe.terms_full)


def stack_lines(x: Inputs) -> tuple[list[LedgerLine], list[str]]:
    """A custom layer stack's saved activations and backward working set (physics.stack)."""
    p = precision_of(x)
    st = x.layer_stack or {}
    cls = st.get("class", "the model")
    if x.micro_batch is None:
        return [LedgerLine(key="activations", label=f"{cls}: saved activations",
                           bytes=None, lifetime="saved",
                           note="unknown: needs micro_batch")], ["micro_batch"]
    kept, _ = gradients_kept(x)
    sa = stack_activations(st, x.micro_batch, p.act, p.grad, kept)
    shape = "×".join(str(n) for n in st.get("input_shape", []))
    return [
        LedgerLine(key="activations",
                   label=f"{cls}'s layers: saved activations ({len(st.get('ops', []))} layers "
                         f"applied to a {shape} input)",
                   bytes=sa.saved, lifetime="saved",
                   formula=f"{x.micro_batch} × ({sa.terms}) B",
                   note="per sample: each distinct tensor a layer saves for backward "
                        "(Linear/Conv inputs, ReLU outputs, pooling indices…), read from "
                        "its forward"),
        LedgerLine(key="activations",
                   label=f"backward working set at {sa.at} (gradients of its input and "
                         f"output, parameter gradients so far; transient)",
                   bytes=sa.backward_extra, lifetime="loss",
                   note="the largest moment of the backward, above the saved tensors")], []
