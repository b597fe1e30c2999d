"""How a fact value is written back under the key a file already uses, and which key a
framework reads when the file has none.

The reading direction (key → fact) belongs to `preflight.facts.spellings`; this module only chooses,
for a value the planner proposes, the spelling the extractor reads back as that value
(`tests/test_fix_spelling.py` checks every entry round-trips through the extractor's own
tables). A value with no spelling under a key is None: the edit is not made and the
reason is said.
"""

from __future__ import annotations

from typing import Any, Optional

#: optimizer fact → the transformers `optim` string (TrainingArguments, axolotl `optimizer`)
HF_OPTIM = {"adamw": "adamw_torch", "adamw_8bit": "adamw_bnb_8bit",
            "paged_adamw_8bit": "paged_adamw_8bit", "paged_adamw_32bit": "paged_adamw_32bit",
            "adafactor": "adafactor", "sgd": "sgd", "lion": "lion_32bit"}
#: attention fact → transformers `attn_implementation`
HF_ATTN = {"eager": "eager", "sdpa": "sdpa", "flash": "flash_attention_2"}
#: FSDP strategy fact → accelerate's `fsdp_sharding_strategy`
ACCELERATE_FSDP = {"full_shard": "FULL_SHARD", "shard_grad_op": "SHARD_GRAD_OP",
                   "hybrid_shard": "HYBRID_SHARD", "no_shard": "NO_SHARD"}

#: keys (normalised: lower case, leading dashes dropped, '-' → '_') under which an
#: integer fact is written as a plain number
INT_FACTS = {"micro_batch", "grad_accum", "seq_len", "world_size", "nodes", "gpus_per_node",
             "zero_stage", "tp", "pp"}


def norm_key(key: str) -> str:
    return key.strip().lstrip("-").lower().replace("-", "_")


def render(fact: str, value: Any, key: str, old: Any = None) -> Optional[Any]:
    """The value to write for `fact` = `value` under `key` (a Python / YAML / TOML value;
    the caller formats it for its file). `old` is the value the key holds now, whose
    type a number or switch keeps. None: `key` cannot say `value`."""
    k = norm_key(key)
    if fact in INT_FACTS:
        if isinstance(value, bool) or not isinstance(value, int):
            return None
        return str(value) if isinstance(old, str) else value
    if fact == "optimizer":
        if k in ("optim", "optimizer"):
            return HF_OPTIM.get(value)
        return None
    if fact == "activation_checkpointing":
        if k in ("gradient_checkpointing", "enable_activation_checkpointing",
                 "activation_checkpointing"):
            return {"full": True, "none": False}.get(value)
        if k == "mode":                                   # torchtitan [activation_checkpoint]
            return value
        return None
    if fact == "attention":
        if k == "attn_implementation":
            return HF_ATTN.get(value)
        return None
    if fact == "fsdp":
        if k == "fsdp":                                   # TrainingArguments / --fsdp
            words = [w for w in str(old or "").split() if w not in ACCELERATE_FSDP.values()
                     and w.lower() not in ACCELERATE_FSDP]
            return " ".join([value] + (words or ["auto_wrap"]))
        if k == "fsdp_sharding_strategy":
            return ACCELERATE_FSDP.get(value)
        return None
    if fact == "offload":
        if k in ("offload_optimizer_device", "offload_param_device"):
            return "cpu" if value != "none" else "none"
        return None
    if fact == "gpu":
        return value if k == "gpu" else None
    return None


#: Keys a framework reads when a file sets nothing: site → fact → key.
#:   hf_args     TrainingArguments(...) keywords and the same names as --flags of an
#:               HfArgumentParser script
#:   from_pretrained   keywords of AutoModel*.from_pretrained
#:   torchrun    launcher flags
NEW_KEYS: dict[str, dict[str, str]] = {
    "hf_args": {"micro_batch": "per_device_train_batch_size",
                "grad_accum": "gradient_accumulation_steps",
                "activation_checkpointing": "gradient_checkpointing",
                "optimizer": "optim", "fsdp": "fsdp"},
    "from_pretrained": {"attention": "attn_implementation"},
    "torchrun": {"gpus_per_node": "--nproc_per_node", "nodes": "--nnodes"},
}
