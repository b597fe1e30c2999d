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

Later releases group every flag (`--model.model_name_or_path`, `--train.micro_batch_size`,
`--train.batch_size`, `--data.max_len`, `--ds.param_dtype bf16|fp16` (default bf16),
`--ds.attn_implementation` (default flash_attention_2), `--ds.lora.rank`,
`--model.gradient_checkpointing_enable`); the grouped spellings are read beside the flat ones.
The defaults every grouped CLI script shares (ZeRO stage 2, bf16, FlashAttention-2, Adam)
apply where such a line leaves them out; micro-batch and length defaults differ per script
and stay unknown.
"""

from __future__ import annotations

from typing import Any, Optional

from preflight.facts import spellings
from preflight.frameworks import Example, Framework, flag_int, when_true
from preflight.frameworks._hf_common import lora_from_args


FLAGS = {
    "pretrain": ("model", lambda s: s),
    "micro_train_batch_size": ("micro_batch", flag_int),
    "max_len": ("seq_len", flag_int),
    "zero_stage": ("zero_stage", flag_int),
    "bf16": ("mixed_precision", when_true("bf16")),
    "gradient_checkpointing": ("activation_checkpointing", when_true("full")),
    "flash_attn": ("attention", when_true("flash")),
    "adam_offload": ("offload", when_true("optimizer")),
    "load_in_4bit": ("param_dtype", when_true("int4")),
    # the grouped spellings of later releases (the group is part of the name: `--ds.lora.rank`)
    "model.model_name_or_path": ("model", lambda s: s),
    "train.micro_batch_size": ("micro_batch", flag_int),
    "data.max_len": ("seq_len", flag_int),
    # the model is loaded in this dtype and trained by a DeepSpeed engine of the same
    # precision (fp32 master weights in the optimizer)
    "ds.param_dtype": [("mixed_precision", lambda s: s if s in ("bf16", "fp16") else None),
                       ("param_dtype", lambda s: s if s in ("bf16", "fp16") else None)],
    "ds.attn_implementation": ("attention", spellings.attention),
    "model.gradient_checkpointing_enable": ("activation_checkpointing", when_true("full")),
}
_MARKERS = ("micro_train_batch_size", "pretrain", "max_len", "adam_offload")
#: the groups of the later flag layout
_GROUPS = ("model.", "train.", "data.", "ds.")


def lora_args(flags: dict[str, Optional[str]]) -> dict[str, Optional[str]]:
    """OpenRLHF's LoRA flags in the names the LoRA reader knows (a rank turns it on)."""
    out = dict(flags)
    for grouped, flat in (("ds.lora.rank", "lora_rank"), ("ds.lora.alpha", "lora_alpha"),
                          ("ds.lora.target_modules", "target_modules")):
        if grouped in flags:
            out[flat] = flags[grouped]
    if out.get("lora_rank") not in (None, "0"):
        out["use_lora"] = "true"
        out.setdefault("lora_target_modules", out.get("target_modules") or "all-linear")
    return out


class OpenRLHF(Framework):
    name = "openrlhf"
    title = "OpenRLHF"
    FLAGS = FLAGS
    global_batch_flag = ("train_batch_size", "train.batch_size")
    script_markers = ("openrlhf",)
    reads = (
        "`deepspeed --module openrlhf.cli.train_*` (and `python -m`, `torchrun -m`) lines, "
        "also when the arguments sit in a heredoc or a variable",
        "`--pretrain`, `--micro_train_batch_size`, `--train_batch_size` (global: accumulation "
        "= global / (micro × GPUs)), `--max_len`, `--zero_stage`, `--bf16`, "
        "`--adam_offload`, `--gradient_checkpointing`, `--flash_attn`, `--lora_rank`, "
        "`--lora_alpha`, `--target_modules`, `--load_in_4bit`; dashes, underscores and dotted "
        "group prefixes alike",
        "the grouped flags of later releases: `--model.model_name_or_path`, "
        "`--train.micro_batch_size`, `--train.batch_size`, `--data.max_len`, "
        "`--ds.param_dtype`, `--ds.attn_implementation`, `--ds.lora.rank` / `.alpha` / "
        "`.target_modules`, `--model.gradient_checkpointing_enable`; their shared defaults "
        "(ZeRO-2, bf16, FlashAttention-2, Adam, no LoRA)",
    )
    not_read = (
        "PPO / GRPO actor-critic-reference layouts (`train_ppo_ray`): several models per job",
        "`--ring_attn_size`, `--packing_samples`",
    )

    def flag_lora(self, flags: dict[str, Optional[str]], script: str) -> Optional[dict]:
        return lora_from_args(lora_args(flags), script)

    def reads_flags(self, flags: dict[str, Any], script: str) -> bool:
        plain = {k.rsplit(".", 1)[-1].replace("-", "_") for k in flags}
        return "openrlhf" in script.lower() or sum(k in plain for k in _MARKERS) >= 2

    def flag_defaults(self, flags: dict[str, Any], script: str = "") -> list[tuple[str, Any, str]]:
        keys = {k.replace("-", "_") for k in flags}
        if not any(k.startswith(_GROUPS) for k in keys):
            return []          # the flat layout's defaults changed across releases: not assumed
        out: list[tuple[str, Any, str]] = []
        if not keys & {"ds.zero_stage", "zero_stage"}:
            out.append(("zero_stage", 2, "OpenRLHF --ds.zero_stage defaults to 2"))
        if "ds.param_dtype" not in keys:
            why = "OpenRLHF --ds.param_dtype defaults to bf16"
            out += [("mixed_precision", "bf16", why), ("param_dtype", "bf16", why)]
        out.append(("master_weights", True, "OpenRLHF trains with a DeepSpeed engine: fp32 master "
                                            "weights in the optimizer"))
        if "ds.attn_implementation" not in keys:
            out.append(("attention", "flash", "OpenRLHF --ds.attn_implementation defaults to "
                                              "flash_attention_2"))
        opt = flags.get("optim")
        if opt is None or (opt[0] or "").lower() == "adam":
            out.append(("optimizer", "adamw", "OpenRLHF --optim adam: DeepSpeed FusedAdam "
                                              "(AdamW mode)"))
        if "ds.lora.rank" not in keys:
            out.append(("lora", False, "OpenRLHF --ds.lora.rank defaults to 0 (no adapter)"))
        out.append(("fsdp", None, "OpenRLHF shards with DeepSpeed ZeRO, not FSDP"))
        return out


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

_GROUPED = """\
#!/bin/bash
read -r -d '' training_commands <<EOF
openrlhf.cli.train_sft \\
   --model.model_name_or_path Qwen/Qwen2.5-7B \\
   --train.micro_batch_size 4 \\
   --train.batch_size 64 \\
   --data.max_len 4096 \\
   --ds.zero_stage 3 \\
   --ds.lora.rank 32 \\
   --ds.lora.alpha 64 \\
   --model.gradient_checkpointing_enable
EOF

if [[ "${1}" != "slurm" ]]; then
    deepspeed --num_gpus 4 --module $training_commands
fi
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
    Example(title="grouped flags of later releases (`--train.micro_batch_size`, `--ds.lora.rank`); "
                  "the shared defaults fill what the line leaves out",
            files={"train_sft.sh": _GROUPED},
            paths=["train_sft.sh"],
            facts={"model": ("Qwen/Qwen2.5-7B", "train_sft.sh:4"),
                   "micro_batch": (4, "train_sft.sh:5"), "seq_len": (4096, "train_sft.sh:7"),
                   "zero_stage": (3, "train_sft.sh:8"),
                   "grad_accum": (4, "train_sft.sh:5", "derived"),
                   "activation_checkpointing": ("full", "train_sft.sh:11"),
                   "mixed_precision": ("bf16", "train_sft.sh:15", "default"),
                   "param_dtype": ("bf16", "train_sft.sh:4", "default"),
                   "attention": ("flash", "train_sft.sh:15", "default"),
                   "optimizer": ("adamw", "train_sft.sh:15", "default"),
                   "lora": ({"r": 32, "alpha": 64.0, "targets": ["all-linear"], "base_bits": 16},
                            "train_sft.sh:15")}),
]
