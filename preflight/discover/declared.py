"""Jobs declared in pyproject.toml, for when discovery cannot see how a job is run:

    [[tool.preflight.jobs]]
    entry = "train.py"
    launcher = "scripts/train.sh"        # or: command = "torchrun --nproc_per_node 8 train.py"
    args = ["--batch_size", "4"]
    gpu = "H100-SXM5-80GB"
    nodes = 2
"""

from __future__ import annotations

import os
import shlex
from typing import Optional

from preflight.config import load_project_config
from preflight.discover.paths import rel, resolve
from preflight.discover.specs import spec_from_invocation
from preflight.extract import extract_file
from preflight.extract.launchers import parse_command
from preflight.plan import Diagnostic, Invocation, JobSpec, Origin, Source


def declared_jobs(root: str) -> tuple[list[dict], list[Diagnostic]]:
    """[[tool.preflight.jobs]] of the project (a malformed config is reported by
    preflight.config, with the other [tool.preflight] problems)."""
    jobs = load_project_config(root).jobs
    return [j for j in jobs if isinstance(j, dict)], []


def declared_spec(job: dict, root: str, diags: list[Diagnostic]) -> Optional[JobSpec]:
    entry = job.get("entry")
    entry_p = resolve(entry, [root], root) if isinstance(entry, str) else None
    inv: Optional[Invocation] = None
    launcher = job.get("launcher")
    lpath = resolve(launcher, [root], root) if isinstance(launcher, str) else None
    command = job.get("command")
    src = Source(path=os.path.relpath(os.path.join(root, "pyproject.toml")), line=1, col=1)
    if isinstance(command, str):
        try:
            command = shlex.split(command)
        except ValueError:
            command = None
    if isinstance(command, list) and command:
        inv = parse_command([str(c) for c in command], src, Origin.CLI, {}, cwd=root,
                            diagnostics=diags)
    elif lpath:
        ext = extract_file(lpath)
        cands = ext.invocations
        if entry_p:
            cands = [i for i in cands if i.script and resolve(i.script, [os.path.dirname(lpath), root], root)
                     and os.path.abspath(resolve(i.script, [os.path.dirname(lpath), root], root) or "")
                     == os.path.abspath(entry_p)] or cands
        inv = cands[0] if cands else None
    extra = job.get("args")
    if isinstance(extra, str):
        extra = shlex.split(extra)
    if inv is None:
        inv = Invocation(script=entry or "", args=[], source=src)
    if isinstance(extra, list) and extra:
        inv = inv.model_copy(update={"args": list(inv.args) + [str(a) for a in extra]})
    if entry and not inv.script:
        inv = inv.model_copy(update={"script": entry})
    spec = spec_from_invocation(inv, lpath, root, diags)
    if entry_p:
        files = [rel(entry_p)] + [f for f in spec.files if os.path.abspath(f) != os.path.abspath(entry_p)]
        spec = spec.model_copy(update={"entry": rel(entry_p), "files": files})
    overrides = {k: job[k] for k in ("gpu", "nodes", "gpus_per_node", "world_size") if k in job}
    return spec.model_copy(update={"declared": True, "overrides": overrides})
