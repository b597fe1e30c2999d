"""`PreflightCallback` for Lightning (`lightning.pytorch`, or the older `pytorch_lightning`).

    from preflight.integrations.lightning import PreflightCallback

    trainer = L.Trainer(callbacks=[PreflightCallback(seq_len=2048)], precision="bf16-mixed")
    trainer.fit(model, train_loader)      # WillNotFit before the first step if it cannot fit

At `on_fit_start` — the strategy set up, the model placed, the optimizers configured,
nothing stepped yet — it reads the LightningModule (parameter count, trainable parameters
and tensors, the weights' dtype, peft adapters, the shape from a `config` attribute), the
first optimizer's class, the Trainer's precision, gradient accumulation, world size and
strategy (FSDP's sharding strategy, DeepSpeed's ZeRO stage and offload), the batch size of
the DataLoader given to `fit` (or `micro_batch=`), and the capacity of the CUDA device the
model is on (or `gpu=` / `gpu_memory=`).

Lightning is not imported by preflight: the callback class is built on first use.
"""

from __future__ import annotations

from typing import Any, Optional

from preflight.integrations.runtime import (RuntimeCheck, WillNotFit, model_facts, optimizer_fact,
                                            where_trained)
from preflight.lazy import lazy

spellings = lazy("preflight.facts.spellings")     # read when the callback reads the trainer

__all__ = ["PreflightCallback", "WillNotFit", "trainer_facts"]


def trainer_facts(trainer: Any) -> tuple[dict[str, Any], dict[str, str]]:
    """Facts of a Lightning Trainer: (values, unknown name → reason)."""
    facts: dict[str, Any] = {}
    unknown: dict[str, str] = {}
    prec = str(getattr(trainer, "precision", "") or "").lower()
    if prec in spellings.PRECISION_MODES:
        facts["mixed_precision"] = spellings.PRECISION_MODES[prec][1]
    acc = getattr(trainer, "accumulate_grad_batches", None)
    if isinstance(acc, int) and acc >= 1:
        facts["grad_accum"] = acc
    ws = getattr(trainer, "world_size", None)
    if isinstance(ws, int) and ws >= 1:
        facts["world_size"] = ws
    facts.update(_strategy(getattr(trainer, "strategy", None)))
    bs = _fit_batch_size(trainer)
    if bs:
        facts["micro_batch"] = bs
    else:
        unknown["micro_batch"] = ("the batch size of the DataLoader given to fit is not known "
                                  "yet: give PreflightCallback(micro_batch=…)")
    unknown["seq_len"] = ("a LightningModule's batches set the sequence length: give "
                          "PreflightCallback(seq_len=…) to size the activations")
    return facts, unknown


def _strategy(strategy: Any) -> dict[str, Any]:
    name = type(strategy).__name__
    out: dict[str, Any] = {}
    if name == "FSDPStrategy":
        ss = getattr(strategy, "sharding_strategy", None)
        s = str(getattr(ss, "name", ss) or "").lower()
        if s in ("full_shard", "shard_grad_op", "hybrid_shard", "no_shard"):
            out["fsdp"] = s
        if getattr(strategy, "cpu_offload", None):
            out["offload"] = "optimizer+params"
    elif name == "DeepSpeedStrategy":
        cfg = getattr(strategy, "config", None) or {}
        zero = cfg.get("zero_optimization") or {}
        if zero.get("stage") in (0, 1, 2, 3):
            out["zero_stage"] = zero["stage"]
        if (zero.get("offload_param") or {}).get("device") in ("cpu", "nvme"):
            out["offload"] = "optimizer+params"
        elif (zero.get("offload_optimizer") or {}).get("device") in ("cpu", "nvme"):
            out["offload"] = "optimizer"
    return out


def _fit_batch_size(trainer: Any) -> Optional[int]:
    """The batch size of the training DataLoader: the Trainer's once loaded, else the one
    handed to `fit` (or its datamodule's `batch_size`)."""
    loaders = [getattr(trainer, "train_dataloader", None)]
    source = getattr(getattr(trainer, "fit_loop", None), "_data_source", None)
    loaders.append(getattr(source, "instance", None))
    dm = getattr(trainer, "datamodule", None)
    for obj in loaders + [dm]:
        bs = getattr(obj, "batch_size", None)
        if isinstance(bs, int) and not isinstance(bs, bool) and bs >= 1:
            return bs
    return None


def _facts(trainer: Any, module: Any) -> tuple[dict[str, Any], dict[str, str], list[str]]:
    facts, unknown = trainer_facts(trainer)
    mfacts, notes = model_facts(module)
    facts.update(mfacts)
    opts = list(getattr(trainer, "optimizers", None) or [])
    if opts:
        live = optimizer_fact(opts[0])
        if live:
            facts["optimizer"] = live
        if len(opts) > 1:
            notes.append(f"{len(opts)} optimizers: sized as the first ({type(opts[0]).__name__})")
    return facts, unknown, notes


_CLASSES: dict[str, type] = {}


def _callback_class() -> type:
    try:
        from lightning.pytorch import Callback
        pkg = "lightning.pytorch"
    except ImportError:
        from pytorch_lightning import Callback  # type: ignore[no-redef]
        pkg = "pytorch_lightning"
    if pkg in _CLASSES:
        return _CLASSES[pkg]

    class PreflightCallback(Callback):
        __doc__ = __doc__

        def __init__(self, *, gpu: Optional[str] = None, gpu_memory: Any = None,
                     headroom: Optional[float] = None, seq_len: Optional[int] = None,
                     micro_batch: Optional[int] = None, on_will_not_fit: str = "raise",
                     stream: Any = ..., json_path: Optional[str] = None):
            super().__init__()
            kw = {} if stream is ... else {"stream": stream}
            self.check = RuntimeCheck(gpu=gpu, gpu_memory=gpu_memory, headroom=headroom,
                                      seq_len=seq_len, micro_batch=micro_batch,
                                      on_will_not_fit=on_will_not_fit, json_path=json_path, **kw)

        @property
        def report(self):
            """The report of the check at the start of fitting (None before)."""
            return self.check.report

        def on_fit_start(self, trainer, pl_module) -> None:
            facts, unknown, notes = _facts(trainer, pl_module)
            self.check.run(facts, unknown, pl_module, where_trained(),
                           main_process=bool(getattr(trainer, "is_global_zero", True)),
                           notes=notes)

    PreflightCallback.__module__ = __name__
    PreflightCallback.__qualname__ = "PreflightCallback"
    _CLASSES[pkg] = PreflightCallback
    return PreflightCallback


def __getattr__(name: str) -> Any:
    if name == "PreflightCallback":
        return _callback_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
