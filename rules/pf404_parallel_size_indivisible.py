"""PF404: parallel sizes that do not divide the world size."""

from typing import Optional

from preflight.engine import Example, Rule
from preflight.rules._common import megatron_job
from preflight.plan import Origin, Source



class ParallelSizeIndivisible(Rule):
    """
    ## What it does
    Checks that tensor × pipeline (× context, × replicate) parallel sizes divide the
    number of GPUs.

    ## Why is this bad
    The framework cannot form its process groups and stops at start-up; the data-parallel
    degree every memory figure depends on is not a whole number (8 GPUs / TP 3 = 2.67).

    ## Example
    ```bash
    torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 3 …
    ```

    ## Use instead
    Parallel sizes whose product divides the world size: `--tensor-model-parallel-size 2`
    (or 4, 8) on 8 GPUs.
    """

    code = "PF404"
    name = "parallel-size-indivisible"
    summary = "Parallel sizes whose product does not divide the world size"
    severity = "error"

    INVALID = [Example(files=megatron_job("--tensor-model-parallel-size 3"),
                       expect=[("PF404", "train.sh", 3)])]
    VALID = [Example(files=megatron_job("--tensor-model-parallel-size 2")),
             # a plain `python` line of an app that starts its own workers (Ray): the one
             # process is the line's default, not a world size the config contradicts
             Example(files={**megatron_job("--tensor-model-parallel-size 2"),
                            "train.sh": megatron_job("--tensor-model-parallel-size 2")[
                                "train.sh"].replace("torchrun --nproc_per_node 8", "python")})]

    def check(self, ctx):
        ws = ctx.v("world_size")
        if not isinstance(ws, int) or ws <= 0:
            return
        if all(ctx.plan.facts.get(n) is not None and
               ctx.plan.facts[n].origin in (Origin.DEFAULT, Origin.ASSUMED)
               for n in ("nodes", "gpus_per_node")):
            # the world size is what a bare launch line defaults to (one process), not one
            # the job states: parallel sizes above it say the app starts its own workers
            return
        degrees: list[tuple[str, int, Optional[Source]]] = []
        for name in ("tp", "pp"):
            f = ctx.plan.facts.get(name)
            if f is not None and f.known and isinstance(f.value, int):
                degrees.append((name, f.value, f.source))
        for e in (ctx.job.extractions if ctx.job is not None else []):
            for k, d in (e.extras.get("parallel_degrees") or {}).items():
                if k.startswith(("context", "data_parallel_replicate")) and \
                        isinstance(d.get("value"), int) and d["value"] > 0:
                    degrees.append((k, d["value"], d.get("source")))
        prod = 1
        for _, val, _ in degrees:
            if val > 0:
                prod *= val
        if prod <= 1 or ws % prod == 0:
            return
        srcs = [s for _, _, s in degrees if s]
        wsrc = ctx.plan.source("world_size")
        parts = " × ".join(f"{n} {v}" for n, v, _ in degrees if v > 1)
        yield self.diagnostic(
            f"parallel sizes {parts} = {prod} do not divide the world size {ws}",
            srcs[0] if srcs else wsrc, related=srcs[1:] + ([wsrc] if wsrc else []),
            fix=f"choose parallel sizes whose product divides {ws}",
            data={"product": prod, "world_size": ws})
