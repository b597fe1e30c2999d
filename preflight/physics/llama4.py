"""Llama 4's layers as the activation tables see them: four kinds, by whether the layer
rotates and L2-normalises q and k ("l2") or runs without RoPE with temperature-scaled
queries ("temperature"), and whether its MLP is the mixture of experts or dense.

The `llama4_layers` fact (from `models.families.llama4`) holds the count of each kind,
the chunk size of the RoPE layers' chunked attention and the two switches the tables
were measured with (`use_qk_norm`, `attn_temperature_tuning`). The tables themselves are
`activations.llama4_attention` and `moe.dense_dispatch_saved`; checked against autograd on
CPU (tests/test_llama4.py) in fp32 and bf16, sdpa and eager, to the byte.
"""

from __future__ import annotations

from typing import Optional

#: (the attention kind, the MLP is the mixture of experts, the fact's key)
KINDS = (("l2", True, "l2_moe"), ("l2", False, "l2_dense"),
         ("temperature", True, "nope_moe"), ("temperature", False, "nope_dense"))


def layer_kinds(fact: dict) -> list[tuple[str, bool, int]]:
    """The kinds of layer the model has, with their counts (none left out)."""
    return [(kind, moe, int(fact.get(key) or 0)) for kind, moe, key in KINDS
            if int(fact.get(key) or 0) > 0]


def not_modelled(fact: dict, seq_len: Optional[int], autocast: bool,
                 attention: Optional[str]) -> str:
    """Why the tables do not give this run's layers ("" when they do)."""
    if autocast:
        return "Llama 4's layers are modelled in 16-bit and fp32 compute, not under autocast"
    if attention not in ("sdpa", "flash", "eager"):
        return f"Llama 4's layers are modelled for sdpa, flash and eager, not {attention}"
    if not fact.get("qk_norm") or not fact.get("temperature"):
        return ("Llama 4's layers are modelled with use_qk_norm and attn_temperature_tuning "
                "on (the published checkpoints' settings)")
    chunk = int(fact.get("chunk") or 0)
    if chunk and seq_len is not None and seq_len >= chunk:
        # shorter sequences run unmasked causal attention (measured); from one chunk on,
        # transformers builds the chunked mask
        return (f"chunked attention over {seq_len:,} tokens (chunks of {chunk:,}) is not "
                f"modelled; sequences shorter than a chunk are")
    return ""
