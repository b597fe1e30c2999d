"""DeepSpeed-Chat (`dschat`): `deepspeed main.py --zero_stage 3 --dtype bf16 --lora_dim 128 …`.

Its `main.py` builds the DeepSpeed config from its own flags: `--zero_stage`, `--dtype`
(`fp16` / `bf16` engine: the model is held in that dtype, fp32 master weights in the
optimizer), `--per_device_train_batch_size`, `--gradient_accumulation_steps`,
`--max_seq_len`, `--gradient_checkpointing`; `--lora_dim R` with `--lora_module_name`
replaces the linear layers under that name (`layers.`: every block's linears) by LoRA
layers of rank R.
"""

from __future__ import annotations

from typing import Any, Optional

from preflight.frameworks import Example, Framework, flag_int


_DTYPE = {"fp16": "fp16", "bf16": "bf16", "fp32": "fp32"}
FLAGS = {
    "model_name_or_path": ("model", lambda s: s),
    "per_device_train_batch_size": ("micro_batch", flag_int),
    "gradient_accumulation_steps": ("grad_accum", flag_int),
    "max_seq_len": ("seq_len", flag_int),
    "zero_stage": ("zero_stage", flag_int),
    "dtype": [("mixed_precision", lambda s: {"fp32": "none"}.get(s or "", _DTYPE.get(s or ""))),
              ("param_dtype", lambda s: _DTYPE.get(s or ""))],
    "gradient_checkpointing": ("activation_checkpointing", lambda s: "full"),
}
_MARKERS = ("lora_dim", "lora_module_name", "only_optimize_lora", "lora_learning_rate")
#: `--lora_module_name` values that name every decoder block (all their linear layers)
_BLOCKS = ("layers.", "decoder.layers.", "h.", "model.layers.", "transformer.h.")


class DeepSpeedChat(Framework):
    name = "dschat"
    title = "DeepSpeed-Chat"
    FLAGS = FLAGS
    reads = (
        "`main.py` flags of the training steps: `--zero_stage`, `--dtype` (weights and "
        "precision), `--per_device_train_batch_size`, `--gradient_accumulation_steps`, "
        "`--max_seq_len`, `--gradient_checkpointing`, `--model_name_or_path`",
        "`--lora_dim` with `--lora_module_name` (a block prefix: LoRA on every linear of "
        "the blocks); without `--only_optimize_lora` the parameters LoRA does not wrap "
        "(embeddings, head, norms) keep training",
    )
    not_read = (
        "`--offload` (optimizer and, at ZeRO-3, parameters on the CPU): not yet a fact",
        "steps 2 and 3 (reward model; actor, critic, reference and reward models together)",
    )

    def reads_flags(self, flags: dict[str, Any], script: str) -> bool:
        plain = {k.replace("-", "_") for k in flags}
        return any(k in plain for k in _MARKERS) or "dschat" in script or \
            ("zero_stage" in plain and "dtype" in plain)

    def flag_defaults(self, flags: dict[str, Any], script: str = "") -> list[tuple[str, Any, str]]:
        out: list[tuple[str, Any, str]] = []
        if "dtype" not in flags:
            why = "DeepSpeed-Chat --dtype defaults to fp16 (an fp16 DeepSpeed engine)"
            out += [("mixed_precision", "fp16", why), ("param_dtype", "fp16", why)]
        if "zero_stage" not in flags:
            out.append(("zero_stage", 0, "DeepSpeed-Chat --zero_stage defaults to 0"))
        out.append(("fsdp", None, "DeepSpeed-Chat shards with ZeRO, not FSDP"))
        out.append(("optimizer", "adamw", "DeepSpeed-Chat trains with FusedAdam / DeepSpeedCPUAdam "
                                          "(AdamW mode)"))
        return out

    def flag_lora(self, flags: dict[str, Optional[str]], script: str) -> Optional[dict]:
        r = flag_int(flags.get("lora_dim"))
        if not r:
            return None
        mod = (flags.get("lora_module_name") or "decoder.layers.").strip("'\"")
        targets = ["all-linear"] if mod in _BLOCKS else [mod]
        out: dict = {"r": r, "alpha": float(r), "targets": targets, "base_bits": 16}
        if "only_optimize_lora" not in flags:
            # its LoRA layers freeze only the weights they wrap: embeddings, head and norms
            # keep training unless --only_optimize_lora
            out["train_untargeted"] = True
        return out


_RUN = """\
#!/bin/bash
OUTPUT=./output
deepspeed main.py \\
   --model_name_or_path meta-llama/Llama-2-7b-hf \\
   --per_device_train_batch_size 4 \\
   --max_seq_len 512 \\
   --gradient_accumulation_steps 1 \\
   --zero_stage 3 \\
   --dtype bf16 \\
   --lora_dim 128 \\
   --lora_module_name "layers." \\
   --gradient_checkpointing \\
   --output_dir $OUTPUT
"""
_MAIN = """\
import argparse

import deepspeed
from transformers import AutoModelForCausalLM

parser = argparse.ArgumentParser()
parser.add_argument("--model_name_or_path", type=str)
parser.add_argument("--per_device_train_batch_size", type=int, default=16)
parser.add_argument("--max_seq_len", type=int, default=512)
parser.add_argument("--gradient_accumulation_steps", type=int, default=1)
parser.add_argument("--zero_stage", type=int, default=0)
parser.add_argument("--dtype", type=str, default="fp16")
parser.add_argument("--lora_dim", type=int, default=0)
parser.add_argument("--lora_module_name", type=str, default="decoder.layers.")
parser.add_argument("--gradient_checkpointing", action="store_true")
parser.add_argument("--output_dir", type=str)
parser.add_argument("--local_rank", type=int, default=-1)
args = parser.parse_args()
model = AutoModelForCausalLM.from_pretrained(args.model_name_or_path)
"""

ADAPTER = DeepSpeedChat()
DeepSpeedChat.EXAMPLES = [
    Example(title="step-1 fine-tuning with LoRA on every block, ZeRO-3, bf16",
            files={"run.sh": _RUN, "main.py": _MAIN}, paths=["run.sh"],
            facts={"model": ("meta-llama/Llama-2-7b-hf", "run.sh:4"), "micro_batch": (4, "run.sh:5"),
                   "seq_len": (512, "run.sh:6"), "zero_stage": (3, "run.sh:8"),
                   "mixed_precision": ("bf16", "run.sh:9"), "param_dtype": ("bf16", "run.sh:9"),
                   "lora": ({"r": 128, "targets": ["all-linear"], "base_bits": 16}, "run.sh:3"),
                   "activation_checkpointing": ("full", "run.sh:12"),
                   # 319,815,680 LoRA + 262,410,240 embeddings, head and norms (no
                   # --only_optimize_lora)
                   "trainable_params": (582_225_920, "run.sh:3", "derived")}),
    Example(title="--only_optimize_lora: only the LoRA weights train",
            files={"run.sh": _RUN.replace("--gradient_checkpointing \\\n",
                                          "--gradient_checkpointing \\\n   --only_optimize_lora \\\n"),
                   "main.py": _MAIN + 'parser.add_argument("--only_optimize_lora", action="store_true")\n'},
            paths=["run.sh"],
            facts={"trainable_params": (319_815_680, "run.sh:3", "derived")}),
]
