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
