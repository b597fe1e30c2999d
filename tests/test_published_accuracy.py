"""bench/published_accuracy.py on a synthetic fixture set: a real subprocess run of the
benchmark, checked against the CLI's own tiers for the same flags."""

import json
import os
import subprocess
import sys

import yaml

from tests.conftest import ROOT, run_cli

FIXTURES = os.path.join(ROOT, "tests", "fixtures", "published")
GPT2 = ("--model", "gpt2", "--precision", "fp32", "--optimizer", "adamw", "--checkpointing",
        "none", "--micro-batch", "4", "--seq-len", "512", "--world-size", "1")


def _tiers(*flags):
    r = run_cli("estimate", *flags, "--format", "json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)["jobs"][0]["ledger"]["tiers"]


def test_the_benchmark_sizes_each_row_in_its_tier(tmp_path):
    out = str(tmp_path / "pa")
    p = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "published_accuracy.py"),
                        "--rows", FIXTURES, "--out", out, "--peers",
                        os.path.join(FIXTURES, "peers.py")],
                       capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert p.returncode == 0, p.stderr
    got = json.load(open(out + ".json"))
    rows = {r["id"]: r for r in got["rows"]}
    h100 = _tiers(*GPT2, "--gpu", "H100-80GB")
    nogpu = _tiers(*GPT2)
    a, r, s = rows["fx-gpt2-allocated"], rows["fx-gpt2-reserved"], rows["fx-gpt2-nvidia-smi-under"]
    assert (a["tier"], a["predicted_bytes"], a["measured_bytes"]) == ("tensors", h100["tensors"],
                                                                     3000 * 2**20)
    assert (r["tier"], r["predicted_bytes"], r["measured_bytes"]) == ("reserved", h100["reserved"],
                                                                     4 * 10**9)
    # a card the catalogue lacks: sized without it, and said
    assert (s["tier"], s["predicted_bytes"]) == ("process", nogpu["process"])
    assert "not in the catalogue" in s["gpu_note"]
    for row in (a, r, s):
        assert row["error_pct"] == 100 * (row["predicted_bytes"] - row["measured_bytes"]) \
            / row["measured_bytes"]
    reasons = {n["id"]: n["reason"] for n in got["summary"]["not_sized"]}
    assert set(reasons) == {"fx-compiled", "fx-unknown-model", "fx-bad-unit"}
    assert "torch.compile" in reasons["fx-compiled"]
    assert "does not resolve to a known model" in reasons["fx-unknown-model"]
    assert "unit 'KB'" in reasons["fx-bad-unit"]
    summ = got["summary"]
    # a figure that spans a checkpoint save is sized and kept, but not in the targets
    w = rows["fx-gpt2-run-with-save"]
    assert (w["scope"], w["predicted_bytes"], w["measured_bytes"]) == (
        "run-with-save", h100["tensors"], 6000 * 2**20)
    assert all(row["scope"] == "step" for row in (a, r, s))
    assert summ["scopes"] == {"step": 6, "run-with-load": 0, "run-with-save": 1,
                              "whole-process": 0}
    assert summ["other_scopes"] == [{"id": "fx-gpt2-run-with-save", "scope": "run-with-save",
                                     "tier": "tensors", "error_pct": w["error_pct"],
                                     "why": "invented: the peak is taken while a full state "
                                            "dict is gathered for saving"}]
    assert (summ["rows"], summ["step_rows"], summ["sized"]) == (7, 6, 3)
    errs = sorted(abs(x["error_pct"]) for x in (a, r, s))
    assert summ["overall"] == {"n": 3, "median_abs_pct": errs[1], "max_abs_pct": errs[2]}
    assert set(summ["per_tier"]) == {"tensors", "reserved", "process"}
    assert summ["per_source"]["fixture"]["n"] == 3
    # 9 GiB is above this small job's process tier: the one under-estimate counted
    assert s["error_pct"] < -5 and summ["under_beyond_5pct"] == ["fx-gpt2-nvidia-smi-under"]
    # the peer's column: half of 3000 MiB on the one row it sizes, its reason elsewhere
    assert a["peers"]["half"] == {"bytes": 1500 * 2**20, "reason": "", "error_pct": -50.0}
    assert r["peers"]["half"]["bytes"] is None
    assert summ["peers"]["half"]["n"] == 1
    assert summ["peers"]["half"]["preflight_same_rows"]["n"] == 1
    md = open(out + ".md").read()
    assert f"| fx-gpt2-allocated | fixture | allocated | tensors | 3.15 | " \
           f"{h100['tensors'] / 1e9:.2f} | {a['error_pct']:+.1f} % | 1.57 (-50.0 %) |" in md
    assert "- fx-compiled: torch.compile" in md
    assert "1: fx-gpt2-nvidia-smi-under" in md
    assert f"| {w['error_pct']:+.1f} % (run-with-save) |" in md
    assert f"- fx-gpt2-run-with-save (run-with-save, tensors): {w['error_pct']:+.1f} %; " \
           "invented: the peak" in md


def _bench():
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        "published_accuracy", os.path.join(ROOT, "bench", "published_accuracy.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_rows_become_flags_as_their_framework_means_them():
    pa = _bench()
    cfg = {"torch_version": {"value": None, "how": "unknown; nvidia-smi shows CUDA 11.2"}}
    assert pa.module_loading(cfg) == "eager"
    assert pa.module_loading({"torch_version": {"value": "1.12.1"}}) == "eager"
    assert pa.module_loading({"torch_version": {"value": "2.13.0+cu130"}}) == "lazy"
    assert pa.module_loading({}, {"torch_version": "not stated; nvidia-smi shows CUDA 11.2"}) \
        == "eager"                                         # said once for the whole source
    row = {"measured": "allocated", "config": {
        "model": {"value": "gpt2"}, "precision": {"value": "bf16-mixed"},
        "framework": {"value": "litgpt"}, "loss_kernel": {"value": "chunked"},
        "grad_ckpt": {"value": True}, "micro_batch": {"value": 2}}}
    flags = pa.row_flags(row)
    assert flags[flags.index("--precision") + 1] == "bf16-autocast"    # Lightning's autocast
    assert flags[flags.index("--loss-kernel") + 1] == "chunked"
    assert flags[flags.index("--checkpointing") + 1] == "full"
    row["config"]["framework"] = {"value": "deepspeed"}
    del row["config"]["loss_kernel"]                     # litgpt's chunked loss only
    assert pa.row_flags(row)[pa.row_flags(row).index("--precision") + 1] == "bf16-mixed"
    row["config"]["grad_ckpt"] = {"value": "selective-op"}          # torchtitan's 'op'
    flags = pa.row_flags(row)
    assert flags[flags.index("--checkpointing") + 1] == "selective_op"
    row["config"]["compile"] = {"value": True}
    try:
        pa.row_flags(row)
        raise AssertionError("a torch.compile row was sized")
    except pa.NotSized as e:
        assert "torch.compile" in str(e)
    row["config"]["grad_ckpt"] = {"value": "selective-layer"}
    try:
        pa.row_flags(row)
        raise AssertionError("an unknown checkpointing row was sized")
    except pa.NotSized as e:
        assert "selective-layer" in str(e)


def test_a_lora_row_passes_its_lora_dropout():
    """A LoRA row's `lora_dropout` becomes `--lora-dropout`; a full fine-tune's does not."""
    pa = _bench()
    row = {"measured": "allocated", "config": {
        "model": {"value": "gpt2"}, "precision": {"value": "bf16"}, "method": {"value": "lora"},
        "lora_r": {"value": 8}, "lora_dropout": {"value": 0.05}, "micro_batch": {"value": 1}}}
    flags = pa.row_flags(row)
    assert flags[flags.index("--lora-dropout") + 1] == "0.05"
    row["config"]["method"] = {"value": "full"}
    assert "--lora-dropout" not in pa.row_flags(row)


def test_a_lora_row_passes_its_adapters_dtype():
    """A LoRA row's `lora_adapter_dtype` becomes `--lora-adapter-dtype`; the peft method
    comparison's LoRA rows record fp32 (autocast_adapter_dtype true)."""
    pa = _bench()
    row = {"measured": "allocated", "config": {
        "model": {"value": "gpt2"}, "precision": {"value": "bf16"}, "method": {"value": "lora"},
        "lora_r": {"value": 8}, "lora_adapter_dtype": {"value": "fp32"}}}
    flags = pa.row_flags(row)
    assert flags[flags.index("--lora-adapter-dtype") + 1] == "fp32"
    row["config"]["method"] = {"value": "full"}
    assert "--lora-adapter-dtype" not in pa.row_flags(row)
    rows = yaml.safe_load(open(os.path.join(ROOT, "bench", "published",
                                            "peft-method-comparison.yaml")))["rows"]
    assert sorted(r["id"] for r in rows if "lora_adapter_dtype" in r["config"]) == [
        "peft-mc-llama-3.2-3b-dora-r32", "peft-mc-llama-3.2-3b-lora-r10-mlp",
        "peft-mc-llama-3.2-3b-lora-r32", "peft-mc-llama-3.2-3b-lora-r64",
        "peft-mc-llama-3.2-3b-lora-r64-rslora"]
