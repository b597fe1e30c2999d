"""What sets one GPT-style layer of transformers apart from GPT-2's, for the gpt2
activation table of `activations`: the MLP's activation, an fp32 softmax in eager
attention, a parallel attention + MLP block, a rotation applied by concatenation, a fused
V kept whole (the decoders, and ModernBERT's pre-norm encoder layer).

`DECODERS` maps `model_type` to its `Decoder`; each listed one is checked against the
storages autograd saves on CPU (tests/test_families_decoders_saved.py):

act "relu" (OPT) — ReLU's output is what its backward and fc2 both keep: one f-wide
    tensor where GELU keeps its input and fc2 its output. "gelu_new" (Phi): the tanh
    GELU in Python ops, three more f-wide tensors (as transformers' GPT-2).
softmax_f32 (OPT, BLOOM, GPT-NeoX, Phi) — eager attention takes the softmax in fp32 and
    casts the probabilities back: 4 bytes per score, and the 16-bit copy the V matmul
    reads (as under autocast).
parallel 2 (GPT-NeoX) — attention and MLP read two LayerNorms of the same layer input: the
    second norm's input is the first's. parallel 1 (Phi) — one LayerNorm feeds both: its
    output is q/k/v's and fc1's input, one tensor, and there is no second norm.
rotary_cat (GPT-NeoX, Phi) — the rotation of a slice of each head is concatenated with the
    rest, so Q is a new (b, heads, s, d) tensor; sdpa's output follows that layout, and
    the dense projection reads a re-laid-out copy of it: one more h-wide tensor.
act "geglu" (ModernBERT) — Wi makes the GELU's input and the gate in one tensor (2f), then
    the GELU's output and the product (Wo's input): 4f, as a SwiGLU.
fused_v (ModernBERT) — V is a view of the fused Wqkv output, so sdpa keeping V keeps all
    of it (3h where a separate V is h); eager attention's copies do not.
qkv_linears 3 (OPT, Phi, StarCoder 2) — separate q, k and v projections: under autocast
    each casts the (fp32) norm output to 16 bits on its own, three copies where GPT-2's
    fused c_attn makes one (Phi's fc1, reading the same norm, a fourth).
StarCoder 2 is GPT-2's layer with separate q/k/v projections, an fp32 eager softmax and
    llama's rotation (no concatenation); its grouped KV heads keep K and V k · head_dim
    wide under sdpa (the table's `hk`), repeated to every head in eager attention.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class Decoder:
    act: str = "gelu"              # "gelu" (the Variant's gelu) | "relu" | "gelu_new" | "geglu"
    softmax_f32: bool = False
    parallel: int = 0              # 0: sequential; 1: one shared LayerNorm; 2: two norms
    rotary_cat: bool = False
    qkv_linears: int = 1           # 3: separate q, k, v projections
    fused_v: bool = False


GPT2 = Decoder()

#: model_type → its layer's traits (a gpt2-block type absent here is GPT-2's layer)
DECODERS: dict[str, Decoder] = {
    "opt": Decoder(act="relu", softmax_f32=True, qkv_linears=3),
    "bloom": Decoder(softmax_f32=True),
    "gpt_neox": Decoder(softmax_f32=True, parallel=2, rotary_cat=True),
    "modernbert": Decoder(act="geglu", softmax_f32=True, fused_v=True),
    "phi": Decoder(act="gelu_new", softmax_f32=True, parallel=1, rotary_cat=True,
                   qkv_linears=3),
    "starcoder2": Decoder(softmax_f32=True, qkv_linears=3),
}


def decoder_of(model_type: Optional[str]) -> Decoder:
    """The decoder traits of a transformers `model_type` (GPT-2's when not listed)."""
    return DECODERS.get(model_type or "", GPT2)
