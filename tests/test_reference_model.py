"""Preference trainers. A DPO-style trainer's frozen reference model: one more copy of the weights, in their
dtype, sharded only where the model's weights are (ZeRO-3, FSDP full sharding), none with a
PEFT adapter, and unknown — never left out — when the job gives a reference whose size is
not read; and a preference pair's chosen and rejected sequences, scored in one forward."""

from preflight.physics import estimate
from preflight.plan import TrainingPlan

BASE = dict(params=494_032_768, trainable_params=494_032_768, param_dtype="bf16",
            mixed_precision="bf16", optimizer="adamw", micro_batch=2, seq_len=1024,
            layers=24, hidden=896, heads=14, kv_heads=2, ffn_hidden=4864, vocab=151_936,
            gpu="H100-SXM5-80GB")


def _ledger(**kw):
    return estimate(TrainingPlan.from_values({**BASE, **kw})).ledger


def _ref(ledger):
    return [ln for ln in ledger.lines if ln.label.startswith("reference model weights")]


def test_one_copy_of_the_weights_on_one_gpu():
    (ref,) = _ref(_ledger(reference_copies=1))
    assert ref.bytes == 2 * 494_032_768
    assert ref.formula == "1 × 2 B × 494,032,768"
    weights = next(ln for ln in _ledger(reference_copies=1).lines if ln.label.startswith("weights"))
    assert ref.bytes == weights.bytes


def test_zero3_shards_the_reference_and_zero2_keeps_it_whole():
    z3 = _ref(_ledger(reference_copies=1, world_size=8, gpus_per_node=8, zero_stage=3))[0]
    z2 = _ref(_ledger(reference_copies=1, world_size=8, gpus_per_node=8, zero_stage=2))[0]
    assert z3.bytes == 2 * 494_032_768 // 8
    assert z2.bytes == 2 * 494_032_768


def test_the_peak_grows_by_the_copy():
    with_ref = _ledger(reference_copies=1).tensors_peak
    without = _ledger().tensors_peak
    assert with_ref - without == 2 * 494_032_768


def test_a_peft_adapter_is_its_own_reference():
    lora = {"r": 16, "alpha": 32, "targets": ["q_proj", "v_proj"], "base_bits": 16}
    assert _ref(_ledger(reference_copies=1, lora=lora, trainable_params=1_081_344)) == []


def test_a_reference_of_unknown_size_leaves_the_job_unsized():
    plan = TrainingPlan.from_values(BASE)
    from preflight.plan import Fact
    plan.facts["reference_copies"] = Fact.unknown("DPOTrainer(ref_model=…): not sized")
    ledger = estimate(plan).ledger
    (ref,) = _ref(ledger)
    assert ref.bytes is None and "not sized" in ref.note
    assert ledger.peak is None


def test_a_preference_pair_puts_both_sequences_through_the_forward():
    paired = _ledger(sequences_per_sample=2, micro_batch=2)
    four = _ledger(micro_batch=4)
    acts = lambda lg: [(ln.label, ln.bytes) for ln in lg.lines if ln.key == "activations"]
    assert acts(paired) == acts(four)
    assert paired.tensors_peak == four.tensors_peak


def test_a_reference_loaded_in_the_compute_dtype_beside_fp32_weights():
    # LLaMA-Factory's full DPO: fp32 trained weights under bf16 autocast, the reference
    # loaded again in bf16
    lg = _ledger(reference_copies=1, reference_dtype="bf16", param_dtype="fp32")
    (ref,) = _ref(lg)
    assert ref.bytes == 2 * 494_032_768 and ref.formula == "1 × 2 B × 494,032,768"
    assert "bf16" in ref.label
    weights = next(ln for ln in lg.lines if ln.label.startswith("weights"))
    assert weights.bytes == 4 * 494_032_768


def test_the_planner_changes_the_batch_as_written_not_the_forward_rows():
    from preflight.plan_fit import global_batch, plan_fit
    plan = TrainingPlan.from_values(dict(
        params=2_000_000_000, layers=18, hidden=2048, heads=8, ffn_hidden=16384,
        vocab=256000, optimizer="adamw", param_dtype="bf16", mixed_precision="bf16",
        micro_batch=8, seq_len=8192, grad_accum=1, world_size=8, zero_stage=3,
        activation_checkpointing="full", attention="sdpa", sequences_per_sample=2))
    assert global_batch(plan) == 8 * 8                  # pairs, as written, not 16 rows
    fit = plan_fit(plan, "H100-80GB", with_limits=False)
    # every remedy keeps the 64 pairs of a step, in the batch as written (before, in the
    # forward's 128 rows: a micro-batch of 16 written back to a file that said 8)
    for a in [fit.first] + list(fit.alternatives):
        f = {**dict(world_size=8, tp=1, grad_accum=1, micro_batch=8), **a.facts}
        assert f["micro_batch"] <= 8
        assert f["micro_batch"] * f["grad_accum"] * (f["world_size"] // f["tp"]) == 64, a.facts
