"""The training callbacks, in real runs on CPU: a Hugging Face Trainer with a 2-layer GPT-2
built from a config, a Lightning Trainer with a small LightningModule.

- With a capacity below the need, training stops before the first optimizer step with the
  finding (the fixtures print STEP in a global optimizer step pre-hook).
- The model states the callback predicts from the live objects equal what `preflight
  dryrun` measures by unique storage in the same script (the callback runs inside the dry
  run and writes its JSON there).
"""

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT, run_cli

pytest.importorskip("torch", reason="torch is in the test extra: pip install -e '.[test]'")

FIX = os.path.join(ROOT, "tests", "fixtures", "integrations")
STATES = ("params", "grads", "optimizer", "master")


def _run(script, *args, tmp):
    env = dict(os.environ, PYTHONPATH=ROOT, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               NO_COLOR="1")
    return subprocess.run([sys.executable, os.path.join(FIX, script), *args], cwd=tmp,
                          capture_output=True, text=True, timeout=600, env=env)


def _dryrun_states(script, args, tmp_path):
    out = tmp_path / "callback.json"
    cp = run_cli("dryrun", "--device", "cpu", "--format", "json", os.path.join(FIX, script),
                 "--", *args, "--json", str(out), env={"HF_HUB_OFFLINE": "1"})
    assert cp.returncode == 0, cp.stdout[-2000:] + cp.stderr[-2000:]
    measured = json.loads(cp.stdout)["ranks"][0]
    job = json.loads(out.read_text())["jobs"][0]
    predicted = job["ledger"]["per_gpu_bytes"]
    return measured, predicted, job


# ---------------------------------------------------------------- Hugging Face Trainer

transformers = pytest.importorskip("transformers")


def test_hf_trainer_stops_before_the_first_step(tmp_path):
    cp = _run("hf_tiny.py", "--out", str(tmp_path / "o"), "--gpu-memory", "1MiB", tmp=tmp_path)
    assert cp.returncode != 0
    assert "STEP" not in cp.stdout and "TRAINED" not in cp.stdout
    assert "preflight.integrations.runtime.WillNotFit" in cp.stderr
    assert "PF101 model states need 1.8 MiB per GPU (16 B/param × 120,576)" in cp.stderr
    assert "stopped before the first optimizer step" in cp.stderr
    assert "4 B × 120,576" in cp.stderr                  # the ledger was logged first


def test_hf_trainer_warns_and_trains(tmp_path):
    cp = _run("hf_tiny.py", "--out", str(tmp_path / "o"), "--gpu-memory", "1MiB", "--warn",
              "--json", str(tmp_path / "r.json"), tmp=tmp_path)
    assert cp.returncode == 0, cp.stderr[-3000:]
    assert cp.stdout.count("STEP") == 2 and "TRAINED" in cp.stdout
    job = json.loads((tmp_path / "r.json").read_text())["jobs"][0]
    assert job["ledger"]["verdict"] == "does not fit"
    assert "PF101" in [d["code"] for d in job["diagnostics"]]
    f = job["facts"]
    assert (f["params"]["value"], f["params"]["origin"]) == (120_576, "runtime")
    assert f["trainable_params"]["value"] == 120_576
    assert (f["micro_batch"]["value"], f["grad_accum"]["value"]) == (4, 1)
    assert (f["optimizer"]["value"], f["param_dtype"]["value"]) == ("adamw", "fp32")
    assert (f["layers"]["value"], f["hidden"]["value"], f["vocab"]["value"]) == (2, 64, 256)


def test_hf_callback_states_equal_the_dry_run(tmp_path):
    measured, predicted, job = _dryrun_states("hf_tiny.py", ["--out", str(tmp_path / "o")],
                                              tmp_path)
    assert measured["status"] == "ok" and measured["optimizers"] == ["AdamW"]
    assert {k: predicted[k] for k in STATES} == {k: measured[k] for k in STATES}
    assert measured["params"] == 4 * 120_576
    assert job["ledger"]["verdict"] == "fits"


def test_training_arguments_facts():
    from transformers import TrainingArguments

    from preflight.integrations.transformers import training_args_facts
    args = TrainingArguments(output_dir="unused", per_device_train_batch_size=8,
                             gradient_accumulation_steps=4, activation_checkpointing=True,
                             optim="adamw_torch", use_cpu=True, report_to=[])
    facts, unknown = training_args_facts(args)
    assert facts["micro_batch"] == 8 and facts["grad_accum"] == 4
    assert facts["activation_checkpointing"] == "full" and facts["optimizer"] == "adamw"
    assert facts["world_size"] == 1 and facts["mixed_precision"] == "none"
    assert "zero_stage" not in facts and "fsdp" not in facts
    assert "seq_len" in unknown and "seq_len=" in unknown["seq_len"]


def test_frameworks_are_imported_lazily():
    code = ("import sys; import preflight.integrations.transformers, "
            "preflight.integrations.lightning; "
            "print(sorted(m for m in ('transformers', 'lightning', 'torch') if m in sys.modules))")
    cp = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                        timeout=120)
    assert cp.stdout.strip() == "[]", cp.stderr


# ---------------------------------------------------------------- Lightning

lightning = pytest.importorskip("lightning")


def test_lightning_trainer_stops_before_the_first_step(tmp_path):
    cp = _run("lightning_tiny.py", "--gpu-memory", "32KiB", tmp=tmp_path)
    assert cp.returncode != 0
    assert "STEP" not in cp.stdout and "TRAINED" not in cp.stdout
    assert "WillNotFit" in cp.stderr and "PF101" in cp.stderr
    assert "4 B × 2,632" in cp.stderr


def test_lightning_callback_states_equal_the_dry_run(tmp_path):
    measured, predicted, job = _dryrun_states("lightning_tiny.py", [], tmp_path)
    assert measured["status"] == "ok"
    assert {k: predicted[k] for k in STATES} == {k: measured[k] for k in STATES}
    assert measured["params"] == 4 * 2_632
    f = job["facts"]
    assert (f["micro_batch"]["value"], f["world_size"]["value"]) == (4, 1)
    assert f["mixed_precision"]["value"] == "none"
