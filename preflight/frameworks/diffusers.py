"""diffusers training scripts: `accelerate launch train_text_to_image.py
--pretrained_model_name_or_path=… --train_batch_size=1 --gradient_accumulation_steps=4
--mixed_precision=fp16 --resolution=512 --gradient_checkpointing --use_8bit_adam`, and the
DreamBooth / LoRA variants (`train_dreambooth.py`, `train_text_to_image_lora.py`,
`train_dreambooth_lora_sdxl.py`, `train_dreambooth_flux.py`, …), which share one set of flags.

The trained network is the pipeline's denoiser (a UNet or a diffusion transformer); the
VAE and the text encoders are frozen and held in the mixed-precision dtype. A full
fine-tune keeps the denoiser's weights in fp32 under autocast; a `*lora*` script freezes it
in the mixed-precision dtype and trains rank-`--rank` (4 by default) adapters. The model is
named by a pipeline repository, whose denoiser size is not in preflight's catalogue: the
parameter count stays unknown unless given. An image model has no token sequence: its
activations scale with `--resolution`, which is never read as a sequence length.
"""

from __future__ import annotations

import re
from typing import Any, Optional

from preflight.facts import spellings
from preflight.frameworks import Example, Framework, flag_bool, flag_int, flag_values, when_true

FLAGS = {
    "pretrained_model_name_or_path": ("model", lambda s: s),
    "train_batch_size": ("micro_batch", flag_int),
    "gradient_accumulation_steps": ("grad_accum", flag_int),
    "mixed_precision": ("mixed_precision", spellings.mixed_precision),
    "gradient_checkpointing": ("activation_checkpointing", lambda s: "full" if flag_bool(s) else "none"),
    "use_8bit_adam": ("optimizer", when_true("adamw_8bit")),
    "optimizer": ("optimizer", lambda s: "other" if s and s.lower() == "prodigy" else spellings.optimizer_name(s)),
    "enable_xformers_memory_efficient_attention": ("attention", when_true("sdpa")),
}
#: flags only the diffusers training scripts define (with the model flag they mark the line)
_MARKERS = ("resolution", "train_batch_size", "instance_data_dir", "instance_prompt", "center_crop",
            "random_flip", "snr_gamma", "noise_offset", "use_ema", "validation_prompt",
            "train_text_encoder", "prior_loss_weight", "with_prior_preservation")
#: the attention projections diffusers' LoRA scripts adapt by default
_LORA_TARGETS = ["to_k", "to_q", "to_v", "to_out.0"]



def _is_lora(script: str) -> bool:
    return re.search(r"(^|[_/\\])lora([_.]|$)", script.lower()) is not None


class Diffusers(Framework):
    name = "diffusers"
    title = "diffusers training scripts"
    FLAGS = FLAGS
    reads = (
        "`accelerate launch train_*.py` lines of the diffusers example scripts (text-to-image, "
        "DreamBooth, their LoRA / SDXL / Flux variants)",
        "`--pretrained_model_name_or_path` (the pipeline), `--train_batch_size`, "
        "`--gradient_accumulation_steps` (1), `--mixed_precision`, `--gradient_checkpointing`, "
        "`--use_8bit_adam` / `--optimizer` (AdamW; prodigy is `other`), "
        "`--enable_xformers_memory_efficient_attention`",
        "LoRA scripts: `--rank` (4) on the attention projections, the frozen denoiser in the "
        "mixed-precision dtype; full fine-tunes keep fp32 weights under autocast",
    )
    not_read = (
        "the denoiser's size: pipeline repositories are not in the catalogue (params unknown; "
        "`--set params=…`)",
        "activations of an image model (they scale with `--resolution`, never read as a "
        "sequence length); the frozen VAE / text encoders' memory",
        "`--use_ema` (an fp32 copy of the denoiser), `--train_text_encoder`, prior preservation's "
        "doubled batch",
    )

    def reads_flags(self, flags: dict[str, Any], script: str) -> bool:
        keys = set(flag_values(flags))
        return "pretrained_model_name_or_path" in keys and bool(keys & set(_MARKERS))

    def flag_lora(self, flags: dict[str, Optional[str]], script: str) -> Optional[dict]:
        if not _is_lora(script):
            return None
        r = flag_int(flags.get("rank", "4"))     # the LoRA scripts' --rank defaults to 4
        if r is None:
            return None
        alpha = flag_int(flags.get("lora_alpha")) or r
        return {"r": r, "alpha": alpha, "targets": list(_LORA_TARGETS), "base_bits": 16}

    def flag_defaults(self, flags: dict[str, Any], script: str = "") -> list[tuple[str, Any, str]]:
        f = flag_values(flags)
        out: list[tuple[str, Any, str]] = []
        if "gradient_accumulation_steps" not in f:
            out.append(("grad_accum", 1, "diffusers scripts: --gradient_accumulation_steps defaults to 1"))
        if "use_8bit_adam" not in f and "optimizer" not in f:
            out.append(("optimizer", "adamw", "diffusers scripts: torch.optim.AdamW unless --use_8bit_adam"))
        if "gradient_checkpointing" not in f:
            out.append(("activation_checkpointing", "none", "no --gradient_checkpointing"))
        if "enable_xformers_memory_efficient_attention" not in f:
            out.append(("attention", "sdpa", "diffusers' default attention processor calls "
                                             "scaled_dot_product_attention"))
        mp = spellings.mixed_precision(f.get("mixed_precision")) if f.get("mixed_precision") else None
        lora = "rank" in f or script and _is_lora(script)
        if not lora:
            out.append(("param_dtype", "fp32", "the trained denoiser stays in fp32 (autocast under "
                                               "--mixed_precision)"))
        elif mp in ("bf16", "fp16"):
            out.append(("param_dtype", mp, f"a LoRA script casts the frozen denoiser to {mp}"))
        out += [("fsdp", None, "diffusers scripts run DDP through accelerate"),
                ("zero_stage", 0, "no DeepSpeed config named")]
        return out


ADAPTER = Diffusers()

_FULL = """\
#!/bin/bash
export MODEL_NAME="stable-diffusion-v1-5/stable-diffusion-v1-5"
export DATASET_NAME="lambdalabs/naruto-blip-captions"

accelerate launch --num_processes=4 --mixed_precision="fp16" train_text_to_image.py \\
  --pretrained_model_name_or_path=$MODEL_NAME \\
  --dataset_name=$DATASET_NAME \\
  --resolution=512 --center_crop --random_flip \\
  --train_batch_size=1 \\
  --gradient_accumulation_steps=4 \\
  --gradient_checkpointing \\
  --use_8bit_adam \\
  --mixed_precision="fp16" \\
  --output_dir="sd-naruto-model"
"""

_LORA = """\
#!/bin/bash
accelerate launch train_dreambooth_lora_sdxl.py \\
  --pretrained_model_name_or_path=stabilityai/stable-diffusion-xl-base-1.0 \\
  --instance_data_dir=dog \\
  --instance_prompt="a photo of sks dog" \\
  --resolution=1024 \\
  --train_batch_size=2 \\
  --rank=16 \\
  --mixed_precision=bf16 \\
  --output_dir=lora-trained-xl
"""

Diffusers.EXAMPLES = [
    Example(title="full text-to-image fine-tune: batch, accumulation, 8-bit Adam; resolution "
                  "is no sequence length",
            files={"train.sh": _FULL}, paths=["train.sh"],
            facts={"model": ("stable-diffusion-v1-5/stable-diffusion-v1-5", "train.sh:6"),
                   "micro_batch": (1, "train.sh:9"), "grad_accum": (4, "train.sh:10"),
                   "activation_checkpointing": ("full", "train.sh:11"),
                   "optimizer": ("adamw_8bit", "train.sh:12"), "mixed_precision": ("fp16", "train.sh:5", "cli"),
                   "param_dtype": ("fp32", "train.sh:5", "default")}),
    Example(title="DreamBooth LoRA on SDXL: the adapter's rank from --rank",
            files={"lora.sh": _LORA}, paths=["lora.sh"],
            facts={"model": ("stabilityai/stable-diffusion-xl-base-1.0", "lora.sh:3"),
                   "micro_batch": (2, "lora.sh:7"),
                   "lora": ({"r": 16, "alpha": 16, "targets": ["to_k", "to_q", "to_v", "to_out.0"],
                             "base_bits": 16}, "lora.sh:2"),
                   "mixed_precision": ("bf16", "lora.sh:9"), "param_dtype": ("bf16", "lora.sh:2", "default"),
                   "grad_accum": (1, "lora.sh:2", "default")}),
]
