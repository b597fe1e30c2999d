"""Mixture of experts: what one MoE MLP saves for backward, in place of the dense MLP.

Notation as in `activations`: s·b tokens, h hidden, d bytes per activation element; E
routed experts per layer, k experts per token (top-k), fe one expert's MLP width, fs the
shared experts' width (Qwen-MoE, DeepSeek; 0 for Mixtral).

A token's hidden state goes to k of the E experts, so the expert MLPs' saved tensors scale
with k, never with E: every (token, chosen expert) pair is one row of the dispatched batch,
s·b·k rows in all whatever the routing. The experts' weights are all resident (the ledger's
states count every expert); only the activations and the FLOPs follow k.

transformers ≥ 5 (Mixtral, Qwen2-MoE) holds each layer's experts as two fused 3-D
parameters and runs them with `grouped_mm` (its default experts implementation): the
router's linear saves the normalised hidden state (already the dense table's "MLP input"),
then, per token:

    router      softmax probabilities in fp32                         4·E
                top-k expert indices (int64)                           8·k
                renormalised top-k weights and their sum (fp32; Mixtral and others that
                renormalise, `norm_topk_prob`)                         4·k + 4
    dispatch    sort permutation, source token of each row, gather index (int64)
                                                                       3 · 8·k
                the experts' group offsets (int32), once per layer     4·E / (s·b)
    experts     dispatched inputs d·k·h, gate+up output 2·d·k·fe (one tensor, the gate
                and up halves are views of it), SiLU output d·k·fe, SwiGLU product d·k·fe,
                down-projection output d·k·h (kept for the routing-weight product)
                                                                       d·k·(2h + 4·fe)
                routing weights in row order: fp32 where the router keeps them so
                (Mixtral), else cast to the compute dtype (Qwen-MoE)   4·k or d·k
    shared      (Qwen-MoE) a dense SwiGLU MLP over every token, 4·d·fs, its sigmoid gate
                d and the shared output it scales d·h; (DeepSeek) the MLP alone, ungated

DeepSeek-V2 / V3 route in fp32: in 16-bit compute the router copies its input (4·h) and
its weight (4·E·h once per layer; none when from_pretrained kept the router fp32); the
routing weights stay fp32. Group-limited routing (V3; V2's group_limited_greedy) picks
topk_group of n_group expert groups: those selections feed only indices, so autograd frees
what they saved as soon as the router returns; V2 then masks the scores it takes the top-k
values from, which keeps a 1-byte mask over the E experts. V3 takes only indices from its
masked scores and gathers the weights from the sigmoid output (nothing kept but those).
V2 never renormalises the top-k (its config's norm_topk_prob is not read).

Mixtral-style per token: 4E + 4 + 40k + d·k·(2h + 4·fe) bytes (+ 4E per layer). Checked
against autograd on CPU (tests/test_moe.py): tiny Mixtral, fp32 and bf16, E ∈ {4, 8},
k ∈ {1, 2}, to the byte.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Optional, Union

from preflight.physics.saved import Saved


@dataclass(frozen=True)
class MoE:
    """The shape of one mixture-of-experts MLP."""

    experts: int
    top_k: int
    ffn: int                    # one routed expert's MLP width
    shared_ffn: int = 0         # the shared experts' MLP width (0: none)
    norm_topk: bool = True      # the top-k probabilities are renormalised
    weights_f32: bool = True    # routing weights reach the experts in fp32
    #: DeepSeek: the router upcasts its input and weight to fp32 (copies when the model is
    #: 16-bit); V2's group_limited_greedy masks the scores of the groups not chosen (a
    #: 1-byte mask over E kept for backward)
    router_upcast: bool = False
    group_mask: bool = False
    #: Qwen-MoE gates its shared expert with a sigmoid; DeepSeek adds it ungated
    shared_gate: bool = True
    #: Llama 4: every expert runs over every token (the top-k scores kept, the others
    #: zero), so the experts' tensors scale with E, not k
    dense_dispatch: bool = False
    #: gpt-oss: the router softmaxes its top-k logits in the compute dtype, and the experts
    #: run a clamped SwiGLU (`oss_saved`)
    topk_softmax: bool = False

    @property
    def label(self) -> str:
        shared = f", shared experts {self.shared_ffn:,} wide" if self.shared_ffn else ""
        return f"MoE: {self.top_k} of {self.experts} experts per token{shared}"


#: the symbols the MoE table adds to `Shape.value` ('E/sb', 'Eh/sb': once per layer, as a
#: share of a token)
SYMBOLS = ("k·h", "k·fe", "fs", "E", "k", "E/sb", "Eh/sb", "E·h", "E·fe")


def symbol_value(m: MoE, s: int, b: int, h: int, sym: str) -> Union[int, Fraction]:
    return {"k·h": m.top_k * h, "k·fe": m.top_k * m.ffn, "fs": m.shared_ffn,
            "E·h": m.experts * h, "E·fe": m.experts * m.ffn,
            "E": m.experts, "k": m.top_k, "E/sb": Fraction(m.experts, s * b),
            "Eh/sb": Fraction(m.experts * h, s * b)}[sym]


def moe_block_params(h: int, heads: Optional[int], kv_heads: Optional[int],
                     m: MoE, ep: int = 1,
                     attention: Optional[tuple[int, str]] = None) -> tuple[int, str]:
    """Parameters of one MoE block — what ZeRO-3 / FSDP gather as one unit (a wrapped
    decoder layer holds its router and every expert it holds, whichever a token uses):
    attention 2h² + 2h·hk (or `attention`, counted elsewhere: latent attention), 2 RMSNorms
    2h, router h·E, the rank's E/ep experts 3·h·fe (expert parallelism `ep` leaves a rank
    E/ep of each layer's experts to gather), shared experts 3·h·fs (+ h for Qwen's gate)."""
    if attention is None:
        hk = h * (kv_heads or heads or 1) // (heads or 1) if heads else h
        attention = (2 * h * h + 2 * h * hk, f"2·{h:,}² + 2·{h:,}·{hk:,}")
    local = m.experts // max(ep, 1)
    n = attention[0] + 2 * h + h * m.experts + local * 3 * h * m.ffn
    experts = f"{m.experts}/{ep}" if ep > 1 else f"{m.experts}"
    text = f"{attention[1]} + 2·{h:,} + {h:,}·{m.experts} + {experts}·3·{h:,}·{m.ffn:,}"
    if m.shared_ffn:
        n += 3 * h * m.shared_ffn + (h if m.shared_gate else 0)
        text += f" + 3·{h:,}·{m.shared_ffn:,}" + (f" + {h:,}" if m.shared_gate else "")
    return n, text


def dense_dispatch_saved(m: MoE) -> list[Saved]:
    """Llama 4's MoE MLP: the router's top-k indices and the sigmoid of its scores (fp32,
    -inf outside the top k), the scores laid out as a column (a copy), every token repeated
    once per expert and scaled by its score, then each expert's SwiGLU over all s·b·E rows
    (gate_up output, SiLU output, product); the shared expert as a dense SwiGLU, ungated."""
    t = [Saved("top-k expert indices (int64)", "k", kind="i64", tp=False),
         Saved("router scores (fp32 sigmoid, zero outside the top k)", "E", kind="f32",
               tp=False),
         Saved("router scores as a column (a copy)", "E", tp=False),
         Saved("every token repeated once per expert", "E·h", tp=False),
         Saved("expert inputs scaled by their scores", "E·h", tp=False),
         Saved("expert gate and up outputs (one tensor)", "E·fe", mult=2),
         Saved("expert SiLU output", "E·fe"),
         Saved("expert SwiGLU product (down input)", "E·fe")]
    if m.shared_ffn:
        t.append(Saved("shared expert: gate, SiLU, up outputs and product", "fs", mult=4))
    return t


def oss_saved() -> list[Saved]:
    """gpt-oss's MoE MLP (transformers' grouped_mm experts): the top-k indices and the
    softmax of the top-k logits (compute dtype), four int64 dispatch indices per row, the
    group offsets, the dispatched inputs, the gate_up output, the clamped SwiGLU's clamped
    gate, its sigmoid, their product and up + 1, the product (down input), the routing
    weights in row order (compute dtype) and the expert outputs."""
    return [Saved("top-k expert indices (int64)", "k", kind="i64", tp=False),
            Saved("softmax of the top-k router logits", "k", tp=False),
            Saved("dispatch indices (int64)", "k", mult=4, kind="i64", tp=False),
            Saved("experts' group offsets (int32, once per layer)", "E/sb", kind="f32",
                  tp=False),
            Saved("dispatched expert inputs", "k·h", tp=False),
            Saved("expert gate_up outputs", "k·fe", mult=2),
            Saved("clamped gate, its sigmoid, their product, up + 1", "k·fe", mult=4),
            Saved("clamped SwiGLU output (down input)", "k·fe"),
            Saved("routing weights in row order", "k", tp=False),
            Saved("expert outputs (scaled by the routing weights)", "k·h", tp=False)]


def moe_mlp_saved(m: MoE) -> list[Saved]:
    """The MoE MLP's saved tensors (the router's input is the dense table's "MLP input")."""
    if m.dense_dispatch:
        return dense_dispatch_saved(m)
    if m.topk_softmax:
        return oss_saved()
    t: list[Saved] = []
    if m.router_upcast:
        # DeepSeek's router runs in fp32: the 16-bit MLP input and router weight are copied
        # (a model loaded by from_pretrained keeps the router weight fp32: no weight copy)
        t += [Saved("router input, fp32 copy", "h", kind="f32copy", tp=False),
              Saved("router weight, fp32 copy (once per layer)", "Eh/sb", kind="f32copy",
                    tp=False)]
    t += [Saved("router scores (fp32 softmax or sigmoid)", "E", kind="f32", tp=False),
          Saved("top-k expert indices (int64)", "k", kind="i64", tp=False)]
    if m.group_mask:
        t.append(Saved("group-limited routing: mask of the experts not chosen (bool)", "E",
                       kind="mask", tp=False))
    if m.norm_topk:
        t += [Saved("sum of the top-k probabilities (fp32)", "1", kind="f32", tp=False),
              Saved("renormalised top-k weights (fp32)", "k", kind="f32", tp=False)]
    t += [Saved("dispatch indices: sort permutation, source token, gather index (int64)", "k",
                mult=3, kind="i64", tp=False),
          Saved("experts' group offsets (int32, once per layer)", "E/sb", kind="f32",
                tp=False),
          Saved("dispatched expert inputs (a row per token and chosen expert)", "k·h",
                tp=False),
          Saved("expert gate and up outputs (one tensor)", "k·fe", mult=2),
          Saved("expert SiLU output", "k·fe"),
          Saved("expert SwiGLU product (down_proj input)", "k·fe"),
          Saved("expert outputs (scaled by the routing weights)", "k·h", tp=False),
          Saved("routing weights in row order", "k", kind="f32" if m.weights_f32 else "act",
                tp=False)]
    if m.shared_ffn:
        t.append(Saved("shared experts: gate, SiLU, up outputs and product", "fs", mult=4))
    if m.shared_ffn and m.shared_gate:
        t += [Saved("shared-expert gate (sigmoid output)", "1"),
              Saved("shared-expert output (scaled by its gate)", "h", tp=False)]
    return t
