"""LoRA / QLoRA: trainable adapter parameters and the bytes of the frozen base.

LoRA replaces a targeted linear W (in → out) by W + B·A with A: r×in and B: out×r, so each
targeted layer adds r·(in + out) trainable parameters (`bias="none"`, peft's default).
`modules_to_save` are trained in full (peft keeps a trainable copy beside the original).

Frozen-base storage (`base_weight_bytes`):
- 16 bits: 2 bytes per parameter.
- 8 bits (LLM.int8, bitsandbytes `Int8Params`): 1 byte per weight of every quantised
  linear plus one fp32 scale per output row (`SCB`).
- 4 bits (QLoRA NF4/FP4, bitsandbytes `Params4bit`, blocksize 64): 0.5 byte per weight plus
  the quantisation constants: one absmax per 64 weights — fp32 (4 bytes) without double
  quantisation, or 8-bit (1 byte) with double quantisation plus one fp32 per 256 absmax
  blocks (4 bytes per 16,384 weights). So ≈ 0.5625 byte/weight, or ≈ 0.5159 with double
  quant (axolotl, QLoRA paper default).
bitsandbytes quantises the linear layers of the repeated blocks; embeddings, norms,
biases and the output head stay in the compute dtype (2 bytes).
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Optional, Union

from preflight.models.shape import Linear, ModelShape

#: peft's default `target_modules` per model_type (when LoraConfig names none).
DEFAULT_TARGETS: dict[str, list[str]] = {
    "llama": ["q_proj", "v_proj"], "mistral": ["q_proj", "v_proj"],
    "mixtral": ["q_proj", "v_proj"], "qwen2": ["q_proj", "v_proj"],
    "qwen3": ["q_proj", "v_proj"], "gemma": ["q_proj", "v_proj"],
    "gemma2": ["q_proj", "v_proj"], "gemma3_text": ["q_proj", "v_proj"],
    "gemma3": ["q_proj", "v_proj"], "olmo2": ["q_proj", "v_proj"],
    "phi": ["q_proj", "v_proj", "fc1", "fc2"],
    "gpt2": ["c_attn"], "gpt_neox": ["query_key_value"], "opt": ["q_proj", "v_proj"],
    "falcon": ["query_key_value"], "bloom": ["query_key_value"], "bert": ["query", "value"],
    "roberta": ["query", "value"], "t5": ["q", "v"],
}

_OUTPUT = {"lm_head", "embed_out"}
_EMBED = {"embed_tokens", "wte", "word_embeddings", "embed_in", "shared", "tok_embeddings"}

Targets = Union[str, list[str], None]


def default_targets(arch: str) -> Optional[list[str]]:
    return list(DEFAULT_TARGETS[arch]) if arch in DEFAULT_TARGETS else None


def _matches(lin: Linear, targets: Targets) -> bool:
    if isinstance(targets, str):
        if targets.lower() in ("all-linear", "all_linear"):
            return lin.name not in _OUTPUT
        # peft: a string is a regex fully matched against the module's dotted name
        try:
            return re.fullmatch(targets, f"model.layers.0.block.{lin.name}") is not None
        except re.error:
            return False
    return any(lin.name == t.rsplit(".", 1)[-1] for t in targets or [])


def matches_target(name: str, targets: Targets) -> bool:
    """Whether a block linear named `name` (its leaf name) is a LoRA target (peft's matching;
    `["all-linear"]` as the string)."""
    if isinstance(targets, (list, tuple)) and any(
            isinstance(t, str) and t.lower() in ("all-linear", "all_linear") for t in targets):
        targets = "all-linear"
    return _matches(Linear(name, 0, 0), targets)


def trainable_params(shape: ModelShape, r: int, targets: Targets,
                     modules_to_save: Iterable[str] = ()) -> tuple[int, int, list[str]]:
    """(adapter params, modules_to_save params, unknown pieces) for LoRA rank `r`.

    Matching follows peft: a list entry matches a module whose name ends in it;
    `"all-linear"` is every linear layer but the output head; a plain string is a regex.
    MoE experts held as fused parameters (transformers ≥ 5) are not linear modules and
    are never targeted.
    """
    targets = _targets(targets)
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
        if leaf in _OUTPUT or leaf in _EMBED:
            saved += shape.vocab * shape.hidden
            if leaf in _OUTPUT and shape.arch == "phi":
                saved += shape.vocab                           # phi's lm_head has a bias
            continue
        lins = [x for x in shape.linears if x.name == leaf and not x.in_block]
        if lins:
            saved += sum(x.weight_params + (x.out_features * x.count if x.bias else 0)
                         for x in lins)
        else:
            unknown.append(f"modules_to_save entry {m!r} not sized")
    return adapters, saved, unknown


def _targets(targets: Targets) -> Targets:
    """A target list naming "all-linear" is "all-linear" (axolotl's lora_target_linear,
    ["all-linear"] from flags)."""
    if isinstance(targets, (list, tuple)) and any(
            isinstance(t, str) and t.lower() in ("all-linear", "all_linear") for t in targets):
        return "all-linear"
    return targets


def adapter_shapes(shape: ModelShape, r: int,
                   targets: Targets) -> list[tuple[tuple[int, int], int]]:
    """The adapter tensors peft adds, as (shape, how many): lora_A.weight (r, in) and
    lora_B.weight (out, r) on every linear layer `targets` match (no bias)."""
    targets = _targets(targets)
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
    if isinstance(targets, (list, tuple)) and any(
            isinstance(t, str) and t.lower() in ("all-linear", "all_linear") for t in targets):
        targets = "all-linear"
    return sum(lin.weight_params for lin in shape.linears
               if not lin.expert and _matches(lin, targets))


def base_weight_bytes(shape: ModelShape, base_bits: int, *, double_quant: bool = True,
                      other_bytes: int = 2, blocksize: int = 64) -> tuple[int, str]:
    """Bytes of the frozen base model stored at `base_bits` (4, 8 or 16), with the formula."""
    total = shape.params
    if base_bits >= 16:
        return total * other_bytes, f"{total:,} params × {other_bytes} B"
    q = sum(x.weight_params for x in shape.linears if x.in_block)
    rest = total - q
    if base_bits == 8:
        rows = sum(x.out_features * x.count for x in shape.linears if x.in_block)
        b = q + 4 * rows + rest * other_bytes
        return b, (f"{q:,} int8 weights × 1 B + {rows:,} row scales × 4 B + "
                   f"{rest:,} other params × {other_bytes} B")
    if base_bits == 4:
        blocks = -(-q // blocksize)
        if double_quant:
            consts = blocks * 1 + -(-blocks // 256) * 4
            how = f"{blocks:,} absmax × 1 B (double quant) + {-(-blocks // 256):,} × 4 B"
        else:
            consts = blocks * 4
            how = f"{blocks:,} absmax × 4 B"
        b = -(-q // 2) + consts + rest * other_bytes
        return b, (f"{q:,} nf4 weights × 0.5 B + {how} + {rest:,} other params × "
                   f"{other_bytes} B")
    raise ValueError(f"unsupported base_bits {base_bits}")


def frozen_base_bytes(lora: dict, *, double_quant: bool = True, other_bytes: int = 2,
                      blocksize: int = 64) -> Optional[tuple[int, str]]:
    """Bytes of the frozen base from a `lora` fact value (as `resolve` fills it), or None.

    Uses its `base_params`, `quantized_params` and `quantized_rows` keys; the same
    arithmetic as `base_weight_bytes`.
    """
    try:
        total = int(lora["base_params"])
        q = int(lora["quantized_params"])
        rows = int(lora["quantized_rows"])
        bits = int(lora.get("base_bits") or 16)
    except (KeyError, TypeError, ValueError):
        return None
    lin = [Linear("_q", q, 1, 1, False, True)] if q else []
    shape = ModelShape(params=total, active_params=total, layers=0, hidden=0, heads=0,
                       kv_heads=0, ffn_hidden=0, vocab=0, family="", linears=lin)
    if bits == 8:
        rest = total - q
        return (q + 4 * rows + rest * other_bytes,
                f"{q:,} int8 weights × 1 B + {rows:,} row scales × 4 B + "
                f"{rest:,} other params × {other_bytes} B")
    return base_weight_bytes(shape, bits, double_quant=double_quant, other_bytes=other_bytes,
                             blocksize=blocksize)
