"""Every way a framework writes an optimizer, a precision, an FSDP strategy, a dtype or an
attention implementation, mapped to the vocabulary of `preflight.facts.names`.

This file is the only place a spelling is known: extractors (Python, shell, JSON, YAML,
TOML), the framework flag tables and the `estimate` command look values up here. Adding a
spelling is one line in one table (docs/facts.md shows how).

Lookups are case-insensitive; `None` means the spelling is not known (the caller decides
whether that is `other` or an unknown).
"""

from __future__ import annotations

from typing import Any, Optional

# --------------------------------------------------------------------------- optimizers

#: optimizer class names as written in code (torch.optim, bitsandbytes, transformers,
#: DeepSpeed, apex, lion-pytorch …) → `optimizer`
OPTIMIZER_CLASSES: dict[str, str] = {
    "AdamW": "adamw", "Adam": "adam", "SGD": "sgd", "Adafactor": "adafactor",
    "Adagrad": "adagrad", "RMSprop": "rmsprop", "Lion": "lion", "LAMB": "lamb", "Lamb": "lamb",
    "FusedLAMB": "lamb", "FusedLamb": "lamb", "AdamW8bit": "adamw_8bit", "Adam8bit": "adamw_8bit",
    "PagedAdamW8bit": "paged_adamw_8bit", "PagedAdam8bit": "paged_adamw_8bit",
    "PagedAdamW32bit": "paged_adamw_32bit", "PagedAdamW": "paged_adamw_32bit",
    "PagedAdam32bit": "paged_adamw_32bit", "Lion8bit": "lion", "PagedLion8bit": "lion",
    "FusedAdam": "adamw", "DeepSpeedCPUAdam": "adamw",
    # 1-bit / 0/1 Adam and LAMB keep error-feedback buffers beside m, v: state size unknown
    "ZeroOneAdam": "other", "OnebitAdam": "other", "OnebitLamb": "other",
    "Adamax": "other", "NAdam": "other", "RAdam": "other", "Adadelta": "other",
    "LBFGS": "other", "SparseAdam": "other", "Muon": "other", "Sophia": "other",
    "SophiaG": "other", "CAME": "other",
    # Composer / llm-foundry (weight decay decoupled from the learning rate; same states)
    "DecoupledAdamW": "adamw", "DecoupledLionW": "lion", "DecoupledSGDW": "sgd",
}

#: optimizer names in configs and on command lines: transformers `optim=` / `--optim`
#: (OptimizerNames), axolotl and LLaMA-Factory `optimizer:` / `optim:`, litgpt, Megatron
#: `--optimizer`, and `preflight estimate --optimizer` → `optimizer`
OPTIMIZER_NAMES: dict[str, str] = {
    "adamw": "adamw", "adam": "adam", "sgd": "sgd", "sgd_momentum": "sgd_momentum",
    "sgdm": "sgd_momentum", "momentum": "sgd_momentum",
    "adamw_torch": "adamw", "adamw_torch_fused": "adamw", "adamw_hf": "adamw",
    "adamw_apex_fused": "adamw", "adamw_torch_xla": "adamw", "adamw_torch_npu_fused": "adamw",
    "adamw_anyprecision": "adamw", "fusedadam": "adamw",
    "adamw_torch_4bit": "other", "adamw_torch_8bit": "adamw_8bit",
    "adamw_bnb_8bit": "adamw_8bit", "adamw_8bit": "adamw_8bit", "adam_8bit": "adamw_8bit",
    "adamw8bit": "adamw_8bit", "adam8bit": "adamw_8bit", "bnb_8bit": "adamw_8bit",
    "paged_adamw_8bit": "paged_adamw_8bit", "paged_adam_8bit": "paged_adamw_8bit",
    "paged_adamw8bit": "paged_adamw_8bit",
    "paged_adamw_32bit": "paged_adamw_32bit", "paged_adamw": "paged_adamw_32bit",
    "paged_adam_32bit": "paged_adamw_32bit", "adafactor": "adafactor",
    "adagrad": "adagrad", "rmsprop": "rmsprop", "lion": "lion", "lion_8bit": "lion",
    "lion_32bit": "lion", "paged_lion_8bit": "lion", "paged_lion_32bit": "lion", "lamb": "lamb",
}

#: DeepSpeed `"optimizer": {"type": …}` (JSON files and dicts in scripts alike), compared
#: lower-case without underscores. DeepSpeed's "Adam" runs AdamW (adam_w_mode defaults on).
DEEPSPEED_OPTIMIZERS: dict[str, str] = {
    "adamw": "adamw", "adam": "adamw", "fusedadam": "adamw", "cpuadam": "adamw",
    "deepspeedcpuadam": "adamw", "lamb": "lamb", "sgd": "sgd", "adagrad": "adagrad",
    "lion": "lion", "muadam": "adamw", "muadamw": "adamw", "musgd": "sgd",
    # 1-bit Adam / 0/1 Adam / 1-bit LAMB: error-feedback buffers beside m, v
    "onebitadam": "other", "zerooneadam": "other", "onebitlamb": "other",
}


def optimizer_class(name: str) -> Optional[str]:
    """`AdamW8bit` → "adamw_8bit"; None for a class that is not a known optimizer."""
    return OPTIMIZER_CLASSES.get(name)


def optimizer_name(text: Any) -> Optional[str]:
    """`adamw_torch_8bit` → "adamw_8bit" (transformers, recipes, command lines)."""
    if not isinstance(text, str):
        return None
    return OPTIMIZER_NAMES.get(text.strip().lower().replace("-", "_"))


def deepspeed_optimizer(text: Any, params: Any = None) -> Optional[str]:
    """DeepSpeed `type` (with its `params`): `OneBitAdam` → "other", `AdamW` → "adamw";
    "Adam" is plain Adam with `adam_w_mode: false`, or `torch_adam` without adam_w_mode."""
    if not isinstance(text, str):
        return None
    key = text.strip().lower().replace("_", "").replace("-", "")
    if key == "adam" and isinstance(params, dict) and (
            params.get("adam_w_mode") is False
            or (params.get("torch_adam") and params.get("adam_w_mode") is None)):
        return "adam"
    return DEEPSPEED_OPTIMIZERS.get(key)


# --------------------------------------------------------------------------- precision

#: precision strings of frameworks (accelerate `mixed_precision`, Lightning / litgpt /
#: Fabric `precision`, transformers `mixed_precision` flags) → (`mixed_precision`,
#: `param_dtype` when the string also fixes the weights' dtype, else None)
PRECISIONS: dict[str, tuple[str, Optional[str]]] = {
    "bf16": ("bf16", None), "fp16": ("fp16", None), "fp8": ("fp8", None),
    "no": ("none", None), "none": ("none", None), "fp32": ("none", None),
    "bf16-mixed": ("bf16", None), "16-mixed": ("fp16", None), "16": ("fp16", None),
    "32": ("none", "fp32"), "32-true": ("none", "fp32"), "64-true": ("none", None),
    "bf16-true": ("bf16", "bf16"), "16-true": ("fp16", "fp16"),
    "transformer-engine": ("fp8", None), "transformer-engine-float16": ("fp8", None),
    "amp_bf16": ("bf16", None), "amp_fp16": ("fp16", None), "amp_fp8": ("fp8", None),  # Composer
}


def precision(text: Any) -> Optional[tuple[str, Optional[str]]]:
    """`"bf16-mixed"` / `16` / `"no"` → (mixed_precision, param_dtype or None)."""
    if isinstance(text, bool) or text is None:
        return None
    return PRECISIONS.get(str(text).strip().lower())


def mixed_precision(text: Any) -> Optional[str]:
    """The `mixed_precision` value of a precision string (None: not a known spelling)."""
    p = precision(text)
    return p[0] if p else None


#: `preflight estimate --precision MODE` → (param_dtype, mixed_precision): the estimator's
#: own shorthand for a whole precision regime (not a framework's spelling)
PRECISION_MODES: dict[str, tuple[str, str]] = {
    "fp32": ("fp32", "none"), "32": ("fp32", "none"), "32-true": ("fp32", "none"),
    "bf16-mixed": ("bf16", "bf16"), "fp16-mixed": ("fp16", "fp16"), "16-mixed": ("fp16", "fp16"),
    "bf16": ("bf16", "none"), "bf16-true": ("bf16", "none"), "pure-bf16": ("bf16", "none"),
    "fp16": ("fp16", "none"), "fp16-true": ("fp16", "none"), "16-true": ("fp16", "none"),
    "bf16-autocast": ("fp32", "bf16"), "fp16-autocast": ("fp32", "fp16"),
}

# --------------------------------------------------------------------------- dtypes

#: torch dtype names (`torch.bfloat16`, `torch_dtype="float16"`, `dtype: bfloat16`) → dtype
DTYPES: dict[str, str] = {
    "bfloat16": "bf16", "bf16": "bf16", "float16": "fp16", "half": "fp16", "fp16": "fp16",
    "float32": "fp32", "float": "fp32", "fp32": "fp32", "int8": "int8",
    "float8_e4m3fn": "fp8", "float8_e5m2": "fp8",
    "f32": "fp32", "f16": "fp16",          # jmp / JAX policy names (`p=f32,c=bfloat16`)
}


def dtype(text: Any) -> Optional[str]:
    """`torch.bfloat16` / `"float16"` → "bf16" / "fp16"."""
    if not isinstance(text, str):
        return None
    return DTYPES.get(text.strip().rsplit(".", 1)[-1].lower())


def load_bits(settings: Any) -> Optional[int]:
    """The weight bits a loader's settings ask for: `load_in_4bit=True` → 4,
    `load_in_8bit=True` → 8 (transformers' `from_pretrained` keywords and the fields of its
    `BitsAndBytesConfig`); None when neither is set true."""
    if isinstance(settings, dict):
        if settings.get("load_in_4bit") is True:
            return 4
        if settings.get("load_in_8bit") is True:
            return 8
    return None


def autocast_dtype(text: Any) -> Optional[str]:
    """A dtype as a mixed-precision setting (torchtitan `mixed_precision_param`): the
    16-bit dtypes are themselves, float32 is no mixed precision."""
    d = dtype(text)
    if d == "fp32":
        return "none"
    return d if d in ("bf16", "fp16", "fp8") else None


# --------------------------------------------------------------------------- FSDP

#: FSDP sharding strategies: torch's `ShardingStrategy` names, the lower-case strings of
#: transformers / accelerate / Lightning, and accelerate's numbered choices 1–5 → `fsdp`
FSDP_STRATEGIES: dict[str, str] = {
    "full_shard": "full_shard", "shard_grad_op": "shard_grad_op", "no_shard": "no_shard",
    "hybrid_shard": "hybrid_shard", "_hybrid_shard_zero2": "hybrid_shard",
    "hybrid_shard_zero2": "hybrid_shard",
    "1": "full_shard", "2": "shard_grad_op", "3": "no_shard", "4": "hybrid_shard",
    "5": "hybrid_shard",
}


def fsdp_strategy(text: Any) -> Optional[str]:
    """`ShardingStrategy.SHARD_GRAD_OP` / `"full_shard"` / `1` → the `fsdp` value."""
    if isinstance(text, bool) or text is None:
        return None
    return FSDP_STRATEGIES.get(str(text).strip().rsplit(".", 1)[-1].lower())


# --------------------------------------------------------------------------- attention

#: attention implementations: transformers `attn_implementation`, LLaMA-Factory
#: `flash_attn` (fa2, sdpa, disabled), Megatron `--attention-backend` (flash and cuDNN-fused
#: keep no s×s scores; unfused and local do)
ATTENTIONS: dict[str, str] = {
    "flash_attention_2": "flash", "flash_attention_3": "flash", "flash_attn": "flash",
    "flash_attention": "flash", "flash": "flash", "fa2": "flash", "fa3": "flash",
    "sdpa": "sdpa", "flex_attention": "sdpa", "eager": "eager", "disabled": "eager",
    "fused": "flash", "unfused": "eager", "local": "eager",
    "triton": "flash",        # llm-foundry's Triton flash-attention kernel
}

#: axolotl's boolean switches (`flash_attention: true`) → `attention`
ATTENTION_SWITCHES: dict[str, str] = {
    "flash_attention": "flash", "sdp_attention": "sdpa", "eager_attention": "eager",
}


def attention(text: Any) -> Optional[str]:
    """`"flash_attention_2"` → "flash"."""
    if not isinstance(text, str):
        return None
    return ATTENTIONS.get(text.strip().lower())
