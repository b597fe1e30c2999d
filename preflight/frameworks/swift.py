"""ms-swift: `swift sft|pt|rlhf [config.yaml] --model … --train_type lora …`, with its layout
in the environment (`NPROC_PER_NODE=8 NNODES=2 swift sft …` runs torchrun; without either,
one process that places the model over the visible GPUs).

The flags are ms-swift's argument dataclasses (Hugging Face `TrainingArguments` beneath):
`--model`, `--train_type` / `--tuner_type` (lora by default; `full`), `--lora_rank` (8),
`--lora_alpha` (32), `--target_modules` (all-linear), `--torch_dtype` (the weights' and
the step's dtype), `--per_device_train_batch_size` (1), `--gradient_accumulation_steps`
(unset: ⌈16 / (micro-batch × world)⌉), `--max_length`, `--gradient_checkpointing` (on),
`--attn_impl`, `--quant_bits` / `--quant_method bnb`, and `--deepspeed` with its built-in
names (`zero0` … `zero3`, `zero2_offload`, `zero3_offload`) or a config file. A
`config.yaml` first argument holds the same names as keys. `swift rlhf` trains the policy
these flags describe; its reference, reward and rollout models are frozen or run
inference only and are never sized as training.
"""

from __future__ import annotations

import math
from typing import Any, Optional

from preflight.facts import spellings
from preflight.frameworks import (ConfigOut, Example, Framework, flag_bool, flag_int, flag_values,
                                  locate_word, lora_targets)
from preflight.lang.shell.values import reason_of
from preflight.plan import Fact, Invocation, Origin

#: `--deepspeed NAME` → (ZeRO stage, what is offloaded)
_DS_NAMES = {"zero0": (0, None), "zero1": (1, None), "zero2": (2, None), "zero3": (3, None),
             "zero2_offload": (2, "optimizer"), "zero3_offload": (3, "optimizer+params")}
#: flags that take several words (`--target_modules q_proj v_proj`, `--dataset a b`)
_LISTS = ("target_modules", "dataset", "val_dataset", "modules_to_save", "reward_funcs")
_SUBCOMMANDS = ("sft", "pt", "rlhf")


def _dtype(s: Optional[str]) -> Optional[str]:
    d = spellings.dtype(s) if s else None
    return d if d in ("bf16", "fp16", "fp32") else None


def _mixed(s: Optional[str]) -> Optional[str]:
    # ms-swift sets bf16 / fp16 from torch_dtype (float32 trains under fp16 autocast)
    d = _dtype(s)
    return {"bf16": "bf16", "fp16": "fp16", "fp32": "fp16"}.get(d or "")


def _quant(s: Optional[str]) -> Optional[str]:
    return {"4": "int4", "8": "int8"}.get(str(s or ""))


def _zero(s: Optional[str]) -> Optional[int]:
    return _DS_NAMES[s][0] if s in _DS_NAMES else None


def _offload(s: Optional[str]) -> Optional[str]:
    return _DS_NAMES[s][1] if s in _DS_NAMES else None


#: ms-swift's flag names → facts (a config file's keys are the same names)
FLAGS = {
    "model": ("model", lambda s: s),
    "per_device_train_batch_size": ("micro_batch", flag_int),
    "gradient_accumulation_steps": ("grad_accum", flag_int),
    "max_length": ("seq_len", flag_int),
    "torch_dtype": [("param_dtype", _dtype), ("mixed_precision", _mixed)],
    "gradient_checkpointing": ("activation_checkpointing", lambda s: "full" if flag_bool(s) else "none"),
    "attn_impl": ("attention", spellings.attention),
    "optim": ("optimizer", spellings.optimizer_name),
    "quant_bits": ("param_dtype", _quant),
    "deepspeed": [("zero_stage", _zero), ("offload", _offload)],
}


def _join_lists(words: list[str]) -> list[str]:
    """`--target_modules q_proj v_proj` → `--target_modules=q_proj,v_proj` (one value)."""
    out: list[str] = []
    i = 0
    while i < len(words):
        w = words[i]
        if w.startswith("--") and "=" not in w and w[2:].replace("-", "_") in _LISTS:
            j = i + 1
            while j < len(words) and not words[j].startswith("--"):
                j += 1
            out.append(f"{w}={','.join(words[i + 1:j])}")
            if j == i + 1:
                out[-1] = w
            i = j
            continue
        out.append(w)
        i += 1
    return out



def _lora(f: dict[str, Optional[str]]) -> Optional[dict]:
    kind = (f.get("train_type") or f.get("tuner_type") or "lora").lower()
    if kind not in ("lora", "qlora", "longlora"):
        return None
    r, alpha = flag_int(f.get("lora_rank", "8")), flag_int(f.get("lora_alpha", "32"))
    if r is None:
        return None
    bits = {"int4": 4, "int8": 8}.get(_quant(f.get("quant_bits")) or "", 16)
    return {"r": r, "alpha": alpha, "targets": lora_targets(f.get("target_modules") or "all-linear"),
            "base_bits": bits}


class Swift(Framework):
    name = "swift"
    title = "ms-swift"
    programs = ("swift",)
    FLAGS = FLAGS
    script_markers = ("swift",)
    reads = (
        "`swift sft|pt|rlhf [config.yaml] --flags …`; `NPROC_PER_NODE` / `NNODES` in the "
        "environment or the line's prefix (torchrun processes), `CUDA_VISIBLE_DEVICES=0` (one GPU)",
        "`--model`, `--train_type` / `--tuner_type` (lora by default, `full`), `--lora_rank` (8), "
        "`--lora_alpha` (32), `--target_modules` (all-linear; several words), `--quant_bits`",
        "`--torch_dtype`, `--per_device_train_batch_size` (1), `--gradient_accumulation_steps` "
        "(unset: ⌈16 / (micro-batch × world size)⌉), `--max_length`, `--gradient_checkpointing` "
        "(on by default), `--attn_impl`, `--optim` (adamw_torch)",
        "`--deepspeed zero0|zero1|zero2|zero3|zero2_offload|zero3_offload` or a DeepSpeed JSON",
        "`swift rlhf --rlhf_type dpo|grpo|…`: the policy is the job; the reference / reward / "
        "rollout models are not sized as training",
    )
    not_read = (
        "the memory of `swift rlhf`'s frozen roles (a full-weight DPO reference model, GRPO's "
        "reward models and vLLM rollout engine)",
        "`--max_length` left unset (the model's own context length); `megatron sft` jobs",
        "one process over several visible GPUs (`device_map`): the per-GPU split is unknown",
        "`--rlhf_type ppo`'s value model, a second trained model, is not reported as a job of "
        "its own (the policy is)",
    )

    def claims(self, cfg: dict, path: str) -> bool:
        return isinstance(cfg.get("model"), str) and any(
            k in cfg for k in ("train_type", "tuner_type", "rlhf_type")) and "dataset" in cfg

    def read_config(self, cfg: dict, o: ConfigOut) -> None:
        # a `swift sft config.yaml` file: its keys are the flags
        for key, spec in FLAGS.items():
            if key not in cfg or isinstance(cfg[key], (dict, list)):
                continue
            raw = cfg[key]
            text = str(raw).lower() if isinstance(raw, bool) else str(raw)
            for fact, conv in spec if isinstance(spec, list) else [spec]:
                v = conv(text)
                if v is not None:
                    o.put(fact, v, (key,))
                    if fact == "model":
                        o.model_refs.append({"kind": "hub", "name": v, "source": o.src((key,))})
        lo = _lora({k: (",".join(map(str, v)) if isinstance(v, list) else str(v)) for k, v in cfg.items()
                    if not isinstance(v, dict)})
        key = ("train_type",) if "train_type" in cfg else ("tuner_type",)
        if lo is not None:
            o.lora(lo["r"], lo["alpha"], lo["targets"], lo["base_bits"], key,
                   "" if key[0] in cfg else "ms-swift trains a LoRA adapter by default")
        elif key[0] in cfg:
            o.put("lora", False, key, f"{key[0]}: {cfg[key[0]]}")
        if isinstance(cfg.get("deepspeed"), str) and cfg["deepspeed"] not in _DS_NAMES:
            o.configs.append(cfg["deepspeed"])

    def flag_lora(self, flags: dict[str, Optional[str]], script: str) -> Optional[dict]:
        f = flag_values(flags)
        # the adapter the line names; swift's default one comes from flag_defaults
        return _lora(f) if ("train_type" in f or "tuner_type" in f) else None

    def flag_defaults(self, flags: dict[str, Any], script: str = "") -> list[tuple[str, Any, str]]:
        f = flag_values(flags)
        out: list[tuple[str, Any, str]] = []
        if "train_type" not in f and "tuner_type" not in f:
            lo = _lora(f)
            if lo is not None:
                out.append(("lora", lo, "ms-swift's --train_type defaults to lora (rank 8, alpha 32, "
                                        "all-linear unless the flags say otherwise)"))
        elif (f.get("train_type") or f.get("tuner_type") or "").lower() not in ("lora", "qlora", "longlora"):
            out.append(("lora", False, f"--train_type {f.get('train_type') or f.get('tuner_type')}: no adapter"))
        if "per_device_train_batch_size" not in f:
            out.append(("micro_batch", 1, "ms-swift's --per_device_train_batch_size defaults to 1"))
        if "gradient_checkpointing" not in f:
            out.append(("activation_checkpointing", "full", "ms-swift's --gradient_checkpointing defaults to true"))
        if "optim" not in f:
            out.append(("optimizer", "adamw", "--optim defaults to adamw_torch"))
        if "deepspeed" not in f:
            out.append(("zero_stage", 0, "no --deepspeed: no ZeRO"))
            out.append(("fsdp", None, "no --fsdp: ms-swift runs DDP (or one process)"))
        return out

    def launch(self, prog: str, rest: list[str], line: Any, cwd: str = "") -> Optional[Invocation]:
        if not rest or rest[0] not in _SUBCOMMANDS:
            return None
        args = _join_lists(rest[1:])
        configs = []
        if args and not args[0].startswith("-") and args[0].lower().endswith((".yaml", ".yml", ".json")):
            configs.append(args[0])
            args = args[1:]
        for i, a in enumerate(args):
            k, _, v = a.partition("=")
            if k == "--deepspeed":
                v = v or (args[i + 1] if i + 1 < len(args) else "")
                if v and v not in _DS_NAMES:
                    configs.append(v)
        facts = list(line.facts) + self._layout(line, args, rest[0])
        return Invocation(script=configs[0] if configs and configs[0].endswith((".yaml", ".yml")) else f"swift {rest[0]}",
                          args=args, source=line.source, module=f"swift {rest[0]}", facts=facts,
                          configs=configs)

    def _layout(self, line: Any, args: list[str], sub: str) -> list[tuple[str, Fact]]:
        """Nodes and GPUs per node from the environment ms-swift reads, and the accumulation it
        sets when the flags leave it out."""
        env = getattr(line, "env", {}) or {}
        out: list[tuple[str, Fact]] = []
        counts: dict[str, Optional[int]] = {}
        for var, fact in (("NPROC_PER_NODE", "gpus_per_node"), ("NNODES", "nodes")):
            if var not in env:
                continue
            raw = env[var]
            src = locate_word(line.source, f"{var}=") or line.source
            text = raw if isinstance(raw, str) else None
            n = flag_int(text) if text is not None and "\0" not in text else None
            counts[fact] = n
            if n is None:
                why = reason_of(text) if text else None
                out.append((fact, Fact.unknown(f"{var}: {why or 'not known statically'}", source=src)))
            else:
                out.append((fact, Fact(value=n, origin=line.origin, source=src, reason=f"{var}={n}")))
        if not counts:
            vis = env.get("CUDA_VISIBLE_DEVICES")
            one = "`swift` without NPROC_PER_NODE / NNODES runs one process"
            out.append(("nodes", Fact(value=1, origin=Origin.DEFAULT, source=line.source, reason=one)))
            if isinstance(vis, str) and "\0" not in vis and vis.strip().isdigit():
                out.append(("gpus_per_node", Fact(value=1, origin=Origin.DEFAULT, source=line.source,
                                                  reason=f"{one} on CUDA_VISIBLE_DEVICES={vis}")))
            else:
                out.append(("gpus_per_node", Fact(value=1, origin=Origin.ASSUMED, source=line.source,
                                                  reason=f"{one}; it places the model over every "
                                                         "visible GPU, whose count is not known")))
            counts = {"nodes": 1, "gpus_per_node": 1}
        if "nodes" not in counts:
            out.append(("nodes", Fact(value=1, origin=Origin.DEFAULT, source=line.source,
                                      reason="NNODES unset: one node")))
        counts.setdefault("nodes", 1)
        counts.setdefault("gpus_per_node", 1)
        flags = {a.split("=", 1)[0][2:].replace("-", "_") for a in args if a.startswith("--")}
        rlhf_type = next((a.split("=", 1)[1] if "=" in a else (args[i + 1] if i + 1 < len(args) else "")
                          for i, a in enumerate(args) if a.split("=", 1)[0] == "--rlhf_type"), "dpo")
        if "gradient_accumulation_steps" not in flags and sub == "rlhf" and rlhf_type == "grpo":
            out.append(("grad_accum", Fact(value=1, origin=Origin.DEFAULT, source=line.source,
                                           reason="ms-swift sets gradient_accumulation_steps to 1 for "
                                                  "GRPO when unset")))
        elif "gradient_accumulation_steps" not in flags:
            mb = 1
            for i, a in enumerate(args):
                if a.split("=", 1)[0] in ("--per_device_train_batch_size", "--per-device-train-batch-size"):
                    mb = flag_int(a.split("=", 1)[1] if "=" in a else (args[i + 1] if i + 1 < len(args) else None))
            world = (counts["nodes"] or 0) * (counts["gpus_per_node"] or 0)
            if mb and world:
                ga = max(1, math.ceil(16 / mb / world))
                out.append(("grad_accum", Fact(value=ga, origin=Origin.DERIVED, source=line.source,
                                               reason=f"ms-swift sets gradient_accumulation_steps to "
                                                      f"⌈16 / ({mb} × {world})⌉ = {ga} when unset")))
            else:
                out.append(("grad_accum", Fact.unknown(
                    "ms-swift sets gradient_accumulation_steps to ⌈16 / (micro-batch × world size)⌉ "
                    "when unset, and the world size is not known", source=line.source)))
        return out


ADAPTER = Swift()

_LORA = """\
#!/bin/bash
# LoRA SFT on one GPU
CUDA_VISIBLE_DEVICES=0 \\
swift sft \\
    --model Qwen/Qwen2.5-7B-Instruct \\
    --train_type lora \\
    --dataset 'AI-ModelScope/alpaca-gpt4-data-en#500' \\
              'swift/self-cognition#500' \\
    --torch_dtype bfloat16 \\
    --per_device_train_batch_size 1 \\
    --lora_rank 8 \\
    --lora_alpha 32 \\
    --target_modules q_proj v_proj \\
    --gradient_accumulation_steps 16 \\
    --max_length 2048 \\
    --output_dir output \\
    --model_name swift-robot
"""

_FULL = """\
#!/bin/bash
NPROC_PER_NODE=8 \\
swift sft \\
    --model Qwen/Qwen2.5-7B-Instruct \\
    --train_type full \\
    --dataset 'AI-ModelScope/alpaca-gpt4-data-en' \\
    --torch_dtype bfloat16 \\
    --per_device_train_batch_size 2 \\
    --max_length 4096 \\
    --deepspeed zero3_offload \\
    --attn_impl flash_attn
"""

_DPO = """\
#!/bin/bash
NPROC_PER_NODE=4 swift rlhf \\
    --rlhf_type dpo \\
    --model Qwen/Qwen2.5-1.5B-Instruct \\
    --dataset hjh0119/shareAI-Llama3-DPO-zh-en-emoji \\
    --torch_dtype bfloat16 \\
    --max_length 1024 \\
    --deepspeed zero2
"""

Swift.EXAMPLES = [
    Example(title="LoRA SFT on one GPU: rank, alpha and several target modules from the flags",
            files={"lora.sh": _LORA}, paths=["lora.sh"],
            facts={"model": ("Qwen/Qwen2.5-7B-Instruct", "lora.sh:5"),
                   "lora": ({"r": 8, "alpha": 32, "targets": ["q_proj", "v_proj"], "base_bits": 16},
                            "lora.sh:3", "cli"),
                   "param_dtype": ("bf16", "lora.sh:9"), "mixed_precision": ("bf16", "lora.sh:9"),
                   "micro_batch": (1, "lora.sh:10"), "grad_accum": (16, "lora.sh:14"),
                   "seq_len": (2048, "lora.sh:15"),
                   "activation_checkpointing": ("full", "lora.sh:3", "default"),
                   "gpus_per_node": (1, "lora.sh:3", "default")}),
    Example(title="full fine-tune over 8 processes with the built-in zero3_offload; accumulation "
                  "from ms-swift's rule",
            files={"full.sh": _FULL}, paths=["full.sh"],
            facts={"lora": (False, "full.sh:4", "default"), "gpus_per_node": (8, "full.sh:2"),
                   "nodes": (1, "full.sh:2", "default"),
                   "zero_stage": (3, "full.sh:10"), "offload": ("optimizer+params", "full.sh:10"),
                   "attention": ("flash", "full.sh:11"), "micro_batch": (2, "full.sh:8"),
                   "grad_accum": (1, "full.sh:2", "derived"), "seq_len": (4096, "full.sh:9")}),
    Example(title="`swift rlhf --rlhf_type dpo`: the policy is the job, LoRA by default",
            files={"dpo.sh": _DPO}, paths=["dpo.sh"],
            facts={"model": ("Qwen/Qwen2.5-1.5B-Instruct", "dpo.sh:4"),
                   "lora": ({"r": 8, "alpha": 32, "targets": ["all-linear"], "base_bits": 16},
                            "dpo.sh:2", "default"),
                   "micro_batch": (1, "dpo.sh:2", "default"), "grad_accum": (4, "dpo.sh:2", "derived"),
                   "zero_stage": (2, "dpo.sh:8"), "gpus_per_node": (4, "dpo.sh:2")}),
]
