"""The largest single pieces of a step: one layer's weights, one weight matrix, one tensor.

Case C of docs/ledger.md ("one layer does not fit") is about these: a huge-vocabulary
embedding or lm_head, a wide MLP matrix, the logits buffer, one layer's attention
scores. ZeRO-3 / FSDP also all-gather one wrapped unit (≈ one block) at a time, so the
largest block sizes their buffers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from preflight.physics.activations import attention_scores_bytes, logits_bytes
from preflight.physics.inputs import Inputs
from preflight.physics.mla import attention_params
from preflight.physics.moe import moe_block_params
from preflight.units import fmt_int


@dataclass(frozen=True)
class Piece:
    label: str
    bytes: int
    formula: str
    kind: str          # weight | activation


def block_params(family: str, h: int, f: Optional[int] = None, heads: Optional[int] = None,
                 kv_heads: Optional[int] = None) -> tuple[int, str]:
    """Parameters of one transformer block, with the formula.

    gpt2: attention 4h² + 4h (QKV and output with biases), MLP 2hf + f + h, 2 LayerNorms 4h.
    llama: Q and O h² each, K and V h·hk each (hk = kv_heads·h/heads), MLP 3hf, 2 RMSNorms 2h.
    """
    if family == "llama":
        f = f if f else 4 * h
        hk = h * (kv_heads or heads or 1) // (heads or 1) if heads else h
        n = 2 * h * h + 2 * h * hk + 3 * h * f + 2 * h
        return n, f"2·{fmt_int(h)}² + 2·{fmt_int(h)}·{fmt_int(hk)} + 3·{fmt_int(h)}·{fmt_int(f)} + 2·{fmt_int(h)}"
    f = f if f else 4 * h
    n = 4 * h * h + 4 * h + 2 * h * f + f + h + 4 * h
    return n, f"4·{fmt_int(h)}² + 2·{fmt_int(h)}·{fmt_int(f)} + {fmt_int(f)} + 9·{fmt_int(h)}"


def largest_unit_params(x: Inputs) -> tuple[Optional[int], str]:
    """The largest unit ZeRO-3 / FSDP gathers at once, assuming per-block wrapping:
    max(one block, the embedding); a mixture-of-experts block is gathered whole, every
    expert the rank holds with it (E/ep under expert parallelism `ep`, when it applies).
    A llama-family model's latent attention (`mla`) replaces llama's; an MoE model's dense
    blocks (DeepSeek's first layers) are a candidate too. Without shapes, params / layers
    is used (labelled)."""
    llama = x.family == "llama"
    family, params, layers, hidden, ffn = x.family, x.params, x.layers, x.hidden, x.ffn
    heads, kv_heads, vocab = x.heads, x.kv, x.vocab
    moe, mla = (x.moe, x.mla) if llama else (None, None)
    ep = x.expert_parallel if not x.ep_unknown else 1
    dense_layers = (x.layers or 0) - min(x.layers or 0, x.moe_layers or x.layers or 0)
    cands: list[tuple[int, str]] = []
    attn = attention_params(hidden, heads, mla) if hidden and heads and mla else None
    if hidden and moe is not None:
        n, f = moe_block_params(hidden, heads, kv_heads, moe, ep=ep, attention=attn)
        which = f"{moe.experts // ep} of {moe.experts} experts (ep {ep})" if ep > 1 else \
            f"all {moe.experts} experts"
        cands.append((n, f"one MoE block, {which}: {f}"))
        if dense_layers and ffn:
            if attn is not None:
                nd = attn[0] + 3 * hidden * ffn + 2 * hidden
                fd = f"{attn[1]} + 3·{fmt_int(hidden)}·{fmt_int(ffn)} + 2·{fmt_int(hidden)}"
            else:
                nd, fd = block_params("llama", hidden, ffn, heads, kv_heads)
            cands.append((nd, f"one dense block: {fd}"))
        if vocab:
            cands.append((vocab * hidden, f"embedding: {fmt_int(vocab)} × {fmt_int(hidden)}"))
    elif hidden:
        n, f = block_params(family, hidden, ffn, heads, kv_heads)
        cands.append((n, f"one block: {f}"))
        if vocab:
            cands.append((vocab * hidden, f"embedding: {fmt_int(vocab)} × {fmt_int(hidden)}"))
    elif params and layers:
        cands.append((-(-params // layers), f"≈ params / layers = {fmt_int(params)} / {layers}"))
    if not cands:
        return None, ""
    return max(cands)


def largest_pieces(x: Inputs, weight_bytes: int = 2, act_bytes: int = 2) -> list[Piece]:
    """The largest single tensors of the plan's model, biggest first (what case C compares
    with capacity): embedding / lm_head weight, the widest MLP weight, one block's weights,
    the fp32 logits buffer, one layer's materialised attention scores; weights of
    `weight_bytes`, activations of `act_bytes` per element."""
    family, hidden, ffn, heads, kv_heads = x.family, x.hidden, x.ffn_hidden, x.heads, x.kv
    vocab, micro_batch, seq_len, tp = x.vocab, x.micro_batch, x.seq_len, x.tp
    out: list[Piece] = []
    if hidden and vocab:
        out.append(Piece("embedding / lm_head weight", weight_bytes * vocab * hidden // tp,
                         f"{weight_bytes} B × {fmt_int(vocab)} × {fmt_int(hidden)}"
                         + (f" / {tp} (tp)" if tp > 1 else ""), "weight"))
    if hidden:
        f = ffn or 4 * hidden
        out.append(Piece("widest MLP weight", weight_bytes * f * hidden // tp,
                         f"{weight_bytes} B × {fmt_int(f)} × {fmt_int(hidden)}"
                         + (f" / {tp} (tp)" if tp > 1 else ""), "weight"))
        n, fml = block_params(family, hidden, ffn, heads, kv_heads)
        out.append(Piece("one block's weights", weight_bytes * n // tp,
                         f"{weight_bytes} B × ({fml})" + (f" / {tp} (tp)" if tp > 1 else ""),
                         "weight"))
    if micro_batch and seq_len and vocab and x.loss_kernel != "liger":
        # Liger's fused loss never makes the full logits (physics.loss.liger_loss_lines)
        out.append(Piece("logits buffer (fp32)", logits_bytes(micro_batch, seq_len, vocab, tp),
                         f"4 B × {micro_batch} × {fmt_int(seq_len)} × {fmt_int(vocab)}"
                         + (f" / {tp} (tp)" if tp > 1 else ""), "activation"))
    if micro_batch and seq_len and heads:
        out.append(Piece("one layer's attention scores (if materialised)",
                         attention_scores_bytes(micro_batch, heads, seq_len, act_bytes) // tp,
                         f"{micro_batch} × {heads} × {fmt_int(seq_len)}² × {act_bytes} B"
                         + (f" / {tp} (tp)" if tp > 1 else ""), "activation"))
    return sorted(out, key=lambda p: -p.bytes)
