"""Tiers 2 and 3 above the tensors: what the caching allocator reserves beyond the live
tensors, and what the process holds outside it (docs/estimate.md, "The tiers above the
tensors", gives every constant's source).

Tier 2, *reserved* (`torch.cuda.max_memory_reserved`), from PyTorch's caching allocator
(c10/cuda/CUDACachingAllocator.cpp and the "CUDA memory management" notes):
  - every request is rounded up to a multiple of 512 B (kMinBlockSize);
  - requests of at most 1 MiB (kSmallSize) come from a small pool of 2 MiB segments
    (kSmallBuffer); larger ones from 20 MiB segments (kLargeBuffer) below 10 MiB
    (kMinLargeAlloc), and from their own segment rounded up to 2 MiB (kRoundLarge) above;
  - a cached free block larger than a request is split; freed blocks stay reserved;
  - with `expandable_segments:True` one segment per stream grows and shrinks by 2 MiB
    pages, so a request never needs a fresh segment beside a freed one.
  What the steady step adds above its live tensors is mostly one effect: the tensor that
  makes the peak (the largest transient: the fp32 logits, eager attention's scores) is
  requested when the blocks freed before it are in use or split, so it takes a fresh
  segment of its own and the freed blocks stay cached, unused, beside it. That is one line,
  as many bytes as the largest transient tensor's segment: an upper bound for what the
  standard loss leaves cached (its 16-bit logits, d·b·s·V, beside the fp32 gradients that
  reuse the fp32 copy's block), and exact in kind for eager attention's scores. Under
  expandable segments the freed pages are unmapped before a request fails: only the
  largest tensor's page rounding is left.
  cuBLAS's workspaces are allocated through the same allocator: one per (handle, stream),
  the forward's (the main thread's handle) and the backward's (autograd's device thread).

Tier 3, *process* (what nvidia-smi shows for the process):
  - the CUDA context: the driver's per-device state, the kernels loaded (lazily since CUDA
    11.7 / torch 1.13: only the kernels a job runs), cuDNN / cuBLAS handles;
  - NCCL's buffers: per communicator, per channel, per connected peer, one buffer per
    protocol (Simple `NCCL_BUFFSIZE` 4 MiB, LL128 4,915,200 B, LL 524,288 B); a rank holds
    one communicator per process group it talks in (the world group, and the tensor-,
    pipeline-, expert- and data-parallel groups when they are smaller than the world).
"""

from __future__ import annotations

from typing import Optional

from preflight.physics.activations import attention_scores_bytes, logits_bytes
from preflight.physics.inputs import Inputs
from preflight.physics.loss import CHUNK, liger_chunks, liger_largest, liger_tokens
from preflight.physics.result import LedgerLine
from preflight.physics.stages import Stage
from preflight.physics.states import precision_of
from preflight.units import MiB, fmt_int

# ------------------------------------------------------------ c10/cuda/CUDACachingAllocator.cpp
#: kMinBlockSize: every request is rounded up to a multiple of it
MIN_BLOCK = 512
#: kSmallSize: the largest request served by the small pool
SMALL_SIZE = 1 * MiB
#: kSmallBuffer: a small-pool segment
SMALL_BUFFER = 2 * MiB
#: kMinLargeAlloc: requests from here up get a segment of their own size
MIN_LARGE_ALLOC = 10 * MiB
#: kLargeBuffer: the segment of a request between kSmallSize and kMinLargeAlloc
LARGE_BUFFER = 20 * MiB
#: kRoundLarge: a large segment's rounding (also the page of an expandable segment)
ROUND_LARGE = 2 * MiB

# ------------------------------------------------------------ aten/src/ATen/cuda/CublasHandlePool.cpp
#: torch's default CUBLAS_WORKSPACE_CONFIG before Hopper: 2 chunks of 4096 KiB, 8 of 16 KiB
CUBLAS_DEFAULT_CONFIG = ":4096:2:16:8"
#: torch's default on compute capability 9.0 and later (cuBLAS recommends 32 MiB there)
CUBLAS_HOPPER_CONFIG = ":4096:8"
#: workspaces a training step creates: the forward's handle (main thread) and the
#: backward's (autograd's device thread), each on the default stream
CUBLAS_HANDLES = 2
#: GPU names (the hardware catalogue's) of compute capability 9.0 or later
HOPPER_OR_LATER = ("H100", "H200", "GH200", "B200", "B100", "GB200")

# ------------------------------------------------------------ the CUDA context
#: a torch 2.x process's context on one device with lazy module loading (CUDA ≥ 11.7,
#: torch's default since 1.13): assumed, a few hundred MB measured in practice
CUDA_CONTEXT_BYTES = 512 * MiB
#: the context with every kernel loaded at start (CUDA < 11.7, or CUDA_MODULE_LOADING=EAGER):
#: 1343 MB measured by the Hugging Face performance guide ("GPU memory occupied: 1343 MB"
#: after `torch.ones((1, 1)).to("cuda")`, V100, CUDA 11.2)
CUDA_CONTEXT_EAGER_BYTES = 1343 * 10**6

# ------------------------------------------------------------ NCCL (src/include/device.h)
#: NCCL_BUFFSIZE's default: the Simple protocol's buffer per connection
NCCL_SIMPLE_BYTES = 4 * MiB
#: the LL128 protocol's buffer per connection (NCCL_LL128_BUFFSIZE's default)
NCCL_LL128_BYTES = 4_915_200
#: the LL protocol's buffer per connection (NCCL_LL_BUFFSIZE's default)
NCCL_LL_BYTES = 524_288
#: channels per communicator: NCCL picks them by topology; 16 on an NVLink node
NCCL_CHANNELS = 16
#: peers a rank receives from per channel: the ring's previous rank and the tree's
#: parent and child
NCCL_PEERS = 3


def block_bytes(n: int) -> int:
    """A request of n bytes as the allocator rounds it (a multiple of 512 B)."""
    return -(-n // MIN_BLOCK) * MIN_BLOCK


def segment_bytes(n: int) -> int:
    """The segment cudaMalloc'd for a request of n bytes that no cached block can hold."""
    if n <= SMALL_SIZE:
        return SMALL_BUFFER
    if n < MIN_LARGE_ALLOC:
        return LARGE_BUFFER
    return -(-block_bytes(n) // ROUND_LARGE) * ROUND_LARGE


def fresh_segment_bytes(largest: int, expandable: bool) -> int:
    """What the peak's largest transient tensor adds to the reserved memory: a segment of
    its own (the freed blocks of its size are in use or split), or, under expandable
    segments, the page rounding of the pages mapped for it."""
    if expandable:
        return -(-block_bytes(largest) // ROUND_LARGE) * ROUND_LARGE - largest
    return segment_bytes(largest)


def cublas_workspace_bytes(config: str) -> int:
    """One cuBLAS workspace for a CUBLAS_WORKSPACE_CONFIG string ":SIZE_KiB:COUNT…"."""
    parts = [p for p in config.split(":") if p]
    if len(parts) % 2 or not all(p.isdigit() for p in parts):
        raise ValueError(f"CUBLAS_WORKSPACE_CONFIG {config!r} is not :SIZE:COUNT pairs")
    return sum(int(parts[i]) * 1024 * int(parts[i + 1]) for i in range(0, len(parts), 2))


def cublas_config(gpu: Optional[str]) -> tuple[str, str]:
    """(config, why) torch picks for a GPU name; Hopper's (the larger) when none is given."""
    if gpu is None:
        return CUBLAS_HOPPER_CONFIG, "no GPU given: Hopper's (the larger) assumed"
    if any(gpu.upper().startswith(p) for p in HOPPER_OR_LATER):
        return CUBLAS_HOPPER_CONFIG, f"{gpu}: compute capability ≥ 9.0"
    return CUBLAS_DEFAULT_CONFIG, f"{gpu}: compute capability < 9.0"


def nccl_communicator_bytes(channels: int = NCCL_CHANNELS, peers: int = NCCL_PEERS) -> int:
    """One communicator's buffers: channels × peers × (Simple + LL128 + LL)."""
    return channels * peers * (NCCL_SIMPLE_BYTES + NCCL_LL128_BYTES + NCCL_LL_BYTES)


def nccl_groups(world: int, dp: int, tp: int, pp: int, ep: int) -> list[str]:
    """The process groups a rank holds a communicator in: the world group, and each
    parallel dimension's group when it is larger than one rank and smaller than the world
    (pipeline parallel: one point-to-point communicator with each neighbouring stage)."""
    if world <= 1:
        return []
    out = ["world"]
    for name, n in (("data-parallel", dp), ("tensor-parallel", tp), ("expert-parallel", ep)):
        if 1 < n < world:
            out.append(name)
    if pp > 1:
        out += ["pipeline send", "pipeline receive"] if pp > 2 else ["pipeline send/receive"]
    return out


def largest_transient(x: Inputs, stage: Optional[Stage] = None) -> tuple[Optional[int], str]:
    """The largest tensor a step allocates and frees (bytes, what it is): the fp32 logits
    the loss keeps (on the stage that holds the loss), or one layer's attention scores
    when eager attention materialises them; (None, "") when neither is sized."""
    p = precision_of(x)
    out: list[tuple[int, str]] = []
    if (stage is None or stage.last) and x.micro_batch and x.seq_len and x.vocab and \
            x.loss_kernel == "chunked":
        c = min(CHUNK, x.seq_len)
        out.append((-(-p.act * x.micro_batch * c * x.vocab // x.tp),
                    f"one {c}-position chunk of logits, {p.act} B × {x.micro_batch} × {c} × "
                    f"{fmt_int(x.vocab)}" + (f" / {x.tp}" if x.tp > 1 else "")))
    elif (stage is None or stage.last) and x.micro_batch and x.seq_len and x.vocab and \
            x.hidden and x.loss_kernel == "liger" and x.liger is not None:
        bt = liger_tokens(x.micro_batch, x.seq_len, x.liger.release)
        c, _ = liger_chunks(bt, x.vocab, x.hidden)
        out.append(liger_largest(c, x.vocab, x.hidden, p.act, p.weight, x.liger.release))
    elif (stage is None or stage.last) and x.micro_batch and x.seq_len and x.vocab:
        tp = f" / {x.tp}" if x.tp > 1 else ""
        out.append((logits_bytes(x.micro_batch, x.seq_len, x.vocab, x.tp),
                    f"the fp32 logits, 4 B × {x.micro_batch} × {fmt_int(x.seq_len)} × "
                    f"{fmt_int(x.vocab)}{tp}"))
    if x.attention == "eager" and x.micro_batch and x.seq_len and x.heads:
        # llama's eager softmax runs in fp32; the GPT block's in the compute dtype
        d = 4 if x.family == "llama" else p.act
        out.append((attention_scores_bytes(x.micro_batch, x.heads, x.seq_len, d) // x.tp,
                    f"one layer's attention scores, {x.micro_batch} × {x.heads} × "
                    f"{fmt_int(x.seq_len)}² × {d} B" + (f" / {x.tp}" if x.tp > 1 else "")))
    return max(out) if out else (None, "")


def overhead_lines(x: Inputs, tensors_peak: Optional[int], gpu_name: Optional[str] = None,
                   stage: Optional[Stage] = None) -> list[LedgerLine]:
    """Tiers 2 and 3 above the tensors (physics.overhead), each its own labelled line: the
    fresh segment of the largest transient tensor and cuBLAS's workspaces (reserved), the
    CUDA context and NCCL's communicator buffers (process)."""
    lines: list[LedgerLine] = []
    expandable = x.expandable_segments
    alloc = "expandable_segments:True" if expandable else "default segments"
    if tensors_peak is None:
        lines.append(LedgerLine(key="overhead", label="allocator segment slack (reserved − "
                                "allocated)", bytes=None, lifetime="reserved",
                                note="unknown: the tensors peak is unknown"))
    else:
        big, what = largest_transient(x, stage)
        if big is None:
            big, what = 0, "no transient tensor sized: one small-pool segment"
        slack = fresh_segment_bytes(big, expandable)
        rule = ("its pages rounded up to 2 MiB" if expandable else
                "a 2 MiB small-pool segment" if big <= SMALL_SIZE else
                "a 20 MiB segment" if big < MIN_LARGE_ALLOC else
                "its own segment, rounded up to 2 MiB")
        lines.append(LedgerLine(
            key="overhead",
            label=f"allocator segment slack (reserved − allocated; {alloc})",
            bytes=slack, lifetime="reserved",
            formula=(f"{fmt_int(slack)} B: {what} = {fmt_int(big)} B, {rule}"
                     + (f" − {fmt_int(big)} B" if expandable else "")),
            note="the blocks freed before the peak's largest transient tensor cannot hold it: "
                 "it takes a fresh segment and about as many bytes stay cached beside it "
                 "(an upper bound)" + (
                     "; expandable segments map only the pages it needs" if expandable else
                     "; PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True leaves only its "
                     "page rounding")))
    cfg, why = cublas_config(gpu_name)
    ws = cublas_workspace_bytes(cfg)
    lines.append(LedgerLine(
        key="overhead", label="cuBLAS workspaces (forward and backward handles)",
        bytes=CUBLAS_HANDLES * ws, lifetime="reserved",
        formula=f"{CUBLAS_HANDLES} × {fmt_int(ws)} B (CUBLAS_WORKSPACE_CONFIG={cfg})",
        note=f"torch's default workspace for the GPU ({why}); allocated through the caching "
             "allocator, one per handle and stream"))
    if x.cuda_module_loading == "eager":
        lines.append(LedgerLine(
            key="overhead", label="CUDA context (driver state, every kernel loaded, library "
                                  "handles)", bytes=CUDA_CONTEXT_EAGER_BYTES,
            formula="1,343 MB", lifetime="process",
            note="eager module loading (CUDA < 11.7 or CUDA_MODULE_LOADING=EAGER): the Hugging "
                 "Face performance guide's measurement of a bare context"))
    else:
        lines.append(LedgerLine(
            key="overhead", label="CUDA context (driver state, loaded kernels, library handles)",
            bytes=CUDA_CONTEXT_BYTES, formula="512 MiB", lifetime="process",
            note="assumed: torch 2.x with lazy module loading (CUDA ≥ 11.7) on one device; "
                 "eager loading (`--cuda-module-loading eager`) takes 1,343 MB; measure with "
                 "`preflight dryrun`"))
    groups = nccl_groups(x.world_size, x.dp, x.tp, x.pp, x.expert_parallel)
    if groups:
        one = nccl_communicator_bytes()
        lines.append(LedgerLine(
            key="overhead", label=f"NCCL communicator buffers ({len(groups)} communicator"
                                  f"{'s' if len(groups) > 1 else ''}: {', '.join(groups)})",
            bytes=len(groups) * one, lifetime="process",
            formula=f"{len(groups)} × {NCCL_CHANNELS} channels × {NCCL_PEERS} peers × "
                    f"({fmt_int(NCCL_SIMPLE_BYTES)} + {fmt_int(NCCL_LL128_BYTES)} + "
                    f"{fmt_int(NCCL_LL_BYTES)}) B (Simple + LL128 + LL)",
            note=f"NCCL's default buffer sizes (NCCL_BUFFSIZE 4 MiB); {NCCL_CHANNELS} "
                 "channels assumed (NCCL picks them by topology)"))
    return lines
