"""Assemble the per-GPU ledger: model states, activations, communication buffers, overhead.

Every line is a separate, labelled item with its formula; the CUDA context and the
fragmentation / headroom margin are lines of their own and never folded into others.
"""

from __future__ import annotations

import math
from dataclasses import replace
from fractions import Fraction
from typing import Optional

from preflight.physics import litgpt_block, llama4, sac
from preflight.physics.activations import (LayerActivations, Shape, layer_activation_bytes,
                                           logits_bytes, logits_grad_bytes,
                                           logits_in_flight_bytes)
from preflight.physics.backward import (backward_temporaries, layer_backward_lines,
                                        recompute_state_lines)
from preflight.physics.comm import comm_buffers
from preflight.physics.inputs import Inputs
from preflight.physics.layers import (block_not_modelled, frozen_of, head_bytes, layer_shape,
                                      litgpt_layer, llama4_mean, mixed_layers, stack_lines,
                                      variant_of)
from preflight.physics.liger import TABLE_NAMES
from preflight.physics.loss import chunked_logit_lines, liger_loss_lines
from preflight.physics.overhead import overhead_lines
from preflight.physics.phases import step_phases
from preflight.physics.result import Ledger, LedgerLine, Phase, StageLedger
from preflight.physics.stages import Stage, schedule_note, stages
from preflight.physics.states import model_states, precision_of
from preflight.physics.tensors import largest_pieces
from preflight.units import fmt_int


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
        sh = layer_shape(x, p, ffn, r)
        la = layer_activation_bytes(x.block, sh, x.attention, x.checkpointing, x.tp, x.sp,
                                    variant_of(x, fz))
        fam = {"gpt2": "GPT block", "llama": "llama block",
               "bert": "BERT encoder layer"}[x.block]
        if litgpt_layer(x) is not None:
            fam = "litgpt's " + fam
        if sh.mla is not None:
            fam += ", " + sh.mla.label
        if variant_of(x, None).fused:
            fam += ", Liger " + " + ".join(v for k, v in TABLE_NAMES.items()
                                           if k in variant_of(x, None).fused)
        if sh.sinks:
            fam += ", attention sinks"
        if x.llama4_layers:
            la = llama4_mean(x, sh, variant_of(x, fz))
            fam += ", Llama 4 (RoPE + L2 q/k norm, NoPE + temperature)"
            if sh.moe is not None:
                fam += ", " + sh.moe.label + f" in {x.moe_layers} of {L} layers"
        elif sh.moe is not None:
            fam += ", " + sh.moe.label
            dense = L - min(L, x.moe_layers or L)
            if dense:
                la = mixed_layers(la, layer_activation_bytes(
                    x.family, replace(sh, moe=None), x.attention, x.checkpointing, x.tp,
                    x.sp, variant_of(x, None)),
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
                                        or "rms_norm" in variant_of(x, None).fused) else 0
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
            eb, etext = head_bytes(x, sh, "both", fz)
            lines.append(LedgerLine(key="activations", label=(
                "embedding LayerNorm, MLM head transform and decoder input"
                if x.block == "bert" else "embedding output, final norm and lm_head input"),
                                    bytes=eb, lifetime="saved",
                                    formula=f"{b} × {fmt_int(s)} × {etext} with h = {fmt_int(h)}"))
        else:
            eb, etext = head_bytes(x, sh, "embedding", fz)
            if first and eb:
                kk = f"{k} micro-batches × " if k > 1 else ""
                lines.append(LedgerLine(key="activations", label="embedding output (first stage)",
                                        bytes=k * eb, lifetime="saved",
                                        formula=f"{kk}{b} × {fmt_int(s)} × {etext} with h = {fmt_int(h)}",
                                        note="the lookup saves only the token ids; dropout its mask"))
            if last:
                eb, etext = head_bytes(x, sh, "head", fz)
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
VISION_TOWERS = ("qwen2_vl", "qwen2_5_vl", "qwen3_vl", "llava", "mistral3")


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
