"""The GPU benchmark runs end to end on CPU in --smoke mode, and its training script under
`preflight dryrun` counts checkpointed activations exactly (recompute is not a forward)."""
import json
import subprocess
import sys

import pytest

from tests.conftest import ROOT, run_cli

pytest.importorskip("torch")


def test_checkpointed_llama_counts_block_inputs_once():
    b, s, h, L, V = 2, 32, 64, 2, 1000
    cp = run_cli("dryrun", "--device", "cpu", "--format", "json", "bench/train_lm.py", "--",
                 "--arch", "llama", "--layers", str(L), "--hidden", str(h), "--heads", "4",
                 "--kv-heads", "2", "--vocab", str(V), "--seq", str(s), "--batch", str(b),
                 "--precision", "bf16-mixed", "--ckpt", "full")
    d = json.loads(cp.stdout)
    assert d["status"] == "ok", d["message"]
    r, = d["ranks"]
    assert r["forwards"] == 1            # the recompute in backward is not a micro-step
    tok = b * s
    expected = (8 * tok                  # token ids (int64) saved by the embedding
                + L * 4 * tok * h        # each checkpointed block's fp32 input
                + 4 * tok * h + 4 * tok * h + 4 * tok   # final RMSNorm: input, normed, rstd
                + 2 * tok * h)           # lm_head's bf16 input
    assert r["activations"] == expected
    # autocast's bf16 copy of the lm_head weight (the block weights are cast inside the
    # checkpointed region, out of the saved set)
    assert r["autocast_copies"] == 2 * V * h
    # the loss, outside the model: cross-entropy's fp32 log-softmax over the vocabulary,
    # the int64 targets and the 4-byte total weight
    assert r["loss_activations"] == 4 * tok * V + 8 * tok + 4


def test_gpu_accuracy_smoke_end_to_end(tmp_path):
    cp = subprocess.run([sys.executable, "bench/gpu_accuracy.py", "--smoke", "--only", "2",
                         "--out", str(tmp_path)], cwd=ROOT, capture_output=True, text=True,
                        timeout=120)
    assert cp.returncode == 0, cp.stdout + cp.stderr
    d = json.loads((tmp_path / "gpu_accuracy-smoke.json").read_text())
    row, = d["rows"]
    assert row["status"] == "ok" and row["model"] == "llama-tiny"
    n, meas, pred = row["params"], row["measured"], row["predicted"]
    assert meas["params"] == pred["params"] == 2 * n            # pure bf16
    assert meas["grads"] == pred["grads"] == 2 * n
    # AdamW state: the estimator counts m and v; the run also finds one 4-byte `step`
    # tensor per parameter tensor (2 layers × 9 + embedding, final norm, head = 21)
    assert meas["optimizer"] == pred["optimizer"] + 4 * 21
    # saved activations (forward + loss) against the estimator's non-transient lines
    assert abs(row["activations_error"]) < 0.02
    # no GPU: the process tier's measurement is None with the reason, never a number
    assert (row["process"], row["process_source"], row["process_unavailable"]) == \
        (None, None, "no CUDA device")
    assert all(p["process"] is None and p["process_peak"] is None and p["device_used"] is None
               for p in row["phases"]) and len(row["phases"]) == 5
    assert row["predicted_process"] > row["predicted_reserved"] >= row["predicted_peak"] > 0
    assert "process_error" not in row and "error" not in row
    assert d["summary"]["tiers"]["process"]["compared"] == 0
    env = d["environment"]
    assert env["device"] == "cpu" and env["torch"].startswith("2.13.0") and env["gpu"] is None
    assert set(env) >= {"cuda", "driver", "PYTORCH_CUDA_ALLOC_CONF", "CUBLAS_WORKSPACE_CONFIG"}
    md = (tmp_path / "gpu_accuracy-smoke.md").read_text()
    assert md.startswith("device: cpu")
    assert md.rstrip().endswith("process memory read by: none: no CUDA device")
