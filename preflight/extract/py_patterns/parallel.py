"""Parallelism: the processes a script spawns per node, DDP / FSDP / FSDP2 wrappers and their
sharding and offload, tensor / pipeline parallel over a device mesh."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

from preflight.lang.python import SPAWN_CALLS as _SPAWN_QUALS
from preflight.lang.python import Evaluator, Obj, V, plain, unk
from preflight.extract.py_patterns.common import kind
from preflight.facts import spellings
from preflight.frameworks import NO_MATCH, Call, answers

if TYPE_CHECKING:
    from preflight.extract.py_patterns.collector import Patterns


def fsdp_strategy(pats: Patterns, s: Optional[V], line: int, col: int,
                  default_reason: str) -> None:
    """`sharding_strategy=` of FSDP(...) or Lightning's FSDPStrategy(...): FULL_SHARD when
    absent, the named strategy when known, unknown (with its reason) otherwise."""
    if s is None:
        pats.emit("fsdp", V("full_shard", "default", line, col, default_reason))
    elif s.known:
        nm = kind(s)
        fs = spellings.fsdp_strategy(nm) if isinstance(nm, str) else None
        if fs:
            pats.emit("fsdp", s, value=fs)
    else:
        pats.emit("fsdp", s)


@answers(*{q.rsplit(".", 1)[-1] for q in _SPAWN_QUALS})
def spawn_call(pats: Patterns, ev: Evaluator, c: Call) -> Any:
    """`mp.spawn(fn, nprocs=)`: the script's own processes per node."""
    qual, line, col, kw = c.qual, c.line, c.col, c.kw
    if qual in _SPAWN_QUALS:
        # the script starts its own processes, one per GPU of the node: however it is
        # launched, its processes per node are `nprocs`
        n = kw("nprocs", 2)
        if n is not None and n.known and isinstance(n.value, int) and n.value >= 1:
            pats.emit("gpus_per_node", n, reason=f"mp.spawn(nprocs={n.value})")
        elif n is not None:
            pats.emit("gpus_per_node", unk(f"the script's mp.spawn starts `nprocs` "
                                           f"processes per node: {n.reason}", line, col),
                      tier="overrules")
        return None
    return NO_MATCH


@answers("DistributedDataParallel", "DDP", "FullyShardedDataParallel", "FSDP",
         "fully_shard")
def call(pats: Patterns, ev: Evaluator, c: Call) -> Any:
    """DDP, FSDP (`sharding_strategy`, `cpu_offload`), FSDP2 `fully_shard`."""
    name, line, col, kw = c.name, c.line, c.col, c.kw
    if name in ("DistributedDataParallel", "DDP"):
        pats.seen_training_api = True
        pats.emit("fsdp", V(None, "derived", line, col, "the model is wrapped in DDP, not FSDP"),
                  tier="hint")
        return None
    if name in ("FullyShardedDataParallel", "FSDP"):
        pats.seen_training_api = True
        fsdp_strategy(pats, kw("sharding_strategy"), line, col,
                            "FSDP's default sharding_strategy is FULL_SHARD")
        off = kw("cpu_offload")
        if off is not None and off.known and isinstance(off.value, Obj):
            p = off.value.kwargs.get("offload_params") or (off.value.args[0] if off.value.args else None)
            if p is not None and p.known and p.value:
                pats.emit("offload", p, value="optimizer+params")
        mp = kw("mixed_precision")
        del mp
        return None
    if name == "fully_shard":
        pats.seen_training_api = True
        r = kw("reshard_after_forward")
        if r is not None and r.known and r.value is False:
            pats.emit("fsdp", r, value="shard_grad_op")
        else:
            pats.emit("fsdp", V("full_shard", "literal" if r is not None else "default",
                                line, col, None if r is not None else
                                "fully_shard reshards after forward by default (FULL_SHARD)"))
        mp = kw("mp_policy")
        del mp
        return None
    return NO_MATCH


@answers("parallelize_module", "init_device_mesh")
def mesh_call(pats: Patterns, ev: Evaluator, c: Call) -> Any:
    """`parallelize_module`; `init_device_mesh` with tp / pp dimensions."""
    name, line, col, kw = c.name, c.line, c.col, c.kw
    if name == "parallelize_module":
        pats.emit("tp", unk("tensor parallel over a device mesh whose size is set at launch",
                            line, col), tier="hint")
        return None
    if name == "init_device_mesh":
        shape = kw("mesh_shape", 1)
        names = kw("mesh_dim_names", 2)
        if shape is not None and names is not None and shape.known and names.known and \
                isinstance(shape.value, (list, tuple)) and isinstance(names.value, (list, tuple)):
            for sv, nv in zip(shape.value, names.value):
                n = plain(nv)
                if n in ("tp", "pp"):
                    sv = sv if isinstance(sv, V) else V(sv, shape.origin, shape.line, shape.col)
                    pats.emit(n, sv)
        return None
    return NO_MATCH


@answers("update_parameters")
def submitit_call(pats: Patterns, ev: Evaluator, c: Call) -> Any:
    """submitit's `executor.update_parameters(nodes=, tasks_per_node=)`: a script that submits
    itself to a Slurm cluster runs `nodes` × `tasks_per_node` processes however it is started
    (`python submit.py` starts none of them itself)."""
    if "submitit" not in c.qual.lower() and "executor" not in c.recv.lower():
        return NO_MATCH
    for fact, keys in (("nodes", ("nodes",)), ("gpus_per_node", ("tasks_per_node", "gpus_per_node"))):
        v = next((c.kwargs[k] for k in keys if k in c.kwargs), None)
        if v is None:
            continue
        if v.known and isinstance(v.value, int) and not isinstance(v.value, bool) and v.value >= 1:
            # a flag's default here is what the submitted job runs with: derived from the
            # script, above the "plain python runs one process" default of the launch line
            pats.emit(fact, v, reason=f"submitit executor: {keys[0]}={v.value}"
                      + (f" ({v.reason})" if v.origin == "default" and v.reason else ""),
                      origin="derived" if v.origin == "default" else None, tier="overrules")
        else:
            pats.emit(fact, unk(f"the submitit executor's {keys[0]}: {v.reason}", c.line, c.col),
                      tier="overrules")
    return None
