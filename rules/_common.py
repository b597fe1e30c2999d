"""Helpers shared by the built-in rules: the LEDGER.md §4 prescription ladder and the
small job texts the rules' VALID / INVALID examples are built from.

Not a rule module (the leading underscore keeps the registry out of it).
"""

from __future__ import annotations

import math
from typing import Optional

from preflight.engine import RuleContext, gb


def line_of(text: str, needle: str, nth: int = 1) -> int:
    """1-based line of the nth line containing `needle` (examples state their expected
    lines through this, so editing an example cannot silently move its expectation)."""
    seen = 0
    for i, line in enumerate(text.splitlines(), 1):
        if needle in line:
            seen += 1
            if seen == nth:
                return i
    raise ValueError(f"{needle!r} not in example text")


def state_fix(ctx: RuleContext) -> str:
    """The cheapest change that makes model states fit, in LEDGER.md §4 order:
    ZeRO-2/3 / FSDP, then an 8-bit optimizer, then offload / more GPUs."""
    cap = ctx.capacity or 0
    budget = cap * (1 - ctx.headroom) - (ctx.activations or 0)
    budget = max(budget, cap * 0.5)
    if ctx.world > 1:
        for stage in (1, 2, 3):
            if stage <= ctx.stage:
                continue
            s = ctx.states_under(stage)
            if s is not None and s <= budget:
                alias = {1: "", 2: " / FSDP SHARD_GRAD_OP", 3: " / FSDP FULL_SHARD"}[stage]
                return (f"shard the states: ZeRO-{stage}{alias} over {ctx.dp} GPUs holds "
                        f"{gb(s)} per GPU")
    opt = ctx.part("optimizer") or 0
    if ctx.v("optimizer") in ("adamw", "adam") and opt and ctx.states is not None:
        s8 = ctx.states - opt * 3 // 4
        if s8 <= budget:
            return (f"use an 8-bit optimizer (bitsandbytes AdamW8bit): Adam's m, v drop "
                    f"from 8 to 2 B/param and states to {gb(s8)} per GPU")
    full = ctx.full_states()
    if full and budget > 0:
        k = math.ceil(full / budget)
        return (f"ZeRO-3 / FSDP FULL_SHARD needs ≥ {k} GPUs for {gb(full)} of states; "
                f"or offload the optimizer state to CPU (ZeRO-Offload); or train adapters "
                f"(LoRA) instead of every weight")
    return "shard the model states (ZeRO-3 / FSDP) or offload the optimizer state to CPU"


def breakdown(ctx: RuleContext) -> str:
    return " + ".join(f"{k} {(ctx.part(k) or 0) / 1e9:.1f}" for k in
                      ("params", "grads", "optimizer", "master")) + " GB"


def micro_batch_that_fits(ctx: RuleContext, limit: Optional[float] = None) -> Optional[int]:
    """Largest micro-batch whose predicted peak stays under `limit` (default: capacity
    less headroom), scaling activations linearly in the micro-batch."""
    mb, act, peak, cap = ctx.v("micro_batch"), ctx.activations, ctx.peak, ctx.capacity
    if not (mb and act and peak and cap):
        return None
    per_sample = act / mb
    room = (limit if limit is not None else cap * (1 - ctx.headroom)) - (peak - act)
    if room < per_sample:
        return 0
    return int(room // per_sample)


# --------------------------------------------------------------------------- example jobs

def hf_script(model: str, *, mb: int = 4, accum: int = 1, precision: str = "bf16=True",
              optim: str = "adamw_torch", seq: int = 2048, extra: str = "",
              attn: Optional[str] = None, deepspeed: Optional[str] = None,
              ckpt: bool = False) -> str:
    """A Hugging Face Trainer fine-tune, the shape most jobs have."""
    attn_kw = f', attn_implementation="{attn}"' if attn else ""
    lines = [
        "from datasets import load_dataset",
        "from transformers import AutoModelForCausalLM, AutoTokenizer, Trainer, TrainingArguments",
        "",
        f"max_seq_length = {seq}",
        "",
        f"model = AutoModelForCausalLM.from_pretrained(\"{model}\"{attn_kw})",
        "tokenizer = AutoTokenizer.from_pretrained(model.name_or_path)",
        "data = load_dataset(\"json\", data_files=\"train.jsonl\")[\"train\"]",
        "data = data.map(lambda r: tokenizer(r[\"text\"], truncation=True, max_length=max_seq_length))",
        "",
        "args = TrainingArguments(",
        "    output_dir=\"out\",",
        f"    per_device_train_batch_size={mb},",
        f"    gradient_accumulation_steps={accum},",
    ]
    if precision:
        lines.append(f"    {precision},")
    lines.append(f"    optim=\"{optim}\",")
    if ckpt:
        lines.append("    gradient_checkpointing=True,")
    if deepspeed:
        lines.append(f"    deepspeed=\"{deepspeed}\",")
    if extra:
        lines.append(f"    {extra},")
    lines += [
        "    learning_rate=2e-5,",
        "    max_steps=1000,",
        ")",
        "Trainer(model=model, args=args, train_dataset=data).train()",
        "",
    ]
    return "\n".join(lines)


def ds_config(stage: int) -> str:
    return ("{\n"
            "  \"train_micro_batch_size_per_gpu\": \"auto\",\n"
            "  \"gradient_accumulation_steps\": \"auto\",\n"
            "  \"bf16\": {\"enabled\": \"auto\"},\n"
            "  \"zero_optimization\": {\n"
            f"    \"stage\": {stage},\n"
            "    \"overlap_comm\": true\n"
            "  }\n"
            "}\n")


def torch_script(*, dtype_line: str = "", autocast: str = "", scaler: bool = False,
                 optimizer: str = "torch.optim.AdamW(model.parameters(), lr=3e-4)",
                 batch: int = 8) -> str:
    """A hand-written torch loop (GPT-2 small from transformers)."""
    lines = [
        "import torch",
        "from torch.utils.data import DataLoader",
        "from transformers import GPT2LMHeadModel",
        "",
        "model = GPT2LMHeadModel.from_pretrained(\"gpt2\").cuda()",
    ]
    if dtype_line:
        lines.append(dtype_line)
    lines += [
        f"optimizer = {optimizer}",
        f"loader = DataLoader(torch.load(\"tokens.pt\"), batch_size={batch}, shuffle=True)",
    ]
    if scaler:
        lines.append("scaler = torch.amp.GradScaler(\"cuda\")")
    lines += ["", "for batch in loader:"]
    if autocast:
        lines.append(f"    with torch.autocast(\"cuda\", dtype={autocast}):")
        lines.append("        loss = model(batch.cuda(), labels=batch.cuda()).loss")
    else:
        lines.append("    loss = model(batch.cuda(), labels=batch.cuda()).loss")
    if scaler:
        lines += ["    scaler.scale(loss).backward()", "    scaler.step(optimizer)",
                  "    scaler.update()"]
    else:
        lines += ["    loss.backward()", "    optimizer.step()"]
    lines += ["    optimizer.zero_grad(set_to_none=True)", ""]
    return "\n".join(lines)


def hf_cli_script(model: str) -> str:
    """A Trainer script whose TrainingArguments come from the command line."""
    return "\n".join([
        "from datasets import load_dataset",
        "from transformers import AutoModelForCausalLM, HfArgumentParser, Trainer, TrainingArguments",
        "",
        "parser = HfArgumentParser(TrainingArguments)",
        "(args,) = parser.parse_args_into_dataclasses()",
        f"model = AutoModelForCausalLM.from_pretrained(\"{model}\")",
        "data = load_dataset(\"json\", data_files=\"train.jsonl\")[\"train\"]",
        "Trainer(model=model, args=args, train_dataset=data).train()",
        "",
    ])


def hf_cli_launch(launcher: str, flags: str) -> str:
    return ("#!/bin/bash\nset -euo pipefail\n\n"
            f"{launcher} train.py --output_dir out --per_device_train_batch_size 4 "
            f"--optim adamw_torch {flags}\n")
