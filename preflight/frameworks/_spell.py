"""The vocabulary's spelling tables as adapters read them: one lookup per kind of value
(an optimizer class or `optim` string, a dtype, a precision setting, an FSDP strategy, an
attention implementation). The tables themselves live with the vocabulary; adapters never
keep copies."""

from __future__ import annotations

from typing import Any, Optional


def optimizer_class(name: str) -> Optional[str]:
    """`AdamW`, `PagedAdamW8bit`, `DecoupledAdamW` → the optimizer fact value."""
    from preflight.extract.py_patterns import OPTIMIZER_CLASSES
    return OPTIMIZER_CLASSES.get(name.rsplit(".", 1)[-1])


def optimizer_string(name: str) -> Optional[str]:
    """`adamw_torch`, `paged_adamw_8bit`, DeepSpeed's `"AdamW"` → the optimizer fact value."""
    from preflight.extract.py_patterns import OPTIM_STRINGS
    return OPTIM_STRINGS.get(str(name).lower())


def dtype_name(name: Any) -> Optional[str]:
    """`bf16`, `torch.bfloat16`, `float32` → fp32 / bf16 / fp16 / fp8 / int8."""
    from preflight.extract.py_patterns import DTYPES
    return DTYPES.get(str(name).rsplit(".", 1)[-1].lower())


def precision_setting(name: Any) -> Optional[str]:
    """accelerate / Lightning / litgpt precision strings → the mixed_precision fact value."""
    from preflight.extract.yaml_file import _PRECISION
    return _PRECISION.get(str(name).lower())


def fsdp_strategy(name: Any) -> Optional[str]:
    """`FULL_SHARD`, `1`, `hybrid_shard_zero2` → the fsdp fact value."""
    from preflight.extract.yaml_file import _FSDP
    return _FSDP.get(str(name).rsplit(".", 1)[-1].lower())


def attention_name(name: Any) -> Optional[str]:
    """`flash_attention_2`, `sdpa`, `eager`, `fa2`, `torch`, `flash` → the attention fact value."""
    s = str(name).lower()
    if "flash" in s or s in ("fa2", "fa3", "triton"):
        return "flash"
    if "sdpa" in s or "flex" in s or s == "torch":
        return "sdpa"
    if "eager" in s or s in ("disabled", "math"):
        return "eager"
    return None


def lightning_precision(p: Any) -> Optional[tuple[str, Optional[str]]]:
    """Lightning / Fabric `precision` (`bf16-mixed`, `16`, `bf16-true`) → (mixed_precision,
    the weights' dtype or None when they stay fp32 by default)."""
    from preflight.extract.py_patterns import LIGHTNING_PRECISION
    if isinstance(p, str) and p.isdigit():
        p = int(p)
    return LIGHTNING_PRECISION.get(p) or (LIGHTNING_PRECISION.get(str(p)) if not isinstance(p, str) else None)
