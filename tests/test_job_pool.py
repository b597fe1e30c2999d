"""Many jobs are checked over forked worker processes (`preflight.job_pool`): the report is
the one a serial check gives, in the same order, fixes included; what the workers read is
part of the stored run result, so an edit to a file only a worker read is seen."""

import json
import os
import subprocess
import sys

import pytest

from preflight import job_pool
from preflight.options import CheckOptions
from tests.conftest import ROOT

SCRIPT = ("from transformers import AutoModelForCausalLM, AutoTokenizer, Trainer, TrainingArguments\n"
          "model = AutoModelForCausalLM.from_pretrained('{model}')\n"
          "tok = AutoTokenizer.from_pretrained('{model}')\n"
          "ds = [tok('text', max_length=2048, truncation=True, padding='max_length')]\n"
          "args = TrainingArguments(output_dir='out', per_device_train_batch_size={mb}, bf16=True)\n"
          "trainer = Trainer(model=model, args=args, train_dataset=ds)\n"
          "if __name__ == '__main__':\n"
          "    trainer.train()\n")
LAUNCH = "#!/bin/bash\ntorchrun --nproc_per_node {gpus} train.py\n"
JOBS = job_pool.PARALLEL_JOBS + 4


@pytest.fixture
def many(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / "pyproject.toml").write_text('[tool.preflight]\ngpu = "A100-80GB"\n')
    models = ["gpt2", "meta-llama/Llama-2-7b-hf", "EleutherAI/pythia-1b"]
    for i in range(JOBS):
        d = tmp_path / f"exp_{i:02d}"
        d.mkdir()
        (d / "train.py").write_text(SCRIPT.format(model=models[i % 3], mb=1 + i % 4))
        (d / "launch.sh").write_text(LAUNCH.format(gpus=(2, 4, 8)[i % 3]))
    return tmp_path


def test_workers_report_what_a_serial_check_reports(many, monkeypatch):
    from preflight import pipeline
    monkeypatch.chdir(many)
    assert job_pool.workers_for(JOBS, None) >= (2 if (os.cpu_count() or 1) >= 2 else 1)
    # fixes searched as `preflight.check` searches them: against the nearest config
    serial = pipeline.run(["."], CheckOptions(jobs=1, fixes=True))
    parallel = pipeline.run(["."], CheckOptions(jobs=2, fixes=True))
    assert len(serial.jobs) == JOBS
    assert json.dumps(parallel.to_json(), sort_keys=True) == json.dumps(serial.to_json(), sort_keys=True)
    # the 7B jobs do not fit on one A100 unsharded: their fixes came back from the workers
    assert [jr.fix is not None for jr in parallel.jobs] == [jr.fix is not None for jr in serial.jobs]
    assert any(jr.fix is not None for jr in parallel.jobs)
    assert [jr.job.entry for jr in parallel.jobs] == sorted(jr.job.entry for jr in parallel.jobs)


def _check(cwd):
    env = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    env.pop("PREFLIGHT_DEBUG", None)
    r = subprocess.run([sys.executable, "-m", "preflight", "check", ".", "--format", "json"],
                       cwd=cwd, capture_output=True, text=True, env=env, timeout=300)
    return json.loads(r.stdout)


def test_an_edit_to_a_file_a_worker_read_is_seen_by_the_next_run(many):
    first = _check(many)
    assert len(first["jobs"]) == JOBS
    launcher = many / f"exp_{JOBS - 1:02d}" / "launch.sh"
    launcher.write_text(LAUNCH.format(gpus=16).replace("--nproc_per_node 16",
                                                       "--nnodes 2 --nproc_per_node 8"))
    second = _check(many)
    last = [j for j in second["jobs"] if j["entry"].startswith(f"exp_{JOBS - 1:02d}")][0]
    assert last["facts"]["world_size"]["value"] == 16


def test_job_workers_import_nothing_the_run_did_not_import_before_forking(many, tmp_path):
    """The modules checking a job needs are imported once, before job workers fork
    (`pipeline._JOB_MODULES`, while the walk runs in a second process), not once per
    worker."""
    out = tmp_path / "imported.txt"
    code = ("import os, sys, preflight\n"
            "from preflight import job_pool\n"
            "chunk = job_pool._chunk\n"
            "def counted(indices):\n"
            "    before = set(sys.modules)\n"
            "    try:\n"
            "        return chunk(indices)\n"
            "    finally:\n"
            "        with open(os.environ['OUT'], 'a') as fh:\n"
            "            fh.writelines(m + '\\n' for m in set(sys.modules) - before)\n"
            "job_pool._chunk = counted\n"
            "preflight.check(['.'], cache=False)\n")
    env = {**os.environ, "OUT": str(out),
           "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    r = subprocess.run([sys.executable, "-c", code], cwd=many, capture_output=True, text=True,
                       env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    assert out.exists()                       # the jobs were checked in workers
    assert sorted({m for m in out.read_text().split() if m.startswith("preflight")}) == []
