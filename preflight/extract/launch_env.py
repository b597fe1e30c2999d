"""The environment a launcher gives the script it starts.

torchrun, `deepspeed` and `accelerate launch` set `WORLD_SIZE`, `RANK`, `LOCAL_RANK`,
`LOCAL_WORLD_SIZE` (and `NODE_RANK` / `GROUP_RANK`) in every process; a plain `python`
launch sets none of them. A script that reads them (`ddp = int(os.environ.get("RANK",
-1)) != -1`, `world = int(os.environ["WORLD_SIZE"])`) is evaluated with these values, so
its conditions are decided and its derived values (`grad_accum = total // (B * T *
world)`) computed, not left unknown.

Ranks differ between processes: they are given as rank 0's (the process that logs and
sizes like any other), and their reason says so. Variables the launch script exports (or
sets before the command) reach the process too, under the launcher's own.
"""

from __future__ import annotations

from typing import Optional

from preflight.plan import Fact, Invocation

#: launchers that start one process per GPU and set torch.distributed's variables
DISTRIBUTED = ("torchrun", "deepspeed", "accelerate")
#: the variables they set
VARIABLES = ("WORLD_SIZE", "RANK", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "NODE_RANK", "GROUP_RANK")

#: name → (value, reason); value None: the variable is not set in the process
Env = dict[str, tuple[Optional[str], str]]


def launch_env(inv: Optional[Invocation]) -> Env:
    """What the script's process finds in its environment, as far as the launch line
    tells it (empty when it does not: no launch line, or a program preflight does not
    read)."""
    if inv is None:
        return {}
    # what the launch script exports (or sets before the command); a launcher's own
    # variables (below) are set over them, as torchrun does
    script: Env = {k: (v, "set by the launch script") for k, v in inv.env.items()}
    if not inv.launcher:
        return script
    if inv.launcher == "python":
        why = "not set: a plain `python` launch starts one process without a launcher"
        return {**{k: (None, why) for k in VARIABLES}, **script}
    if inv.launcher not in DISTRIBUTED:
        return script
    facts: dict[str, Fact] = {}
    for name, f in inv.facts:
        if f.known:
            facts[name] = f       # the line's last word on each
    world = _int(facts.get("world_size"))
    nodes, gpn = _int(facts.get("nodes")), _int(facts.get("gpus_per_node"))
    if world is None and nodes and gpn:
        world = nodes * gpn
    how = f"set by {inv.launcher}"
    # the launcher sets its variables itself, whatever the script exported
    out: Env = {k: v for k, v in script.items() if k not in VARIABLES}
    out.update({"RANK": ("0", f"{how}; each process has its own: rank 0's value"),
                "LOCAL_RANK": ("0", f"{how}; each process has its own: rank 0's value"),
                "NODE_RANK": ("0", f"{how}; each node has its own: node 0's value"),
                "GROUP_RANK": ("0", f"{how}; each node has its own: node 0's value")})
    if world:
        out["WORLD_SIZE"] = (str(world), f"{how}: {world} processes"
                             + (f" ({nodes} × {gpn})" if nodes and gpn and nodes * gpn == world else ""))
    if gpn:
        out["LOCAL_WORLD_SIZE"] = (str(gpn), f"{how}: {gpn} processes per node")
    return out


def _int(f: Optional[Fact]) -> Optional[int]:
    v = f.value if f is not None else None
    return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else None
