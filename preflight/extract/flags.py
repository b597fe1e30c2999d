"""Command-line flags whose meaning is fixed by a widely used training framework.

A script's own argparse is read by the Python extractor; these tables cover flags that
mean the same thing wherever they appear because a framework defines them: the Hugging
Face `TrainingArguments` (and TRL / PEFT script arguments), Megatron-LM and GPT-NeoX.
Assembly applies them to the arguments of a launch line with origin `cli`.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from preflight.facts import spellings
from preflight.plan import Fact, Origin, Source


def _int(s: str) -> Optional[int]:
    try:
        return int(s)
    except (TypeError, ValueError):
        return None


def _bool(s: Optional[str]) -> Optional[bool]:
    if s is None:
        return True
    return {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}.get(s.lower())


# name → (fact, converter(value) → fact value or None). A converter of None means "boolean flag".
Conv = Callable[[Optional[str]], Any]


def _flag_true(value: Any) -> Conv:
    return lambda s: value if _bool(s) else None


HF: dict[str, tuple[str, Conv]] = {
    "per_device_train_batch_size": ("micro_batch", _int),
    "gradient_accumulation_steps": ("grad_accum", _int),
    "bf16": ("mixed_precision", _flag_true("bf16")),
    "fp16": ("mixed_precision", _flag_true("fp16")),
    "gradient_checkpointing": ("activation_checkpointing", lambda s: "full" if _bool(s) else "none"),
    "optim": ("optimizer", spellings.optimizer_name),
    "model_max_length": ("seq_len", _int),
    "max_seq_length": ("seq_len", _int),
    "max_length": ("seq_len", _int),
    "block_size": ("seq_len", _int),
    "model_name_or_path": ("model", lambda s: s),
    "q_lora": ("param_dtype", _flag_true("int4")),
    "load_in_4bit": ("param_dtype", _flag_true("int4")),
    "use_4bit_quantization": ("param_dtype", _flag_true("int4")),
    "load_in_8bit": ("param_dtype", _flag_true("int8")),
    "use_8bit_quantization": ("param_dtype", _flag_true("int8")),
    "quantization_bit": ("param_dtype", lambda s: {"4": "int4", "8": "int8"}.get(s or "")),
    "mixed_precision": ("mixed_precision", spellings.mixed_precision),
}

MEGATRON: dict[str, tuple[str, Conv]] = {
    "tensor-model-parallel-size": ("tp", _int),
    "pipeline-model-parallel-size": ("pp", _int),
    "micro-batch-size": ("micro_batch", _int),
    "seq-length": ("seq_len", _int),
    "num-layers": ("layers", _int),
    "hidden-size": ("hidden", _int),
    "num-attention-heads": ("heads", _int),
    "ffn-hidden-size": ("ffn_hidden", _int),
    "num-query-groups": ("kv_heads", _int),
    "bf16": ("mixed_precision", _flag_true("bf16")),
    "fp16": ("mixed_precision", _flag_true("fp16")),
    "sequence-parallel": ("sp", _flag_true(True)),
    "use-distributed-optimizer": ("zero_stage", _flag_true(1)),
    "recompute-activations": ("activation_checkpointing", _flag_true("selective")),
    "checkpoint-activations": ("activation_checkpointing", _flag_true("full")),
    "use-flash-attn": ("attention", _flag_true("flash")),
    "activations-checkpoint-method": ("activation_checkpointing",
                                      lambda s: "full" if s in ("uniform", "block") else None),
    "recompute-method": ("activation_checkpointing",
                         lambda s: "full" if s in ("uniform", "block") else None),
}


def _megatron_recompute(s: Optional[str]) -> Optional[str]:
    return {"full": "full", "selective": "selective"}.get((s or "").lower())


MEGATRON["recompute-granularity"] = ("activation_checkpointing", _megatron_recompute)


def _fp8(s: Optional[str]) -> Optional[str]:
    return "fp8" if s else None


MEGATRON["fp8-format"] = ("mixed_precision", _fp8)
# flash and cuDNN fused attention keep no s×s score matrix; unfused and local do
MEGATRON["attention-backend"] = ("attention", spellings.attention)


def parse_args(args: list[str]) -> dict[str, tuple[Optional[str], int]]:
    """`--name value` / `--name=value` / `--flag` → {name: (value or None, index)}; later wins."""
    out: dict[str, tuple[Optional[str], int]] = {}
    i = 0
    while i < len(args):
        a = args[i]
        if a.startswith("--") and len(a) > 2:
            if "=" in a:
                k, v = a[2:].split("=", 1)
                out[k] = (v, i)
                i += 1
                continue
            nxt = args[i + 1] if i + 1 < len(args) else None
            if nxt is not None and not (nxt.startswith("--") and len(nxt) > 2):
                out[a[2:]] = (nxt, i)
                i += 2
                continue
            out[a[2:]] = (None, i)
        i += 1
    return out


def flag_facts(args: list[str], source: Optional[Source],
               unknown: Optional[dict[str, str]] = None, script: str = "") -> tuple[list[tuple[str, Fact]], dict[str, Any]]:
    """Facts that well-known flags among a script's arguments fix, and the raw parsed flags."""
    parsed = parse_args(args)
    facts: list[tuple[str, Fact]] = []
    megatron = any(k in parsed for k in ("tensor-model-parallel-size", "micro-batch-size",
                                         "global-batch-size", "num-layers", "seq-length"))
    table = MEGATRON if megatron else HF
    for key, (val, _) in parsed.items():
        k = key if megatron else key.replace("-", "_")
        if k not in table:
            continue
        name, conv = table[k]
        shown = f"--{key}" + (f" {val}" if val is not None else "")
        from preflight.extract.shell_file import locate_flag
        where = locate_flag(source, f"--{key}")
        if val is not None and "\x00" in val:
            from preflight.extract.shell_file import reason_of
            facts.append((name, Fact.unknown(f"--{key}: {reason_of(val)}", source=where)))
            continue
        v = conv(val)
        if v is None:
            if val is not None and name in ("micro_batch", "grad_accum", "seq_len", "tp", "pp"):
                facts.append((name, Fact.unknown(f"{shown} is not a number", source=where)))
            continue
        facts.append((name, Fact(value=v, origin=Origin.CLI, source=where, reason=shown)))
    if not megatron:
        lora = _lora_from_flags(parsed, script)
        if lora is not None:
            facts.append(("lora", Fact(value=lora, origin=Origin.CLI, source=source,
                                       reason=f"--lora_r {lora['r']}")))
    return facts, {"megatron": megatron, "flags": parsed}


def _lora_from_flags(parsed: dict, script: str) -> Optional[dict]:
    """LoRA settings when the line turns an adapter on (`--use_peft`, `--use_peft_lora True`,
    `--q_lora True`, or a *lora* script) and gives its rank."""
    def val(k: str) -> Optional[str]:
        return parsed[k][0] if k in parsed else None

    on = any(k in parsed and _bool(val(k)) for k in ("use_peft", "use_peft_lora", "use_lora", "q_lora"))
    if not on and "lora" not in script.lower():
        return None
    r = _int(val("lora_r") or val("lora_rank") or "")
    if r is None:
        return None
    alpha = val("lora_alpha")
    try:
        a = float(alpha) if alpha is not None else None
    except ValueError:
        a = None
    tgt = val("lora_target_modules") or val("lora_target")
    targets = [t.strip() for t in tgt.replace(",", " ").split()] if tgt else []
    bits = 4 if any(k in parsed and _bool(val(k)) for k in ("q_lora", "load_in_4bit", "use_4bit_quantization")) \
        else (8 if any(k in parsed and _bool(val(k)) for k in ("load_in_8bit", "use_8bit_quantization")) else 16)
    return {"r": r, "alpha": a, "targets": targets, "base_bits": bits}
