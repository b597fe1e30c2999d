"""PF302: tensor parallel group spans nodes."""

import math

from preflight.engine import Example, Rule
from preflight.plan import Origin
from preflight.rules._common import line_of
from preflight.rules.pf108_model_parallel_for_states import titan

_TP16 = titan(tp=16, dp_shard=1).replace('flavor = "8B"', 'flavor = "70B"')
_TP8 = titan(tp=8, dp_shard=-1).replace('flavor = "8B"', 'flavor = "70B"')
_LAUNCH = ("torchrun --nnodes 4 --nproc_per_node 8 -m torchtitan.train "
           "--job.config_file llama3_70b.toml")


class TensorParallelAcrossNodes(Rule):
    """
    ## What it does
    Fires when the tensor-parallel degree is larger than the GPUs of one node, so a
    tensor-parallel group communicates over the inter-node network.

    ## Why is this bad
    Tensor parallel all-reduces activations twice per layer in forward and twice in
    backward — latency-bound traffic on the critical path. Inside a node NVLink gives
    ≈ 370 GB/s of all-reduce bus bandwidth (8×H100); across nodes 400 Gb/s InfiniBand
    gives ≈ 46–48 GB/s per NIC, 8× less, and the step waits for it every layer.

    ## Example
    ```toml
    [parallelism]
    tensor_parallel_degree = 16   # 8 GPUs per node
    ```

    ## Use instead
    Keep tensor parallel within a node (≤ GPUs per node) and scale across nodes with
    data parallel / FSDP or pipeline parallel, whose traffic overlaps with compute.
    """

    code = "PF302"
    name = "tp-across-nodes"
    summary = "Tensor parallel group spans nodes: per-layer all-reduces over the network"
    severity = "warning"
    misconception = 5
    case = None

    INVALID = [Example(files={"llama3_70b.toml": _TP16}, command=_LAUNCH,
                       expect=[("PF302", "llama3_70b.toml", line_of(_TP16, "tensor_parallel_degree"))])]
    VALID = [Example(files={"llama3_70b.toml": _TP8}, command=_LAUNCH)]

    def check(self, ctx):
        tp, gpn = ctx.v("tp") or 1, ctx.v("gpus_per_node")
        if tp <= 1 or not gpn or tp <= gpn or tp > ctx.world:
            return          # (tp > world size is an inconsistency of its own, PF4xx)
        if ctx.plan.fact("gpus_per_node").origin in (Origin.ASSUMED, Origin.DEFAULT, Origin.INFERRED):
            return          # a node size preflight assumed says nothing about the topology
        nodes = math.ceil(tp / gpn)
        yield self.diagnostic(
            f"tensor parallel {tp} spans {nodes} nodes of {gpn} GPUs: every layer's "
            f"activation all-reduces (2 forward, 2 backward) cross the network at ≈ 46–48 "
            f"GB/s per NIC instead of NVLink's ≈ 370 GB/s",
            ctx.src("tp"),
            fix=f"keep tensor parallel ≤ {gpn} (one node) and use data parallel / FSDP or "
                f"pipeline parallel across nodes",
            data={"tp": tp, "gpus_per_node": gpn})
