"""`preflight estimate` through the real command line, in a subprocess."""

import json

import pytest

from tests.conftest import run_cli

BASE = ("estimate", "--params", "7e9", "--optimizer", "adamw", "--precision", "bf16-mixed")


def _json(*args):
    r = run_cli(*BASE, *args, "--format", "json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_json_ledger_of_the_7b_example():
    d = _json()
    assert d["version"] == 1 and len(d["jobs"]) == 1
    job = d["jobs"][0]
    assert job["entry"] is None and job["files"] == [] and job["diagnostics"] == []
    b = job["ledger"]["per_gpu_bytes"]
    assert (b["params"], b["grads"], b["optimizer"], b["master"]) == \
        (14_000_000_000, 14_000_000_000, 56_000_000_000, 28_000_000_000)
    assert all(isinstance(b[k], int) for k in ("params", "grads", "optimizer", "master"))
    assert job["facts"]["params"] == {"value": 7_000_000_000, "origin": "cli",
                                      "source": "<command line>:0:0"}
    assert job["facts"]["param_dtype"]["value"] == "bf16"
    assert job["facts"]["mixed_precision"]["value"] == "bf16"
    assert "micro_batch" in job["ledger"]["unknown"]
    assert set(job["walls"]) >= {"compute_s", "comm_s", "step_s", "efficiency", "mfu", "lines"}


def test_json_8bit_and_zero3_states():
    b = _json("--optimizer", "adamw8bit")["jobs"][0]["ledger"]["per_gpu_bytes"]
    assert b["params"] + b["grads"] + b["optimizer"] + b["master"] == 70_000_000_000
    b = _json("--zero", "3", "--world-size", "8")["jobs"][0]["ledger"]["per_gpu_bytes"]
    assert b["params"] + b["grads"] + b["optimizer"] + b["master"] == 14_000_000_000


def test_full_example_text_table():
    r = run_cli(*BASE, "--world-size", "8", "--zero", "3", "--micro-batch", "4", "--seq-len",
                "2048", "--layers", "32", "--hidden", "4096", "--heads", "32", "--vocab", "32000",
                "--gpu", "H100-80GB")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "H100-SXM5-80GB" in out and "81,559 MiB" in out
    assert "= 2 B × 7,000,000,000 / 8 (ZeRO-3)" in out
    assert "= 8 B × 7,000,000,000 / 8 (ZeRO-3)" in out
    assert "7.00 GB" in out and "6.52 GiB" in out          # the optimizer line in both units
    assert "verdict: fits" in out
    assert "CUDA context" in out and "headroom margin" in out


def test_1_5b_does_not_fit_a_24gb_card():
    r = run_cli("estimate", "--params", "1.5e9", "--optimizer", "adamw", "--precision",
                "bf16-mixed", "--gpu", "4090")
    assert r.returncode == 0
    states = [ln for ln in r.stdout.splitlines() if ln.strip().startswith("states")][0]
    assert "24.00 GB" in states and "22.35 GiB" in states   # 24e9 bytes in both units
    assert "verdict: does not fit" in r.stdout


def test_gpu_memory_and_measured_efficiency():
    d = _json("--gpu-memory", "80GiB", "--t1", "2.0", "--tk", "3.2", "--k", "8")
    job = d["jobs"][0]
    assert job["ledger"]["capacity_bytes"] == 80 * 2**30
    assert job["walls"]["measured_efficiency"] == 0.078125
    assert job["facts"]["gpu"]["value"] == "custom"


@pytest.mark.parametrize("args,needle", [
    (("--zero", "4"), "--zero"),
    (("--world-size", "0"), "--world-size"),
    (("--params", "-1"), "--params"),
    (("--gpu", "T4"), "H100-SXM5-80GB"),          # the error lists the known GPUs
    (("--gpu-memory", "80G"), "GiB"),
    (("--precision", "bf17"), "bf16-mixed"),
])
def test_bad_flags_are_one_line_exit_2(args, needle):
    r = run_cli("estimate", "--params", "7e9", *args)
    assert r.returncode == 2
    assert "Traceback" not in r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: ")
    assert needle in lines[0]
    assert r.stdout == ""


def test_model_name_selects_the_llama_activation_model():
    d = _json("--model", "meta-llama/Llama-2-7b-hf", "--params", "6738415616", "--layers", "32",
              "--hidden", "4096", "--heads", "32", "--ffn-hidden", "11008", "--vocab", "32000",
              "--micro-batch", "1", "--seq-len", "4096", "--attention", "sdpa")
    job = d["jobs"][0]
    assert job["facts"]["model"]["value"] == "meta-llama/Llama-2-7b-hf"
    layers = [ln for ln in job["ledger"]["lines"] if "layers' saved" in ln["label"]][0]
    assert "llama block" in layers["label"]
    # 20h + 4hk + 8f + 4a + 8 bytes per token per layer (hk = h without GQA)
    per_token = 20 * 4096 + 4 * 4096 + 8 * 11008 + 4 * 32 + 8
    assert layers["bytes"] == 32 * 4096 * per_token


def test_docs_show_the_real_output():
    """docs/estimate.md quotes the command's actual output (kept in step by this test)."""
    import os

    from tests.conftest import ROOT

    args = ("estimate --params 7e9 --optimizer adamw --precision bf16-mixed --world-size 8 "
            "--zero 3 --micro-batch 4 --seq-len 2048 --layers 32 --hidden 4096 --heads 32 "
            "--vocab 32000 --gpu H100-80GB").split()
    r = run_cli(*args)
    with open(os.path.join(ROOT, "docs", "estimate.md"), encoding="utf-8") as f:
        doc = f.read()
    assert r.stdout.rstrip() in doc


def test_files_and_flags_are_one_job_in_one_pass():
    r = run_cli("estimate", "examples/7b-full-finetune-ddp/train.py",
                "examples/7b-full-finetune-ddp/launch.sh", "--zero", "3")
    assert r.returncode == 0, r.stderr
    assert "per-GPU memory ledger — H100-SXM5-80GB" in r.stdout      # the example's own GPU
    assert "/ 8 (ZeRO-3)" in r.stdout
    assert "under DDP" not in r.stderr and "PF101" not in r.stderr
    assert "PF112" in r.stderr                                       # the ZeRO-3 job's finding
