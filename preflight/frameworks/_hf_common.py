"""What the Hugging Face Trainer's adapter and the adapters built on its arguments share.

TRL's configs subclass `TrainingArguments` (their defaults extend its defaults, their
recipes are read as its arguments files), and TRL / PEFT / OpenRLHF scripts spell LoRA with
the same script arguments: the tables and readers here are those, owned once, imported by
`hf_trainer`, `trl` and `openrlhf` (adapters never import each other).
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from preflight.facts import spellings
from preflight.frameworks import ConfigOut, flag_bool, flag_int, lora_targets, when_true


# name → (fact, converter(text) → fact value or None); a converter of None means "boolean flag".
Conv = Callable[[Optional[str]], Any]

#: TrainingArguments (and TRL / PEFT script arguments) names → facts; the same table reads
#: a launch line's flags and an arguments file's keys
FLAGS: dict[str, tuple[str, Conv]] = {
    "per_device_train_batch_size": ("micro_batch", flag_int),
    "gradient_accumulation_steps": ("grad_accum", flag_int),
    "bf16": ("mixed_precision", when_true("bf16")),
    "fp16": ("mixed_precision", when_true("fp16")),
    "gradient_checkpointing": ("activation_checkpointing", lambda s: "full" if flag_bool(s) else "none"),
    "optim": ("optimizer", spellings.optimizer_name),
    "model_max_length": ("seq_len", flag_int),
    "max_seq_length": ("seq_len", flag_int),
    "max_length": ("seq_len", flag_int),
    "block_size": ("seq_len", flag_int),
    "model_name_or_path": ("model", lambda s: s),
    "q_lora": ("param_dtype", when_true("int4")),
    "load_in_4bit": ("param_dtype", when_true("int4")),
    "use_4bit_quantization": ("param_dtype", when_true("int4")),
    "load_in_8bit": ("param_dtype", when_true("int8")),
    "use_8bit_quantization": ("param_dtype", when_true("int8")),
    "quantization_bit": ("param_dtype", lambda s: {"4": "int4", "8": "int8"}.get(s or "")),
    "mixed_precision": ("mixed_precision", spellings.mixed_precision),
    "attn_implementation": ("attention", spellings.attention),
}

#: `TrainingArguments` defaults this package relies on (transformers ≥ 4.0)
DEFAULTS: dict[str, Any] = {
    "per_device_train_batch_size": 8, "per_device_eval_batch_size": 8,
    "gradient_accumulation_steps": 1, "optim": "adamw_torch", "bf16": False, "fp16": False,
    "gradient_checkpointing": False, "deepspeed": None, "fsdp": "", "learning_rate": 5e-5,
    "num_train_epochs": 3.0, "tf32": None, "output_dir": None, "use_liger_kernel": False,
}
#: argument dataclasses of transformers whose fields carry training facts
CLASSES = frozenset({"TrainingArguments", "Seq2SeqTrainingArguments"})


def lora_from_args(parsed: dict[str, Optional[str]], script: str = "") -> Optional[dict]:
    """LoRA settings from TRL / PEFT script arguments when they turn an adapter on
    (`use_peft`, `use_peft_lora`, `use_lora`, `q_lora`, `lora_enable`, or a *lora* script)
    and give its rank; target lists however written (`q_proj,v_proj`, `'[q_proj,v_proj]'`,
    `all-linear`); the base's bits from `q_lora` / `load_in_4bit` / `load_in_8bit` or a
    `bits` argument of 4 or 8."""
    def val(k: str) -> Optional[str]:
        return parsed.get(k)

    on = any(k in parsed and flag_bool(val(k)) for k in ("use_peft", "use_peft_lora", "use_lora", "q_lora",
                                                         "lora_enable"))
    if not on and "lora" not in script.lower():
        return None
    r = flag_int(val("lora_r") or val("lora_rank") or "")
    if r is None:
        return None
    alpha = val("lora_alpha")
    try:
        a = float(alpha) if alpha is not None else None
    except ValueError:
        a = None
    targets = lora_targets(val("lora_target_modules") or val("lora_target"))
    bits = 4 if any(k in parsed and flag_bool(val(k)) for k in ("q_lora", "load_in_4bit", "use_4bit_quantization")) \
        else (8 if any(k in parsed and flag_bool(val(k)) for k in ("load_in_8bit", "use_8bit_quantization")) else 16)
    if bits == 16 and flag_int(val("bits") or "") in (4, 8):
        bits = flag_int(val("bits") or "")      # QLoRA-style scripts: `--bits 4` loads the base in 4 bits
    return {"r": r, "alpha": a, "targets": targets, "base_bits": bits}


def _text(v: Any) -> Optional[str]:
    if v is None:
        return None
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (list, tuple)):
        return ",".join(str(x) for x in v)
    return str(v)


def read_arguments(cfg: dict, o: ConfigOut) -> None:
    """An arguments file (HfArgumentParser / TrlParser): each known key as its flag would be."""
    for key, v in cfg.items():
        k = str(key).replace("-", "_")
        if k in ("torch_dtype", "dtype") and isinstance(v, str) and spellings.dtype(v) in ("bf16", "fp16"):
            o.put("param_dtype", spellings.dtype(v), (key,))
            continue
        if k not in FLAGS or isinstance(v, dict):
            continue
        name, conv = FLAGS[k]
        if k in ("bf16", "fp16") and v is False:
            continue
        val = conv(_text(v))
        if val is None:
            continue
        o.put(name, val, (key,), f"{key}: {_text(v)}")
        if name == "model" and isinstance(val, str):
            o.model_refs.append({"kind": "hub", "name": val, "source": o.src((key,))})
    if cfg.get("bf16") is False and cfg.get("fp16") in (False, None) and "bf16" in cfg:
        o.put("mixed_precision", "none", ("bf16",), "bf16: false; fp16 not set")
    lora = lora_from_args({str(k): _text(v) for k, v in cfg.items()})
    if lora is not None:
        key = "lora_r" if "lora_r" in cfg else "lora_rank"
        o.put("lora", lora, (key,), f"{key}: {lora['r']}")
        o.model_refs.append({"kind": "lora", **{k: lora[k] for k in ("r", "alpha", "targets")},
                             "source": o.src((key,))})
    elif cfg.get("use_peft") is False:
        o.put("lora", None, ("use_peft",), "use_peft: false")
    ds = cfg.get("deepspeed")
    if isinstance(ds, str) and ds:
        o.configs.append(ds)
    fs = cfg.get("fsdp")
    if isinstance(fs, str) and fs:
        words = fs.split()
        v = next((spellings.fsdp_strategy(w) for w in words if spellings.fsdp_strategy(w)), None)
        if v:
            o.put("fsdp", v, ("fsdp",))
        if "offload" in words:
            o.put("offload", "optimizer+params", ("fsdp",))
