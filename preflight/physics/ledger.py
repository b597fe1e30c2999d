"""Assemble the per-GPU ledger: model states, activations, communication buffers, overhead.

Every line is a separate, labelled item with its formula; the CUDA context and the
fragmentation / headroom margin are lines of their own and never folded into others.
"""

from __future__ import annotations

import math
from dataclasses import replace
from fractions import Fraction
from typing import Optional

from preflight.physics.activations import (LayerActivations, Shape, embedding_and_head_bytes,
                                            layer_activation_bytes, logits_bytes,
                                            logits_grad_bytes, logits_in_flight_bytes)
from preflight.physics.comm import comm_buffers
from preflight.physics.inputs import Inputs
from preflight.physics.phases import gradients_kept, step_phases
from preflight.physics.stack import stack_activations
from preflight.physics.result import Ledger, LedgerLine
from preflight.physics.states import model_states, precision
from preflight.physics.tensors import largest_pieces
from preflight.units import MiB, fmt_int

#: Assumed, labelled: the CUDA context plus cuBLAS/cuDNN workspaces of a torch 2.x process
#: with lazy module loading (a few hundred MB; more with eager loading or many kernels).
CUDA_CONTEXT_BYTES = 512 * MiB
#: Assumed, labelled: NCCL's communicator buffers in a distributed job.
NCCL_BYTES = 512 * MiB
#: Assumed, labelled: the caching allocator's reserved-minus-allocated at the peak, as a
#: share of the tensors peak (block rounding, segments kept after frees).
ALLOCATOR_SLACK = Fraction(1, 20)


def layer_activations(x: Inputs) -> Optional[LayerActivations]:
    """One layer's saved activations for one micro-batch of the plan's model (None when a
    shape fact is missing): `.total` after the checkpointing policy, `.full` without it,
    `.scores` the eager s² part. Case C compares `.full` with capacity."""
    p = precision(x.param_dtype or "fp32", x.mixed_precision or "none")
    ffn = x.ffn_hidden or (4 * x.hidden if x.family == "gpt2" and x.hidden else None)
    if None in (x.micro_batch, x.seq_len, x.hidden, x.heads, ffn):
        return None
    if x.experts and (x.moe is None or x.family != "llama"):
        return None
    sh = Shape(s=x.seq_len, b=x.micro_batch, h=x.hidden, a=x.heads, f=ffn, k=x.kv or x.heads,
               d=p.act, autocast=p.autocast, moe=x.moe)
    return layer_activation_bytes(x.family, sh, x.attention, x.checkpointing, x.tp, x.sp,
                                  gelu=x.gelu, dropout=x.has_dropout,
                                  kv_cache=x.kv_cache_copies)


def mixed_layers(moe: LayerActivations, dense: LayerActivations, n_moe: int,
                 n_dense: int) -> LayerActivations:
    """The mean layer of a model whose MLP is a mixture of experts in `n_moe` layers and
    dense in `n_dense` (Qwen-MoE's `mlp_only_layers`, DeepSeek's first dense layers), as one
    layer's worth: totals are averaged exactly when the line multiplies them by the layer
    count (the caller multiplies by n_moe + n_dense); the recompute working set is the larger
    layer's."""
    n = n_moe + n_dense
    both = f"({n_moe} MoE layers: {{}}; {n_dense} dense: {{}}) / {n}"
    return LayerActivations(
        total=Fraction(n_moe * moe.total + n_dense * dense.total, n),
        scores=Fraction(n_moe * moe.scores + n_dense * dense.scores, n),
        full=max(moe.full, dense.full), coefficient=moe.coefficient,
        terms=both.format(moe.terms, dense.terms),
        terms_rest=both.format(moe.terms_rest, dense.terms_rest),
        terms_scores=both.format(moe.terms_scores, dense.terms_scores)
        if moe.terms_scores else "")


def stack_lines(x: Inputs) -> tuple[list[LedgerLine], list[str]]:
    """A custom layer stack's saved activations and backward working set (physics.stack)."""
    p = precision(x.param_dtype or "fp32", x.mixed_precision or "none")
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


def activation_lines(x: Inputs) -> tuple[list[LedgerLine], list[str]]:
    """Saved activations for one micro-batch across the layers this GPU holds, plus the
    embedding/head, logits, and autocast weight copies."""
    if x.layer_stack is not None:
        return stack_lines(x)
    lines: list[LedgerLine] = []
    missing: list[str] = []
    p = precision(x.param_dtype or "fp32", x.mixed_precision or "none")
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
    fam_note = x.note_for("family", "attention", "activation_checkpointing")
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
        s, b, h, a, L = x.seq_len, x.micro_batch, x.hidden, x.heads, x.layers
        sh = Shape(s=s, b=b, h=h, a=a, f=ffn, k=x.kv or a, d=p.act, autocast=p.autocast,
                   moe=x.moe)
        la = layer_activation_bytes(x.family, sh, x.attention, x.checkpointing, x.tp, x.sp,
                                    gelu=x.gelu, dropout=x.has_dropout,
                                    kv_cache=x.kv_cache_copies)
        fam = {"gpt2": "GPT block", "llama": "llama block"}[x.family]
        if sh.moe is not None:
            fam += ", " + sh.moe.label
            dense = L - min(L, x.moe_layers or L)
            if dense:
                la = mixed_layers(la, layer_activation_bytes(
                    x.family, replace(sh, moe=None), x.attention, x.checkpointing, x.tp,
                    x.sp, gelu=x.gelu, dropout=x.has_dropout, kv_cache=x.kv_cache_copies),
                    L - dense, dense)
                fam += f" in {L - dense} of {L} layers"
        if x.gelu == "tanh-unfused":
            fam += ", gelu_new"
        pp_note = (f"1F1B pipeline: the first stage holds {x.pp} micro-batches of {L}/{x.pp} "
                   f"layers = {L} layers' worth" if x.pp > 1 else "")
        if x.checkpointing == "full":
            lines.append(LedgerLine(
                key="activations", label="layer inputs kept by full checkpointing",
                bytes=math.ceil(L * la.total), lifetime="saved", formula=f"{L} layers × {b} × {fmt_int(s)} × ({la.terms}) B",
                note=_join(fam_note, pp_note)))
            lines.append(LedgerLine(
                key="activations", label=f"one layer's working set while it is recomputed ({fam})",
                bytes=la.full, lifetime="recompute", formula=f"1 layer, all saved tensors of the {x.attention} {fam}",
                note=ffn_note))
        else:
            rest = la.total - la.scores
            lines.append(LedgerLine(
                key="activations",
                label=f"{L} layers' saved activations ({fam}, {x.attention}, "
                      f"checkpointing {x.checkpointing})",
                bytes=math.ceil(L * rest), lifetime="saved",
                formula=f"{L} layers × {b} × {fmt_int(s)} × ({la.terms_rest}) B",
                note=_join(fam_note, ffn_note, pp_note,
                           "autocast: fp32 residual stream and per-projection 16-bit copies"
                           if p.autocast else "")))
            if la.scores:
                lines.append(LedgerLine(
                    key="activations", label="attention scores materialised by eager attention",
                    bytes=math.ceil(L * la.scores), lifetime="saved",
                    formula=f"{L} layers × {b} × {fmt_int(s)} × ({la.terms_scores}) B",
                    note="sdpa / flash attention do not keep the s² matrices"))
        eb, etext = embedding_and_head_bytes(x.family, sh, x.has_dropout, x.tp, x.sp)
        lines.append(LedgerLine(key="activations", label="embedding output, final norm and lm_head input",
                                bytes=eb, lifetime="saved",
                                formula=f"{b} × {fmt_int(s)} × {etext} with h = {fmt_int(h)}"))
    if x.micro_batch and x.seq_len and x.vocab:
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
    if p.autocast and x.stage < 3:
        lines += autocast_copy_lines(x)
    return lines, missing


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
    if x.experts and x.params is not None:
        # which expert weights a grouped matmul casts is the kernel's choice: bound it
        return [LedgerLine(
            key="activations", label="autocast 16-bit weight copies (cached for the forward)",
            bytes=-(-2 * x.params // x.mp), formula=f"2 B × {fmt_int(x.params)}{mp}",
            lifetime="saved",
            note="upper bound: a mixture of experts' grouped matmuls may cast every expert's "
                 "weights; norm and embedding weights are not cast")]
    if None in (x.layers, x.hidden, x.heads, x.vocab, ffn):
        if x.params is None:
            return [LedgerLine(key="activations", label="autocast 16-bit weight copies",
                               bytes=None, lifetime="saved", note="unknown: needs params")]
        return [LedgerLine(
            key="activations", label="autocast 16-bit weight copies (cached for the forward)",
            bytes=-(-2 * x.params // x.mp), formula=f"2 B × {fmt_int(x.params)}{mp}",
            lifetime="saved",
            note="upper bound: norm and embedding weights are not cast; layers, hidden, heads "
                 "and vocab give the linear weights alone")]
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
    if x.checkpointing == "full":
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


def overhead_lines(x: Inputs, tensors_peak: Optional[int]) -> list[LedgerLine]:
    """Tiers 2 and 3 above the tensors: the caching allocator's slack, the CUDA context and
    the NCCL buffers (each its own labelled line, never folded into others)."""
    slack = None if tensors_peak is None else int(ALLOCATOR_SLACK * tensors_peak)
    lines = [
        LedgerLine(key="overhead", label="allocator rounding and segment slack (reserved − allocated)",
                   bytes=slack, lifetime="reserved",
                   formula="" if slack is None else
                   f"{ALLOCATOR_SLACK.numerator}/{ALLOCATOR_SLACK.denominator} × "
                   f"{fmt_int(tensors_peak)} B (the tensors peak)",
                   note="assumed: the caching allocator rounds blocks to 512 B / 2 MiB and keeps "
                        "freed segments; `bench/gpu_accuracy.py` measures it"
                   if slack is not None else "unknown: the tensors peak is unknown"),
        LedgerLine(key="overhead", label="CUDA context and library workspaces",
                   bytes=CUDA_CONTEXT_BYTES, formula="512 MiB", lifetime="process",
                   note="assumed: torch 2.x with lazy loading takes a few hundred MB; "
                        "measure with `preflight dryrun`")]
    if x.world_size > 1:
        lines.append(LedgerLine(key="overhead", label="NCCL communicator buffers",
                                bytes=NCCL_BYTES, formula="512 MiB", lifetime="process",
                                note="assumed; grows with channels and peers"))
    return lines


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


def build_ledger(x: Inputs, gpu, headroom: float) -> Ledger:
    capacity = gpu.usable_bytes if gpu is not None else None
    lines, unknown = model_states(x)
    act, m2 = activation_lines(x)
    comm, m3 = comm_buffers(x)
    lines += act + comm
    phases, behaviour = step_phases(x, lines)
    tensors = None if any(p.bytes is None for p in phases) else max(p.bytes for p in phases)
    lines += overhead_lines(x, tensors)
    process = [ln.bytes for ln in lines if ln.lifetime in ("reserved", "process")]
    peak = None if tensors is None or None in process else tensors + sum(process)
    lines.append(margin_line(capacity, headroom, peak))
    missing = _unique(unknown + m2 + m3)
    p = precision(x.param_dtype or "fp32", x.mixed_precision or "none")
    largest = [LedgerLine(key=pc.kind, label=pc.label, bytes=pc.bytes, formula=pc.formula)
               for pc in largest_pieces(x.family, hidden=x.hidden, ffn=x.ffn_hidden,
                                        heads=x.heads, kv_heads=x.kv, vocab=x.vocab,
                                        micro_batch=x.micro_batch, seq_len=x.seq_len,
                                        weight_bytes=p.weight, act_bytes=p.act, tp=x.tp)]
    return Ledger(lines=lines, capacity_bytes=capacity, headroom=headroom, unknown=missing,
                  assumptions=list(dict.fromkeys(x.assumed.values())),
                  gpu=gpu.name if gpu is not None else None, largest=largest,
                  phases=phases, behaviour=behaviour)


def _unique(xs: list[str]) -> list[str]:
    return list(dict.fromkeys(xs))


def _join(*parts: str) -> str:
    return "; ".join(p for p in parts if p)
