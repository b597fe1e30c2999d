"""Honest verdicts through the real CLI: a job that was not sized against a known GPU never
reads "All checks passed"; the summary and a PF007 finding name the missing facts, and
`--set FACT=VALUE` / `--gpu` supply them."""

import json

import pytest

from tests.conftest import run_cli

PASSED = "All checks passed"

#: GPT-2 fine-tune whose micro-batch comes from the environment at launch
ENV_BATCH = """\
import os
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

tok = AutoTokenizer.from_pretrained("gpt2")
model = AutoModelForCausalLM.from_pretrained("gpt2")
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
data = tok(["a text"] * 64, max_length=1024, truncation=True, padding="max_length")
loader = torch.utils.data.DataLoader(data["input_ids"], batch_size=int(os.environ["BATCH_SIZE"]))
for batch in loader:
    model(batch, labels=batch).loss.backward()
    opt.step()
"""

#: the same job with every fact in the file
SIZED = ENV_BATCH.replace('int(os.environ["BATCH_SIZE"])', "4")

#: an FSDP job started by a launcher preflight does not read
FSDP = """\
import argparse
import torch
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from transformers import AutoModelForCausalLM, AutoTokenizer

p = argparse.ArgumentParser()
p.add_argument("--batch_size", type=int, default=4)
args = p.parse_args()
torch.distributed.init_process_group("nccl")
tok = AutoTokenizer.from_pretrained("gpt2")
model = FSDP(AutoModelForCausalLM.from_pretrained("gpt2").cuda())
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
data = tok(["a text"] * 64, max_length=1024, truncation=True, padding="max_length")
loader = torch.utils.data.DataLoader(data["input_ids"], batch_size=args.batch_size)
"""
HOROVOD = "#!/bin/bash\nhorovodrun -np 8 -H localhost:8 python train.py --batch_size 2\n"


def check(tmp_path, *args):
    r = run_cli("check", *args, cwd=str(tmp_path))
    assert r.returncode in (0, 1), r.stderr
    return r


def check_json(tmp_path, *args):
    r = run_cli("check", "--format", "json", *args, cwd=str(tmp_path))
    assert r.returncode in (0, 1), r.stderr
    return json.loads(r.stdout)


def pf007(data):
    return [d for j in data["jobs"] for d in j["diagnostics"] if d["code"] == "PF007"]


def test_micro_batch_unknown_is_not_passed(tmp_path):
    (tmp_path / "train.py").write_text(ENV_BATCH)
    r = check(tmp_path, "train.py", "--gpu", "H100")
    assert PASSED not in r.stdout
    assert r.stdout.splitlines()[-1] == "1 of 1 job not sized: micro_batch unknown in train.py."
    data = check_json(tmp_path, "train.py", "--gpu", "H100")
    job = data["jobs"][0]
    assert job["sized"] is False and job["not_sized"]["missing"] == ["micro_batch"]
    # one finding for the one cause: the micro-batch's PF003 at the BATCH_SIZE line, with
    # the flag that supplies it; no PF007 repeating it
    assert not pf007(data)
    [d] = [x for x in job["diagnostics"] if x["code"] == "PF003"]
    assert (d["path"], d["line"]) == ("train.py", 9)
    assert d["message"].startswith("micro_batch: environment variable BATCH_SIZE")
    assert "--set micro_batch=VALUE" in d["fix"]


def test_set_micro_batch_and_gpu_sizes_it(tmp_path):
    (tmp_path / "train.py").write_text(ENV_BATCH)
    r = check(tmp_path, "train.py", "--set", "micro_batch=4", "--gpu", "H100")
    assert r.returncode == 0
    assert r.stdout.splitlines()[-1] == f"{PASSED} (1 job)."
    data = check_json(tmp_path, "train.py", "--set", "micro_batch=4", "--gpu", "H100")
    job = data["jobs"][0]
    assert "sized" not in job and not pf007(data)
    assert job["facts"]["micro_batch"] == {"value": 4, "origin": "cli", "source": "<--set>:0:0",
                                           "reason": "--set micro_batch=4"}
    assert job["ledger"]["verdict"] == "fits"


def test_no_gpu_is_not_passed(tmp_path):
    (tmp_path / "train.py").write_text(SIZED)
    r = check(tmp_path, "train.py")
    assert PASSED not in r.stdout
    assert r.stdout.splitlines()[-1] == "1 of 1 job not sized: no GPU given."
    [d] = pf007(check_json(tmp_path, "train.py"))
    assert "no GPU given" in d["message"] and "--gpu NAME" in d["fix"]
    assert check(tmp_path, "train.py", "--gpu", "H100").stdout.splitlines()[-1] == f"{PASSED} (1 job)."


def test_launcher_not_understood_is_not_passed(tmp_path):
    (tmp_path / "train.py").write_text(FSDP)
    (tmp_path / "launch.sh").write_text(HOROVOD)
    r = check(tmp_path, "launch.sh", "train.py", "--gpu", "H100")
    assert PASSED not in r.stdout
    assert r.stdout.splitlines()[-1] == "1 of 1 job not sized: world_size unknown in launch.sh."
    data = check_json(tmp_path, "launch.sh", "train.py", "--gpu", "H100")
    job = data["jobs"][0]
    assert job["facts"]["micro_batch"]["value"] == 2          # the line inside was still read
    assert job["facts"]["world_size"]["origin"] == "unknown"
    assert "horovodrun" in job["facts"]["world_size"]["reason"]
    [d] = pf007(data)
    assert (d["path"], d["line"]) == ("launch.sh", 2)
    # memory findings computed on an assumed single GPU are not made
    assert {x["code"] for x in job["diagnostics"]} <= {"PF007", "PF201", "PF003"}
    r = check(tmp_path, "launch.sh", "train.py", "--gpu", "H100", "--set", "world_size=8")
    assert "not sized" not in r.stdout


#: a ZeRO-2 job on every visible GPU: `deepspeed` without --num_gpus states no GPU count
ALL_GPUS = "#!/bin/bash\ndeepspeed train.py --batch_size 2 --deepspeed ds.json\n"
ZERO2 = '{"train_micro_batch_size_per_gpu": 2, "bf16": {"enabled": true}, "zero_optimization": {"stage": 2}}\n'


def test_sharded_job_on_every_visible_gpu_is_not_sized_on_one(tmp_path):
    (tmp_path / "train.py").write_text(FSDP.replace("FSDP(", "(").replace(
        "torch.distributed.init_process_group(\"nccl\")", "import deepspeed"))
    (tmp_path / "launch.sh").write_text(ALL_GPUS)
    (tmp_path / "ds.json").write_text(ZERO2)
    r = check(tmp_path, "launch.sh", "train.py", "--gpu", "H100")
    assert PASSED not in r.stdout
    assert r.stdout.splitlines()[-1] == "1 of 1 job not sized: world_size unknown in launch.sh."
    data = check_json(tmp_path, "launch.sh", "train.py", "--gpu", "H100")
    job = data["jobs"][0]
    assert job["facts"]["zero_stage"]["value"] == 2
    assert job["not_sized"]["missing"] == ["world_size"]
    # no "does not fit" finding computed on one GPU's share of the ZeRO-2 states
    assert not [d for d in job["diagnostics"] if d["code"].startswith("PF1")]


#: every argument of the line comes from outside the script, the launcher's options too
OPAQUE = "#!/bin/bash\nrun_cmd=\"deepspeed $WORKER_STR pretrain_gpt.py $@ ${OPTIONS}\"\neval ${run_cmd}\n"


def test_launched_job_with_no_setting_read_is_not_passed(tmp_path):
    (tmp_path / "pretrain_gpt.py").write_text("from megatron.training import pretrain\n\n"
                                              "pretrain(None, None)\n")
    (tmp_path / "launch.sh").write_text(OPAQUE)
    r = check(tmp_path, "launch.sh", "--gpu", "H100")
    assert PASSED not in r.stdout
    assert "1 of 1 job not sized: " in r.stdout.splitlines()[-1]
    data = check_json(tmp_path, "launch.sh", "--gpu", "H100")
    job = data["jobs"][0]
    # the unknown word before the script is launcher options, not the script
    assert job["entry"] == "pretrain_gpt.py"
    assert "$WORKER_STR" in job["facts"]["nodes"]["reason"]
    [d] = pf007(data)
    assert "micro_batch" in d["message"]


def test_fail_on_unsized(tmp_path):
    (tmp_path / "train.py").write_text(SIZED)
    assert check(tmp_path, "train.py").returncode == 0
    assert check(tmp_path, "train.py", "--fail-on-unsized").returncode == 1
    assert check(tmp_path, "train.py", "--fail-on-unsized", "--gpu", "H100").returncode == 0


@pytest.mark.parametrize("arg,msg", [("foo=3", "unknown fact 'foo'"),
                                     ("micro_batch=four", "micro_batch"),
                                     ("fsdp=sharded", "fsdp = 'sharded' is not one of"),
                                     ("micro_batch", "is not FACT=VALUE")])
def test_bad_set_is_a_usage_error(tmp_path, arg, msg):
    (tmp_path / "train.py").write_text(SIZED)
    r = run_cli("check", "train.py", "--set", arg, cwd=str(tmp_path))
    assert r.returncode == 2 and msg in r.stderr


def test_markdown_says_not_sized(tmp_path):
    (tmp_path / "train.py").write_text(ENV_BATCH)
    r = run_cli("check", "--format", "markdown", "train.py", cwd=str(tmp_path))
    assert "**1 of 1 job not sized: micro\\_batch unknown in train.py; no GPU given.**" in r.stdout


def test_estimate_exits_1_when_the_job_does_not_fit(tmp_path):
    common = ["--optimizer", "adamw", "--precision", "bf16-mixed", "--micro-batch", "1",
              "--seq-len", "2048", "--layers", "32", "--heads", "32", "--gpu", "H100"]
    assert run_cli("estimate", "--params", "7e9", "--hidden", "4096", *common).returncode == 1
    assert run_cli("estimate", "--params", "1e9", "--hidden", "2048", *common).returncode == 0


def test_estimate_set_fills_a_file_job(tmp_path):
    (tmp_path / "train.py").write_text(ENV_BATCH)
    r = run_cli("estimate", "--format", "json", "train.py", "--set", "micro_batch=4", "--gpu", "H100",
                cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    job = json.loads(r.stdout)["jobs"][0]
    assert job["facts"]["micro_batch"]["value"] == 4
    assert job["ledger"]["verdict"] == "fits"
    assert not [d for d in job["diagnostics"] if d["code"] == "PF007"]


def test_an_unknown_launcher_option_before_a_module_is_an_option(tmp_path):
    """`deepspeed $NUM_GPUS_FLAG --module training.trainer …`: the unknown word is launcher
    options; the module after `--module` is the job, its GPU count unknown with the word."""
    (tmp_path / "training").mkdir()
    (tmp_path / "training" / "__init__.py").write_text("")
    (tmp_path / "training" / "trainer.py").write_text(
        "import torch\nfrom transformers import AutoModelForCausalLM\n"
        "model = AutoModelForCausalLM.from_pretrained('gpt2')\n"
        "opt = torch.optim.AdamW(model.parameters())\nopt.step()\n")
    (tmp_path / "launch.sh").write_text(
        "#!/bin/bash\ndeepspeed $NUM_GPUS_FLAG --module training.trainer --epochs 2\n")
    job = check_json(tmp_path, "launch.sh")["jobs"][0]
    assert job["entry"].replace("\\", "/") == "training/trainer.py"
    assert "$NUM_GPUS_FLAG" in job["facts"]["gpus_per_node"]["reason"]
    assert job["facts"]["model"]["value"] == "gpt2"
