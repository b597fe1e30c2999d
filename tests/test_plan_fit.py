"""The planner's choices: sharding for case A, an activation remedy for case B, model
parallelism only when nothing else fits; every alternative a re-estimate that fits and
keeps the global batch."""

import os

import pytest

from preflight import pipeline
from preflight.physics import estimate
from preflight.options import CheckOptions
from preflight.plan import TrainingPlan
from preflight.plan_fit import changed_plan, global_batch, plan_fit
from tests.conftest import ROOT, run_cli

EXAMPLES = os.path.join(ROOT, "examples")
CASE_B = {"micro_batch", "checkpointing", "attention"}


def _fit(name):
    report = pipeline.run([os.path.join(EXAMPLES, name)], CheckOptions(fixes=False))
    (jr,) = [j for j in report.jobs if j.estimate is not None and j.estimate.ledger.lines]
    return jr, plan_fit(jr.job.plan, jr.hardware, jr.estimate.ledger.headroom)


def test_case_a_7b_ddp_is_fixed_by_sharding():
    jr, fit = _fit("7b-full-finetune-ddp")
    assert fit.baseline.verdict == "does not fit"
    assert fit.first.knobs[0] == "sharding"
    assert fit.first.facts["fsdp"] in ("shard_grad_op", "full_shard")
    assert all("model_parallel" not in a.knobs for a in fit.alternatives)


def test_case_b_long_context_is_fixed_by_an_activation_remedy():
    jr, fit = _fit("long-context-1.3b")
    assert fit.baseline.verdict == "does not fit"
    assert set(fit.first.knobs) <= CASE_B
    # checkpointing or attention, not the micro-batch: they shrink what overflows
    assert {"checkpointing", "attention"} & set(fit.first.knobs)
    assert fit.first.facts == {"activation_checkpointing": "full"}
    assert all("sharding" not in a.knobs and "model_parallel" not in a.knobs
               for a in fit.alternatives)
    assert any("checkpointing" in a.knobs for a in fit.alternatives)


def _logits_plan():
    """ZeRO-3 and full checkpointing already: a 256k vocabulary's logits overflow."""
    return TrainingPlan.from_values(dict(
        params=2_000_000_000, layers=18, hidden=2048, heads=8, ffn_hidden=16384,
        vocab=256000, optimizer="adamw", param_dtype="bf16", mixed_precision="bf16",
        micro_batch=8, seq_len=8192, grad_accum=1, world_size=8, zero_stage=3,
        activation_checkpointing="full", attention="sdpa"))


def test_the_diagnosis_names_what_overflows():
    _, a = _fit("7b-full-finetune-ddp")
    assert a.diagnosis.cause == "states" and a.diagnosis.states > a.diagnosis.limit
    assert a.to_json()["baseline"]["overflows"] == "states"
    _, b = _fit("long-context-1.3b")
    d = b.diagnosis
    assert d.cause == "activations" and d.states < d.limit and d.activations > d.logits
    _, c = _fit("small-model-64-gpus")          # fits: a scaling finding, nothing overflows
    assert c.diagnosis.cause is None
    fit = plan_fit(_logits_plan(), "H100-80GB", with_limits=False)
    assert fit.diagnosis.cause == "logits" and fit.diagnosis.logits > fit.diagnosis.activations
    # checkpointing is already full: fewer tokens per micro-batch shrink the logits
    assert fit.first.knobs == ["micro_batch"] and fit.first.facts["micro_batch"] < 8
    assert fit.first.reason.startswith("first: remedies the logits of the loss (case B)")


def test_no_remedy_left_the_micro_batch_spreads_the_activations():
    """Full checkpointing and sdpa already (the ZeRO-3 example at 32k tokens): nothing
    remedies the activations further, a smaller micro-batch spreads them, and it says so."""
    jr, _ = _fit("7b-zero3")
    plan = changed_plan(jr.job.plan, {"seq_len": 32768})
    fit = plan_fit(plan, jr.hardware, 0.2, with_limits=False)
    assert fit.diagnosis.cause == "activations"
    assert any("nothing in the job's settings remedies the saved activations" in n
               for n in fit.notes)
    assert fit.first.knobs == ["micro_batch"] and fit.first.remedy == 1
    assert fit.first.reason.startswith(
        "first: spreads the saved activations (case B) over more micro-batches, 1 change")
    # then only more micro-batches (with another change beside) or more GPUs
    assert fit.alternatives[1:] and all(
        a.tier == 1 or "micro_batch" in a.knobs for a in fit.alternatives[1:])


@pytest.mark.parametrize("name", ["7b-full-finetune-ddp", "long-context-1.3b"])
def test_rank_follows_the_diagnosis_then_the_step_time(name):
    _, fit = _fit(name)
    alts = fit.alternatives
    assert alts and all(a.reason for a in alts)
    keys = [(a.tier, -a.remedy, len(a.changes), a.sized.step_s) for a in alts]
    assert keys == sorted(keys)
    for prev, a in zip(alts, alts[1:]):
        # the reason names the first criterion that puts it below the one above
        if prev.remedy > a.remedy and prev.tier == a.tier:
            assert "treats what overflows less directly" in a.reason
        elif (prev.tier, prev.remedy, len(prev.changes)) == \
                (a.tier, a.remedy, len(a.changes)) and prev.sized.step_s < a.sized.step_s:
            assert "slower step than the ones above" in a.reason


def test_offload_pays_its_pcie_time_in_the_ranking():
    """A 7B DDP job with ZeRO-1 already: the optimizer offload shrinks the states but
    moves gradients and weights over PCIe every step; sharding further does not."""
    plan = TrainingPlan.from_values(dict(
        params=6_738_415_616, layers=32, hidden=4096, heads=32, ffn_hidden=11008,
        vocab=32000, model="meta-llama/Llama-2-7b-hf", optimizer="adamw",
        param_dtype="bf16", mixed_precision="bf16", micro_batch=1, seq_len=2048,
        grad_accum=4, world_size=8, zero_stage=1, activation_checkpointing="full"))
    fit = plan_fit(plan, "A100-40GB", with_limits=False)
    off = [a for a in fit.alternatives if a.knobs == ["offload"]]
    shard = [a for a in fit.alternatives if a.knobs == ["sharding"]]
    assert off and shard
    for a in off:
        line = [ln for ln in a.sized.estimate.walls.lines
                if ln.label.startswith("CPU offload over PCIe")]
        assert line and "31 GB/s" in line[0].formula
        assert a.sized.step_s > min(s.sized.step_s for s in shard)
    assert fit.alternatives.index(off[0]) > fit.alternatives.index(shard[0])


def test_a_job_that_fits_gets_no_alternatives_but_its_limits():
    jr, fit = _fit("7b-zero3")
    assert fit.baseline.verdict == "fits" and not fit.alternatives and not fit.needed
    lim = {x.name: x for x in fit.limits}
    assert lim["largest_micro_batch"].value >= 4
    assert lim["longest_seq_len"].value >= 2048
    assert lim["fewest_gpus"].value is not None and lim["fewest_gpus"].value <= 8


@pytest.mark.parametrize("name", ["7b-full-finetune-ddp", "long-context-1.3b",
                                  "small-model-64-gpus"])
def test_every_alternative_is_the_estimator_on_the_changed_plan(name):
    jr, fit = _fit(name)
    assert fit.alternatives
    gb = global_batch(jr.job.plan)
    for a in fit.alternatives:
        plan = changed_plan(jr.job.plan, a.facts)
        est = estimate(plan, jr.hardware, jr.estimate.ledger.headroom)
        assert est.ledger.peak == a.sized.peak
        assert est.ledger.verdict() == "fits"
        assert global_batch(plan) == gb
        assert a.sized.step_s == est.walls.step_s
        assert a.reason


def test_scaling_finding_is_fixed_with_fewer_gpus_and_the_same_batch():
    jr, fit = _fit("small-model-64-gpus")
    assert fit.baseline.guards == ("PF301",)
    assert fit.first.knobs == ["fewer_gpus"]
    assert fit.first.sized.guards == ()
    assert fit.first.sized.efficiency > jr.estimate.walls.efficiency


def _long_70b(seq):
    return TrainingPlan.from_values(dict(
        model="meta-llama/Llama-2-70b-hf", params=69_000_000_000, layers=80, hidden=8192,
        heads=64, kv_heads=8, ffn_hidden=28672, vocab=32000, optimizer="adamw",
        param_dtype="bf16", mixed_precision="bf16", micro_batch=1, seq_len=seq, grad_accum=8,
        world_size=64, nodes=8, gpus_per_node=8, zero_stage=3,
        activation_checkpointing="full", attention="flash"))


def test_model_parallelism_only_when_no_sharding_fits():
    fit = plan_fit(_long_70b(40960), "H100-80GB")
    assert fit.baseline.verdict == "does not fit"
    assert fit.alternatives
    assert all("model_parallel" in a.knobs for a in fit.alternatives)
    assert any("model parallelism searched" in n for n in fit.notes)
    # tensor parallel stays inside a node (PF302) and the batch is kept
    for a in fit.alternatives:
        assert a.facts.get("tp", 1) <= 8 and not a.sized.guards
        assert a.sized.global_batch == fit.baseline.global_batch


def test_unsized_job_is_said_not_guessed():
    fit = plan_fit(TrainingPlan.from_values({"optimizer": "adamw", "world_size": 8}),
                   "H100-80GB")
    assert not fit.alternatives
    assert any("not sized" in n for n in fit.notes)
    # known lines alone over capacity, the sequence length unknown: not sized either
    fit = plan_fit(TrainingPlan.from_values({
        "model": "meta-llama/Llama-2-7b-hf", "params": 6_738_415_616, "layers": 32,
        "hidden": 4096, "heads": 32, "ffn_hidden": 11008, "vocab": 32000,
        "optimizer": "adamw", "micro_batch": 1, "world_size": 8}), "H100-80GB")
    assert fit.baseline.verdict == "does not fit" and fit.baseline.peak is None
    assert not fit.alternatives and "missing: seq_len" in fit.notes[0]
    fit = plan_fit(TrainingPlan.from_values({"params": 7_000_000_000}), None)
    assert not fit.alternatives and "no GPU given" in fit.notes[0]


def test_estimate_fit_table_and_json():
    args = ["estimate", "--model", "meta-llama/Llama-2-7b-hf", "--optimizer", "adamw",
            "--precision", "bf16-mixed", "--world-size", "8", "--micro-batch", "4",
            "--seq-len", "2048", "--gpu", "H100-80GB", "--fit"]
    r = run_cli(*args)
    assert r.returncode == 1, r.stderr        # the job as written does not fit
    table = r.stdout[r.stdout.index("what would fit"):]
    assert "change" in table and "% cap" in table and "efficiency" in table
    first = [ln for ln in table.splitlines() if ln.strip().startswith("→")][0]
    assert first.split()[1] == "FSDP" and "%" in first      # sharding first (case A)
    assert "largest micro-batch that fits" in table and "fewest GPUs that fit" in table \
        and "longest sequence that fits" in table
    import json
    r = run_cli(*args, "--format", "json")
    fit = json.loads(r.stdout)["jobs"][0]["fit"]
    assert fit["alternatives"][0]["knobs"][0] == "sharding"
    assert fit["alternatives"][0]["verdict"] == "fits"
    assert set(fit["limits"]) == {"largest_micro_batch", "fewest_gpus", "longest_seq_len"}


def test_check_suggest_marks_the_first(tmp_path):
    import shutil
    d = tmp_path / "job"
    shutil.copytree(os.path.join(EXAMPLES, "long-context-1.3b"), d)
    r = run_cli("check", "--suggest", ".", cwd=str(d))
    assert r.returncode == 1
    out = r.stdout[r.stdout.index("what would fit"):]
    first = [ln for ln in out.splitlines() if ln.strip().startswith("→ ")][0]
    assert "full activation checkpointing" in first
    assert "as written" in out and "micro-batch 1 × 4" in out
    # the reason of every row: the first remedies the activations, the micro-batch spreads them
    assert "→ first: remedies the saved activations (case B), 1 change — the states fit" in out
    assert ("2 spreads the saved activations (case B) over more micro-batches, 1 change; "
            "treats what overflows less directly than the ones above") in out
