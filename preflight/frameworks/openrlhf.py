"""OpenRLHF: `deepspeed --module openrlhf.cli.train_sft|train_dpo|train_rm …` with its own
flags, often kept in a heredoc (`read -r -d '' training_commands <<EOF … EOF`) or a variable
and run as `deepspeed --module $training_commands`.

OpenRLHF builds the DeepSpeed config from its flags: `--zero_stage`, `--bf16` (bf16 weights,
fp32 master copies), `--adam_offload` (optimizer states on the CPU),
`--micro_train_batch_size` per GPU and `--train_batch_size` global (DeepSpeed derives the
accumulation), `--max_len`, `--gradient_checkpointing`, `--flash_attn` (eager attention
otherwise), `--pretrain` (the model), LoRA with `--lora_rank` / `--lora_alpha` /
`--target_modules` (all-linear by default) and `--load_in_4bit`. Flags are read with
dashes or underscores, and with a dotted group prefix (`--ds.zero_stage`).
"""

from __future__ import annotations

from typing import Any, Optional

from preflight.frameworks import Example, Framework


def _int(s: Optional[str]) -> Optional[int]:
    try:
        return int(str(s))
    except (TypeError, ValueError):
        return None


def _flag(value: Any):
    return lambda s: value if s is None or str(s).lower() in ("true", "1", "yes") else None


FLAGS = {
    "pretrain": ("model", lambda s: s),
    "micro_train_batch_size": ("micro_batch", _int),
    "max_len": ("seq_len", _int),
    "zero_stage": ("zero_stage", _int),
    "bf16": ("mixed_precision", _flag("bf16")),
    "gradient_checkpointing": ("activation_checkpointing", _flag("full")),
    "flash_attn": ("attention", _flag("flash")),
    "adam_offload": ("offload", _flag("optimizer")),
    "load_in_4bit": ("param_dtype", _flag("int4")),
}
_MARKERS = ("micro_train_batch_size", "pretrain", "max_len", "adam_offload")


def lora_args(flags: dict[str, Optional[str]]) -> dict[str, Optional[str]]:
    """OpenRLHF's LoRA flags in the names the LoRA reader knows (a rank turns it on)."""
    out = dict(flags)
    if flags.get("lora_rank") not in (None, "0"):
        out["use_lora"] = "true"
        out.setdefault("lora_target_modules", flags.get("target_modules") or "all-linear")
    return out


class OpenRLHF(Framework):
    name = "openrlhf"
    title = "OpenRLHF"
    FLAGS = FLAGS
    global_batch_flag = "train_batch_size"
    reads = (
        "`deepspeed --module openrlhf.cli.train_*` (and `python -m`, `torchrun -m`) lines, "
        "also when the arguments sit in a heredoc or a variable",
        "`--pretrain`, `--micro_train_batch_size`, `--train_batch_size` (global: accumulation "
        "= global / (micro × GPUs)), `--max_len`, `--zero_stage`, `--bf16`, "
        "`--adam_offload`, `--gradient_checkpointing`, `--flash_attn`, `--lora_rank`, "
        "`--lora_alpha`, `--target_modules`, `--load_in_4bit`; dashes, underscores and dotted "
        "group prefixes alike",
    )
    not_read = (
        "PPO / GRPO actor-critic-reference layouts (`train_ppo_ray`): several models per job",
        "`--ring_attn_size`, `--packing_samples`",
    )

    def flag_lora(self, flags: dict[str, Optional[str]], script: str) -> Optional[dict]:
        from preflight.frameworks.hf_trainer import lora_from_args
        return lora_from_args(lora_args(flags), script)

    def reads_flags(self, flags: dict[str, Any], script: str) -> bool:
        plain = {k.rsplit(".", 1)[-1].replace("-", "_") for k in flags}
        return "openrlhf" in script.lower() or sum(k in plain for k in _MARKERS) >= 2


_RUN = """\
#!/bin/bash
set -x
read -r -d '' training_commands <<EOF
openrlhf.cli.train_sft \\
   --max_len 4096 \\
   --train_batch_size 128 \\
   --micro_train_batch_size 2 \\
   --pretrain meta-llama/Meta-Llama-3-8B \\
   --zero_stage 2 \\
   --bf16 \\
   --flash_attn \\
   --gradient_checkpointing \\
   --adam_offload
EOF

deepspeed --num_gpus 8 --module $training_commands
"""
_LORA = """\
#!/bin/bash
deepspeed --num_gpus 4 --module openrlhf.cli.train_dpo \\
   --pretrain Qwen/Qwen2.5-7B \\
   --micro-train-batch-size 1 \\
   --max-len 2048 \\
   --ds.zero_stage 3 \\
   --bf16 \\
   --lora_rank 16 \\
   --lora_alpha 32
"""

ADAPTER = OpenRLHF()
OpenRLHF.EXAMPLES = [
    Example(title="SFT arguments kept in a heredoc, run by `deepspeed --module $training_commands`",
            files={"train_sft.sh": _RUN},
            paths=["train_sft.sh"],
            facts={"model": ("meta-llama/Meta-Llama-3-8B", "train_sft.sh:8"),
                   "micro_batch": (2, "train_sft.sh:7"), "seq_len": (4096, "train_sft.sh:5"),
                   "zero_stage": (2, "train_sft.sh:9"), "mixed_precision": ("bf16", "train_sft.sh:10"),
                   "attention": ("flash", "train_sft.sh:11"),
                   "activation_checkpointing": ("full", "train_sft.sh:12"),
                   "offload": ("optimizer", "train_sft.sh:13"),
                   "gpus_per_node": (8, "train_sft.sh:16"),
                   "grad_accum": (8, "train_sft.sh:7", "derived")}),
    Example(title="DPO with LoRA; dashed and dotted flags",
            files={"dpo.sh": _LORA},
            paths=["dpo.sh"],
            facts={"model": ("Qwen/Qwen2.5-7B", "dpo.sh:3"), "micro_batch": (1, "dpo.sh:4"),
                   "seq_len": (2048, "dpo.sh:5"), "zero_stage": (3, "dpo.sh:6"),
                   "lora": ({"r": 16, "alpha": 32.0, "targets": ["all-linear"], "base_bits": 16}, "dpo.sh:2")}),
]
