"""The knobs the planner turns, in the diagnosis order (LEDGER.md §4): case A (model
states: sharding, offload, a smaller optimizer), case B (activations: micro-batch with
gradient accumulation, checkpointing, memory-efficient attention), then more GPUs, model
parallelism, another GPU.

A knob proposes changes of plan facts; it computes nothing about memory or time (the
estimator does, on the changed plan). Every change keeps the global batch
micro_batch × grad_accum × data-parallel degree: a change that alters the data-parallel
degree rescales gradient accumulation (or the micro-batch) to compensate, and proposes
nothing when no integer setting does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterator, Optional

from preflight import hardware
from preflight.physics.inputs import Inputs
from preflight.plan import TrainingPlan


@dataclass(frozen=True)
class Change:
    """One turn of one knob: the facts it sets and how a reader says it."""

    knob: str                                # a name of KNOBS
    facts: tuple[tuple[str, Any], ...]       # fact name → new value
    label: str                               # "FSDP full_shard over 8 GPUs"
    order: int = 0                           # position among the knob's own proposals

    def as_dict(self) -> dict[str, Any]:
        return dict(self.facts)


def _ch(knob: str, label: str, order: int, **facts: Any) -> Change:
    return Change(knob=knob, facts=tuple(facts.items()), label=label, order=order)


# --------------------------------------------------------------------------- the knobs

def sharding(x: Inputs, uses: str) -> Iterator[Change]:
    """ZeRO 1/2/3 where the job uses DeepSpeed, FSDP strategies otherwise (hybrid shard
    only across nodes). Nothing on one GPU."""
    if x.dp <= 1:
        return
    if uses == "deepspeed":
        for i, stage in enumerate((1, 2, 3)):
            if stage > x.stage:
                yield _ch("sharding", f"ZeRO-{stage} over {x.dp} GPUs", i, zero_stage=stage)
        return
    order = [("shard_grad_op", 2), ("full_shard", 3)]
    if x.nodes > 1:
        order.append(("hybrid_shard", 3))
    for i, (strategy, stage) in enumerate(order):
        if stage > x.stage or (strategy == "hybrid_shard" and x.fsdp != "hybrid_shard"
                               and x.stage < 3):
            over = (f"the {x.gpus_per_node} GPUs of each node" if strategy == "hybrid_shard"
                    else f"{x.dp} GPUs")
            yield _ch("sharding", f"FSDP {strategy} over {over}", i, fsdp=strategy)


def offload(x: Inputs, uses: str) -> Iterator[Change]:
    """Optimizer state (then parameters) to CPU memory once the states are sharded:
    DeepSpeed ZeRO-Offload (optimizer from stage 1, parameters at stage 3); FSDP's CPU
    offload moves parameters, gradients and optimizer state together."""
    if x.stage == 0:
        return
    if uses == "deepspeed":
        if x.offload == "none":
            yield _ch("offload", "offload the optimizer state to CPU (ZeRO-Offload)", 0,
                      offload="optimizer")
        if x.offload != "optimizer+params" and x.stage >= 3:
            yield _ch("offload", "offload optimizer state and parameters to CPU", 1,
                      offload="optimizer+params")
    elif x.offload != "optimizer+params" and x.fsdp:
        yield _ch("offload", "FSDP CPU offload", 0, offload="optimizer+params")


def optimizer(x: Inputs, uses: str) -> Iterator[Change]:
    """Adam's two fp32 moments at 1 B each (bitsandbytes 8-bit), or paged."""
    if x.optimizer in ("adamw", "adam"):
        yield _ch("optimizer", "8-bit AdamW (bitsandbytes)", 0, optimizer="adamw_8bit")
        yield _ch("optimizer", "paged 8-bit AdamW (bitsandbytes)", 1,
                  optimizer="paged_adamw_8bit")


def micro_batches(x: Inputs) -> list[tuple[int, int]]:
    """Smaller micro-batches with the accumulation that keeps micro_batch × grad_accum:
    (micro_batch, grad_accum), largest micro-batch first."""
    written = x.samples_per_forward       # the batch as the job writes it
    if not written or written <= 1:
        return []
    per_replica = written * x.grad_accum
    return [(mb, per_replica // mb) for mb in range(written - 1, 0, -1)
            if per_replica % mb == 0 and (per_replica // mb) % x.grad_accum == 0]


def micro_batch(x: Inputs, uses: str) -> Iterator[Change]:
    for i, (mb, ga) in enumerate(micro_batches(x)):
        yield _ch("micro_batch", f"micro-batch {mb} × {ga} accumulation steps "
                                 f"(was {x.samples_per_forward} × {x.grad_accum})", i,
                  micro_batch=mb, grad_accum=ga)


def checkpointing(x: Inputs, uses: str) -> Iterator[Change]:
    if x.checkpointing == "none":
        yield _ch("checkpointing", "selective activation checkpointing", 0,
                  activation_checkpointing="selective")
    if x.checkpointing != "full":
        yield _ch("checkpointing", "full activation checkpointing", 1,
                  activation_checkpointing="full")


def attention(x: Inputs, uses: str) -> Iterator[Change]:
    if x.attention == "eager":
        yield _ch("attention", "memory-efficient attention (sdpa)", 0, attention="sdpa")


def _rescale(x: Inputs, factor_num: int, factor_den: int) -> Optional[dict[str, int]]:
    """Micro-batch and accumulation after the data-parallel degree changes by
    num/den, keeping the global batch; None when no integer setting does."""
    mb, ga = x.samples_per_forward, x.grad_accum
    if not mb:
        return None
    per = mb * ga * factor_den
    if per % factor_num:
        return None
    per //= factor_num                       # micro_batch × grad_accum per replica
    if per % mb == 0:
        return {"micro_batch": mb, "grad_accum": per // mb}
    for m in range(mb - 1, 0, -1):
        if per % m == 0:
            return {"micro_batch": m, "grad_accum": per // m}
    return None


def more_gpus(x: Inputs, uses: str) -> Iterator[Change]:
    """Double or quadruple the GPUs (whole nodes once past one node) when the states are
    sharded, so each holds less; the global batch is kept by fewer accumulation steps."""
    if x.stage == 0:
        return
    for i, k in enumerate((2, 4)):
        ws = x.world_size * k
        nodes, gpn = (x.nodes * k, x.gpus_per_node) if x.world_size >= 8 or x.nodes > 1 \
            else (1, ws)
        if gpn > 8:
            nodes, gpn = ws // 8, 8
        mbga = _rescale(x, k, 1)
        if mbga is None:
            continue
        yield _ch("more_gpus", f"{ws} GPUs ({nodes} node{'s' if nodes > 1 else ''} × {gpn}),"
                               f" {mbga['micro_batch']} × {mbga['grad_accum']} per GPU", i, world_size=ws, nodes=nodes, gpus_per_node=gpn, **mbga)


def fewer_gpus(x: Inputs, uses: str) -> Iterator[Change]:
    """Fewer GPUs, each doing more of the same global batch (scaling efficiency)."""
    for i, k in enumerate((2, 4, 8)):
        if x.world_size % k or x.world_size // k < max(1, x.mp):
            continue
        ws = x.world_size // k
        gpn = min(x.gpus_per_node, ws)
        nodes = max(1, ws // gpn)
        mbga = _rescale(x, 1, k)
        if mbga is None:
            continue
        yield _ch("fewer_gpus", f"{ws} GPUs ({nodes} node{'s' if nodes > 1 else ''} × {gpn}),"
                                f" {mbga['micro_batch']} × {mbga['grad_accum']} per GPU",
                  i, world_size=ws, nodes=nodes, gpus_per_node=gpn, **mbga)


def model_parallel(x: Inputs, uses: str) -> Iterator[Change]:
    """Tensor parallel inside one node, then pipeline parallel; the data-parallel degree
    shrinks, so accumulation grows to keep the global batch."""
    i = 0
    for tp in (2, 4, 8):
        if tp <= x.tp or tp > x.gpus_per_node or x.world_size % (tp * x.pp):
            continue
        mbga = _rescale(x, 1, tp // x.tp)
        if mbga is not None:
            yield _ch("model_parallel", f"tensor parallel {tp} (inside a node)", i, tp=tp, **mbga)
            i += 1
    for pp in (2, 4):
        if pp <= x.pp or x.world_size % (x.tp * pp):
            continue
        mbga = _rescale(x, 1, pp // x.pp)
        if mbga is not None:
            yield _ch("model_parallel", f"pipeline parallel {pp}", i, pp=pp, **mbga)
            i += 1


def other_gpu(x: Inputs, uses: str, current: Any = None) -> Iterator[Change]:
    """A catalogue GPU with more memory, smallest first."""
    have = getattr(current, "usable_bytes", 0) or 0
    bigger = sorted((hw for hw in hardware.KNOWN if hw.usable_bytes > have),
                    key=lambda hw: (hw.usable_bytes, hw.name))
    for i, hw in enumerate(bigger[:3]):
        yield _ch("other_gpu", f"{hw.name} instead of {getattr(current, 'name', 'the GPU')}",
                  i, gpu=hw.name)


#: (name, case, proposer) in the diagnosis order. The search ranks by this order.
KNOBS: tuple[tuple[str, str, Callable[..., Iterator[Change]]], ...] = (
    ("sharding", "A", sharding),
    ("offload", "A", offload),
    ("optimizer", "A", optimizer),
    ("micro_batch", "B", micro_batch),
    ("checkpointing", "B", checkpointing),
    ("attention", "B", attention),
    ("fewer_gpus", "scaling", fewer_gpus),
    ("more_gpus", "A", more_gpus),
    ("model_parallel", "C", model_parallel),
    ("other_gpu", "hardware", other_gpu),
)
KNOB_ORDER = {name: i for i, (name, _, _) in enumerate(KNOBS)}
KNOB_CASE = {name: case for name, case, _ in KNOBS}


def changed_plan(plan: TrainingPlan, facts: dict[str, Any]) -> TrainingPlan:
    """The plan with `facts` changed (the estimator's what-if plan; the writer reads the
    sources of the facts from the job's own plan)."""
    return plan.with_values("proposed by the planner", **facts)
