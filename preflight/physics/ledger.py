"""Assemble the per-GPU ledger: model states, activations, communication buffers, overhead.

Every line is a separate, labelled item with its formula; the CUDA context and the
fragmentation / headroom margin are lines of their own and never folded into others.
"""

from __future__ import annotations

import math
from dataclasses import replace
from fractions import Fraction
from typing import Optional

from preflight.physics.activations import (LayerActivations, Shape, Variant,
                                            embedding_and_head_bytes, layer_activation_bytes,
                                            logits_bytes, logits_grad_bytes,
                                            logits_in_flight_bytes)
from preflight.physics.comm import comm_buffers
from preflight.physics import bnb, litgpt_block, llama4
from preflight.physics.decoders import decoder_of
from preflight.physics.dense import layer_of
from preflight.physics.inputs import Inputs
from preflight.physics.liger import TABLE_NAMES
from preflight.physics.overhead import overhead_lines
from preflight.physics.lora import FrozenBase, frozen_base
from preflight.physics.loss import chunked_logit_lines, liger_loss_lines
from preflight.physics.phases import gradients_kept, step_phases
from preflight.physics.result import Ledger, LedgerLine, Phase, StageLedger
from preflight.physics import sac
from preflight.physics.stack import stack_activations
from preflight.physics.stages import Stage, schedule_note, stages
from preflight.physics.states import model_states, precision_of
from preflight.physics.tensors import block_params, largest_pieces
from preflight.units import fmt_int

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


def _layer_shape(x: Inputs, p, ffn: int, r: int) -> Shape:
    """One micro-batch through one layer of the plan's model, as the activation tables
    read it (`r`: the LoRA rank of a frozen base, 0 without)."""
    dims = x.attention_dims if isinstance(x.attention_dims, dict) else {}
    return Shape(s=x.seq_len, b=x.micro_batch, h=x.hidden, a=x.heads, f=ffn,
                 k=x.kv or x.heads, d=p.act, autocast=p.autocast, r=r,
                 cpu_autocast=x.autocast_device == "cpu", moe=x.moe, mla=x.mla,
                 hd=int(dims.get("head_dim") or 0), rot=int(dims.get("rotary_dim") or 0),
                 sinks=x.attention_sinks, out_copy=x.model_type == "glm4_moe")


def _variant(x: Inputs, frozen: Optional[FrozenBase]) -> Variant:
    """The plan's model's layer as the activation tables tell it apart (`Variant`)."""
    return Variant(dropout=x.has_dropout, gelu=x.gelu, kv_cache=x.kv_cache_copies,
                   frozen=frozen, layer=layer_of(x.model_type),
                   decoder=decoder_of(x.model_type),
                   fused=x.liger.layers if x.liger is not None else frozenset(),
                   litgpt=_litgpt(x))


def head_kernels(x: Inputs) -> frozenset:
    """Liger's kernels at the model's head (`embedding_and_head_bytes`): "flce" with its
    fused loss, "rms_norm" with its RMSNorm as the final norm."""
    lay = x.liger.layers if x.liger is not None else frozenset()
    return (lay & {"rms_norm"}) | ({"flce"} if x.loss_kernel == "liger" else frozenset())


def _litgpt(x: Inputs) -> Optional[litgpt_block.Layer]:
    """litgpt's layer when the job trains litgpt's own model and it has a table."""
    if x.implementation != "litgpt":
        return None
    targets = (x.lora or {}).get("targets") or None
    return litgpt_block.layer_for(x.model_type, x.family, targets)


def _head(x: Inputs, sh: Shape, part: str, fz: Optional[FrozenBase]) -> tuple[int, str]:
    """The embedding's, final norm's and lm_head's saved bytes (litgpt's own model's when
    the job trains it)."""
    lit = _litgpt(x)
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
    sh = _layer_shape(x, p, ffn, r)
    if x.llama4_layers:
        return llama4_mean(x, sh, _variant(x, fz))
    return layer_activation_bytes(x.block, sh, x.attention, x.checkpointing, x.tp, x.sp,
                                  _variant(x, fz))


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


def activation_lines(x: Inputs, stage: Optional[Stage] = None) -> tuple[list[LedgerLine], list[str]]:
    """Saved activations for one micro-batch across the layers this GPU holds, plus the
    embedding/head, logits, and autocast weight copies.

    `stage`: one pipeline stage (preflight.physics.stages): its layers times its
    micro-batches in flight; the embedding output on the first stage, the final norm,
    head input and logits on the last."""
    if x.layer_stack is not None:
        return stack_lines(x)
    first = stage is None or stage.first
    last = stage is None or stage.last
    lines: list[LedgerLine] = []
    missing: list[str] = []
    p = precision_of(x)
    need = ["micro_batch", "seq_len", "layers", "hidden", "heads"]
    if x.family == "llama":
        need.append("ffn_hidden")
    absent = [n for n in need if getattr(x, n if n != "ffn_hidden" else "ffn_hidden") is None]
    if x.experts and x.moe is None:
        absent.append("experts_per_token")
    moe_note = ""
    if x.experts and x.family != "llama" and not absent:
        absent.append("family")
        moe_note = "mixture-of-experts activations are modelled for llama-style blocks only"
    if x.llama4_layers and not absent:
        why = llama4.not_modelled(x.llama4_layers, x.seq_len, p.autocast, x.attention)
        if why:
            absent.append("llama4_layers")
            moe_note = "unknown: " + why
    if x.family_unknown and not absent:
        absent.append("family")
        moe_note = "unknown: " + x.family_unknown
    if not absent and block_not_modelled(x, p.autocast):
        absent.append("activation_checkpointing" if x.checkpointing == sac.MODE
                      and sac.not_modelled(x) else
                      "attention_sinks" if x.attention_sinks else "model_type")
        moe_note = "unknown: " + block_not_modelled(x, p.autocast)
    if x.mla is not None and p.autocast and not absent:
        absent.append("mixed_precision")
        moe_note = ("unknown: latent attention (DeepSeek) is modelled in 16-bit and fp32 "
                    "compute, not under autocast over fp32 weights")
    fam_note = _join(x.note_for("family", "attention", "activation_checkpointing"),
                     litgpt_block.label(x.model_type) if x.implementation == "litgpt" else "")
    ffn = x.ffn_hidden
    ffn_note = ""
    if ffn is None and x.family == "gpt2" and x.hidden:
        ffn = 4 * x.hidden
        ffn_note = "ffn_hidden not given: 4·h (the GPT-2 block) assumed"
    if absent:
        missing += absent
        if x.layer_stack_unknown and x.hidden is None:
            moe_note = "unknown: " + x.layer_stack_unknown
        lines.append(LedgerLine(key="activations", label="transformer layers (saved activations)",
                                bytes=None, lifetime="saved",
                                note=moe_note or "unknown: needs " + ", ".join(absent)))
    else:
        s, b, h, L = x.seq_len, x.micro_batch, x.hidden, x.layers
        k = 1
        if stage is not None and stage.of > 1 and stage.layers is not None:
            L, k = stage.layers, stage.in_flight
        # the layers term of a formula: "3 micro-batches × 4 layers" on a pipeline stage
        Lk = f"{k} micro-batches × {L}" if k > 1 else f"{L}"
        fz, r, fz_note = frozen_of(x)
        sh = _layer_shape(x, p, ffn, r)
        la = layer_activation_bytes(x.block, sh, x.attention, x.checkpointing, x.tp, x.sp,
                                    _variant(x, fz))
        fam = {"gpt2": "GPT block", "llama": "llama block",
               "bert": "BERT encoder layer"}[x.block]
        if _litgpt(x) is not None:
            fam = "litgpt's " + fam
        if sh.mla is not None:
            fam += ", " + sh.mla.label
        if _variant(x, None).fused:
            fam += ", Liger " + " + ".join(v for k, v in TABLE_NAMES.items()
                                           if k in _variant(x, None).fused)
        if sh.sinks:
            fam += ", attention sinks"
        if x.llama4_layers:
            la = llama4_mean(x, sh, _variant(x, fz))
            fam += ", Llama 4 (RoPE + L2 q/k norm, NoPE + temperature)"
            if sh.moe is not None:
                fam += ", " + sh.moe.label + f" in {x.moe_layers} of {L} layers"
        elif sh.moe is not None:
            fam += ", " + sh.moe.label
            dense = L - min(L, x.moe_layers or L)
            if dense:
                la = mixed_layers(la, layer_activation_bytes(
                    x.family, replace(sh, moe=None), x.attention, x.checkpointing, x.tp,
                    x.sp, _variant(x, None)),
                    L - dense, dense)
                fam += f" in {L - dense} of {L} layers"
        if x.gelu == "tanh-unfused":
            fam += ", gelu_new"
        pp_note = schedule_note(x, stage) if stage is not None and stage.of > 1 else ""
        if x.checkpointing == "full":
            lines.append(LedgerLine(
                key="activations", label="layer inputs kept by full checkpointing",
                bytes=math.ceil(k * L * la.total), lifetime="saved",
                formula=f"{Lk} layers × {b} × {fmt_int(s)} × ({la.terms}) B",
                note=_join(fam_note, pp_note)))
            # the recomputed layer's input is the kept checkpoint itself where the block's
            # first saved tensor is the residual stream as it is (gpt2's LayerNorm input;
            # llama's RMSNorm upcasts a 16-bit stream to a new fp32 copy)
            # (Liger's RMSNorm saves the stream itself)
            shared = la.layer_input if (x.family != "llama" or p.act == 4 or p.autocast
                                        or "rms_norm" in _variant(x, None).fused) else 0
            lines.append(LedgerLine(
                key="activations",
                label=f"one layer's working set while it is recomputed ({fam})",
                bytes=la.full - shared, lifetime="recompute",
                formula=f"1 layer, all saved tensors of the {x.attention} {fam}: "
                        f"{b} × {fmt_int(s)} × ({la.terms_full}) B"
                        + (f" − its input {fmt_int(shared)} B (the kept checkpoint)"
                           if shared else ""),
                note=ffn_note))
            lines.append(backward_temporaries(x, p, ffn, "recompute"))
        elif x.checkpointing == sac.MODE:
            lines += op_sac_lines(x, la, sh, Lk, fam, k * L)
            lines.append(backward_temporaries(x, p, ffn, "recompute"))
        else:
            rest = la.total - la.scores
            # layer 0 keeps nothing before its first adapter (a frozen base): on the stage
            # that holds layer 0
            less = la.first_less if first else 0
            less_text = ""
            if less:
                less_text = (f" − {fmt_int(less)} B (layer 0 keeps nothing before its "
                             f"first adapter: {', '.join(la.first_less_names)})")
            lines.append(LedgerLine(
                key="activations",
                label=f"{L} layers' saved activations ({fam}, {x.attention}, "
                      f"checkpointing {x.checkpointing}{', frozen base' if fz else ''})"
                      + (f", {k} micro-batches in flight" if k > 1 else ""),
                bytes=math.ceil(k * (L * rest - less)), lifetime="saved",
                formula=f"{Lk} layers × {b} × {fmt_int(s)} × ({la.terms_rest}) B{less_text}",
                note=_join(fam_note, ffn_note, pp_note, fz_note,
                           "autocast: fp32 residual stream and per-projection 16-bit copies"
                           + (" (CPU autocast: gelu's pow in 16 bits)"
                              if x.autocast_device == "cpu" else "")
                           if p.autocast else "")))
            if la.scores:
                lines.append(LedgerLine(
                    key="activations", label="attention scores materialised by eager attention",
                    bytes=math.ceil(k * L * la.scores), lifetime="saved",
                    formula=f"{Lk} layers × {b} × {fmt_int(s)} × ({la.terms_scores}) B",
                    note="sdpa / flash attention do not keep the s² matrices"))
        if stage is None or stage.of == 1:
            eb, etext = _head(x, sh, "both", fz)
            lines.append(LedgerLine(key="activations", label=(
                "embedding LayerNorm, MLM head transform and decoder input"
                if x.block == "bert" else "embedding output, final norm and lm_head input"),
                                    bytes=eb, lifetime="saved",
                                    formula=f"{b} × {fmt_int(s)} × {etext} with h = {fmt_int(h)}"))
        else:
            eb, etext = _head(x, sh, "embedding", fz)
            if first and eb:
                kk = f"{k} micro-batches × " if k > 1 else ""
                lines.append(LedgerLine(key="activations", label="embedding output (first stage)",
                                        bytes=k * eb, lifetime="saved",
                                        formula=f"{kk}{b} × {fmt_int(s)} × {etext} with h = {fmt_int(h)}",
                                        note="the lookup saves only the token ids; dropout its mask"))
            if last:
                eb, etext = _head(x, sh, "head", fz)
                lines.append(LedgerLine(key="activations",
                                        label="final norm and lm_head input (last stage)",
                                        bytes=eb, lifetime="saved",
                                        formula=f"{b} × {fmt_int(s)} × {etext} with h = {fmt_int(h)}"))
    if last:          # the logits and the loss live on the last pipeline stage only
        if x.micro_batch and x.seq_len and x.vocab and x.loss_kernel == "chunked":
            lines += chunked_logit_lines(x.micro_batch, x.seq_len, x.vocab, p.act, x.tp)
        elif x.micro_batch and x.seq_len and x.vocab and x.hidden and \
                x.loss_kernel == "liger" and x.liger is not None:
            lines += liger_lines(x, p)
        elif x.micro_batch and x.seq_len and x.vocab:
            b, s, V = x.micro_batch, x.seq_len, x.vocab
            tp = f" / {x.tp} (vocab-parallel)" if x.tp > 1 else ""
            lines.append(LedgerLine(
                key="activations", label="logits kept for the loss (fp32)",
                bytes=logits_bytes(b, s, V, x.tp), lifetime="logits", formula=f"4 B × {b} × {fmt_int(s)} × {fmt_int(V)}{tp}",
                note="the loss upcasts the logits; log-softmax saves its fp32 output"))
            d = p.act
            lines.append(LedgerLine(
                key="activations", label="logits while the loss is computed (transient)",
                bytes=logits_in_flight_bytes(b, s, V, d, x.tp), lifetime="head",
                formula=f"{d}{' + 4' if d < 4 else ''} B × {b} × {fmt_int(s)} × {fmt_int(V)}{tp}",
                note="the lm_head output" + (" and its fp32 copy for the loss" if d < 4 else "")
                     + "; freed with the forward when only the loss is kept"))
            lines.append(LedgerLine(
                key="activations", label="logit gradients at the start of backward (transient, fp32)",
                bytes=logits_grad_bytes(b, s, V, x.tp), lifetime="loss",
                formula=f"2 × 4 B × {b} × {fmt_int(s)} × {fmt_int(V)}{tp}",
                note="gradient of the log-probabilities and of the logits, alive together; "
                     "a fused / chunked cross-entropy avoids both"))
        else:
            miss = [n for n in ("micro_batch", "seq_len", "vocab") if getattr(x, n) is None]
            missing += miss
            lines.append(LedgerLine(key="activations", label="logits kept for the loss (fp32)",
                                    bytes=None, lifetime="logits",
                                    note="unknown: needs " + ", ".join(miss)))
    if x.model_type in VISION_TOWERS and first:
        # the language model's layers are sized above; the tower runs on the images
        missing.append("vision_tower")
        lines.append(LedgerLine(
            key="activations", label="vision tower (saved activations)", bytes=None,
            lifetime="saved",
            note="unknown: the vision tower's saved tensors are not modelled (they follow "
                 "the number and size of the images a batch holds)"))
    if p.autocast and x.stage < 3:
        lines += autocast_copy_lines(x)
    return lines, missing


def liger_lines(x: Inputs, p) -> list[LedgerLine]:
    """Liger's fused loss (`physics.loss.liger_loss_lines`) for this job: the logits in the
    compute dtype, the hidden-state gradient in the residual stream's (fp32 under
    autocast), the lm_head gradient in the weight's; no lm_head gradient when the head is
    frozen (a LoRA base) from v0.3.0 on."""
    assert x.liger is not None and x.micro_batch and x.seq_len and x.vocab and x.hidden
    hin = 4 if p.autocast else p.act
    fz, _, _ = frozen_of(x)
    frozen_head = fz is not None and not fz.head_trained and x.liger.release >= (0, 3, 0)
    lines = liger_loss_lines(x.micro_batch, x.seq_len, x.vocab, x.hidden, p.act, hin,
                             0 if frozen_head else p.weight, x.liger.release)
    if frozen_head:
        lines = [ln for ln in lines if not ln.label.startswith("lm_head weight gradient")]
    if x.tp > 1:
        lines = [replace(ln, note=_join(ln.note, "tensor parallel: Liger's loss is sized "
                                        "with the whole vocabulary on each GPU"))
                 for ln in lines]
    return lines


#: image-text model_types whose language model has a table and whose vision tower has none
VISION_TOWERS = ("qwen2_5_vl",)


def op_sac_lines(x: Inputs, la: LayerActivations, sh: Shape, Lk: str, fam: str,
                 n: int) -> list[LedgerLine]:
    """Op-level selective checkpointing (`physics.sac`): what the `n` layers keep (each
    block's input and the outputs of the ops the policy saves), and one layer's working
    set while it is recomputed, less the kept tensors it saves again or reads and frees."""
    b, s = x.micro_batch, x.seq_len
    less, names = sac.recompute_less(sh, sh.d, sh.autocast, s * b)
    return [
        LedgerLine(key="activations",
                   label=f"{Lk} layers' tensors kept by "
                         f"op-level selective checkpointing ({fam}, {x.attention})",
                   bytes=math.ceil(n * la.total), lifetime="saved",
                   formula=f"{Lk} layers × {b} × {fmt_int(s)} × ({la.terms}) B",
                   note=_join(x.note_for("family", "attention", "activation_checkpointing"),
                              "each block's input, the outputs of its 1st, 3rd, 5th and 7th "
                              "mm (q_proj, v_proj, gate_proj, down_proj) and the attention "
                              "kernel's output and log-sum-exp (torchtitan's "
                              "selective_ac_option = 'op'); everything else is recomputed")),
        LedgerLine(key="activations",
                   label=f"one layer's working set while it is recomputed ({fam})",
                   bytes=la.full - less, lifetime="recompute",
                   formula=f"1 layer, all saved tensors of the {x.attention} {fam}: "
                           f"{b} × {fmt_int(s)} × ({la.terms_full}) B − {fmt_int(less)} B "
                           f"({names}: kept already, or read and freed by the recompute)")]


def autocast_copy_lines(x: Inputs) -> list[LedgerLine]:
    """The 16-bit weight copies torch.autocast makes over fp32 weights, as far as backward
    keeps them.

    Autocast casts a weight where an op on its lower-precision list uses it: every
    `F.linear` / matmul casts its weight to 16 bits, and the matmul saves that copy for the
    input gradient, so it lives until backward. What is never copied:
      - embeddings: `F.embedding` is not on autocast's lists, the lookup runs in fp32 (no
        16-bit copy of the token or position table); a tied lm_head is the same tensor but
        is used by a matmul, so the table is cast once there — for the head, tied or not;
      - norm weights and biases: layer_norm / rms_norm run in fp32; a Linear's bias is cast
        but `addmm` does not save it (its gradient is a sum of the output gradient).
    So without checkpointing the kept copies are the linear weights:
        2 B × (L × block linear weights + V·h)
    with block linear weights gpt2: 4h² + 2hf (QKV, output, two MLP matrices); llama:
    2h² + 2h·hk + 3hf (q, o; k, v at the KV width hk = kv_heads·h/heads; gate, up, down).
    Full activation checkpointing runs the blocks' forward without saving anything, so the
    block copies are freed at once; only weights used outside the checkpointed blocks (the
    lm_head) keep theirs, 2 B × V·h. The recompute in backward re-casts one block's weights
    at a time: a transient 2 B × one block's linear weights, its own line. Selective
    checkpointing keeps the matmul inputs, and with them the copies (as without).
    Tensor / pipeline parallel: each GPU holds 1/(tp·pp) of them. Without the shapes the
    line falls back to the upper bound 2 B × params.
    """
    mp = f" / {x.mp} (tp×pp)" if x.mp > 1 else ""
    ffn = x.ffn_hidden or (4 * x.hidden if x.family == "gpt2" and x.hidden else None)
    shape_missing = None in (x.layers, x.hidden, x.heads, x.vocab, ffn)
    if x.params is not None and (x.experts or shape_missing):
        # which expert weights a grouped matmul casts is the kernel's choice: bound it
        why = ("a mixture of experts' grouped matmuls may cast every expert's weights; norm "
               "and embedding weights are not cast" if x.experts else
               "norm and embedding weights are not cast; layers, hidden, heads and vocab give "
               "the linear weights alone")
        return [LedgerLine(
            key="activations", label="autocast 16-bit weight copies (cached for the forward)",
            bytes=-(-2 * x.params // x.mp), formula=f"2 B × {fmt_int(x.params)}{mp}",
            lifetime="saved", note="upper bound: " + why)]
    if shape_missing:
        return [LedgerLine(key="activations", label="autocast 16-bit weight copies",
                           bytes=None, lifetime="saved", note="unknown: needs params")]
    h, f, L, V = x.hidden, ffn, x.layers, x.vocab
    if x.family == "llama":
        hk = h * (x.kv or x.heads) // x.heads
        block = 2 * h * h + 2 * h * hk + 3 * h * f
        btext = f"2·{fmt_int(h)}² + 2·{fmt_int(h)}·{fmt_int(hk)} + 3·{fmt_int(h)}·{fmt_int(f)}"
    else:
        block = 4 * h * h + 2 * h * f
        btext = f"4·{fmt_int(h)}² + 2·{fmt_int(h)}·{fmt_int(f)}"
    head = V * h
    why = "embeddings are looked up in fp32 (never cast); norms and biases are not kept"
    if x.checkpointing in ("full", sac.MODE):
        # op-level selective checkpointing keeps matmul outputs, not their inputs
        return [
            LedgerLine(key="activations",
                       label="autocast 16-bit weight copies kept for backward (lm_head only)",
                       bytes=-(-2 * head // x.mp), lifetime="saved",
                       formula=f"2 B × {fmt_int(V)} × {fmt_int(h)}{mp}",
                       note="full checkpointing frees the blocks' copies; " + why),
            LedgerLine(key="activations",
                       label="autocast 16-bit copy of one block's weights while it is "
                             "recomputed (transient)",
                       bytes=-(-2 * block // x.mp), formula=f"2 B × ({btext}){mp}",
                       lifetime="recompute"),
        ]
    return [LedgerLine(
        key="activations", label="autocast 16-bit weight copies (linear layers, kept for backward)",
        bytes=-(-2 * (L * block + head) // x.mp), lifetime="saved",
        formula=f"2 B × ({L} × ({btext}) + {fmt_int(V)} × {fmt_int(h)}){mp}", note=why)]


def backward_temporaries(x: Inputs, p, ffn: int, lifetime: str,
                         freed: tuple[int, str] = (0, "")) -> LedgerLine:
    """A layer's backward at its MLP activation, the largest moment of a layer's backward
    (measured): the gradient of the layer's output (fp32 under autocast: the residual
    stream's dtype) and the activation's two input gradients, alive together; less
    `freed` (bytes, what), saved tensors already released by then."""
    b, s, h = x.micro_batch, x.seq_len, x.hidden
    gres = 4 if p.autocast else p.act
    split_h = x.tp if x.sp else 1
    tmp = math.ceil(Fraction(gres * b * s * h, split_h)
                    + Fraction(2 * p.act * b * s * ffn, x.tp))
    which = "that layer's" if lifetime == "recompute" else "the last layer's"
    less = f" − {fmt_int(freed[0])} B ({freed[1]})" if freed[0] else ""
    return LedgerLine(
        key="activations",
        label=f"{which} backward temporaries (its output's gradient and the MLP "
              "activation's two input gradients)",
        bytes=max(tmp - freed[0], 0), lifetime=lifetime,
        formula=f"{b} × {fmt_int(s)} × ({gres}×{fmt_int(h)}"
                f"{f'/{split_h}' if split_h > 1 else ''} + 2 × {p.act}×{fmt_int(ffn)}"
                f"{f'/{x.tp}' if x.tp > 1 else ''}) B{less}",
        note="measured: the peak of a layer's backward is at its MLP activation's "
             "backward, with the gradient of the layer's output alive")


def _head_and_pout(x: Inputs, per: Fraction, ffn: int) -> tuple[int, str]:
    """The gradients that exist when the last layer's MLP activation is back-propagated
    (gradients not kept): the head's (V·h: the lm_head's, or the tied embedding's) and that
    layer's MLP output projection's, at `per` bytes per parameter."""
    pout = x.hidden * ffn + (x.hidden if x.family != "llama" else 0)  # type: ignore[operator]
    head = x.vocab * x.hidden  # type: ignore[operator]
    return (math.ceil(per * (head + pout)),
            f"{per} B × ({fmt_int(x.vocab)} × {fmt_int(x.hidden)} + {fmt_int(pout)}) "
            "(the head's and the MLP output projection's)")


def _grad_bytes(lines: list[LedgerLine]) -> Optional[int]:
    grads = [ln.bytes for ln in lines if ln.lifetime == "gradients" and ln.key == "grads"]
    return None if any(v is None for v in grads) else sum(grads)  # type: ignore[arg-type]


def layer_backward_lines(x: Inputs, lines: list[LedgerLine]) -> list[LedgerLine]:
    """Without full checkpointing: the moment the last layer's MLP activation is
    back-propagated. Every layer's saved tensors are still alive (the logits and their
    gradients are freed), with that layer's backward temporaries and the gradients made
    before it (the head's and the MLP output projection's, unless the gradients are kept
    through the whole step). Lifetime `layer`. With a small vocabulary and a wide MLP this
    moment, not the loss's backward, is the peak. Not sized (no line, so no phase) for
    mixture-of-experts layers, a layer stack, pipeline stages or an unknown shape."""
    if (x.checkpointing == "full" or x.moe is not None or x.layer_stack is not None
            or x.pp > 1 or layer_activations(x) is None):
        return []
    p = precision_of(x)
    ffn = x.ffn_hidden or 4 * x.hidden  # type: ignore[operator]
    fz, r, _ = frozen_of(x)
    # the final norm's and the lm_head's saved inputs are released by the head's backward
    head, _ = _head(x, _layer_shape(x, p, ffn, r), "head", fz)
    out = [backward_temporaries(x, p, ffn, "layer",
                                (head, "the final norm's and lm_head's saved inputs, "
                                       "released by the head's backward"))]
    kept, _ = gradients_kept(x)
    if kept or x.lora:
        # kept: the gradients line is alive in this phase already; LoRA: the head and
        # the projections are frozen (the adapters' gradients are the only ones)
        return out
    g_known = _grad_bytes(lines)
    if x.vocab is None or g_known is None or not x.trainable:
        return []
    gb, gtext = _head_and_pout(x, Fraction(g_known, x.trainable), ffn)
    out.append(LedgerLine(key="grads", label="gradients already made at the last layer's "
                          "MLP backward", bytes=gb, lifetime="layer", formula=gtext,
                          note="a part of the gradients line: they appear layer by layer "
                               "as backward goes down"))
    return out


def recompute_state_lines(x: Inputs, lines: list[LedgerLine]) -> list[LedgerLine]:
    """What else is alive while a checkpointed layer is recomputed and back-propagated (full
    checkpointing): the layer inputs not yet consumed and the gradients already made.

    Backward runs from the last layer down. While layer i is recomputed, the inputs of
    layers 0…i are still kept and the gradients of the head (V·h: the lm_head's, or the
    tied embedding's) and of layers i+1…L−1 exist (plus the first of layer i's own: its MLP
    output projection, P_out), unless the gradients are kept through the whole step anyway.
    Both grow linearly in i, so the largest moment is at one end: the first layer
    recomputed (L inputs, the head's gradient) or the last (1 input, L − 1 layers'
    gradients). Lines: the inputs and gradients of that moment, lifetime `recompute` (the
    gradient line is a part of the gradients, not more of them)."""
    la = layer_activations(x)
    if la is None or x.layers is None:
        return []
    L = x.layers
    kept, _ = gradients_kept(x)
    g_known = _grad_bytes(lines)
    # op-level selective checkpointing keeps each layer's saved op outputs with its input
    inp = la.total if x.checkpointing == sac.MODE else la.layer_input
    ffn = x.ffn_hidden or 4 * x.hidden  # type: ignore[operator]
    if kept:
        end, n_in, gb, gtext = "first", L, 0, ""
    elif (x.lora or x.pp > 1 or x.vocab is None or g_known is None
          or not x.trainable):
        # the part already made is not sized here: all of them (an upper bound)
        end, n_in, gb = "first", L, g_known
        gtext = "all gradients (an upper bound: the part made so far is not sized here)"
    else:
        per = Fraction(g_known, x.trainable)             # bytes per trainable parameter
        blk, btext = block_params(x.family, x.hidden, ffn, x.heads, x.kv)  # type: ignore[arg-type]
        pout = x.hidden * ffn + (x.hidden if x.family != "llama" else 0)  # type: ignore[operator]
        head = x.vocab * x.hidden  # type: ignore[operator]
        first = math.ceil(per * (head + pout)) + L * inp
        last = math.ceil(per * (head + (L - 1) * blk + pout)) + inp
        if first >= last:
            end, n_in = "first", L
            gb, gtext = _head_and_pout(x, per, ffn)
        else:
            end, n_in, gb = "last", 1, math.ceil(per * (head + (L - 1) * blk + pout))
            gtext = (f"{per} B × ({fmt_int(x.vocab)} × {fmt_int(x.hidden)} + {L - 1} × "
                     f"({btext}) + {fmt_int(pout)}) (the head's, {L - 1} "
                     f"layer{'s' if L > 2 else ''}' and layer 0's MLP output projection's)")
    which = ("the first layer recomputed (the last of the model)" if end == "first"
             else "the last layer recomputed (layer 0)")
    kept_what = ("layers' kept tensors (op-level selective)" if x.checkpointing == sac.MODE
                 else "layer inputs")
    out = [LedgerLine(key="activations",
                      label=f"checkpointed {kept_what} still kept at {which}",
                      bytes=n_in * inp, lifetime="recompute",
                      formula=f"{n_in} × {fmt_int(inp)} B")]
    if not kept:
        out.append(LedgerLine(key="grads", label=f"gradients already made at {which}",
                              bytes=gb, lifetime="recompute", formula=gtext,
                              note="a part of the gradients line: they appear layer by layer "
                                   "as backward goes down"))
    return out


def margin_line(capacity: Optional[int], headroom: float, peak: Optional[int]) -> LedgerLine:
    """The headroom margin: a share of the capacity (or, with no GPU, of the predicted peak)."""
    pct = f"{headroom:.0%}"
    if capacity is not None:
        return LedgerLine(
            key="overhead", label=f"fragmentation / headroom margin ({pct} of capacity)",
            bytes=int(Fraction(str(headroom)) * capacity), lifetime="process",
            formula=f"{headroom:g} × {fmt_int(capacity)} B", margin=True,
            note="the ledger is a lower bound: allocator cache, fragmentation and temporaries "
                 "need 15–30 %")
    return LedgerLine(
        key="overhead", label=f"fragmentation / headroom margin ({pct} of the peak; no GPU given)",
        bytes=None if peak is None else int(Fraction(str(headroom)) * peak), lifetime="process",
        formula="" if peak is None else f"{headroom:g} × {fmt_int(peak)} B", margin=True,
        note="unknown: the ledger has unknown lines" if peak is None else "")


def stage_lines(x: Inputs, stage: Optional[Stage]) -> tuple[list[LedgerLine], list[str]]:
    """The tensor lines of one GPU (of one pipeline stage): states, activations, buffers."""
    lines, unknown = model_states(x, stage)
    act, m2 = activation_lines(x, stage)
    comm, m3 = comm_buffers(x)
    lines = lines + act + comm
    if any(ln.lifetime == "recompute" for ln in act):
        lines += recompute_state_lines(x, lines)
    else:
        lines += layer_backward_lines(x, lines)
    return lines, unknown + m2 + m3


def _tensors(phases: list[Phase]) -> Optional[int]:
    return None if any(p.bytes is None for p in phases) else max(p.bytes for p in phases)


def pipeline_stages(x: Inputs) -> tuple[Optional[Stage], list[StageLedger]]:
    """With pipeline parallelism, every stage's ledger and the busiest stage (the one with
    the largest tensors peak; the first when a peak is unknown). (None, []) without."""
    if x.pp <= 1:
        return None, []
    out: list[StageLedger] = []
    busiest: Optional[tuple[int, Stage]] = None
    for st in stages(x):
        lines, _ = stage_lines(x, st)
        phases, _ = step_phases(x, lines)
        t = _tensors(phases)
        top = None if t is None else max(phases, key=lambda ph: ph.bytes or 0).name
        out.append(StageLedger(
            index=st.index, layers=st.layers, in_flight=st.in_flight, holds=st.holds,
            params=st.params, states_bytes=Ledger(lines=lines).states_bytes, tensors_peak=t,
            peak_phase=top, phases={ph.name: ph.bytes for ph in phases}))
        if busiest is None or (t is not None and (busiest[0] is None or t > busiest[0])):
            busiest = (t, st)
    return busiest[1], out


def build_ledger(x: Inputs, gpu, headroom: float) -> Ledger:
    capacity = gpu.usable_bytes if gpu is not None else None
    busiest, per_stage = pipeline_stages(x)
    lines, unknown = stage_lines(x, busiest)
    phases, behaviour = step_phases(x, lines)
    if busiest is not None:
        behaviour.append(
            f"pipeline parallel over {x.pp} stages (1F1B): each stage sized on its own; the "
            f"ledger is stage {busiest.index}'s, the busiest rank")
    tensors = _tensors(phases)
    lines += overhead_lines(x, tensors, gpu.name if gpu is not None else None, busiest)
    process = [ln.bytes for ln in lines if ln.lifetime in ("reserved", "process")]
    peak = None if tensors is None or None in process else tensors + sum(process)
    lines.append(margin_line(capacity, headroom, peak))
    missing = _unique(unknown)
    p = precision_of(x)
    largest = [LedgerLine(key=pc.kind, label=pc.label, bytes=pc.bytes, formula=pc.formula)
               for pc in largest_pieces(x, weight_bytes=p.weight, act_bytes=p.act)]
    return Ledger(lines=lines, capacity_bytes=capacity, headroom=headroom, unknown=missing,
                  assumptions=list(dict.fromkeys(x.assumed.values())),
                  gpu=gpu.name if gpu is not None else None, largest=largest,
                  phases=phases, behaviour=behaviour, stages=per_stage,
                  busiest_stage=None if busiest is None else busiest.index)


def _unique(xs: list[str]) -> list[str]:
    return list(dict.fromkeys(xs))


def _join(*parts: str) -> str:
    return "; ".join(p for p in parts if p)
