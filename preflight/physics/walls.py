"""The compute and communication walls, step time and scaling efficiency.

compute: a dense transformer step costs ≈ 6·N·tokens FLOPs (2 forward, 4 backward) and
8·N·tokens with full recomputation (the forward runs twice), 6·N plus 2 × the weights of
the matmuls it runs again with op-level selective checkpointing (`sac.recomputed_mm_params`).
With frozen weights (LoRA)
the backward still propagates through them but computes no weight gradient: 4·N + 2·N_trainable.
Achieved FLOP/s = peak × MFU; MFU is an assumption (0.4 unless given) and labelled.

step time: compute + pipeline bubble + the communication that cannot hide behind compute.
Gradient collectives overlap with backward (≈ 2/3 of compute; ZeRO-3 prefetching also
overlaps with forward); tensor- and pipeline-parallel traffic is on the critical path.

scaling efficiency E at equal global batch: the one-GPU time for the same global batch
divided by k × the k-GPU step time. From measurements: S = t1 / tk, E = S / k.
"""

from __future__ import annotations

from typing import Optional

from preflight.physics import sac
from preflight.physics.comm import comm_time
from preflight.physics.inputs import Inputs
from preflight.physics.result import LedgerLine, Walls
from preflight.units import fmt_int

DEFAULT_MFU = 0.4


def efficiency_from_measurements(t1: float, tk: float, k: int) -> float:
    """E = (t1 / tk) / k — t1 one GPU, tk k GPUs, equal global batch.
    t1 = 2.0 s, t8 = 3.2 s → 0.078125."""
    if t1 <= 0 or tk <= 0:
        raise ValueError("step times must be positive")
    if k < 1:
        raise ValueError("k must be at least 1")
    return (t1 / tk) / k


def flops_per_token(params: int, trainable: Optional[int] = None,
                    checkpointing: str = "none") -> tuple[int, str]:
    """FLOPs per token of a training step, with the formula."""
    n_t = params if trainable is None else trainable
    extra = 2 * params if checkpointing == "full" else 0
    if n_t == params:
        k = 8 if checkpointing == "full" else 6
        return k * params, f"{k} × {fmt_int(params)}"
    text = f"(4 × {fmt_int(params)} + 2 × {fmt_int(n_t)}" + (
        f" + 2 × {fmt_int(params)})" if extra else ")")
    return 4 * params + 2 * n_t + extra, text


def compute_precision(x: Inputs) -> str:
    if x.mixed_precision in ("bf16", "fp16", "fp8"):
        return x.mixed_precision
    if x.param_dtype in ("bf16", "fp16"):
        return x.param_dtype
    return "fp32"


def walls(x: Inputs, gpu, mfu: float = DEFAULT_MFU) -> tuple[Walls, list[str]]:
    """Compute, communication, step time and predicted efficiency for one optimizer step."""
    w = Walls(mfu=mfu)
    missing: list[str] = []
    need = [k for k in ("params", "micro_batch", "seq_len") if getattr(x, k) is None]
    prec = compute_precision(x)
    peak = gpu.peak_flops(prec) if gpu is not None else None
    w.notes.append(f"MFU {mfu:g} assumed (achieved / peak FLOP/s; 0.3–0.55 is typical)")
    if need:
        missing += need
        w.lines.append(LedgerLine(key="compute", label="compute per step", bytes=None,
                                  note="unknown: needs " + ", ".join(need)))
    elif gpu is None or peak is None:
        w.lines.append(LedgerLine(key="compute", label="compute per step", bytes=None,
                                  note="unknown: no GPU given" if gpu is None else
                                  f"unknown: no {prec} peak for {gpu.name}"))
    else:
        n, n_t = x.params, x.trainable
        if x.experts and x.active_params:
            # a token's FLOPs follow the experts it is routed to, not all the experts
            n, n_t = x.active_params, (x.active_params if x.trainable in (None, x.params)
                                       else min(x.trainable, x.active_params))
            w.notes.append(f"mixture of experts: compute counts the {fmt_int(n)} parameters a "
                           f"token uses ({x.experts_per_token} of {x.experts} experts), not "
                           f"all {fmt_int(x.params)}")
        fpt, ftext = flops_per_token(n, n_t, x.checkpointing)
        if x.checkpointing == sac.MODE:
            # the backward runs the block again, less the matmuls whose outputs were kept
            again, atext = sac.recomputed_mm_params(x)
            if again:
                fpt, ftext = fpt + 2 * again, f"({ftext} + 2 × {atext})"
                w.notes.append("op-level selective checkpointing: the backward recomputes "
                               "k_proj, o_proj and up_proj (2 FLOPs per weight and token)")
            else:
                w.notes.append("op-level selective checkpointing: the recomputed matmuls' "
                               "FLOPs are not counted (the layers are not modelled)")
        tokens = x.micro_batch * x.seq_len * x.grad_accum
        flops = fpt * tokens / x.mp
        w.compute_s = flops / (peak * mfu)
        mp = f" / {x.mp} (tp×pp)" if x.mp > 1 else ""
        w.lines.append(LedgerLine(
            key="compute", label="compute per step per GPU",
            formula=(f"{ftext} × {fmt_int(tokens)} tokens ({x.micro_batch}×{fmt_int(x.seq_len)}"
                     f"×{x.grad_accum}){mp} / ({peak / 1e12:g} TFLOP/s {prec} × MFU {mfu:g})"
                     f" = {w.compute_s:.4g} s"),
            note="attention-score FLOPs (12·L·h·s per token) are inside the MFU assumption"))
        if prec == "fp32":
            w.notes.append("fp32 peak used: PyTorch keeps TF32 matmuls off by default; with "
                           "TF32 on, the tensor-core rate applies")
        if x.pp > 1:
            bubble = w.compute_s * (x.pp - 1) / x.grad_accum
            w.lines.append(LedgerLine(
                key="compute", label="pipeline bubble",
                formula=f"{w.compute_s:.4g} s × ({x.pp}−1)/{x.grad_accum} micro-batches = {bubble:.4g} s",
                note="1F1B schedule; fewer than 4·pp micro-batches leaves the bubble large"))
        else:
            bubble = 0.0

    c = comm_time(x, gpu)
    missing += c.missing
    w.comm_s = c.seconds
    w.lines += c.lines
    if w.comm_s is not None and x.world_size > 1 and gpu is not None:
        w.notes.append("bus bandwidth saturates only above ≈ 512 MiB payloads: small buckets "
                       "run below the catalogue figure")
    if w.compute_s is not None and w.comm_s is not None:
        grad_comm, other = c.grad_s, c.critical_s
        hidden = min(grad_comm, w.compute_s * c.exposed_window)
        exposed = grad_comm - hidden + other
        w.step_s = w.compute_s + bubble + exposed
        w.lines.append(LedgerLine(
            key="step", label="step time",
            formula=(f"{w.compute_s:.4g} compute + {bubble:.4g} bubble + {exposed:.4g} exposed "
                     f"communication = {w.step_s:.4g} s"),
            note=f"gradient traffic assumed to overlap {c.exposed_window:.0%} of compute"
            if grad_comm else ""))
        k = x.world_size
        if k > 1:
            t1 = w.compute_s * x.mp * x.dp      # the whole global batch on one GPU
            w.efficiency = t1 / (k * w.step_s)
            w.lines.append(LedgerLine(
                key="efficiency", label="predicted scaling efficiency (equal global batch)",
                formula=f"{t1:.4g} s (one GPU) / ({k} × {w.step_s:.4g} s) = {w.efficiency:.3f}"))
        else:
            w.efficiency = 1.0
    return w, missing

