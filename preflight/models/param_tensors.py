"""The parameter tensors of a catalogue model, as the `catalogue_tensors` fact: how many
tensors its architecture has (torch.optim keeps a `step` count per tensor), with the
parameter count they belong to, or why they are not known.

The estimator (`preflight.physics`) reads the numbers; the name is looked up here, where
the plan is built (`preflight.assemble`, `preflight.estimate`).
"""

from __future__ import annotations

from typing import Any, Optional

from preflight.facts.names import read_value
from preflight.models.catalog import lookup
from preflight.models.formulas import count, normalise_arch
from preflight.plan import Fact, Origin, TrainingPlan
from preflight.units import fmt_int

#: Parameter tensors outside the linear layers, per architecture: (per block, outside the
#: blocks). The linear layers come from the models package's shape (one weight each, plus a
#: bias where it has one). llama-like: input and post-attention RMSNorm weights per block;
#: the token embedding and the final norm. qwen3 adds q_norm and k_norm, gemma2 two more
#: norms per block, gemma3_text both; olmo2 and olmo3 norms after attention and MLP (none
#: before) and q_norm, k_norm; mixtral a router weight. gpt2: ln_1 and ln_2 (weight and bias) per
#: block; wte, wpe and ln_f (weight and bias).
_OTHER_TENSORS = {
    "llama": (2, 2), "mistral": (2, 2), "qwen2": (2, 2), "phi3": (2, 2), "gemma": (2, 2),
    "qwen3": (4, 2), "gemma2": (4, 2), "gemma3_text": (6, 2), "olmo2": (4, 2),
    "olmo3": (4, 2), "mixtral": (3, 2),
    "gpt2": (4, 4),
}


def catalogue_tensors(model: Any) -> dict[str, Any]:
    """The `catalogue_tensors` value of a model name: {"model", "params", "tensors", "how"}
    for a catalogue model whose architecture's tensors are modelled — its linear layers (a
    weight each, and a bias where it has one) from the models package's shape, plus the
    norms and embeddings of the architecture (`_OTHER_TENSORS`) — else {"model",
    "unknown": why}."""
    try:
        hit = lookup(str(model))
        if hit is None:
            return {"model": model, "unknown": f"{model} is not in the model catalogue"}
        arch = normalise_arch(hit[0])
        if arch not in _OTHER_TENSORS:
            return {"model": model,
                    "unknown": f"parameter tensors of {hit[0]} models are not modelled"}
        shape = count(arch, hit[1])
    except Exception:  # noqa: BLE001 - a name or config the models package cannot read
        return {"model": model, "unknown": "the model's shape is not known"}
    per_block, outside = _OTHER_TENSORS[arch]
    linear = sum(lin.count * (2 if lin.bias else 1) for lin in shape.linears)
    other = per_block * shape.layers + outside
    return {"model": model, "params": shape.params, "tensors": linear + other,
            "how": (f"{fmt_int(linear)} linear weights and biases + "
                    f"{per_block}×{shape.layers} + {outside} norm / embedding tensors "
                    f"({shape.arch or arch})")}


def catalogue_tensor_fact(plan: TrainingPlan) -> Optional[Fact]:
    """The `catalogue_tensors` fact for the plan's `model` (None: no model named, or the
    plan already carries the fact for that model)."""
    model = read_value(plan, "model")
    if not model:
        return None
    have = plan.value("catalogue_tensors")
    if isinstance(have, dict) and have.get("model") == model:
        return None
    return Fact(value=catalogue_tensors(model), origin=Origin.DERIVED,
                reason=f"{model}: the catalogue's architecture")


def with_catalogue_tensors(plan: TrainingPlan) -> TrainingPlan:
    """The plan with its model's `catalogue_tensors` fact (the same plan when it has it,
    or names no model)."""
    fact = catalogue_tensor_fact(plan)
    if fact is None:
        return plan
    facts = dict(plan.facts)
    facts["catalogue_tensors"] = fact
    return TrainingPlan(facts=facts, candidates=plan.candidates)
