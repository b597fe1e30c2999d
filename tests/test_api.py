"""The Python API: `preflight.check` and `preflight.estimate`, and the CLI as a thin layer
over them (the same JSON for the same job)."""

import json
import os
import subprocess
import sys
import zipfile

import pytest

import preflight
from preflight.hardware import UnknownGPU
from tests.conftest import ROOT, run_cli

FULL = "examples/7b-full-finetune-ddp"
ZERO3 = "examples/7b-zero3"


@pytest.fixture
def at_root(monkeypatch):
    monkeypatch.chdir(ROOT)


def test_check_a_fixed_job_fits(at_root):
    r = preflight.check([ZERO3])
    assert isinstance(r, preflight.Report)
    job = r.jobs[0]
    assert job.fits is True
    assert r.all_diagnostics() == []
    assert job.estimate.verdict == "fits"
    assert job.estimate.peak_bytes <= job.estimate.capacity_bytes


def test_check_a_job_over_capacity(at_root):
    r = preflight.check(FULL)                       # one path, not a list
    job = r.jobs[0]
    assert job.fits is False
    codes = sorted((d.code, os.path.basename(d.path), d.line) for d in r.all_diagnostics())
    assert codes == [("PF101", "train.py", 17), ("PF102", "train.py", 7), ("PF105", "train.py", 16)]
    assert job.job.plan.value("params") == 6_738_415_616


def test_check_serialises_to_the_same_json_as_the_command(at_root):
    r = preflight.check([FULL])
    cp = run_cli("check", "--format", "json", FULL)
    assert json.loads(cp.stdout) == json.loads(json.dumps(r.to_json()))


def test_check_options_reach_the_pipeline(at_root):
    r = preflight.check([ZERO3], gpu="A100-40GB")
    assert r.jobs[0].gpu.startswith("A100")
    assert r.jobs[0].estimate.capacity_bytes == 40960 * 2**20
    r = preflight.check([FULL], select=["PF101"])
    assert [d.code for d in r.all_diagnostics()] == ["PF101"]
    r = preflight.check([FULL], ignore="PF1")
    assert r.all_diagnostics() == []
    r = preflight.check([ZERO3], gpu_memory="8GiB")
    assert r.jobs[0].estimate.capacity_bytes == 8 * 2**30 and r.jobs[0].fits is False


def test_check_bad_arguments_raise_bad_files_are_findings(tmp_path):
    with pytest.raises(UnknownGPU, match="Z900"):
        preflight.check([str(tmp_path)], gpu="Z900")
    with pytest.raises(ValueError, match="headroom"):
        preflight.check([str(tmp_path)], headroom=1.5)
    bad = tmp_path / "train.py"
    bad.write_text("import torch\ndef main(:\n")
    r = preflight.check([str(bad)])
    assert [(d.code, d.line) for d in r.all_diagnostics()] == [("PF002", 2)]
    assert r.jobs[0].fits is None                   # not analysed: unknown, never a pass


def test_estimate_ledger_lines_carry_their_formulas():
    est = preflight.estimate(params=7e9, optimizer="adamw", precision="bf16-mixed",
                             world_size=8, zero_stage=3, gpu="H100-80GB")
    by = {ln.key: ln for ln in est.lines if ln.key in ("params", "grads", "master")}
    assert by["params"].bytes == 2 * 7_000_000_000 // 8
    assert by["params"].formula == "2 B × 7,000,000,000 / 8 (ZeRO-3)"
    assert by["master"].bytes == 4 * 7_000_000_000 // 8
    opt = [ln for ln in est.lines if ln.key == "optimizer"]
    assert opt[0].bytes == 8 * 7_000_000_000 // 8
    # micro_batch, seq_len and the shape are missing: unknown, never guessed
    assert est.peak_bytes is None and est.fits is None
    assert {"micro_batch", "seq_len"} <= set(est.unknown)


def test_estimate_equals_the_command_line():
    flags = dict(params="7e9", optimizer="adamw", precision="bf16-mixed", world_size="8",
                 micro_batch="1", seq_len="4096", layers="32", hidden="4096", heads="32",
                 vocab="32000", gpu="H100-80GB")
    argv = ["estimate", "--format", "json", "--zero", "3"]
    for k, v in flags.items():
        argv += [f"--{k.replace('_', '-')}", v]
    cli = json.loads(run_cli(*argv).stdout)["jobs"][0]
    est = preflight.estimate(zero_stage=3, **flags)
    got = json.loads(json.dumps(est.to_json()))
    assert got["ledger"] == cli["ledger"] and got["walls"] == cli["walls"]
    assert est.fits is True
    # the peak is the busiest phase of the step (the process tier), never more than every
    # line added up
    assert est.peak_bytes == est.ledger.peak
    assert est.peak_bytes <= sum(ln.bytes for ln in est.lines if not ln.margin)
    assert got["ledger"]["peak_bytes"] == est.peak_bytes


def test_estimate_from_a_checked_plan_with_a_change(at_root):
    plan = preflight.check([FULL]).jobs[0].job.plan
    before = preflight.estimate(plan, gpu="H100-80GB")
    after = preflight.estimate(plan, gpu="H100-80GB", zero_stage=3)
    assert before.fits is False
    assert after.ledger.states_bytes < before.ledger.states_bytes
    assert plan.value("zero_stage") in (None, 0)    # the checked plan is not changed


def test_estimate_refuses_bad_values():
    with pytest.raises(ValueError, match="optimizer"):
        preflight.estimate(params=1e9, optimizer="adamz")
    with pytest.raises(ValueError, match="micro_batch"):
        preflight.estimate(params=1e9, micro_batch=0)
    with pytest.raises(ValueError, match="unknown fact 'batch'"):
        preflight.estimate(params=1e9, batch=4)
    with pytest.raises(ValueError, match="precision"):
        preflight.estimate(params=1e9, precision="bf17")


_7B_DDP = dict(model="meta-llama/Llama-2-7b-hf", params=6_738_415_616, layers=32, hidden=4096,
               heads=32, ffn_hidden=11008, vocab=32000, optimizer="adamw",
               precision="bf16-mixed", world_size=8, micro_batch=4, seq_len=2048,
               gpu="H100-80GB")


def test_suggest_ranks_what_would_fit():
    from preflight.physics import estimate as physics_estimate
    from preflight.plan_fit import changed_plan, global_batch

    est = preflight.estimate(**_7B_DDP)
    assert est.fits is False
    alts = est.suggest()
    assert alts and len(alts) <= 5
    first = alts[0]
    assert first.knobs[0] == "sharding" and first.facts["fsdp"] in ("full_shard",
                                                                    "shard_grad_op")
    assert first.reason.startswith("first: remedies the model states (case A)")
    base = est._basis["plan"]
    for a in alts:
        plan = changed_plan(base, a.facts)
        again = physics_estimate(plan, est._basis["gpu"], 0.2)
        assert again.ledger.peak == a.sized.peak and again.ledger.verdict() == "fits"
        assert global_batch(plan) == global_batch(base)
        assert a.reason
    assert len(est.suggest(limit=2)) == 2


def test_suggest_is_empty_for_a_job_that_fits_or_has_no_gpu():
    assert preflight.estimate(**(_7B_DDP | {"zero_stage": 3, "micro_batch": 1})).suggest() == []
    assert preflight.estimate(**{k: v for k, v in _7B_DDP.items() if k != "gpu"}).suggest() == []
    from preflight.api import Estimate
    from preflight.physics.result import Ledger, Walls
    with pytest.raises(ValueError, match="not made by"):
        Estimate(ledger=Ledger(), walls=Walls()).suggest()


def test_import_preflight_is_cheap_and_static():
    code = ("import sys, preflight; r = preflight.check(['examples/7b-zero3']); "
            "print(r.jobs[0].fits, 'torch' in sys.modules, 'transformers' in sys.modules)")
    cp = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                        timeout=120)
    assert cp.stdout.split() == ["True", "False", "False"], cp.stderr


def test_the_wheel_is_named_preflight_lint_and_typed(tmp_path):
    cp = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                         "-q", "-w", str(tmp_path), ROOT], capture_output=True, text=True,
                        timeout=300)
    assert cp.returncode == 0, cp.stderr
    (whl,) = [p for p in os.listdir(tmp_path) if p.endswith(".whl")]
    assert whl.startswith("preflight_lint-0.1.0-")
    with zipfile.ZipFile(tmp_path / whl) as z:
        names = set(z.namelist())
        meta = z.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
        entry = z.read(next(n for n in names if n.endswith("entry_points.txt"))).decode()
    assert "Name: preflight-lint" in meta
    assert "Project-URL: Homepage, https://pypi.org/project/preflight-lint/" in meta
    assert "Classifier: Typing :: Typed" in meta
    assert "preflight = preflight.cli:main" in entry
    for f in ("preflight/py.typed", "preflight/api.py", "preflight/rules/pf101_state_exceeds_capacity.py",
              "preflight/report/junit.py"):
        assert f in names


def test_a_checkout_finds_its_rules_without_an_install():
    # `-S`: no site-packages, so no editable-install finder: the source tree alone (as when a
    # checkout shadows a `pip install .` copy) must still find preflight.rules in rules/
    code = ("import pkgutil, preflight.rules as r; "
            "print(sum(1 for m in pkgutil.iter_modules(r.__path__) if m.name.startswith('pf')))")
    cp = subprocess.run([sys.executable, "-S", "-c", code], cwd=ROOT, capture_output=True,
                        text=True, timeout=60)
    assert cp.returncode == 0, cp.stderr
    assert int(cp.stdout) == len([f for f in os.listdir(os.path.join(ROOT, "rules"))
                                  if f.startswith("pf") and f.endswith(".py")])
