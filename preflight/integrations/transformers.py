"""`PreflightCallback` for the Hugging Face `Trainer` (and TRL's trainers, which are Trainers).

    from preflight.integrations.transformers import PreflightCallback

    trainer = Trainer(model=model, args=args, train_dataset=ds,
                      callbacks=[PreflightCallback(seq_len=2048)])
    trainer.train()      # WillNotFit before the first step if the job cannot fit

At `on_train_begin` — the model built, wrapped and placed, the optimizer created, nothing
stepped yet — it reads:

- the model: parameter count, trainable parameters and tensors, the weights' dtype, peft
  LoRA adapters, a bitsandbytes-quantised base, the architecture's shape from `config`;
- the optimizer's class (else `TrainingArguments.optim`);
- `TrainingArguments`: per-device batch, gradient accumulation, bf16 / fp16, gradient
  checkpointing, DeepSpeed's ZeRO stage and offload, FSDP's sharding strategy, the world
  size; TRL's `max_length` / `max_seq_length` as the sequence length;
- the capacity of the CUDA device the model is on (or `gpu=` / `gpu_memory=`).

transformers is not imported by preflight: the callback class is built on first use from
the installed `transformers.TrainerCallback`.
"""

from __future__ import annotations

from typing import Any, Optional

from preflight.integrations.runtime import (RuntimeCheck, WillNotFit, first, model_facts,
                                            optimizer_fact, where_trained)
from preflight.lazy import lazy

spellings = lazy("preflight.facts.spellings")     # read when the callback reads the trainer

__all__ = ["PreflightCallback", "WillNotFit", "training_args_facts"]

_FSDP = ("full_shard", "shard_grad_op", "hybrid_shard", "no_shard")


def training_args_facts(args: Any) -> tuple[dict[str, Any], dict[str, str]]:
    """Facts of a `TrainingArguments` (or TRL config): (values, unknown name → reason)."""
    facts: dict[str, Any] = {}
    unknown: dict[str, str] = {}
    facts["micro_batch"] = getattr(args, "per_device_train_batch_size", None)
    facts["grad_accum"] = getattr(args, "gradient_accumulation_steps", None)
    if getattr(args, "bf16", False):
        facts["mixed_precision"] = "bf16"
    elif getattr(args, "fp16", False):
        facts["mixed_precision"] = "fp16"
    else:
        facts["mixed_precision"] = "none"
    optim = str(getattr(getattr(args, "optim", None), "value", getattr(args, "optim", "")) or "")
    if spellings.optimizer_name(optim):
        facts["optimizer"] = spellings.optimizer_name(optim)
    # `activation_checkpointing` (transformers ≥ 5.x), `gradient_checkpointing` before it
    if getattr(args, "activation_checkpointing", False) or getattr(args, "gradient_checkpointing", False):
        facts["activation_checkpointing"] = "full"
    ws = getattr(args, "world_size", None)
    if isinstance(ws, int) and ws >= 1:
        facts["world_size"] = ws
    seq = first(getattr(args, n, None) for n in ("max_length", "max_seq_length"))
    if isinstance(seq, int) and seq > 0:
        facts["seq_len"] = seq
    else:
        unknown["seq_len"] = ("the Trainer's batches set the sequence length: give "
                              "PreflightCallback(seq_len=…) to size the activations")
    facts.update(_deepspeed(args))
    facts.update(_fsdp(args))
    return facts, unknown


def _deepspeed(args: Any) -> dict[str, Any]:
    hf_ds = getattr(args, "hf_deepspeed_config", None)
    cfg = getattr(hf_ds, "config", None)
    if not isinstance(cfg, dict):
        return {}
    zero = cfg.get("zero_optimization") or {}
    out: dict[str, Any] = {}
    stage = zero.get("stage")
    if isinstance(stage, int) and 0 <= stage <= 3:
        out["zero_stage"] = stage
    opt_dev = (zero.get("offload_optimizer") or {}).get("device")
    par_dev = (zero.get("offload_param") or {}).get("device")
    if par_dev in ("cpu", "nvme"):
        out["offload"] = "optimizer+params"
    elif opt_dev in ("cpu", "nvme"):
        out["offload"] = "optimizer"
    return out


def _fsdp(args: Any) -> dict[str, Any]:
    opts = getattr(args, "fsdp", None) or []
    if isinstance(opts, str):
        opts = opts.split()
    names = [str(getattr(o, "value", o)).lower() for o in opts]
    out: dict[str, Any] = {}
    for n in names:
        if n in _FSDP:
            out["fsdp"] = n
    if "offload" in names:
        out["offload"] = "optimizer+params"
    return out


def _facts(args: Any, model: Any, optimizer: Any) -> tuple[dict[str, Any], dict[str, str], list[str]]:
    facts, unknown = training_args_facts(args)
    mfacts, notes = model_facts(model)
    facts.update(mfacts)
    live = optimizer_fact(optimizer)
    if live:
        facts["optimizer"] = live
    return facts, unknown, notes


_CLASS: Optional[type] = None


def _callback_class() -> type:
    """The callback class, built once on the installed transformers' TrainerCallback."""
    global _CLASS
    if _CLASS is not None:
        return _CLASS
    from transformers import TrainerCallback

    class PreflightCallback(TrainerCallback):
        __doc__ = __doc__

        def __init__(self, *, gpu: Optional[str] = None, gpu_memory: Any = None,
                     headroom: Optional[float] = None, seq_len: Optional[int] = None,
                     micro_batch: Optional[int] = None, on_will_not_fit: str = "raise",
                     stream: Any = ..., json_path: Optional[str] = None):
            kw = {} if stream is ... else {"stream": stream}
            self.check = RuntimeCheck(gpu=gpu, gpu_memory=gpu_memory, headroom=headroom,
                                      seq_len=seq_len, micro_batch=micro_batch,
                                      on_will_not_fit=on_will_not_fit, json_path=json_path, **kw)

        @property
        def report(self):
            """The report of the check at the start of training (None before)."""
            return self.check.report

        def on_train_begin(self, args, state, control, model=None, optimizer=None, **kwargs):
            facts, unknown, notes = _facts(args, model, optimizer)
            main = bool(getattr(state, "is_world_process_zero", True))
            self.check.run(facts, unknown, model, where_trained(), main_process=main, notes=notes)
            return control

    PreflightCallback.__module__ = __name__
    PreflightCallback.__qualname__ = "PreflightCallback"
    _CLASS = PreflightCallback
    return _CLASS


def __getattr__(name: str) -> Any:
    if name == "PreflightCallback":
        return _callback_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
