"""Activations of a plain layer stack (a custom MLP or CNN), from the layers its forward
applies (`models.forward`: per sample, what each layer saves).

Saved for backward, for a micro-batch of b samples with d bytes per activation element:

    saved    = b × Σ over distinct saved tensors (elements × bytes of its kind)
               + the per-batch statistics (BatchNorm's mean and inverse std, fp32)

kinds: 'act' d bytes, 'i64' 8 (max-pool indices), 'f32' 4, 'mask' 1 (dropout, CUDA).

Backward runs the layers in reverse. When layer i's backward runs, alive are: the saved
tensors some layer j ≤ i still needs (a tensor is freed once the earliest layer that saved
it is done), the gradient of layer i's output and the gradient of its input it makes
(d bytes per element, b samples; none for the model's input), and the parameter gradients
of layers i…n (`zero_grad()` set them to None: they appear layer by layer). The largest
of these moments, less the saved tensors, is the backward working set: it sits on top of
the saved activations at that moment (the ledger's "loss" lifetime, in the phase after
the forward).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from preflight.units import fmt_int

KIND_BYTES = {"i64": 8, "f32": 4, "mask": 1, "i8": 1}


def _nb(kind: str, d: int) -> int:
    return KIND_BYTES.get(kind, d)


@dataclass(frozen=True)
class StackActivations:
    saved: int                 # bytes saved for backward by the whole stack
    backward_extra: int        # the largest backward moment above `saved`
    at: str                    # the layer whose backward sets that moment
    terms: str                 # saved bytes per sample as a sum, numbers in


def stack_activations(stack: dict[str, Any], b: int, d: int, grad_bytes: int,
                      grads_kept: bool = False) -> StackActivations:
    """The stack's saved bytes and its backward working set for a micro-batch of b (see
    the module docstring). `grad_bytes` per parameter gradient; `grads_kept`: the
    gradients exist through the whole step (another ledger line counts them)."""
    ops = stack["ops"]
    first: dict[int, int] = {}          # tensor id → index of the earliest layer saving it
    size: dict[int, int] = {}
    per_batch = 0
    for i, op in enumerate(ops):
        for tid, elems, kind in op["saved"]:
            first.setdefault(tid, i)
            size[tid] = elems * _nb(kind, d)
        per_batch += sum(e * _nb(k, d) for e, k in op.get("per_batch", []))
    per_sample = sum(size.values())
    saved = b * per_sample + per_batch
    best, at = 0, ""
    later_params = 0
    for i in range(len(ops) - 1, -1, -1):
        op = ops[i]
        later_params += op.get("params", 0)
        alive = b * sum(n for tid, n in size.items() if first[tid] <= i) + per_batch
        grads = b * d * (op["out"] + (op["inp"] if op.get("needs_input_grad", True) else 0))
        params = 0 if grads_kept else later_params * grad_bytes
        moment = alive + grads + params
        if moment > best:
            best, at = moment, op["label"]
    terms = " + ".join(f"{fmt_int(n)}" for n in size.values())
    return StackActivations(saved=saved, backward_extra=max(0, best - saved), at=at,
                            terms=terms)
