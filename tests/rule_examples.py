"""Running a rule's VALID / INVALID example jobs through the real pipeline."""

from __future__ import annotations

import functools
import os
import shlex

from preflight.engine import Example


def materialise(ex: Example, root) -> None:
    for rel, text in ex.files.items():
        p = os.path.join(str(root), rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w", encoding="utf-8") as fh:
            fh.write(text)


def check_example(ex: Example, root, monkeypatch):
    """All findings of the example job (after noqa etc.), run from inside `root`."""
    from preflight import pipeline
    from preflight.config import ProjectConfig

    materialise(ex, root)
    monkeypatch.chdir(str(root))
    paths = ex.paths if ex.paths is not None else ([] if ex.command else sorted(ex.files))
    command = shlex.split(ex.command) if ex.command else None
    report = pipeline.run(paths, command, gpu=ex.gpu, headroom=ex.headroom,
                          config=ProjectConfig())
    missing = sorted({n for j in report.jobs for n in ex.needs if not j.job.plan.known(n)})
    return report.all_diagnostics(), missing


@functools.lru_cache(maxsize=1)
def pipeline_gap() -> str:
    """Why the example jobs cannot run yet ('' when extraction and estimation are in):
    a realistic job must yield the facts the memory rules read and a ledger."""
    import tempfile

    from preflight import pipeline
    from preflight.config import ProjectConfig
    from preflight.rules._common import hf_script

    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "train.py"), "w") as fh:
            fh.write(hf_script("meta-llama/Llama-2-7b-hf"))
        cwd = os.getcwd()
        os.chdir(d)
        try:
            rep = pipeline.run([], ["torchrun", "--nproc_per_node", "8", "train.py"],
                               gpu="H100-80GB", config=ProjectConfig())
        except Exception as e:  # noqa: BLE001
            return f"pipeline raised {type(e).__name__}: {e}"
        finally:
            os.chdir(cwd)
    if not rep.jobs:
        return "discovery found no job for a torchrun command"
    job = rep.jobs[0]
    missing = [n for n in ("params", "optimizer", "micro_batch", "gpus_per_node", "mixed_precision")
               if not job.job.plan.known(n)]
    if missing:
        return f"extraction does not yet provide {', '.join(missing)}"
    led = job.estimate.ledger if job.estimate else None
    if led is None or not led.lines or not led.capacity_bytes:
        return "the estimator does not yet produce a ledger with a capacity"
    return ""
