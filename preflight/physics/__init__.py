"""Pure physics: a TrainingPlan in, a per-GPU ledger and the scaling walls out.

Nothing here reads files or knows of libcst or click. Modules, each named after what it
computes:

    inputs       plan facts → plain values, with every assumption recorded
    states       weights, gradients, optimizer state, master weights; ZeRO formulas
    activations  per-layer saved tensors per architecture family; the 34-byte rule,
                 Korthikanti's formula, logits
    saved        the entry of the activation tables (one saved tensor), bytes per kind
    mla, moe     latent attention and mixture-of-experts tables and parameters
    lora         LoRA targets, a frozen base's bytes and what its layers save
    tensors      the largest single weights and tensors (case C), block sizes
    comm         communication buffers and communication time
    zero         DeepSpeed ZeRO's own buffers, sized by the job's zero_optimization
    stages       pipeline-parallel stages under 1F1B (each sized, the busiest judged)
    walls        compute time, step time, scaling efficiency
    layers       which activation table the model uses, one layer's saved bytes
    backward     a layer's backward temporaries, the last layer's backward, recompute
    ledger       assembles the lines
"""

from __future__ import annotations

from typing import Optional

from preflight import hardware
from preflight.physics.inputs import Inputs
from preflight.physics.ledger import build_ledger
from preflight.physics.result import Estimate, Ledger, LedgerLine, Walls
from preflight.physics.walls import DEFAULT_MFU, walls
from preflight.plan import TrainingPlan

__all__ = ["estimate", "replan", "resolve_gpu", "Estimate", "Ledger", "LedgerLine", "Walls"]


def resolve_gpu(plan: TrainingPlan, gpu=None):
    """The Hardware to size against: the one given, else the plan's `gpu` fact.
    Returns (hardware or None, note)."""
    if isinstance(gpu, str):
        return hardware.lookup(gpu), ""
    if gpu is not None:
        return gpu, ""
    name = plan.value("gpu")
    if not name:
        return None, ""
    try:
        return hardware.lookup(str(name)), ""
    except hardware.UnknownGPU as e:
        return None, str(e)


def estimate(plan: TrainingPlan, gpu=None, headroom: float = 0.2, *, mfu: Optional[float] = None,
             family: Optional[str] = None) -> Estimate:
    """The ledger and the walls for one plan on one GPU (None: capacity unknown).

    `gpu` is a `preflight.hardware.Hardware`, a catalogue name, or None (then the plan's
    `gpu` fact is used if it names a known card). `family` overrides the architecture
    family read from the `model` fact ("gpt2" | "llama").
    """
    hw, gpu_note = resolve_gpu(plan, gpu)
    x = Inputs.from_plan(plan, gpus_per_node_hint=getattr(hw, "gpus_per_node", 8) or 8,
                         family=family)
    ledger = build_ledger(x, hw, headroom)
    if gpu_note:
        ledger.assumptions.append(gpu_note)
    if hw is not None and hw.note:
        ledger.assumptions.append(f"{hw.name}: {hw.note}")
    ledger.memory_unknown = list(ledger.unknown)
    w, missing = walls(x, hw, DEFAULT_MFU if mfu is None else mfu)
    for n in missing:
        if n not in ledger.unknown:
            ledger.unknown.append(n)
    est = Estimate(ledger=ledger, walls=w, layout=x.layout)
    est._basis = {"gpu": hw, "headroom": headroom, "mfu": mfu, "family": family,
                  "plan": plan}
    return est


def replan(est: Estimate, plan: TrainingPlan) -> Optional[Estimate]:
    """The estimate of another plan (a what-if) on the same GPU, headroom and assumptions
    as `est`; None when `est` was not made by `estimate()`."""
    b = est.basis
    if b is None:
        return None
    return estimate(plan, b["gpu"], b["headroom"], mfu=b["mfu"], family=b["family"])
