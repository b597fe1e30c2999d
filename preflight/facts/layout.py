"""The job's layout, computed once from the plan: world size, nodes, GPUs per node, the
model-parallel and data-parallel degrees, the effective ZeRO stage and the shard degree.

The estimator sizes the ledger with it and the rules word their findings with it, so a
finding and the ledger it cites never disagree about how the states are split
(docs/ledger.md, "Sharding").
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable, Optional

from preflight.facts.names import read_value

#: the ZeRO stage each FSDP strategy corresponds to (what it shards: 3 = params, grads and
#: optimizer state; 2 = grads and optimizer state; no_shard = plain data parallelism)
FSDP_STAGE = {"full_shard": 3, "hybrid_shard": 3, "shard_grad_op": 2, "no_shard": 0}


@dataclass(frozen=True)
class Layout:
    world_size: int = 1
    nodes: int = 1
    gpus_per_node: int = 1
    tp: int = 1
    pp: int = 1
    zero_stage: int = 0
    fsdp: Optional[str] = None
    #: fact name → what was assumed (a missing world size, GPUs per node, nodes)
    assumed: dict[str, str] = field(default_factory=dict, compare=False)

    @property
    def mp(self) -> int:
        """Model-parallel degree: how many GPUs one copy of the model is split over."""
        return max(1, self.tp) * max(1, self.pp)

    @property
    def dp(self) -> int:
        """Data-parallel degree (replicas, or ZeRO/FSDP shards)."""
        return max(1, self.world_size // self.mp)

    @property
    def stage(self) -> int:
        """Effective sharding stage. An FSDP strategy decides it when one is set (FSDP wraps
        the model; a ZeRO stage beside it is not applied); otherwise the ZeRO stage."""
        if self.fsdp in FSDP_STAGE:
            return FSDP_STAGE[self.fsdp]
        return self.zero_stage

    @property
    def shard(self) -> int:
        """Ranks one copy of the sharded states is split over: the data-parallel degree, or
        for hybrid sharding the data-parallel ranks of one node."""
        if self.stage == 0:
            return 1
        if self.fsdp == "hybrid_shard":
            return max(1, min(self.dp, self.gpus_per_node // self.mp))
        return self.dp

    @property
    def sharding_name(self) -> str:
        """How the ledger's formulas name the sharding: `FSDP FULL_SHARD`, `ZeRO-3`, `DDP`."""
        if self.fsdp and self.fsdp != "no_shard":
            return f"FSDP {self.fsdp.upper()}"
        if self.stage:
            return f"ZeRO-{self.stage}"
        return "DDP" if self.dp > 1 else "single replica"

    @property
    def label(self) -> str:
        """How findings name it: `FSDP hybrid_shard`, `ZeRO-2`, `DDP`, `a single GPU`."""
        if self.fsdp and self.fsdp != "no_shard":
            return f"FSDP {self.fsdp}"
        if self.stage:
            return f"ZeRO-{self.stage}"
        return "DDP" if self.world_size > 1 else "a single GPU"

    def with_sharding(self, stage: int) -> "Layout":
        """The same GPUs sharding with ZeRO `stage` instead (a what-if of the fixes)."""
        return replace(self, zero_stage=stage, fsdp=None)

    @classmethod
    def from_values(cls, value: Callable[[str], Any], gpus_per_node_hint: int = 8) -> "Layout":
        """The layout from a reader of validated plan values (None = not known); what is
        missing is assumed and the assumption recorded."""
        a: dict[str, str] = {}
        tp = value("tp")
        pp = value("pp")
        zero = value("zero_stage")
        ws, nodes, gpn = value("world_size"), value("nodes"), value("gpus_per_node")
        if ws is None and nodes and gpn:
            ws = int(nodes) * int(gpn)
        if ws is None:
            ws = 1
            a["world_size"] = "world_size not given: 1 GPU assumed"
        ws = int(ws)
        if gpn is None:
            if nodes is None:
                gpn = min(ws, gpus_per_node_hint)
                if ws > 1:
                    a["gpus_per_node"] = f"gpus_per_node not given: {gpn} assumed"
            else:
                gpn = max(1, -(-ws // int(nodes)))     # derived, not assumed
        gpn = max(1, int(gpn))
        if nodes is None:
            nodes = max(1, -(-ws // gpn))
            if nodes > 1:
                a["nodes"] = f"nodes not given: {nodes} assumed ({gpn} GPUs each)"
        return cls(world_size=ws, nodes=int(nodes), gpus_per_node=gpn,
                   tp=int(tp or 1), pp=int(pp or 1), zero_stage=int(zero or 0),
                   fsdp=value("fsdp"), assumed=a)

    @classmethod
    def from_plan(cls, plan: Any, gpus_per_node_hint: int = 8) -> "Layout":
        return cls.from_values(lambda n: read_value(plan, n), gpus_per_node_hint)
