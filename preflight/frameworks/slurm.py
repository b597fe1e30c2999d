"""SLURM: `#SBATCH` headers, `sbatch` options, `srun` before a command, and the `SLURM_*`
variables the header sets. Read from launch scripts by preflight.extract; the facts (nodes,
GPUs per node, the GPU type) are those of the job the script submits."""

from __future__ import annotations

import re
from typing import Any, Optional

from preflight.frameworks._common import LaunchLine
from preflight.hardware import lookup
from preflight.lang.shell.values import as_int
from preflight.plan import Fact, Origin, Source

#: environment variables SLURM sets from the #SBATCH header → the header key they mirror
SLURM_ENV = {"SLURM_NNODES": "nodes", "SLURM_JOB_NUM_NODES": "nodes",
             "SLURM_GPUS_ON_NODE": "gpus_per_node", "SLURM_GPUS_PER_NODE": "gpus_per_node",
             "SLURM_NTASKS_PER_NODE": "ntasks_per_node"}

#: srun options that take a value
SRUN_VALUE = {"-N", "--nodes", "-n", "--ntasks", "--ntasks-per-node", "--gpus-per-node",
              "--gres", "-c", "--cpus-per-task", "-p", "--partition", "-A", "--account",
              "-t", "--time", "-J", "--job-name", "-o", "--output", "-e", "--error",
              "--gpus", "-G", "--mem", "--nodelist", "-w", "--container-image",
              "--container-mounts", "--mpi", "--cpu-bind", "--gpus-per-task", "--export",
              "--container-workdir", "--container-name", "--distribution", "-m", "--label"} - {"--label"}

#: long #SBATCH options that take a value when written `--opt value`
SBATCH_VALUE = {"--nodes", "--gres", "--gpus-per-node", "--ntasks-per-node", "--constraint", "--gpus",
                "--ntasks", "--partition", "--account", "--time", "--job-name", "--output", "--error",
                "--cpus-per-task", "--mem", "--qos", "--chdir", "--nodelist", "--exclude"}

_GPU_NAMES = [
    (r"gh200", "GH200-96GB"), (r"h200", "H200-SXM-141GB"), (r"h100.*pcie", "H100-PCIe-80GB"),
    (r"h100", "H100-SXM5-80GB"), (r"a100.*80", "A100-SXM4-80GB"), (r"a100", "A100-SXM4-40GB"),
    (r"v100.*32", "V100-SXM2-32GB"), (r"v100", "V100-SXM2-16GB"), (r"a10g", "A10G"),
    (r"l40s", "L40S"), (r"^l4$", "L4"), (r"b200", "B200"), (r"mi300x?", "MI300X"),
    (r"mi250x?", "MI250X"), (r"4090", "RTX-4090"), (r"3090", "RTX-3090"),
]


def gpu_name(s: str) -> Optional[str]:
    """A SLURM GPU type or constraint (`a100_80gb`, `h100`) → the hardware catalogue's name.
    A family with several memory sizes reads as the smaller one, as the catalogue does."""
    try:
        return lookup(s).name
    except ValueError:
        pass
    low = s.lower()
    for pat, name in _GPU_NAMES:
        if re.search(pat, low):
            return name
    return None


def read_sbatch_option(key: str, val: Optional[str], src: Source, facts: list, hdr: dict) -> None:
    """One sbatch option (`--nodes=2`, `--gres gpu:a100:8`): its facts into `facts`, and into
    `hdr` (fact name → value) what the launch lines under the header take from it."""
    def put(name: str, value: Any, why: str) -> None:
        facts.append((name, Fact(value=value, origin=Origin.CONFIG, source=src, reason=why)))
        hdr[name] = value

    if val is None:
        return
    if key in ("-N", "--nodes"):
        n = as_int(val.split("-")[0])
        if n is not None and ("-" not in val or val.split("-")[0] == val.split("-")[1]):
            put("nodes", n, f"#SBATCH {key}={val}")
    elif key in ("--gpus-per-node", "--gres"):
        parts = val.split(",")[0].split(":")
        if key == "--gres" and parts[0] != "gpu":
            return
        n = as_int(parts[-1])
        if n is not None:
            put("gpus_per_node", n, f"#SBATCH {key}={val}")
        typ = parts[1] if key == "--gres" and len(parts) == 3 else (parts[0] if key == "--gpus-per-node" and len(parts) == 2 else None)
        if typ and gpu_name(typ):
            put("gpu", gpu_name(typ), f"#SBATCH {key}={val}")
    elif key in ("--ntasks-per-node",):
        n = as_int(val)
        if n is not None:
            hdr["ntasks_per_node"] = n
    elif key in ("-C", "--constraint"):
        g = gpu_name(val)
        if g:
            put("gpu", g, f"#SBATCH {key}={val}")


def read_sbatch_header(raw: str, lineno: int, display: str, facts: list, hdr: dict) -> bool:
    """An `#SBATCH …` header line (`raw`, as written, at line `lineno` of `display`): each
    option read by read_sbatch_option. False when the line is not a header."""
    stripped = raw.strip()
    if not stripped.startswith("#SBATCH"):
        return False
    body = stripped[len("#SBATCH"):].split("#", 1)[0].strip()
    toks = body.split()
    k = 0
    while k < len(toks):
        t = toks[k]
        if "=" in t and t.startswith("--"):
            key, val = t.split("=", 1)
            k += 1
        elif k + 1 < len(toks) and t.startswith("-") and (
                not t.startswith("--") or t in SBATCH_VALUE) and not toks[k + 1].startswith("-"):
            key, val = t, toks[k + 1]
            k += 2
        else:
            key, val = t, None
            k += 1
        col = raw.find(t) + 1
        read_sbatch_option(key, val, Source(path=display, line=lineno, col=col), facts, hdr)
    return True


def srun_option(k: str, v: Optional[str], ln: LaunchLine, tasks: dict) -> None:
    """An option of `srun` before the command it runs: the nodes and GPUs it fixes into
    `ln`; the tasks it starts into `tasks` (`per_node`: --ntasks-per-node, `total`: (flag,
    -n value)), for the command to take when it is a plain `python` launch."""
    if k in ("-N", "--nodes"):
        ln.fact("nodes", v, as_int, k)
    elif k == "--ntasks-per-node":
        tasks["per_node"] = v
    elif k in ("-n", "--ntasks"):
        if v:
            tasks["total"] = (k, v)
    elif k == "--gpus-per-node":
        if v:
            ln.fact("gpus_per_node", v.split(":")[-1], as_int, k)
