"""Helpers shared by the built-in rules: the prescription ladder (docs/ledger.md) and the
small job texts the rules' VALID / INVALID examples are built from.

Not a rule module (the leading underscore keeps the registry out of it).
"""

from __future__ import annotations

import math
import re
from typing import Any, Optional

from preflight.engine import RuleContext, count, gib


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


_ALIAS = {1: "ZeRO-1", 2: "ZeRO-2 / FSDP SHARD_GRAD_OP", 3: "ZeRO-3 / FSDP FULL_SHARD"}


def state_fix(ctx: RuleContext) -> str:
    """The cheapest change that makes model states fit, in the order of docs/ledger.md
    (three kinds of "does not fit"): ZeRO / FSDP sharding, then an 8-bit optimizer, then
    offload / more GPUs. Every option is the estimator's ledger of the changed plan; when
    the states would fit but the activations still do not, say so (case B follows)."""
    options: list[tuple[str, Any, dict]] = []
    if ctx.world > 1:
        for stage in (1, 2, 3):
            if stage > ctx.stage:
                change = {"zero_stage": stage, "fsdp": None}
                est = ctx.what_if(f"ZeRO-{stage}", **change)
                s = est.ledger.states_bytes if est is not None else None
                if s is not None:
                    options.append((f"shard the states: {_ALIAS[stage]} over {ctx.dp} GPUs "
                                    f"holds {gib(s)} per GPU", est, change))
    if ctx.v("optimizer") in ("adamw", "adam") and ctx.part("optimizer"):
        change = {"optimizer": "adamw_8bit"}
        est = ctx.what_if("8-bit AdamW", **change)
        s8 = est.ledger.states_bytes if est is not None else None
        if s8 is not None:
            options.append((f"use an 8-bit optimizer (bitsandbytes AdamW8bit): Adam's m, v drop "
                            f"from 8 to 2 B/param and states to {gib(s8)} per GPU", est, change))
    # 1. the cheapest change after which the whole step fits as configured
    for text, est, _ in options:
        if est.ledger.fits():
            return text
    # 2. … after which it fits with a smaller micro-batch (case B's first remedy)
    mb = ctx.v("micro_batch") or 0
    if mb > 1:
        for text, _, change in options:
            k = ctx.largest_micro_batch(**change)
            if k and 1 <= k < mb:
                return (f"{text}; then micro-batch {k} with {math.ceil(mb / k)}× gradient "
                        f"accumulation for the activations")
    # 3. … after which everything but the activations fits: they need checkpointing
    limit = ctx.limit or 0
    for text, est, _ in options:
        led = est.ledger
        act = led.bytes_of("activations")
        rest = led.peak - act if led.peak is not None and act is not None else led.states_bytes
        if rest is not None and rest < limit:
            return text + (f"; the {gib(act)} of activations then need activation "
                           f"checkpointing" if act else "")
    full = ctx.total_states()
    if full and limit > 0:
        k = math.ceil(full / limit)
        return (f"ZeRO-3 / FSDP FULL_SHARD needs ≥ {k} GPUs for {gib(full)} of states; "
                f"or offload the optimizer state to CPU (ZeRO-Offload); or train adapters "
                f"(LoRA) instead of every weight")
    return "shard the model states (ZeRO-3 / FSDP) or offload the optimizer state to CPU"


def breakdown(ctx: RuleContext) -> str:
    return " + ".join(f"{k} {gib(ctx.part(k))}" for k in
                      ("params", "grads", "optimizer", "master") if ctx.part(k))


def states_text(ctx: RuleContext) -> str:
    """`112.0 GB per GPU (16 B/param × 7.00B) under DDP`, or for sharded states
    `17.6 GB per GPU under ZeRO-3 (16 B/param × 70.55B = 1128.8 GB in all)`."""
    st, bpp, n = ctx.states, ctx.bytes_per_param(), ctx.n
    if bpp is None:
        return f"{gib(st)} per GPU under {ctx.sharding_label()}"
    if ctx.is_sharded():
        how = ctx.sharding_label()
        if ctx.split > 1:
            parts = [f"TP {ctx.v('tp')}" if (ctx.v("tp") or 1) > 1 else "",
                     f"PP {ctx.v('pp')}" if (ctx.v("pp") or 1) > 1 else ""]
            how = " + ".join(p for p in [how if ctx.stage else ""] + parts if p)
        return (f"{gib(st)} per GPU under {how} ({bpp:.0f} B/param × {count(n)} = "
                f"{gib(ctx.total_states())} in all)")
    return f"{gib(st)} per GPU ({bpp:.0f} B/param × {count(n)}) under {ctx.sharding_label()}"


def micro_batch_that_fits(ctx: RuleContext) -> Optional[int]:
    """Largest micro-batch whose predicted peak stays within capacity less headroom: the
    estimator's ledger at each candidate micro-batch."""
    return ctx.largest_micro_batch()


def activation_fix(ctx: RuleContext) -> str:
    """The fix for activations that push the peak over the GPU, in the planner's order
    (docs/fix.md): first what shrinks the activations themselves (full checkpointing, when
    it is not on and makes the job fit), then a smaller micro-batch with more accumulation
    (the same global batch), then splitting a long sequence across GPUs."""
    mb, fit = ctx.v("micro_batch"), micro_batch_that_fits(ctx)
    smaller = (f"micro-batch {fit} with {math.ceil(mb / fit)}× gradient accumulation (the "
               f"same global batch)" if mb and fit and 1 <= fit < mb else None)
    if ctx.v("activation_checkpointing", "none") != "full":
        est = ctx.what_if("full activation checkpointing", activation_checkpointing="full")
        if est is not None and est.fits:
            return ("enable full activation checkpointing (gradient_checkpointing=True), which "
                    "fits" + (f"; or {smaller}" if smaller else ""))
    if smaller:
        return f"{smaller} fits"
    seq = ctx.v("seq_len")
    return (f"split the {seq or 'long'}-token sequence across GPUs (sequence / context "
            f"parallelism)")


# --------------------------------------------------------------------------- example jobs

def hf_script(model: str, *, mb: int = 4, accum: int = 1, precision: str = "bf16=True",
              optim: str = "adamw_torch", seq: int = 2048, extra: str = "",
              attn: Optional[str] = None, deepspeed: Optional[str] = None,
              ckpt: bool = False, dtype: Optional[str] = "float32") -> str:
    """A Hugging Face Trainer fine-tune, the shape most jobs have. `dtype`: the weights'
    dtype, said in the script (the library's default depends on its version); None
    leaves it to the default."""
    attn_kw = _load_kwargs(attn, dtype)
    lines = [
        *(["import torch"] if dtype else []),
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


def megatron_job(parallel: str) -> dict[str, str]:
    """A Megatron-LM pretraining job on 8 GPUs, its parallel flags given: the entry
    script and the launcher that runs it (files for a rule's examples)."""
    pretrain = ("from megatron.training import pretrain\n\n"
                "if __name__ == \"__main__\":\n"
                "    pretrain(train_valid_test_datasets_provider, model_provider, "
                "ModelType.encoder_or_decoder, forward_step)\n")
    launch = ("#!/bin/bash\ntorchrun --nproc_per_node 8 pretrain_gpt.py \\\n"
              f"    {parallel} \\\n"
              "    --num-layers 24 --hidden-size 2048 --num-attention-heads 16 --seq-length 2048 \\\n"
              "    --micro-batch-size 2 --global-batch-size 96 --bf16 --vocab-size 32000\n")
    return {"pretrain_gpt.py": pretrain, "train.sh": launch}


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


def _load_kwargs(attn: Optional[str], dtype: Optional[str]) -> str:
    """`from_pretrained`'s keyword arguments of the example scripts."""
    return (f", dtype=torch.{dtype}" if dtype else "") + (
        f', attn_implementation="{attn}"' if attn else "")


def hf_cli_script(model: str, *, seq: int = 2048, attn: Optional[str] = None,
                  dtype: Optional[str] = "float32") -> str:
    """A Trainer script whose TrainingArguments come from the command line (the launcher
    passes `--deepspeed ds.json`, `--bf16 True`, the batch size…)."""
    attn_kw = _load_kwargs(attn, dtype)
    return "\n".join([
        *(["import torch"] if dtype else []),
        "from datasets import load_dataset",
        "from transformers import (AutoModelForCausalLM, AutoTokenizer, HfArgumentParser, Trainer,",
        "                          TrainingArguments)",
        "",
        f"max_seq_length = {seq}",
        "",
        "parser = HfArgumentParser(TrainingArguments)",
        "(args,) = parser.parse_args_into_dataclasses()",
        f"model = AutoModelForCausalLM.from_pretrained(\"{model}\"{attn_kw})",
        "tokenizer = AutoTokenizer.from_pretrained(model.name_or_path)",
        "data = load_dataset(\"json\", data_files=\"train.jsonl\")[\"train\"]",
        "data = data.map(lambda r: tokenizer(r[\"text\"], truncation=True, max_length=max_seq_length))",
        "Trainer(model=model, args=args, train_dataset=data).train()",
        "",
    ])


def hf_cli_launch(launcher: str, flags: str, mb: int = 4) -> str:
    return ("#!/bin/bash\nset -euo pipefail\n\n"
            f"{launcher} train.py --output_dir out --per_device_train_batch_size {mb} "
            f"--optim adamw_torch {flags}\n")


# --------------------------------------------------------------------------- fused losses

#: a loss that never materialises the full logits: Liger's fused linear cross-entropy,
#: chunked cross-entropy (torchtune, litgpt), Apple's cut cross-entropy
_FUSED_LOSS = re.compile(
    r"use_liger_kernel\s*[=:]\s*(True|true|1|yes)\b|use_liger\s*[=:]\s*(True|true)\b"
    r"|\bapply_liger_kernel_to_\w+|AutoLigerKernelFor\w+|LigerFusedLinearCrossEntropy\w*"
    r"|\bliger_kernel\.transformers\b|CEWithChunkedOutputLoss|[Cc]hunked_?[Cc]ross_?[Ee]ntropy"
    r"|\bcut_cross_entropy\b|\blinear_cross_entropy\b|[Ff]used_?[Ll]inear_?[Cc]ross_?[Ee]ntropy")
_FUSED_FLAG = re.compile(r"^--use[_-]liger([_-]kernel)?(=(true|1|yes))?$", re.I)


def fused_loss(ctx: RuleContext) -> Optional[str]:
    """Where the job asks for a loss that keeps no full logits (`use_liger_kernel=True`,
    `apply_liger_kernel_to_llama()`, a chunked cross-entropy), else None. Reads what the
    extractors kept: the scripts' texts, their facts' hand-off and the launch lines."""
    job = ctx.job
    if job is None:
        return None
    for ext in job.extractions:
        fl = ext.extras.get("fused_loss")
        if fl:
            return f"{fl['what']} at {ext.path}:{fl['line']}"
        for inv in ext.invocations:
            args = [a.lower() for a in inv.args]
            for i, a in enumerate(args):
                if _FUSED_FLAG.match(a) and ("=" in a or i + 1 >= len(args)
                                             or args[i + 1] in ("true", "1", "yes")
                                             or args[i + 1].startswith("-")):
                    return f"{inv.args[i]} on the launch line"
    for path, text in ctx.texts():
        m = _FUSED_LOSS.search(text)
        if m:
            return f"`{m.group(0)}` in {path}:{text.count(chr(10), 0, m.start()) + 1}"
    return None
