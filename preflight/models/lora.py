"""LoRA / QLoRA: trainable adapter parameters and the bytes of the frozen base, counted on a
model's shape.

LoRA replaces a targeted linear W (in → out) by W + B·A with A: r×in and B: out×r, so each
targeted layer adds r·(in + out) trainable parameters (`bias="none"`, peft's default).
`modules_to_save` are trained in full (peft keeps a trainable copy beside the original).

Which linears `targets` match and the frozen base's storage per bit width
(`base_weight_bytes`) are the estimator's arithmetic, `preflight.physics.lora`, applied here
to the shape's linear layers.
"""

from __future__ import annotations

from typing import Any, Iterable, Optional

from preflight.models.shape import Linear, ModelShape
from preflight.physics.lora import (OUTPUT_NAMES, Targets, name_matches, normalise_targets,
                                    quantised_base_bytes)

#: peft's default `target_modules` per model_type (when LoraConfig names none).
DEFAULT_TARGETS: dict[str, list[str]] = {
    "llama": ["q_proj", "v_proj"], "mistral": ["q_proj", "v_proj"],
    "mixtral": ["q_proj", "v_proj"], "qwen2": ["q_proj", "v_proj"],
    "qwen3": ["q_proj", "v_proj"], "gemma": ["q_proj", "v_proj"],
    "gemma2": ["q_proj", "v_proj"], "gemma3_text": ["q_proj", "v_proj"],
    "gemma3": ["q_proj", "v_proj"], "olmo2": ["q_proj", "v_proj"],
    "phi": ["q_proj", "v_proj", "fc1", "fc2"], "stablelm": ["q_proj", "v_proj"],
    "gpt2": ["c_attn"], "gpt_neox": ["query_key_value"], "opt": ["q_proj", "v_proj"],
    "falcon": ["query_key_value"], "bloom": ["query_key_value"], "bert": ["query", "value"],
    "roberta": ["query", "value"], "t5": ["q", "v"],
}

_EMBED = {"embed_tokens", "wte", "word_embeddings", "embed_in", "shared", "tok_embeddings"}


def default_targets(arch: str) -> Optional[list[str]]:
    return list(DEFAULT_TARGETS[arch]) if arch in DEFAULT_TARGETS else None


def _matches(lin: Linear, targets: Targets) -> bool:
    return name_matches(lin.name, targets)


def trainable_params(shape: ModelShape, r: int, targets: Targets,
                     modules_to_save: Iterable[str] = ()) -> tuple[int, int, list[str]]:
    """(adapter params, modules_to_save params, unknown pieces) for LoRA rank `r`.

    Matching follows peft: a list entry matches a module whose name ends in it;
    `"all-linear"` is every linear layer but the output head; a plain string is a regex.
    MoE experts held as fused parameters (transformers ≥ 5) are not linear modules and
    are never targeted.
    """
    targets = normalise_targets(targets)
    unknown: list[str] = []
    adapters = sum(dims[0] * dims[1] * n for dims, n in adapter_shapes(shape, r, targets))
    matched = {lin.name for lin in shape.linears
               if not lin.expert and _matches(lin, targets)}
    if isinstance(targets, list):
        for t in targets:
            if t.rsplit(".", 1)[-1] not in matched:
                unknown.append(f"LoRA target {t!r} matches no linear layer of {shape.arch}")
    saved = 0
    for m in modules_to_save or ():
        leaf = m.rsplit(".", 1)[-1]
        if leaf in OUTPUT_NAMES or leaf in _EMBED:
            saved += shape.vocab * shape.hidden
            if leaf in OUTPUT_NAMES and shape.arch == "phi":
                saved += shape.vocab                           # phi's lm_head has a bias
            continue
        lins = [x for x in shape.linears if x.name == leaf and not x.in_block]
        if lins:
            saved += sum(x.weight_params + (x.out_features * x.count if x.bias else 0)
                         for x in lins)
        else:
            unknown.append(f"modules_to_save entry {m!r} not sized")
    return adapters, saved, unknown


def adapter_shapes(shape: ModelShape, r: int,
                   targets: Targets) -> list[tuple[tuple[int, int], int]]:
    """The adapter tensors peft adds, as (shape, how many): lora_A.weight (r, in) and
    lora_B.weight (out, r) on every linear layer `targets` match (no bias)."""
    targets = normalise_targets(targets)
    out: list[tuple[tuple[int, int], int]] = []
    for lin in shape.linears:
        if lin.expert or not _matches(lin, targets):
            continue
        out += [((r, lin.in_features), lin.count), ((lin.out_features, r), lin.count)]
    return out


def lora_counts(shape: ModelShape, lora: dict[str, Any]) -> dict[str, Any]:
    """params (base + adapters + saved copies, as peft counts them), trainable_params."""
    targets = lora.get("targets")
    if targets in (None, [], ""):
        targets = default_targets(shape.arch)
    if targets is None:
        return {"params": None, "trainable_params": None,
                "unknown": [f"no default LoRA targets for {shape.arch}; name target_modules"]}
    adapters, saved, unknown = trainable_params(shape, int(lora["r"]), targets,
                                                lora.get("modules_to_save") or ())
    trainable = adapters + saved
    if lora.get("train_untargeted"):
        # LoRA layers that freeze only the weights they wrap (DeepSpeed-Chat without
        # --only_optimize_lora): every other parameter — embeddings, head, norms, biases —
        # still trains
        trainable += shape.params - frozen_weights(shape, targets)
    # the trainable tensors' shapes when they are the adapters alone
    shapes = None if saved or lora.get("train_untargeted") else \
        adapter_shapes(shape, int(lora["r"]), targets)
    return {"params": shape.params + adapters + saved, "trainable_params": trainable,
            "adapters": adapters, "saved": saved, "targets": targets, "unknown": unknown,
            "trainable_shapes": shapes}


def frozen_weights(shape: ModelShape, targets: Targets) -> int:
    """The weights of the linear layers LoRA `targets` wrap (their biases excluded)."""
    targets = normalise_targets(targets)
    return sum(lin.weight_params for lin in shape.linears
               if not lin.expert and _matches(lin, targets))


def base_weight_bytes(shape: ModelShape, base_bits: int, *, double_quant: bool = True,
                      other_bytes: int = 2, blocksize: int = 64) -> tuple[int, str]:
    """Bytes of the frozen base model stored at `base_bits` (4, 8 or 16), with the formula:
    the blocks' linear weights quantised (`physics.lora.quantised_base_bytes`)."""
    q = sum(x.weight_params for x in shape.linears if x.in_block)
    rows = sum(x.out_features * x.count for x in shape.linears if x.in_block)
    return quantised_base_bytes(shape.params, q, rows, base_bits, double_quant=double_quant,
                                other_bytes=other_bytes, blocksize=blocksize)
