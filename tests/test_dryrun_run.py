"""`preflight dryrun` on CPU with real torch: exact ledger items, the one-step stop,
OOM phase classification, timeouts and process cleanup, torchrun ranks, fake mode."""
import json
import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT, run_cli

pytest.importorskip("torch")

FIX = os.path.join(ROOT, "tests", "fixtures", "dryrun")


def dryrun_json(*args, timeout_s=None):
    extra = ["--timeout", str(timeout_s)] if timeout_s else []
    cp = run_cli("dryrun", "--format", "json", *extra, *args)
    try:
        return cp, json.loads(cp.stdout)
    except json.JSONDecodeError:
        raise AssertionError(f"no JSON; rc={cp.returncode}\n{cp.stdout}\n{cp.stderr}")


def linear_params(*shapes):
    """Element count of nn.Linear layers with bias, from (in, out) pairs."""
    return sum(i * o + o for i, o in shapes)


def test_exact_states_and_one_step_with_except_exception(tmp_path):
    log = tmp_path / "steps.log"
    cp, d = dryrun_json("--device", "cpu", os.path.join(FIX, "mlp_adamw.py"), "--",
                        "--accum", "2", "--batch", "8", "--log", str(log))
    assert cp.returncode == 0, cp.stderr
    assert d["status"] == "ok"
    r, = d["ranks"]
    n = linear_params((64, 128), (128, 10))
    assert r["param_count"] == n == 9610
    assert r["params"] == 4 * n
    assert r["grads"] == 4 * n
    # AdamW: exp_avg + exp_avg_sq in fp32, plus one 4-byte fp32 `step` tensor per parameter
    assert r["optimizer"] == 8 * n + 4 * 4
    assert r["master"] == 0
    # saved for backward per micro-step: Linear1 input (8×64) and the ReLU output that
    # Linear2 also saves (8×128, the same storage, counted once), fp32
    assert r["activations_per_forward"] == [4 * 8 * 64 + 4 * 8 * 128] * 2
    assert r["forwards"] == 2
    # the loss, outside the model: pow(2) keeps the fp32 model output (8×10)
    assert r["loss_activations"] == 4 * 8 * 10
    assert r["optimizers"] == ["AdamW"]
    assert [m["phase"] for m in r["memory"]] == [
        "model_init", "optimizer_init", "forward", "backward", "step"]
    # exactly one step: the script logs before each step and would run 50 of them
    assert log.read_text() == "step 0\n"
    assert "finished all steps" not in cp.stdout


def test_one_step_with_bare_except_sgd_momentum(tmp_path):
    log = tmp_path / "steps.log"
    cp, d = dryrun_json("--device", "cpu", os.path.join(FIX, "bare_except.py"), "--", str(log))
    assert d["status"] == "ok", d
    r, = d["ranks"]
    n = linear_params((32, 32), (32, 4))
    assert (r["params"], r["grads"], r["optimizer"]) == (4 * n, 4 * n, 4 * n)  # momentum buffer
    assert log.read_text() == "step 0\n"


@pytest.mark.parametrize("where,case", [("load", "A"), ("forward", "B"), ("backward", "B"),
                                        ("step", "A")])
def test_oom_reported_as_case(where, case):
    cp, d = dryrun_json("--device", "cpu", os.path.join(FIX, "oom.py"), "--", where)
    assert cp.returncode == 1
    assert d["status"] == "oom"
    assert d["ranks"][0]["phase"] == where
    assert d["oom_case"] == case


def test_no_step_is_reported():
    cp, d = dryrun_json("--device", "cpu", os.path.join(FIX, "no_step.py"))
    assert cp.returncode == 1
    assert d["status"] == "no_step"
    assert d["ranks"][0]["forwards"] == 0      # no_grad forwards do not count


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"   # a zombie is not running
    except FileNotFoundError:
        return False


def test_timeout_ends_hang_and_leaves_no_process(tmp_path):
    pids = tmp_path / "pids"
    cp, d = dryrun_json("--device", "cpu", os.path.join(FIX, "hang.py"), "--", str(pids),
                        timeout_s=8)
    assert cp.returncode == 1
    assert d["status"] == "timeout"
    assert d["wall_s"] < 12
    script_pid, helper_pid = map(int, pids.read_text().split())
    assert not _alive(script_pid)
    assert not _alive(helper_pid)


def test_torchrun_two_ranks_ddp_vs_fsdp2_halves():
    n = linear_params((64, 256), (256, 256), (256, 16))
    got = {}
    for mode in ("ddp", "fsdp2"):
        cp, d = dryrun_json("--device", "cpu", "--nproc-per-node", "2",
                            os.path.join(FIX, "dist_train.py"), "--", mode)
        assert d["status"] == "ok", (d["message"], d["stderr_tail"])
        assert [r["rank"] for r in d["ranks"]] == [0, 1]
        assert all(r["world_size"] == 2 for r in d["ranks"])
        got[mode] = d["ranks"]
    for r in got["ddp"]:
        assert (r["params"], r["grads"]) == (4 * n, 4 * n)
        assert r["optimizer"] == 8 * n + 6 * 4
    for r, full in zip(got["fsdp2"], got["ddp"]):
        # every dimension 0 is even: FSDP2 gives each rank exactly half of each tensor
        assert r["param_count"] == n // 2
        assert r["params"] == full["params"] // 2
        assert r["grads"] == full["grads"] // 2
        assert r["optimizer"] == 8 * n // 2 + 6 * 4        # `step` scalars are not sharded
        assert r["activations"] == full["activations"]      # activations are not sharded


def test_fake_mode_7b_fast_and_small():
    cp, d = dryrun_json("--device", "fake", os.path.join(FIX, "llama7b.py"))
    assert d["status"] == "ok", (d["message"], d["stderr_tail"])
    assert d["estimate"] is True
    r, = d["ranks"]
    L, h, ffn, V = 32, 4096, 11008, 32000
    n = 2 * V * h + L * (2 * h + 4 * h * h + 3 * h * ffn) + h
    assert r["param_count"] == n == 6_738_415_616
    assert r["params"] == r["grads"] == 4 * n
    assert r["optimizer"] == 8 * n + 4 * (L * 7 + 3)
    # under bf16 autocast every Linear weight (not the embedding) is copied to bf16
    assert r["autocast_copies"] == 2 * (n - V * h - L * 2 * h - h)
    assert r["wall_s"] < 60
    assert r["max_rss"] < 2e9
    assert any("an estimate" in n for n in r["notes"])


def test_static_import_does_not_load_torch():
    code = ("import sys, preflight.cli, preflight.dryrun; "
            "assert 'torch' not in sys.modules, 'torch imported'")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_missing_torch_says_install_extra():
    code = ("import importlib.util as u; f = u.find_spec; "
            "u.find_spec = lambda n, *a, **k: None if n == 'torch' else f(n, *a, **k); "
            "from preflight.cli import main; main(['dryrun', 'tests/fixtures/dryrun/no_step.py'])")
    cp = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert cp.returncode == 2
    assert "install preflight-lint[dryrun]" in cp.stderr


def test_fake_mode_runs_a_cuda_only_script_exactly():
    cp, d = dryrun_json("--device", "fake", os.path.join(FIX, "cuda_only.py"))
    assert d["status"] == "ok", (d["message"], d["stderr_tail"])
    r, = d["ranks"]
    emb, w1, w2 = 1000 * 256, 256 * 1024, 1024 * 1000
    n = emb + w1 + 1024 + w2 + 1000
    assert r["params"] == 4 * n and r["grads"] == 4 * n
    assert r["optimizer"] == 8 * n + 4 * 5                  # fused AdamW, 5 tensors
    assert r["autocast_copies"] == 2 * (w1 + w2)             # bf16 Linear weights
    tok = 4 * 128
    # token ids (int64), first Linear's bf16 input, GELU input and output (bf16)
    assert r["activations"] == 8 * tok + 2 * tok * 256 + 2 * (2 * tok * 1024)


def test_compiled_model_measured_through_aot_autograd():
    cp, d = dryrun_json("--device", "cpu", os.path.join(FIX, "compiled.py"))
    assert d["status"] == "ok", (d["message"], d["stderr_tail"])
    r, = d["ranks"]
    n = linear_params((32, 64), (64, 8))
    assert r["params"] == r["grads"] == 4 * n
    assert r["forwards"] == 1
    # the compiled graph saves the input (4×32) and the ReLU output (4×64), fp32
    assert r["activations"] == 4 * 4 * 32 + 4 * 4 * 64


def test_usage_errors_and_missing_gpu():
    cp = run_cli("dryrun", "no-such-script.py")
    assert cp.returncode == 2 and "no such script: no-such-script.py" in cp.stderr
    cp, d = dryrun_json("--device", "cuda", os.path.join(FIX, "no_step.py"))
    assert cp.returncode == 1 and d["status"] == "error"
    assert "no CUDA device is available" in d["message"]


def test_a_failing_script_is_reported_with_its_traceback_and_output():
    script = os.path.join(FIX, "shape_error.py")
    cp = run_cli("dryrun", "--device", "cpu", "--no-predict", script)
    assert cp.returncode == 1
    out = cp.stdout
    assert "result: the script failed before its first optimizer step" in out
    assert "RuntimeError" in out
    assert "shape_error.py:16 in <module>: loss = train_step(torch.randn(2, 8))" in out
    assert "shape_error.py:13 in train_step: return model(x).sum()" in out
    assert "  | starting epoch 0" in out
    assert "preflight/dryrun" not in out.split("where it failed")[1].split("last")[0]
    assert "ratio" not in out and "0.000" not in out
