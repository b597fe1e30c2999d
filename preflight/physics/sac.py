"""Op-level selective activation checkpointing (`selective_op`): what a layer keeps when its
block is checkpointed with a policy that saves the outputs of chosen ops and recomputes
the rest — torchtitan's `[activation_checkpoint] mode = "selective"` with
`selective_ac_option = "op"`.

The policy, as torchtitan writes it (torchtitan/parallelisms/parallelize_llama.py at
9dec370, `_save_list` and `_apply_ac_to_transformer_block`; the same at e7c0cae in
torchtitan/models/llama3/parallelize_llama.py, less `aten.abs`): each transformer block is
wrapped in non-reentrant `torch.utils.checkpoint` with
`context_fn = create_selective_checkpoint_contexts(policy)`, `preserve_rng_state=False`.
The policy says MUST_SAVE for the outputs of `aten.mm`, `aten._scaled_dot_product_flash_
attention`, `aten._scaled_dot_product_efficient_attention` and `_c10d_functional.
reduce_scatter_tensor` (and `aten.abs` / `aten.max`, for float8's scales) — except every
second `aten.mm` of a block's forward (a counter per forward, another per recompute) —
and PREFER_RECOMPUTE for every other op.

What one layer keeps until its backward (per token, d bytes per 16-bit element):

    the block input (the checkpoint's argument)   d·h  (fp32 under autocast: 4·h)
    the outputs of the 1st, 3rd, 5th and 7th mm   d·(q + hk + f + h)
    the attention kernel's output and log-sum-exp d·q + 4·a

A Linear without a bias applied to a (b, s, h) input is one `aten.mm` (with a bias it is
`aten.addmm`, not on the list). The llama block's linears run in the order q, k, v, o,
gate, up, down (torchtitan's wq, wk, wv, wo, w1, w3, w2: `w2(silu(w1(x)) * w3(x))`), so
q_proj's (q = heads·head_dim), v_proj's (hk = kv_heads·head_dim), gate_proj's (f) and
down_proj's (h) outputs are kept; k_proj's, o_proj's and up_proj's are recomputed. The
flash kernel's two RNG scalars (8 B each, per layer, not per token) are left out.

The backward of a layer runs its block's forward again, and autograd saves what it saves
without checkpointing (the table of `activations`), the kept outputs standing in for the
ops that made them: V (a view of v_proj's output), the kernel's output and log-sum-exp,
the SiLU input (gate_proj's output) and — where the first norm saves the block input
itself (fp32 compute, autocast) — the input are the same storages as kept ones. q_proj's
output is read once by the rotary and dropped during the recompute; down_proj's stays
until the layer's backward ends (the recompute stops once its last saved tensor, down_proj's
input, exists, before that mm runs again; torchtitan's newest `SelectiveAC` turns early stop
off, so there it is freed during the recompute). Checked against the storages alive after
a block's forward and the live-storage peak on CPU (the recompute's peak misses it by the
same bytes as full checkpointing's, to the byte), with
`aten._scaled_dot_product_flash_attention_for_cpu` standing in for the CUDA kernels
(tests/test_estimate_sac.py).

Modelled for the llama family's plain layer (Llama, Mistral: no linear biases, unfused
projections, pre-norms only) under sdpa without tensor parallelism, a frozen base or a
mixture of experts; `not_modelled` says why not otherwise.
"""

from __future__ import annotations

from preflight.facts.names import SELECTIVE_OP
from preflight.physics.saved import Saved, Symbols, kind_bytes

#: the checkpointing spelling this module sizes (preflight.facts.names.CHECKPOINTING)
MODE = SELECTIVE_OP

#: transformers model_types whose layer is llama's plain one with no linear bias (Qwen2's
#: q/k/v biases make those linears `addmm`, which shifts the mm count)
BIAS_FREE = ("llama", "mistral")

#: what becomes of a kept tensor when its layer is recomputed: "shared" — autograd's
#: recomputed saved tensors include it (the same storage); "consumed" — read by the
#: recompute and freed; "kept" — alive until the layer's backward ends
FATES = ("shared", "consumed", "kept")


def kept_tensors(d: int, autocast: bool) -> list[tuple[Saved, str]]:
    """The tensors one llama layer keeps under op-level selective checkpointing, with their
    fate in the recompute (`FATES`). `d`: bytes per activation element."""
    inp = "shared" if d >= 4 or autocast else "kept"
    return [(Saved("block input (the checkpoint's argument)", "h",
                   kind="f32" if autocast else "act", tp=False), inp),
            (Saved("q_proj output (1st mm)", "q"), "consumed"),
            (Saved("v_proj output (3rd mm)", "hk"), "shared"),
            (Saved("attention kernel output", "q"), "shared"),
            (Saved("attention log-sum-exp (fp32)", "a", kind="f32"), "shared"),
            (Saved("gate_proj output (5th mm)", "f"), "shared"),
            (Saved("down_proj output (7th mm)", "h", tp=False), "kept")]


def fate_bytes(x: Symbols, d: int, autocast: bool, tokens: int,
               fates: tuple[str, ...]) -> tuple[int, str]:
    """The bytes of the kept tensors whose fate is one of `fates`, and their names."""
    rows = [(e, f) for e, f in kept_tensors(d, autocast) if f in fates]
    total = sum(e.elems(x) * kind_bytes(e.kind, d) * tokens for e, _ in rows)
    return int(total), ", ".join(e.name for e, _ in rows)


def not_modelled(x) -> str:
    """Why op-level selective checkpointing is not sized for the plan's layers ("" when it
    is). `x`: the estimator's Inputs."""
    if x.family != "llama" or x.block != "llama":
        return ("op-level selective checkpointing is modelled for llama-style blocks only "
                "(the GPT and BERT blocks' linears have biases: `addmm`, not on the policy's "
                "list)")
    if x.model_type not in (None,) + BIAS_FREE:
        return (f"op-level selective checkpointing is modelled for {', '.join(BIAS_FREE)} "
                f"layers (no linear bias, unfused projections), not {x.model_type}")
    if x.attention != "sdpa":
        return (f"op-level selective checkpointing is modelled with sdpa (the flash / "
                f"efficient kernels the policy saves), not {x.attention}")
    why = _other(x)
    return f"op-level selective checkpointing is not modelled {why}" if why else ""


def _other(x) -> str:
    if x.tp > 1:
        return ("under tensor parallelism (the reduce-scatter outputs and row-parallel "
                "partial sums it keeps)")
    if x.lora:
        return "with LoRA adapters (their matmuls shift the mm count)"
    if x.experts or x.mla is not None or x.llama4_layers or x.attention_sinks:
        return "for a mixture of experts, latent attention, Llama 4 or attention sinks"
    if x.layer_stack is not None:
        return "for a custom layer stack"
    return ""


def recompute_less(x: Symbols, d: int, autocast: bool, tokens: int) -> tuple[int, str]:
    """What a recomputed layer's working set does not add to its kept tensors: the kept
    tensors autograd saves again (shared) and those the recompute reads and frees."""
    return fate_bytes(x, d, autocast, tokens, ("shared", "consumed"))



def recomputed_mm_params(x) -> tuple[int, str]:
    """The weights of the matmuls the backward runs again, per layer times the layers:
    k_proj, o_proj and up_proj (mm 2, 4, 6), L·(h·hk + q·h + h·f); (0, "") when the plan's
    layers are not modelled or a shape is missing. `x`: the estimator's Inputs."""
    if not_modelled(x) or None in (x.layers, x.hidden, x.heads, x.ffn_hidden):
        return 0, ""
    dims = x.attention_dims if isinstance(x.attention_dims, dict) else {}
    hd = int(dims.get("head_dim") or x.hidden // x.heads)
    q, hk = x.heads * hd, (x.kv_heads or x.heads) * hd
    n = x.layers * (x.hidden * hk + q * x.hidden + x.hidden * x.ffn_hidden)
    return n, (f"{x.layers} × ({x.hidden:,}×{hk:,} + {q:,}×{x.hidden:,} + "
               f"{x.hidden:,}×{x.ffn_hidden:,})")
