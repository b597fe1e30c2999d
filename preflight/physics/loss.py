"""The logits and the loss of a chunked cross-entropy (`--loss-kernel chunked`).

litgpt's fine-tuning scripts call the model with `lm_head_chunk_size=128`: the lm_head runs
on 128 positions at a time and returns the list of chunks in the compute dtype, which the
loop holds until the backward; `chunked_cross_entropy` then takes `F.cross_entropy` of each
chunk as it is (no fp32 copy), so log-softmax saves its output per chunk in the compute
dtype. In the backward every chunk's loss runs before any lm_head chunk (autograd runs the
later-created nodes first), each turning its saved log-softmax output into the gradient of
its logits, the same size: above the two d·b·s·V tensors only one chunk's NLL and
log-softmax gradients are transient. Against the standard loss (fp32 logits 4·b·s·V kept,
8·b·s·V of fp32 gradients) nothing of size b·s·V is ever fp32.
"""

from __future__ import annotations

import math
from fractions import Fraction

from preflight.physics.result import LedgerLine
from preflight.units import fmt_int

#: positions per lm_head chunk: litgpt's `lm_head_chunk_size` in its finetune scripts
CHUNK = 128


def chunked_logit_lines(b: int, s: int, vocab: int, d: int, tp: int = 1) -> list[LedgerLine]:
    """The chunked loss's lines for a micro-batch of b × s tokens, vocab V, compute dtype of
    d bytes, vocab-parallel over tp."""
    full = math.ceil(Fraction(d * b * s * vocab, tp))
    c = min(CHUNK, s)
    chunk = math.ceil(Fraction(2 * d * b * c * vocab, tp))
    tpt = f" / {tp} (vocab-parallel)" if tp > 1 else ""
    base = f"{d} B × {b} × {fmt_int(s)} × {fmt_int(vocab)}{tpt}"
    return [
        LedgerLine(key="activations", label=f"logits, lm_head output in {CHUNK}-position "
                   f"chunks ({d}-byte, held for the loss)", bytes=full, lifetime="logits",
                   formula=base, note="chunked cross-entropy: the loop keeps the chunks "
                                      "until the backward"),
        LedgerLine(key="activations", label=f"log-softmax outputs of the chunks ({d}-byte, "
                   "kept for backward)", bytes=full, lifetime="logits", formula=base,
                   note="cross-entropy of each chunk as it is, no fp32 copy; the backward "
                        "turns each into its logits' gradient, the same size"),
        LedgerLine(key="activations", label="one chunk's NLL and log-softmax gradients at "
                   "the start of backward (transient)", bytes=chunk, lifetime="loss",
                   formula=f"2 × {d} B × {b} × {c} × {fmt_int(vocab)}{tpt}")]


# ------------------------------------------------------------------ Liger's fused loss

#: the releases whose loss forward differs (Liger-Kernel's
#: src/liger_kernel/ops/fused_linear_cross_entropy.py and transformers/model/*.py)
FP32_CHUNK_UNTIL = (0, 5, 0)     # 90fb5e4a (v0.5.0): the kernel upcasts inside, no fp32 copy
SCALED_COPY_UNTIL = (0, 5, 3)    # 42ff02ac (v0.5.3): the chunk's gradient is not copied
SHIFT_COPY_UNTIL = (0, 5, 6)     # b4cb31f1 (v0.5.6): labels padded, hidden states not copied
MM_FLOAT_FROM = (0, 6, 2)        # 2845fe83 (v0.6.2): grad_weight += mm(...).float()
ADDMM_OUT_FROM = (0, 8, 1)       # c9fc646f (v0.8.1): addmm(out_dtype=fp32) into fp32 grad_weight


def liger_chunks(bt: int, vocab: int, hidden: int) -> tuple[int, int]:
    """(rows per chunk, chunks) of Liger's fused linear cross-entropy over bt tokens.

    Liger-Kernel src/liger_kernel/ops/fused_linear_cross_entropy.py@03fd6032 lines 47-51
    (the same at ead96b61, lines 68-70): the increase factor is ⌈V / H⌉, the chunk is the
    power of two at or above ⌈BT / factor⌉ (triton.next_power_of_2), the chunks ⌈BT / chunk⌉:
    one chunk's logits are about the size of the hidden states."""
    factor = -(-vocab // hidden)
    rows = 1 << max(0, (-(-bt // factor)) - 1).bit_length()
    return rows, -(-bt // rows)


def liger_tokens(b: int, s: int, rel: tuple[int, int, int]) -> int:
    """Tokens the fused loss reads: before v0.5.6 the model forward shifts the hidden states
    (s − 1 positions per sequence, a contiguous copy); from it the labels are padded and
    every position is read."""
    return b * (s - 1 if rel < SHIFT_COPY_UNTIL else s)


def _accumulation(vocab: int, hidden: int, d: int, wd: int, rel: tuple[int, int, int]) -> int:
    """From v0.6.2 `grad_weight += mm(grad_logits.t(), input_chunk).float()`: a V × h product
    in the logits' dtype and, from 16 bits, its fp32 copy, once per chunk; from v0.8.1 an
    fp32 grad_weight over 16-bit logits takes `addmm(out_dtype=fp32, out=grad_weight)`
    instead (torch ≥ 2.8 on a GPU of compute capability ≥ 8, assumed), with no product.
    A frozen lm_head (`wd` 0) has no grad_weight."""
    if not wd or rel < MM_FLOAT_FROM or (rel >= ADDMM_OUT_FROM and wd == 4 and d < 4):
        return 0
    return (d + (4 if d < 4 else 0)) * vocab * hidden


def liger_chunk_bytes(c: int, vocab: int, hidden: int, d: int, wd: int,
                      rel: tuple[int, int, int]) -> tuple[int, str]:
    """One chunk's working set in the loss's forward (bytes, formula): c rows of logits in
    the compute dtype (d bytes) whose gradient the kernel writes in place, and what each
    release adds to it; `wd`: the bytes of the lm_head weight (and of grad_weight)."""
    V, h = fmt_int(vocab), fmt_int(hidden)
    if rel < FP32_CHUNK_UNTIL:
        # logits_chunk.float() then .to(dtype) with the fp32 copy alive (in fp32 compute
        # the two are the chunk itself, and the scaled gradient `logits_chunk * alpha` a
        # second one)
        return (4 + d) * c * vocab, f"(4 + {d}) B × {c} × {V} (the chunk's logits and " \
                                    "their fp32 copy)"
    mat = d * c * hidden                 # grad_input's chunk product before it is copied in
    if rel < SCALED_COPY_UNTIL:
        return 2 * d * c * vocab + mat, f"2 × {d} B × {c} × {V} + {d} B × {c} × {h} (the " \
                                        "chunk's logits, their scaled copy and the chunk " \
                                        "of grad_input)"
    acc = _accumulation(vocab, hidden, d, wd, rel)
    acc_text = f" + {acc // (vocab * hidden)} B × {V} × {h} (grad_weight's product" + (
        " and its fp32 copy)" if d < 4 else ")")
    return (d * c * vocab + max(mat, acc),
            f"{d} B × {c} × {V} (the chunk's logits, their gradient in place)"
            + (acc_text if acc > mat else f" + {d} B × {c} × {h} (the chunk of grad_input)"))


def liger_largest(c: int, vocab: int, hidden: int, d: int, wd: int,
                  rel: tuple[int, int, int]) -> tuple[int, str]:
    """The largest single tensor the fused loss allocates and frees (bytes, what)."""
    if rel < FP32_CHUNK_UNTIL:
        return 4 * c * vocab, f"one chunk's fp32 logits, 4 B × {c} × {fmt_int(vocab)}"
    chunk = (d * c * vocab, f"one chunk of logits, {d} B × {c} × {fmt_int(vocab)}")
    if rel >= SCALED_COPY_UNTIL and _accumulation(vocab, hidden, d, wd, rel):
        return max(chunk, (4 * vocab * hidden, f"grad_weight's fp32 product, 4 B × "
                                               f"{fmt_int(vocab)} × {fmt_int(hidden)}"))
    return chunk


def liger_loss_lines(b: int, s: int, vocab: int, hidden: int, d: int, hin: int, wd: int,
                     rel: tuple[int, int, int]) -> list[LedgerLine]:
    """Liger's fused linear cross-entropy for a micro-batch of b × s tokens: its forward
    computes the loss and both gradients chunk by chunk (no full logits), so the gradient
    of the hidden states (`hin` bytes, the final norm's output dtype) and the lm_head's
    weight gradient (`wd` bytes, the weight's dtype) exist from the loss's forward to the
    head's backward, which only rescales them; d: the compute dtype of the logits."""
    bt = liger_tokens(b, s, rel)
    c, n = liger_chunks(bt, vocab, hidden)
    cb, ctext = liger_chunk_bytes(c, vocab, hidden, d, wd, rel)
    toks = f"{b} × {fmt_int(s - 1) if bt != b * s else fmt_int(s)}"
    lines = [
        LedgerLine(key="activations", label="hidden-state gradient made in the loss's "
                   f"forward ({hin}-byte, kept to the final norm's backward)",
                   bytes=hin * bt * hidden, lifetime="logits",
                   formula=f"{hin} B × {toks} × {fmt_int(hidden)}",
                   note="Liger's fused linear cross-entropy computes the loss's gradients "
                        "in its forward; its backward only rescales them"),
        LedgerLine(key="activations", label=f"lm_head weight gradient made in the loss's "
                   f"forward ({wd}-byte, kept to the lm_head's backward)",
                   bytes=wd * vocab * hidden, lifetime="logits",
                   formula=f"{wd} B × {fmt_int(vocab)} × {fmt_int(hidden)}",
                   note="it becomes the lm_head's gradient in the backward"),
        LedgerLine(key="activations", label=f"one chunk of the fused loss's forward ({n} "
                   f"chunks of {c} tokens; transient) and the per-token fp32 loss",
                   bytes=cb + 4 * bt, lifetime="head",
                   formula=f"{ctext} + 4 B × {toks}",
                   note=f"chunk = 2^⌈log2 ⌈{fmt_int(bt)} / ⌈{fmt_int(vocab)} / "
                        f"{fmt_int(hidden)}⌉⌉⌉ = {c}; no full logits exist")]
    if rel < SHIFT_COPY_UNTIL:
        lines.append(LedgerLine(
            key="activations", label="shifted copy of the hidden states (the fused loss's "
            "input, transient)", bytes=hin * bt * hidden, lifetime="head",
            formula=f"{hin} B × {toks} × {fmt_int(hidden)}",
            note="hidden_states[..., :-1, :].contiguous() in the model's forward"))
    return lines
