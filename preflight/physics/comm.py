"""Communication: the buffers collectives hold on the GPU, and the time they take.

Memory (ledger key `comm`):
  - DDP keeps its own flat gradient buckets, a second copy of every gradient, unless
    `gradient_as_bucket_view=True` (PyTorch's DDP docs: the saving equals the gradients'
    size). Not visible statically, so the default (off) is assumed and said.
  - DeepSpeed ZeRO-1/2/3: reduce buckets, gathered parameters and the fp32 gradient
    partition of the step, sized by the job's `zero_optimization` settings (zero.py).
  - ZeRO-3 / FSDP FULL_SHARD / HYBRID_SHARD all-gather one unit (≈ one block, per-block
    wrapping assumed) at a time and prefetch the next: 2 × the largest unit's weights,
    plus its unsharded gradient before the reduce-scatter. SHARD_GRAD_OP keeps weights
    gathered between forward and backward (they are in the params line, unsharded) and
    needs the unsharded-gradient buffer only.

Time (docs/estimate.md, the physics): an all-reduce of S bytes over n GPUs ≈ S·2(n−1)/n / busbw; a reduce-
scatter or all-gather is half that. ZeRO-3 moves ≈ 1.5× an all-reduce per micro-step
(two all-gathers of the weights, one reduce-scatter of the gradients). Tensor parallel:
4 all-reduces of b·s·h activations per layer per micro-batch (2 forward, 2 backward).
Pipeline parallel: each micro-batch sends b·s·h activations forward and their gradient
back across each stage boundary.

CPU offload crosses the host link (PCIe, the catalogue's `host_link_bytes_per_s`) every
step, on the critical path: with the optimizer offloaded each micro-step sends the gradient
partition to the host and the step brings the updated 16-bit weights back,
(m·g + w)·N/d bytes; with the parameters offloaded too they stay on the host and are fetched
for the forward and the backward of every micro-step while the gradients go down,
m·(2·w + g)·N/d bytes (m micro-steps, g and w bytes per gradient and weight, d the GPUs
the states are partitioned over).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Optional

from preflight.physics.inputs import Inputs
from preflight.physics.result import LedgerLine
from preflight.physics.states import expert_split, precision_of
from preflight.physics.tensors import largest_unit_params
from preflight.physics.zero import zero_buffer_lines
from preflight.units import fmt_int



def allreduce_seconds(nbytes: float, n: int, busbw: float) -> float:
    """nccl-tests rule: S·2(n−1)/n / busbw."""
    if n <= 1:
        return 0.0
    return nbytes * 2 * (n - 1) / n / busbw


def comm_buffers(x: Inputs) -> tuple[list[LedgerLine], list[str]]:
    """Ledger lines for communication buffers, and the facts they were missing."""
    lines, missing = _collective_buffers(x)
    return lines + expert_dispatch_lines(x), missing


def expert_dispatch_lines(x: Inputs) -> list[LedgerLine]:
    """Expert parallelism's all-to-all buffers (none without it): each MoE layer sends
    every (token, chosen expert) row to the rank holding that expert and receives as many
    back, s·b·k rows of h each way in the compute dtype, alive while that layer runs in the
    forward and again in the backward (the gradients travel the same way)."""
    m = x.moe
    if x.expert_parallel <= 1 or m is None or x.ep_unknown or x.family != "llama":
        return []
    if None in (x.micro_batch, x.seq_len, x.hidden):
        return [LedgerLine(key="comm", label="expert-parallel all-to-all buffers", bytes=None,
                           lifetime="saved", note="unknown: needs micro_batch, seq_len, "
                                                  "hidden")]
    d = precision_of(x).act
    b, s, h, k = x.micro_batch, x.seq_len, x.hidden, m.top_k
    return [LedgerLine(
        key="comm", label="expert-parallel all-to-all buffers (dispatch send + receive, one "
                          "MoE layer at a time)",
        bytes=2 * d * b * s * k * h, lifetime="saved",
        formula=f"2 × {d} B × {b} × {fmt_int(s)} × {k} (top-k) × {fmt_int(h)}",
        note="balanced routing assumed (a capacity factor or an uneven load enlarges the "
             "receive side); counted with the saved activations, alive during the forward "
             "and the backward")]


def _collective_buffers(x: Inputs) -> tuple[list[LedgerLine], list[str]]:
    """DDP buckets, ZeRO / FSDP gather and reduce buffers."""
    lines: list[LedgerLine] = []
    missing: list[str] = []
    p = precision_of(x)
    n_train = x.trainable
    st = x.stage
    mp_text = f" / {x.mp} (tp×pp)" if x.mp > 1 else ""
    if x.dp <= 1 and x.fsdp in (None, "no_shard"):
        return lines, missing
    wb = 2 if x.lora is None and x.param_dtype in ("bf16", "fp16") else p.weight
    if x.fsdp_mp and x.fsdp and p.dtype == "fp32" and p.act < 4:
        wb = p.act          # FSDP mixed precision all-gathers the units in 16 bits
    gb = p.grad if x.lora is None else 4
    if st == 0:
        if n_train is None:
            return [LedgerLine(key="comm", label="DDP gradient buckets", bytes=None,
                               note="unknown: needs trainable_params")], ["trainable_params"]
        nb, f = -(-gb * n_train // x.mp), f"{gb} B × {fmt_int(n_train)}{mp_text}"
        if x.expert_parallel > 1:
            # the buckets hold this rank's gradients: its E/ep experts' share only
            split = expert_split(x, [("tp", x.tp), ("pp", x.pp)], "", 1)
            if split is None or x.lora is not None or n_train != x.params:
                return [LedgerLine(key="comm", label="DDP gradient buckets", bytes=None,
                                   note="unknown: " + (x.ep_unknown or "expert parallelism "
                                                       "with frozen weights"))], missing
            nb, f = split(gb, n_train, False)
        lines.append(LedgerLine(
            key="comm", label="DDP gradient buckets (a second copy of the gradients)",
            bytes=nb, formula=f,
            note="DDP's default gradient_as_bucket_view=False assumed; True removes this line"))
        return lines, missing
    unit, unit_f = largest_unit_params(x)
    tp_text = f" / {x.tp} (tp)" if x.tp > 1 else ""
    if st in (1, 2) and not x.fsdp:
        return zero_buffer_lines(x, gb, wb, unit, unit_f)
    if unit is None:
        missing += [n for n in ("hidden", "layers") if getattr(x, n) is None]
        lines.append(LedgerLine(key="comm", label="all-gather / reduce-scatter buffers",
                                bytes=None, note="unknown: needs hidden (or params and layers) "
                                                 "to size the largest layer"))
        return lines, missing
    if not x.fsdp:
        return zero_buffer_lines(x, gb, wb, unit, unit_f)
    unit_tp = -(-unit // x.tp)
    if st >= 3 and x.fsdp != "shard_grad_op":
        lines.append(LedgerLine(
            key="comm", label="all-gathered weights (current and prefetched unit)",
            bytes=2 * wb * unit_tp, formula=f"2 × {wb} B × {fmt_int(unit)}{tp_text}  [{unit_f}]",
            note="per-block wrapping assumed: the largest unit is gathered whole"))
    lines.append(LedgerLine(
        key="comm", label="unsharded gradient of one unit (before reduce-scatter)",
        bytes=gb * unit_tp, formula=f"{gb} B × {fmt_int(unit)}{tp_text}  [{unit_f}]"))
    return lines, missing


@dataclass
class CommTime:
    seconds: Optional[float]
    lines: list[LedgerLine] = field(default_factory=list)
    exposed_window: float = 0.0      # fraction of compute gradient traffic can hide behind
    grad_s: float = 0.0              # data-parallel traffic (can overlap with compute)
    critical_s: float = 0.0          # tensor/pipeline traffic (on the critical path)
    missing: list[str] = field(default_factory=list)


def _bw(x: Inputs, gpu, group: int, crosses_nodes: bool) -> tuple[Optional[float], str]:
    """Bus bandwidth for a collective over `group` GPUs: the slowest link it crosses."""
    if gpu is None:
        return None, ""
    intra, inter = gpu.intra_node_busbw, gpu.inter_node_busbw
    if crosses_nodes:
        if inter is None or intra is None:
            return None, "no inter-node bandwidth in the catalogue for " + gpu.name
        return min(intra, inter), f"{min(intra, inter) / 1e9:g} GB/s across nodes"
    if intra is None:
        return None, "no intra-node bus bandwidth in the catalogue for " + gpu.name
    return intra, f"{intra / 1e9:g} GB/s in a node"


def offload_bytes(x: Inputs) -> tuple[Optional[int], str]:
    """Bytes one GPU moves over its host link per optimizer step under CPU offload, with
    the formula (None when a count is unknown; 0 without offload)."""
    if x.offload not in ("optimizer", "optimizer+params") or x.stage < 1:
        return 0, ""
    p = precision_of(x)
    gb = p.grad if x.lora is None else 4
    wb = 2 if x.lora is None and x.param_dtype in ("bf16", "fp16") else p.weight
    m, d = x.grad_accum, x.dp * x.mp
    if x.trainable is None or (x.offload == "optimizer+params" and x.params is None):
        return None, ""
    nt = x.trainable
    if x.offload == "optimizer":
        n = -(-(m * gb * nt + wb * nt) // d)
        return n, (f"({m} × {gb} B + {wb} B) × {fmt_int(nt)} / {d}")
    np_ = x.params or nt
    n = -(-(m * (2 * wb * np_ + gb * nt)) // d)
    return n, f"{m} × (2 × {wb} B × {fmt_int(np_)} + {gb} B × {fmt_int(nt)}) / {d}"


def comm_time(x: Inputs, gpu) -> CommTime:
    """Seconds of communication per optimizer step, line by line (walls)."""
    out = CommTime(seconds=0.0)
    p = precision_of(x)
    gb = p.grad if x.lora is None else 4
    wb = p.weight if x.lora is None else 4
    m = x.grad_accum
    total = 0.0
    unknown = False
    dp_nodes = x.nodes > 1 and x.dp * x.mp > x.gpus_per_node

    def add(label: str, secs: Optional[float], formula: str, note: str = "",
            critical: bool = False) -> None:
        nonlocal total, unknown
        if secs is None:
            unknown = True
            out.lines.append(LedgerLine(key="comm", label=label, bytes=None, formula=formula,
                                        note=note or "unknown"))
        else:
            total += secs
            if critical:
                out.critical_s += secs
            else:
                out.grad_s += secs
            out.lines.append(LedgerLine(key="comm", label=label, bytes=None,
                                        formula=f"{formula} = {secs:.4g} s", note=note))

    if x.dp > 1 or x.fsdp == "hybrid_shard":
        if x.trainable is None:
            out.missing.append("trainable_params")
            add("data-parallel gradient traffic", None, "", "unknown: needs trainable_params")
        else:
            g_bytes = Fraction(gb * x.trainable, x.mp)
            w_bytes = Fraction(wb * (x.params or x.trainable), x.mp)
            n = x.dp
            st = x.stage
            if x.fsdp == "hybrid_shard" and x.shard < n:
                g = x.shard
                r = n // g
                bw_i, why_i = _bw(x, gpu, g, False)
                bw_o, why_o = _bw(x, gpu, r, True)
                sec_i = None if bw_i is None else \
                    float((2 * w_bytes + g_bytes) * (g - 1) / g) * m / bw_i
                sec_o = None if bw_o is None else \
                    allreduce_seconds(float(g_bytes / g), r, bw_o)
                add("hybrid shard: gather/scatter within a node",
                    sec_i, f"{m} × (2·{fmt_int(int(w_bytes))} + {fmt_int(int(g_bytes))}) B × "
                           f"({g}−1)/{g} / {why_i or '?'}", "" if bw_i else why_i)
                add("hybrid shard: gradient all-reduce across nodes",
                    sec_o, f"{fmt_int(int(g_bytes / g))} B × 2({r}−1)/{r} / {why_o or '?'}",
                    "" if bw_o else why_o)
            else:
                bw, why = _bw(x, gpu, n, dp_nodes)
                if st >= 3:
                    vol = (2 * w_bytes + g_bytes) * (n - 1) / n * m
                    f = (f"{m} × (2 × {fmt_int(int(w_bytes))} + {fmt_int(int(g_bytes))}) B × "
                         f"({n}−1)/{n}")
                    label = "ZeRO-3/FSDP: all-gather weights twice, reduce-scatter gradients, per micro-step"
                elif st == 2:
                    vol = g_bytes * (n - 1) / n * m + w_bytes * (n - 1) / n
                    f = (f"{m} × {fmt_int(int(g_bytes))} B × ({n}−1)/{n} + "
                         f"{fmt_int(int(w_bytes))} B × ({n}−1)/{n}")
                    label = "ZeRO-2: reduce-scatter gradients per micro-step, all-gather weights"
                else:
                    vol = g_bytes * 2 * (n - 1) / n
                    f = f"{fmt_int(int(g_bytes))} B × 2({n}−1)/{n}"
                    label = ("gradient all-reduce once per step" +
                             (" (no_sync under accumulation assumed)" if m > 1 else ""))
                add(label, None if bw is None else float(vol) / bw,
                    f"{f} / {why or '?'}", "" if bw else (why or "no GPU: bandwidth unknown"))
        out.exposed_window = 1.0 if x.stage >= 3 else 2 / 3

    if x.tp > 1:
        need = [k for k in ("micro_batch", "seq_len", "hidden", "layers") if getattr(x, k) is None]
        crosses = x.tp > x.gpus_per_node
        bw, why = _bw(x, gpu, x.tp, crosses)
        if need or bw is None:
            out.missing += need
            add("tensor-parallel all-reduces", None, "",
                "unknown: needs " + ", ".join(need) if need else why or "no GPU")
        else:
            per = x.micro_batch * x.seq_len * x.hidden * p.act
            n_ar = 4 * (x.layers // x.pp) * m * (1.5 if x.checkpointing == "full" else 1)
            secs = n_ar * allreduce_seconds(per, x.tp, bw)
            add("tensor-parallel all-reduces (not overlapped)", secs,
                f"{n_ar:g} × {fmt_int(per)} B × 2({x.tp}−1)/{x.tp} / {why}",
                "tensor parallel across nodes" if crosses else "", critical=True)
    if x.pp > 1:
        need = [k for k in ("micro_batch", "seq_len", "hidden") if getattr(x, k) is None]
        bw, why = _bw(x, gpu, 2, x.nodes > 1)
        if need or bw is None:
            out.missing += need
            add("pipeline sends", None, "", "unknown: needs " + ", ".join(need) if need else why)
        else:
            per = x.micro_batch * x.seq_len * x.hidden * p.act
            secs = 2 * m * per / bw
            add("pipeline activation sends (forward and backward)", secs,
                f"2 × {m} × {fmt_int(per)} B / {why}", critical=True)
    if x.offload in ("optimizer", "optimizer+params") and x.stage >= 1:
        nbytes, f = offload_bytes(x)
        link = getattr(gpu, "host_link_bytes_per_s", None) if gpu is not None else None
        what = ("gradients to the host, updated weights back" if x.offload == "optimizer"
                else "weights from the host twice per micro-step, gradients to it")
        if nbytes is None:
            out.missing.append("trainable_params")
            add(f"CPU offload over PCIe ({what})", None, "", "unknown: needs trainable_params")
        elif not link:
            add(f"CPU offload over PCIe ({what})", None, f"{f} B",
                "unknown: no host link bandwidth in the catalogue for "
                + (gpu.name if gpu is not None else "no GPU"))
        else:
            add(f"CPU offload over PCIe ({what})", nbytes / link,
                f"{f} = {fmt_int(nbytes)} B / {link / 1e9:g} GB/s (PCIe x16, one direction)",
                "on the critical path: the CPU optimizer step waits for it", critical=True)
    out.seconds = None if unknown else total
    return out
