"""The peak by phase: which ledger lines are alive together, moment by moment of a step.

A training step's memory is a sequence, and the peak is its largest moment, not the sum
of every line (steady state: the optimizer state exists from the first step on):

    forward          resident + kept gradients + saved activations + the loss's saved
                     log-probabilities + the logits themselves while the loss is computed
    loss backward    forward + the fp32 logit gradients of the first backward ops
    layer backward   resident + kept gradients + every layer's saved activations + the
                     last layer's backward at its MLP activation: its output's gradient,
                     the activation's two input gradients and the gradients made before
                     it (without full checkpointing; `ledger.layer_backward_lines`)
    recompute        resident + kept gradients + a checkpointed layer recomputed and
                     back-propagated: its working set, its backward temporaries, the
                     layer inputs still kept and the gradients already made (only with
                     full or op-level selective checkpointing; `ledger.recompute_state_lines`)
    backward end     resident + gradients + the last backward's transient (a tied
                     embedding's dense gradient, added into the head's)
    optimizer step   resident + gradients + the optimizer's temporaries

During backward, gradients appear layer by layer as that layer's saved tensors are freed,
so the live bytes move linearly between "loss backward" and "backward end": the two ends
bound the middle.

Gradients are "kept" (alive through the forward) under gradient accumulation (micro-
batches 2…k run with the sum so far), with `zero_grad(set_to_none=False)`, and under
DeepSpeed ZeRO (its gradient partitions are allocated once). Otherwise `zero_grad()`
sets them to None — the default of torch ≥ 2.0 and of HF Trainer — and no gradient
exists before the backward creates it. `behaviour` says which was assumed.
"""

from __future__ import annotations

from typing import Optional

from preflight.physics import sac
from preflight.physics.inputs import Inputs
from preflight.physics.result import LedgerLine, Phase


def gradients_kept(x: Inputs) -> tuple[bool, str]:
    """Whether the gradients are alive through the forward, and why (in words)."""
    if x.grad_accum > 1:
        return True, (f"gradient accumulation over {x.grad_accum} micro-batches: micro-batches "
                      f"2–{x.grad_accum} run forward and backward with the gradients alive")
    if x.stage >= 1 and not x.fsdp:
        return True, (f"DeepSpeed ZeRO-{x.stage} allocates its gradient partitions once: "
                      "they are alive through the forward")
    if x.set_to_none is False:
        return True, "zero_grad(set_to_none=False): the gradients stay allocated (zeroed)"
    return False, ("zero_grad() sets gradients to None (torch ≥ 2.0 and HF Trainer default): "
                   "none exists before the backward creates it")


def _sum(lines: list[LedgerLine], lifetimes: tuple[str, ...]) -> tuple[Optional[int], int]:
    vals = [ln.bytes for ln in lines if ln.lifetime in lifetimes and not ln.margin]
    known = sum(v for v in vals if v is not None)
    return (None if any(v is None for v in vals) else known), known


def step_phases(x: Inputs, lines: list[LedgerLine]) -> tuple[list[Phase], list[str]]:
    """The tensor bytes of each phase of a steady-state step, and the behaviour assumed."""
    kept, why = gradients_kept(x)
    behaviour = [why, "Liger's fused linear cross-entropy makes no logits: the gradients "
                      "it computes in the forward (the hidden states' and the lm_head's) "
                      "outlive it, until the head's backward"
                 if x.loss_kernel == "liger" else
                 "the model's output (its logits) is dropped before backward "
                 "(`loss = model(...).loss`, HF Trainer): only the loss's saved "
                 "log-probabilities outlive the forward"]
    g = ("gradients",) if kept else ()
    has = {ln.lifetime for ln in lines}
    spec: list[tuple[str, tuple[str, ...]]] = [
        ("forward", ("resident", *g, "saved", "logits", "head")),
        ("loss backward", ("resident", *g, "saved", "logits", "loss")),
    ]
    if "layer" in has:
        # every layer's saved tensors with the last layer's backward temporaries
        spec.append(("layer backward", ("resident", *g, "saved", "layer")))
    if "recompute" in has:
        # the recompute lines carry the kept layer inputs and the gradients made so far
        spec.append(("recompute", ("resident", *g, "recompute")))
    spec += [("backward end", ("resident", "gradients", "backward")),
             ("optimizer step", ("resident", "gradients", "step"))]
    phases = []
    for name, lts in spec:
        b, known = _sum(lines, lts)
        phases.append(Phase(name=name, bytes=b, known=known,
                            formula=" + ".join(lt for lt in lts if lt in has),
                            lifetimes=list(lts)))
    if x.checkpointing in ("full", sac.MODE):
        behaviour.append(f"{x.checkpointing} checkpointing: the recompute of one layer happens "
                         "after the loss's logits and their gradients are freed")
    return phases, behaviour
