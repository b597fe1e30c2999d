"""MPI runners: `mpirun` / `mpiexec` before a command — the options that take a value and
the processes they start. Read from launch lines by preflight.extract."""

from __future__ import annotations

from typing import Optional

#: mpirun / mpiexec options that take a value (srun's are in preflight.frameworks.slurm)
MPIRUN_VALUE = {"-np", "--np", "-npernode", "--npernode", "-x", "-H", "--host", "--hostfile",
                "-hostfile", "--map-by", "--bind-to"}


def mpirun_option(k: str, v: Optional[str], tasks: dict) -> None:
    """An option of `mpirun` before the command it runs: the processes it starts into
    `tasks` (`per_node`: -npernode, `total`: (flag, -np value)), for the command to take when
    it is a plain `python` launch."""
    if k in ("-npernode", "--npernode"):
        tasks["per_node"] = v
    elif k in ("-np", "--np"):
        if v:
            tasks["total"] = (k, v)
