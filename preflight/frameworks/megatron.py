"""Megatron-LM / Megatron-DeepSpeed: `pretrain_gpt.py` and friends with their argparse flags,
usually assembled in shell variables and arrays (`GPT_ARGS=(--num-layers 24 …)`,
`torchrun $DISTRIBUTED_ARGS pretrain_gpt.py ${GPT_ARGS[@]} …`).

Megatron's own defaults apply where a flag is absent: TP 1, PP 1, micro-batch 1, no
distributed optimizer, no recomputation, Adam with decoupled weight decay; with `--bf16` /
`--fp16` the model is held in that dtype with fp32 main parameters in the optimizer.
"""

from __future__ import annotations

from typing import Any

from preflight.facts import spellings
from preflight.frameworks import Example, Framework, flag_int, when_true


FLAGS = {
    "tensor-model-parallel-size": ("tp", flag_int),
    "pipeline-model-parallel-size": ("pp", flag_int),
    "expert-model-parallel-size": ("expert_parallel", flag_int),
    "micro-batch-size": ("micro_batch", flag_int),
    "seq-length": ("seq_len", flag_int),
    "num-layers": ("layers", flag_int),
    "hidden-size": ("hidden", flag_int),
    "num-attention-heads": ("heads", flag_int),
    "ffn-hidden-size": ("ffn_hidden", flag_int),
    "num-query-groups": ("kv_heads", flag_int),
    "bf16": ("mixed_precision", when_true("bf16")),
    "fp16": ("mixed_precision", when_true("fp16")),
    "sequence-parallel": ("sp", when_true(True)),
    "use-distributed-optimizer": ("zero_stage", when_true(1)),
    "recompute-activations": ("activation_checkpointing", when_true("selective")),
    "checkpoint-activations": ("activation_checkpointing", when_true("full")),
    "use-flash-attn": ("attention", when_true("flash")),
    "activations-checkpoint-method": ("activation_checkpointing",
                                      lambda s: "full" if s in ("uniform", "block") else None),
    "recompute-method": ("activation_checkpointing",
                         lambda s: "full" if s in ("uniform", "block") else None),
    "recompute-granularity": ("activation_checkpointing",
                              lambda s: {"full": "full", "selective": "selective"}.get((s or "").lower())),
    "fp8-format": ("mixed_precision", lambda s: "fp8" if s else None),
    # flash and cuDNN fused attention keep no s×s score matrix; unfused and local do
    "attention-backend": ("attention", spellings.attention),
}
#: flags only Megatron defines: a line with one of them runs a Megatron script
MARKERS = ("tensor-model-parallel-size", "micro-batch-size", "global-batch-size", "num-layers",
           "seq-length")


class Megatron(Framework):
    name = "megatron"
    title = "Megatron-LM / Megatron-DeepSpeed"
    FLAGS = FLAGS
    global_batch_flag = "global-batch-size"
    reads = (
        "flags of `pretrain_*.py` however the line is assembled (variables, arrays, `source`d "
        "files, `$((…))`, sbatch wrappers): TP, PP, EP, micro/global batch, sequence length, "
        "model shape (`--num-layers`, `--hidden-size`, `--num-attention-heads`, "
        "`--num-query-groups`, `--ffn-hidden-size`), `--bf16` / `--fp16` / `--fp8-format`, "
        "`--sequence-parallel`, `--use-distributed-optimizer`, recomputation, attention backend",
        "Megatron defaults where a flag is absent (TP/PP 1, micro-batch 1, Adam)",
        "attention without `--use-flash-attn` / `--attention-backend`: Megatron's unfused "
        "attention when the repository's Megatron has no flash or Transformer Engine switch, "
        "or the line gives a flag of Megatron before Megatron-Core (`--DDP-impl`)",
    )
    not_read = (
        "`--num-experts` beyond the catalogue's MoE shapes",
        "YAML configs of Megatron-Core's newer `--yaml-cfg`",
    )

    def reads_flags(self, flags: dict[str, Any], script: str) -> bool:
        return any(k in flags for k in MARKERS)


_SCRIPT = """\
#!/bin/bash
GPUS_PER_NODE=8
NNODES=2
DISTRIBUTED_ARGS=(
    --nproc_per_node $GPUS_PER_NODE
    --nnodes $NNODES
)
GPT_ARGS=(
    --num-layers 24
    --hidden-size 2048
    --num-attention-heads 16
    --seq-length 2048
    --micro-batch-size 4
    --global-batch-size 256
    --tensor-model-parallel-size 2
    --bf16
)
torchrun ${DISTRIBUTED_ARGS[@]} pretrain_gpt.py ${GPT_ARGS[@]} --use-distributed-optimizer
"""

ADAPTER = Megatron()
Megatron.EXAMPLES = [
    Example(title="flags in shell arrays, launched by torchrun",
            files={"run.sh": _SCRIPT, "pretrain_gpt.py": "import megatron\n"},
            paths=["run.sh"],
            facts={"layers": (24, "run.sh:9"), "hidden": (2048, "run.sh:10"),
                   "heads": (16, "run.sh:11"), "seq_len": (2048, "run.sh:12"),
                   "micro_batch": (4, "run.sh:13"), "tp": (2, "run.sh:15"),
                   "mixed_precision": ("bf16", "run.sh:16"),
                   "zero_stage": (1, "run.sh:18"),
                   "gpus_per_node": (8, "run.sh:5"), "nodes": (2, "run.sh:6"),
                   "pp": (1, "run.sh:18", "default")}),
    Example(title="a mixture of experts spread over expert-parallel ranks",
            files={"moe.sh": "torchrun --nproc_per_node 8 pretrain_gpt.py \\\n"
                             "    --micro-batch-size 1 --num-experts 8 \\\n"
                             "    --expert-model-parallel-size 4\n",
                   "pretrain_gpt.py": "import megatron\n"},
            paths=["moe.sh"],
            facts={"micro_batch": (1, "moe.sh:2"), "expert_parallel": (4, "moe.sh:3")}),
]


#: where a Megatron checkout keeps its command-line arguments (Megatron-LM ≥ core 0.6,
#: older Megatron-LM and Megatron-DeepSpeed)
ARGUMENT_FILES = ("megatron/training/arguments.py", "megatron/arguments.py")
#: flags only a Megatron from before Megatron-Core's Transformer Engine layers accepts
_PRE_CORE_FLAGS = ("DDP-impl",)


def attention_default(flags: dict[str, Any], arguments: str | None) -> tuple[str, str] | None:
    """(attention, why) of a Megatron launch with neither `--use-flash-attn` nor
    `--attention-backend`: Megatron before Megatron-Core's Transformer Engine default runs
    its own unfused attention (an s×s score matrix through a fused softmax). That is known
    when the repository's Megatron defines none of the newer switches, or when the line
    gives a flag only that Megatron accepts. None when the version cannot be told (newer
    Megatron-LM picks a fused or flash kernel through Transformer Engine)."""
    if any(k in flags for k in ("use-flash-attn", "attention-backend", "transformer-impl",
                                "use-mcore-models")):
        return None
    if arguments is not None and not any(f"'--{k}'" in arguments or f'"--{k}"' in arguments
                                         for k in ("use-flash-attn", "attention-backend",
                                                   "transformer-impl")):
        return "eager", ("this repository's Megatron has no flash or Transformer Engine "
                         "attention: its unfused attention (fused softmax of q·kᵀ)")
    old = next((k for k in _PRE_CORE_FLAGS if k in flags), None)
    if old is not None:
        return "eager", (f"--{old} is a flag of Megatron-LM before Megatron-Core: without "
                         f"--use-flash-attn its unfused attention (fused softmax of q·kᵀ)")
    return None
