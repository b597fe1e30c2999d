"""What each peer estimator is given for one published row (`bench/published/*.yaml`).

Pure functions, no peer installed: `facts(row)` reads the row's configuration into the few
facts the peers take (precision, method, world size and sharding, batch, sequence,
optimizer, LoRA), and `plan_<peer>(f)` turns them into that peer's own input — the CLI
flags or function arguments it documents — or, when the peer has no input for something
the row does (LoRA, sharding, an fp32 dtype, an optimizer it does not price), a
`Skip(reason)`. `bench/peers.py` runs the plans in each peer's own virtual environment
and parses what the peer prints.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Optional, Union


@dataclass(frozen=True)
class Skip:
    """The peer cannot size this row, and why."""
    reason: str


@dataclass(frozen=True)
class Plan:
    """What to hand one peer: `args` (flags or keyword arguments, JSON-able) and `claims`,
    the tier the peer's figure stands for, in its own terms."""
    args: dict
    claims: str


PlanOrSkip = Union[Plan, Skip]


@dataclass(frozen=True)
class Facts:
    model: str
    method: str                 # full | lora | qlora | frozen | …
    precision: str              # fp32 | fp16-mixed | bf16-mixed | bf16-true | fp16-true
    optimizer: str
    micro_batch: Optional[int]
    seq_len: Optional[int]
    grad_ckpt: Any              # True | False | "full" | "selective-op" | …
    attention: str
    world_size: int
    stage: int                  # 0 replicated (single GPU, DDP), 2 / 3 ZeRO or FSDP
    shard_group: int            # ranks one copy of the states is split over
    tp: int
    pp: int
    offload_optimizer: bool
    offload_params: bool
    quant: Optional[str]        # nf4 | nf4-dq | int8 | None
    lora_r: Optional[int]
    lora_targets: Any
    gpu: str = ""


def value(row: dict, key: str, default: Any = None) -> Any:
    """The `value` of one configuration field of a row, `default` when absent."""
    got = (row.get("config") or {}).get(key)
    if isinstance(got, dict) and "value" in got:
        return default if got["value"] is None else got["value"]
    return default


def _int(v: Any, default: Optional[int] = None) -> Optional[int]:
    try:
        return int(v)
    except (TypeError, ValueError):
        return default


_FSDP_STAGE = {"full_shard": 3, "hybrid_shard": 3, "shard_grad_op": 2, "no_shard": 0,
               "ddp": 0}


def sharding(row: dict) -> tuple[int, int, bool, bool]:
    """(stage, ranks the states are split over, optimizer offloaded, params offloaded).
    FSDP FULL_SHARD counts as stage 3, SHARD_GRAD_OP as 2, NO_SHARD as replicated; a
    stated `dp_shard` (HSDP, 2-D/3-D meshes) is the shard group, else the data-parallel
    ranks world / (tp · pp)."""
    world = _int(value(row, "world_size"), 1) or 1
    tp = _int(value(row, "tp"), 1) or 1
    pp = _int(value(row, "pp"), 1) or 1
    stage, off_opt, off_par = 0, False, False
    fsdp = value(row, "fsdp")
    if isinstance(fsdp, dict):
        word = str(fsdp.get("sharding", "")).split()[0].lower() if fsdp.get("sharding") else ""
        stage = _FSDP_STAGE.get(word, 3 if word else 0)
        off = bool(fsdp.get("cpu_offload") or fsdp.get("offload_params"))
        off_opt = off_par = off
    elif isinstance(fsdp, str) and fsdp:
        stage = _FSDP_STAGE.get(fsdp.lower(), 3)
    zero = _int(value(row, "zero_stage"))
    if zero is not None:
        stage = zero
    off = value(row, "cpu_offload")
    if isinstance(off, dict):
        off_opt = off_opt or str(off.get("optimizer", "none")).lower() not in ("none", "")
        off_par = off_par or str(off.get("params", "none")).lower() not in ("none", "")
    elif off is True:
        off_opt = off_par = True
    group = _int(value(row, "dp_shard")) or max(world // (tp * pp), 1)
    if world == 1:
        stage, group = (stage if (off_opt or off_par) else 0), 1
    return stage, group, off_opt, off_par


def _quant(row: dict) -> Optional[str]:
    q = value(row, "quantization")
    if isinstance(q, dict):
        kind = str(q.get("type", "")).lower()
        return f"{kind}-dq" if q.get("double_quant") and kind == "nf4" else kind or None
    return str(q).lower() if q else None


def facts(row: dict) -> Facts:
    """The facts every plan reads, from one published row."""
    stage, group, off_opt, off_par = sharding(row)
    return Facts(
        model=str(value(row, "model", "")), method=str(value(row, "method", "full")).lower(),
        precision=str(value(row, "precision", "")).lower(),
        optimizer=str(value(row, "optimizer", "adamw")).lower(),
        micro_batch=_int(value(row, "micro_batch")), seq_len=_int(value(row, "seq_len")),
        grad_ckpt=value(row, "grad_ckpt", False),
        attention=str(value(row, "attention", "sdpa")).lower(),
        world_size=_int(value(row, "world_size"), 1) or 1, stage=stage, shard_group=group,
        tp=_int(value(row, "tp"), 1) or 1, pp=_int(value(row, "pp"), 1) or 1,
        offload_optimizer=off_opt, offload_params=off_par, quant=_quant(row),
        lora_r=_int(value(row, "lora_r")), lora_targets=value(row, "lora_targets"),
        gpu=str(row.get("gpu", "")))


def adapters(f: Facts) -> bool:
    return f.method in ("lora", "qlora", "dora") or f.quant is not None


def _adam(opt: str) -> bool:
    return opt in ("adam", "adamw", "adamw_torch", "adamw_torch_fused", "paged_adamw_32bit")


def _eight_bit_adam(opt: str) -> bool:
    return opt in ("adam8bit", "adamw_8bit", "adamw8bit", "paged_adamw_8bit", "adamw-8bit")


def _ckpt_full(g: Any) -> bool:
    return g is True or str(g).lower() in ("true", "full", "unsloth-offload")


def gpu_gib(gpu: str) -> Optional[int]:
    """The memory size in a GPU name ("A100-SXM4-40GB" → 40), None when not stated."""
    m = re.search(r"(\d+)\s*GB", gpu or "")
    return int(m.group(1)) if m else None


# ---- accelerate estimate-memory ---------------------------------------------------------

def plan_accelerate(f: Facts) -> PlanOrSkip:
    """`accelerate estimate-memory <config dir> --library_name transformers --dtypes D`:
    one device holding the whole model, Adam, no activations."""
    if adapters(f):
        return Skip("estimate-memory sizes training every parameter; it has no LoRA or "
                    "quantized-base input")
    if f.world_size > 1 and (f.stage > 0 or f.tp > 1 or f.pp > 1):
        return Skip("estimate-memory sizes one device holding the whole model; it has no "
                    "sharding or parallelism input (FSDP, ZeRO, TP, PP)")
    if not _adam(f.optimizer):
        return Skip(f"its training figure is for Adam only; the row uses {f.optimizer}")
    dtype = "float32" if f.precision == "fp32" else "float16"
    return Plan({"dtype": dtype},
                f"'Training using Adam' at dtype {dtype} (its only 16-bit choice for "
                f"{f.precision}): the largest of weights, gradients, Adam states and the "
                f"step for batch size 1, no activations, no CUDA context")


# ---- DeepSpeed ZeRO model-states estimators ---------------------------------------------

def plan_deepspeed(f: Facts) -> PlanOrSkip:
    """`estimate_zero3_model_states_mem_needs_all_cold` for stage 3 / FSDP full shard,
    `estimate_zero2_…_all_cold` for stage 2, and for a replicated run (DeepSpeed has no
    stage-0 estimator) the stage-2 one on a single GPU, which partitions nothing."""
    if adapters(f):
        return Skip("DeepSpeed's ZeRO estimators count every parameter as trained (16-bit "
                    "weights and gradients, fp32 master and Adam); no LoRA or quantized base")
    if f.tp > 1 or f.pp > 1:
        return Skip("DeepSpeed's ZeRO estimators have no tensor- or pipeline-parallel input")
    if not _adam(f.optimizer):
        return Skip(f"DeepSpeed's ZeRO estimators price Adam states; the row uses "
                    f"{f.optimizer}")
    if f.stage == 1:
        return Skip("DeepSpeed publishes no ZeRO-1 estimator")
    gpus = f.shard_group if f.stage >= 2 else 1
    per_node = min(gpus, 8)
    args = {"stage": 3 if f.stage == 3 else 2, "num_gpus_per_node": per_node,
            "num_nodes": max(gpus // per_node, 1),
            "offload_optimizer": f.offload_optimizer,
            "offload_params": f.offload_params and f.stage == 3}
    how = (f"ZeRO-{args['stage']} over {gpus} GPU(s)" if f.stage >= 2 else
           "no stage-0 estimator: ZeRO-2 on 1 GPU (partitions nothing)")
    return Plan(args, f"model states only (16-bit params and grads, fp32 master weights "
                      f"and Adam states) per GPU, {how}, offload_optimizer="
                      f"{'cpu' if args['offload_optimizer'] else 'none'}; no activations, "
                      f"buffers or CUDA context")


# ---- llm-analysis -----------------------------------------------------------------------

#: llm-analysis's largest GPU config: the GPU sets only its latency figures and an
#: assertion that the batch fits, which would refuse runs that did fit in reality
LLMA_GPU = "mi250x-128gb"


def plan_llm_analysis(f: Facts) -> PlanOrSkip:
    """`llm_analysis.analysis.train(...)` with a model config JSON of its own format."""
    if adapters(f):
        return Skip("llm-analysis trains every parameter; it has no LoRA or quantized-base "
                    "input")
    if f.precision == "fp32":
        return Skip("llm-analysis's dtype configs are 4-, 8- and 16-bit; none is fp32")
    if f.offload_optimizer or f.offload_params:
        return Skip("llm-analysis has no CPU-offload input")
    if f.micro_batch is None or f.seq_len is None:
        return Skip("the row states no micro-batch or sequence length")
    args: dict = {"dtype_name": "w16a16e16", "batch_size_per_gpu": f.micro_batch,
                  "seq_len": f.seq_len, "gradient_accumulation_steps": 1,
                  "ds_zero": f.stage if f.world_size > 1 else 0, "dp_size": f.shard_group,
                  "tp_size": f.tp, "pp_size": f.pp,
                  "activation_recomputation": 2 if _ckpt_full(f.grad_ckpt) else
                  (1 if str(f.grad_ckpt).lower().startswith("selective") else 0),
                  "flash_attn": f.attention != "eager",
                  "gpu_name": LLMA_GPU,
                  "num_gpus_per_node": max(8, f.tp)}
    states = "fp32 master + Adam (its default)"
    if f.precision.endswith("-true"):      # no fp32 master; Adam moments in the 16-bit dtype
        args.update(master_weights_dtype_bytes=0, other_op_bytes=4)
        states = "no master copy, 16-bit Adam moments"
    if _eight_bit_adam(f.optimizer):
        args["other_op_bytes"] = 2
        states = "8-bit Adam moments"
    elif not _adam(f.optimizer):
        return Skip(f"llm-analysis prices Adam-like states only; the row uses {f.optimizer}")
    return Plan(args, f"(weight+op_state+grad+act)_memory_per_gpu: 16-bit weights and "
                      f"gradients, {states}, Megatron-style activations; no CUDA context "
                      f"or allocator")


# ---- fitcheck-llm -----------------------------------------------------------------------

_FITCHECK_GPUS = {"a10": "a10", "3090": "3090", "4090": "4090", "t4": "t4", "l40s": "l40s",
                  "v100": "v100-16", "h200": "h200", "l4-": "l4"}
_FITCHECK_MODULES = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj",
                     "down_proj")


def fitcheck_gpu(gpu: str) -> list[str]:
    """`--gpu KEY` from fitcheck's database for the row's GPU, else `--vram-mib`."""
    g = gpu.lower()
    if "a100" in g:
        return ["--gpu", "a100-40" if gpu_gib(gpu) == 40 else "a100-80"]
    if "h100" in g and gpu_gib(gpu) == 80:
        return ["--gpu", "h100-80"]
    for word, key in _FITCHECK_GPUS.items():
        if word in g:
            return ["--gpu", key]
    gib = gpu_gib(gpu)
    return ["--vram-mib", str(gib * 1024)] if gib else []


def _fitcheck_targets(targets: Any) -> Optional[str]:
    if targets == "all-linear":
        return "full"
    if not isinstance(targets, list) or not targets:
        return None
    names = [str(t).lower() for t in targets]
    names = [n if n.endswith("_proj") else f"{n}_proj" for n in names]
    return ",".join(names) if all(n in _FITCHECK_MODULES for n in names) else None


def plan_fitcheck(f: Facts) -> PlanOrSkip:
    """`fitcheck <model> --json …` (one GPU, LoRA/QLoRA or full fine-tune)."""
    if f.world_size > 1 and (f.stage > 0 or f.tp > 1 or f.pp > 1):
        return Skip("fitcheck sizes one GPU; it has no world-size or sharding input")
    if f.micro_batch is None or f.seq_len is None:
        return Skip("the row states no micro-batch or sequence length")
    prec = {"fp32": "fp32"}.get(f.precision, "fp16" if f.precision.startswith("fp16")
                                else "bf16")
    argv = ["--precision", prec, "--batch-size", str(f.micro_batch),
            "--seq-len", str(f.seq_len)]
    if f.method == "full" and f.quant is None:
        argv.append("--no-lora")
    elif f.method in ("lora", "qlora"):
        targets = _fitcheck_targets(f.lora_targets)
        if targets is None:
            return Skip(f"fitcheck's LoRA targets are the q/k/v/o/gate/up/down projections; "
                        f"the row adapts {f.lora_targets}")
        argv += ["--lora-r", str(f.lora_r or 16), "--lora-targets", targets]
    else:
        return Skip(f"fitcheck has no input for method {f.method}")
    if f.quant in ("nf4", "nf4-dq", "int8"):
        argv += ["--quant", "int8" if f.quant == "int8" else "nf4"]
        if f.quant == "nf4-dq":
            argv.append("--double-quant")
    elif f.quant:
        return Skip(f"fitcheck has no {f.quant} base")
    if _eight_bit_adam(f.optimizer):
        argv += ["--optimizer", "adam8bit"]
    elif f.optimizer == "sgd":
        argv += ["--optimizer", "sgd"]
    elif not _adam(f.optimizer):
        return Skip(f"fitcheck has no {f.optimizer} optimizer")
    elif f.precision.endswith("-true"):
        argv += ["--optimizer-dtype", "bf16"]
    if _ckpt_full(f.grad_ckpt):
        argv.append("--grad-checkpoint")
    if f.attention != "eager":
        argv.append("--flash-attn")
    argv += fitcheck_gpu(f.gpu)
    return Plan({"argv": argv}, "memory_mib.total: weights, LoRA, optimizer, gradients, "
                                "activations and its CUDA-context/fragmentation overhead")


# ---- torch-preflight --------------------------------------------------------------------

_TP_DTYPE = {"fp32": "fp32", "bf16-mixed": "amp", "fp16-mixed": "amp",
             "bf16-true": "pure-bf16", "fp16-true": "pure-fp16"}


def plan_torch_preflight(f: Facts) -> PlanOrSkip:
    """`torch-preflight estimate --model NAME … -f json` (its architecture snapshot)."""
    if adapters(f):
        return Skip("torch-preflight's estimate CLI has no LoRA or quantized-base input")
    if f.offload_optimizer or f.offload_params or f.tp > 1 or f.pp > 1:
        return Skip("torch-preflight's estimate CLI has no offload, TP or PP input")
    if f.micro_batch is None or f.seq_len is None:
        return Skip("the row states no micro-batch or sequence length")
    dtype = _TP_DTYPE.get(f.precision)
    if dtype is None:
        return Skip(f"no torch-preflight precision mode for {f.precision}")
    opt = "adamw-8bit" if _eight_bit_adam(f.optimizer) else (
        "adamw" if _adam(f.optimizer) else f.optimizer)
    if opt not in ("adamw", "adamw-8bit", "adafactor", "sgd", "adam", "lion"):
        return Skip(f"torch-preflight has no {f.optimizer} optimizer")
    sharding = ("none" if f.world_size == 1 else "ddp") if f.stage == 0 else f"zero-{f.stage}"
    argv = ["--model", f.model, "--batch-size", str(f.micro_batch), "--seq-len",
            str(f.seq_len), "--dtype", dtype, "--optimizer", opt, "--world-size",
            str(f.shard_group if f.stage else f.world_size), "--sharding", sharding]
    if _ckpt_full(f.grad_ckpt):
        argv.append("--checkpointing")
    if f.attention != "eager":
        argv.append("--flash")
    gib = gpu_gib(f.gpu)
    if gib:
        argv += ["--gpu-memory", f"{gib}GiB"]
    return Plan({"argv": argv}, "its projected peak per device (weights, gradients, "
                                "optimizer, activations, workspace)")


# ---- ftuneai ----------------------------------------------------------------------------

def _ftuneai_target(targets: Any) -> Optional[str]:
    t = _fitcheck_targets(targets)
    if t == "full" or (t and set(t.split(",")) == set(_FITCHECK_MODULES)):
        return "all_linear"
    if t and set(t.split(",")) == {"q_proj", "v_proj"}:
        return "attention"
    if t and set(t.split(",")) == {"q_proj", "k_proj", "v_proj", "o_proj"}:
        return "attention_all"
    return None


def plan_ftuneai(f: Facts) -> PlanOrSkip:
    """`ftuneai.Estimator(model=…, method=…, …).estimate_memory()` (its model database)."""
    if f.precision == "fp32":
        return Skip("ftuneai has no precision input: weights in the model's 16-bit dtype")
    if f.offload_optimizer or f.offload_params or f.tp > 1 or f.pp > 1:
        return Skip("ftuneai has no offload, TP or PP input")
    if f.micro_batch is None or f.seq_len is None:
        return Skip("the row states no micro-batch or sequence length")
    kw: dict = {"model": f.model, "batch_size": f.micro_batch, "seq_length": f.seq_len,
                "gradient_checkpointing": _ckpt_full(f.grad_ckpt),
                "flash_attention": f.attention != "eager"}
    if f.method == "full" and f.quant is None:
        kw["method"] = "full"
    elif f.method in ("lora", "qlora"):
        target = _ftuneai_target(f.lora_targets)
        if target is None:
            return Skip(f"ftuneai's LoRA targets are q/v, q/k/v/o or all linear layers; the "
                        f"row adapts {f.lora_targets}")
        kw.update(method="qlora" if f.quant else "lora", lora_rank=f.lora_r or 16,
                  lora_target=target,
                  quantization={"int8": "8bit"}.get(f.quant or "", "4bit" if f.quant else "none"))
    else:
        return Skip(f"ftuneai has no input for method {f.method}")
    kw["optimizer"] = ("adam_8bit" if _eight_bit_adam(f.optimizer) else
                       "adamw" if _adam(f.optimizer) else f.optimizer)
    if kw["optimizer"] not in ("adamw", "adam_8bit", "sgd", "adafactor"):
        return Skip(f"ftuneai has no {f.optimizer} optimizer")
    if f.stage >= 2 and f.world_size > 1:
        kw.update(sharding={3: "fsdp", 2: "zero_2"}[min(f.stage, 3)], num_gpus=f.shard_group)
    return Plan(kw, "total_gb: weights, LoRA, gradients, optimizer states, activations and "
                    "its overhead per GPU")


PLANS = {"accelerate": plan_accelerate, "deepspeed": plan_deepspeed,
         "llm-analysis": plan_llm_analysis, "fitcheck-llm": plan_fitcheck,
         "torch-preflight": plan_torch_preflight, "ftuneai": plan_ftuneai}
