"""The model-state ledger against LEDGER.md §2–3, to the byte."""

import pytest

from preflight.physics import estimate
from preflight.physics.inputs import Inputs
from preflight.physics.states import (model_states, optimizer_bytes_per_param, precision,
                                       zero_per_gpu_bytes)
from preflight.hardware import custom, lookup
from preflight.plan import TrainingPlan

N7 = 7_000_000_000


def plan(**kw):
    """LEDGER.md's mixed precision is the framework that keeps fp32 masters (DeepSpeed,
    Megatron, FSDP MixedPrecision): said explicitly with master_weights."""
    if kw.get("param_dtype") in ("bf16", "fp16") and kw.get("mixed_precision") in ("bf16", "fp16"):
        kw.setdefault("master_weights", True)
    return TrainingPlan.from_values(kw)


def per_gpu(**kw):
    return estimate(plan(**kw), kw.pop("_gpu", None)).ledger.per_gpu_bytes()


def mixed_adamw(**kw):
    return dict(params=N7, optimizer="adamw", param_dtype="bf16", mixed_precision="bf16", **kw)


def test_7b_mixed_adamw_is_112e9_in_five_parts():
    led = estimate(plan(**mixed_adamw())).ledger
    b = led.per_gpu_bytes()
    assert (b["params"], b["grads"], b["optimizer"], b["master"]) == (14e9, 14e9, 56e9, 28e9)
    assert led.states_bytes == 112_000_000_000
    # the optimizer line is m and v: 28e9 each
    opt = [ln for ln in led.lines if ln.key == "optimizer" and ln.lifetime != "step"]
    assert len(opt) == 1 and opt[0].formula == "8 B × 7,000,000,000"
    assert opt[0].bytes // 2 == 28_000_000_000
    # foreach AdamW's sqrt(v) for every parameter: alive inside optimizer.step() only
    tmp = [ln for ln in led.lines if ln.lifetime == "step"]
    assert [(t.key, t.bytes, t.formula) for t in tmp] == [
        ("optimizer", 28_000_000_000, "4 B × 7,000,000,000")]
    p = [ln for ln in led.lines if ln.key == "params"][0]
    assert p.formula == "2 B × 7,000,000,000"


def test_7b_does_not_fit_an_80gb_card_before_any_activation():
    led = estimate(plan(**mixed_adamw()), lookup("H100")).ledger
    assert led.states_bytes > led.capacity_bytes
    assert led.verdict() == "does not fit"      # even with the activations unknown
    assert led.total is None and "micro_batch" in led.unknown


def test_8bit_adam_is_70e9():
    led = estimate(plan(**{**mixed_adamw(), "optimizer": "adamw_8bit"})).ledger
    assert led.bytes_of("optimizer") == 14_000_000_000          # m, v at 1 byte each
    assert led.bytes_of("master") == 28_000_000_000             # master kept
    assert led.states_bytes == 70_000_000_000


def test_zero3_over_8_is_14e9_per_gpu():
    led = estimate(plan(**mixed_adamw(world_size=8, zero_stage=3))).ledger
    assert led.states_bytes == 14_000_000_000
    fsdp = estimate(plan(**mixed_adamw(world_size=8, fsdp="full_shard"))).ledger
    assert fsdp.states_bytes == 14_000_000_000


@pytest.mark.parametrize("gpu", ["4090", "A10G", "L4", "RTX-3090"])
def test_1_5b_is_24e9_and_does_not_fit_a_24gb_card(gpu):
    hw = lookup(gpu)
    assert hw.marketed_gb == 24
    est = estimate(plan(params=1_500_000_000, optimizer="adamw", param_dtype="bf16",
                        mixed_precision="bf16"), hw)
    assert est.ledger.states_bytes == 24_000_000_000
    assert est.ledger.verdict() == "does not fit"


def test_1_5b_does_not_fit_24_gb_given_as_memory():
    est = estimate(plan(params=1_500_000_000, optimizer="adamw", param_dtype="bf16",
                        mixed_precision="bf16"), custom(24 * 10**9))
    assert est.ledger.states_bytes == 24 * 10**9
    assert est.ledger.verdict() == "does not fit"


def test_ledger_formula_zero_stages():
    # LEDGER.md §3 written out independently: K = 12
    n = 10**9
    for nd in (1, 2, 4, 8, 16, 64, 3):
        assert zero_per_gpu_bytes(n, nd, 0) == 16 * n
        assert zero_per_gpu_bytes(n, nd, 1) == 4 * n + -(-12 * n // nd)
        assert zero_per_gpu_bytes(n, nd, 2) == 2 * n + -(-14 * n // nd)
        assert zero_per_gpu_bytes(n, nd, 3) == -(-16 * n // nd)
    with pytest.raises(ValueError):
        zero_per_gpu_bytes(n, 8, 4)


@pytest.mark.parametrize("nd", [2, 4, 8, 16, 32, 64])
@pytest.mark.parametrize("stage", [0, 1, 2, 3])
def test_estimate_follows_zero_stages(stage, nd):
    led = estimate(plan(**mixed_adamw(world_size=nd, zero_stage=stage))).ledger
    assert led.states_bytes == zero_per_gpu_bytes(N7, nd, stage)
    expect = {0: 16 * N7, 1: 4 * N7 + 12 * N7 // nd, 2: 2 * N7 + 14 * N7 // nd,
              3: 16 * N7 // nd}[stage]
    assert led.states_bytes == expect


@pytest.mark.parametrize("fsdp,stage", [("full_shard", 3), ("shard_grad_op", 2), ("no_shard", 0)])
def test_fsdp_strategies_map_to_zero_stages(fsdp, stage):
    led = estimate(plan(**mixed_adamw(world_size=16, fsdp=fsdp))).ledger
    assert led.states_bytes == zero_per_gpu_bytes(N7, 16, stage)


def test_hybrid_shard_shards_within_a_node():
    led = estimate(plan(**mixed_adamw(world_size=32, nodes=4, gpus_per_node=8,
                                      fsdp="hybrid_shard"))).ledger
    assert led.states_bytes == 16 * N7 // 8


def test_tensor_and_pipeline_parallel_split_the_states_first():
    led = estimate(plan(**mixed_adamw(world_size=16, tp=2, pp=2, zero_stage=1))).ledger
    # 4 data-parallel ranks over what is left after tp × pp = 4
    n = N7 // 4
    assert led.states_bytes == 4 * n + 12 * n // 4


@pytest.mark.parametrize("pd,mx,optimizer,per_param", [
    ("fp32", "none", "adamw", 4 + 4 + 8),             # pure fp32 Adam is also 16N
    ("fp32", "bf16", "adamw", 4 + 4 + 8),             # autocast: fp32 weights are the master
    ("bf16", "bf16", "adamw", 2 + 2 + 8 + 4),
    ("fp16", "fp16", "adam", 2 + 2 + 8 + 4),          # fp16 with loss scaling: same states
    ("bf16", "none", "adamw", 2 + 2 + 4),             # pure bf16: m, v in bf16, no master
    ("bf16", "bf16", "sgd", 2 + 2 + 0 + 4),
    ("bf16", "bf16", "sgd_momentum", 2 + 2 + 4 + 4),
    ("fp32", "none", "sgd_momentum", 4 + 4 + 4),
    ("bf16", "bf16", "adamw_8bit", 2 + 2 + 2 + 4),
    ("bf16", "bf16", "paged_adamw_8bit", 2 + 2 + 2 + 4),
    ("bf16", "bf16", "paged_adamw_32bit", 2 + 2 + 8 + 4),
    ("bf16", "bf16", "lion", 2 + 2 + 4 + 4),
    ("bf16", "bf16", "adagrad", 2 + 2 + 4 + 4),
    ("bf16", "bf16", "rmsprop", 2 + 2 + 4 + 4),
    ("bf16", "bf16", "lamb", 2 + 2 + 8 + 4),
    ("bf16", "none", "lion", 2 + 2 + 2),
])
def test_precision_optimizer_matrix(pd, mx, optimizer, per_param):
    n = 1_000_000_000
    led = estimate(plan(params=n, optimizer=optimizer, param_dtype=pd, mixed_precision=mx)).ledger
    assert led.states_bytes == per_param * n


def test_adafactor_factored_state_needs_hidden():
    n = 1_000_000_000
    led = estimate(plan(params=n, optimizer="adafactor", param_dtype="bf16",
                        mixed_precision="bf16")).ledger
    assert led.bytes_of("optimizer") is None and "hidden" in led.unknown
    led = estimate(plan(params=n, optimizer="adafactor", param_dtype="bf16",
                        mixed_precision="bf16", hidden=2048)).ledger
    # 2 fp32 values per row+column of an h×h matrix: 4 B × 2N / h
    assert led.bytes_of("optimizer") == -(-4 * 2 * n // 2048)
    assert optimizer_bytes_per_param("adafactor", "fp32", 2048) * 2048 == 8


def test_unknown_optimizer_is_said_not_guessed():
    led = estimate(plan(params=N7, param_dtype="bf16", mixed_precision="bf16")).ledger
    line = [ln for ln in led.lines if ln.key == "optimizer"][0]
    assert line.bytes is None and "optimizer" in line.note
    assert "optimizer" in led.unknown
    assert led.states_bytes is None


def test_missing_precision_is_an_assumption_in_words():
    led = estimate(plan(params=N7, optimizer="adamw")).ledger
    assert led.states_bytes == 16 * N7
    assert any("fp32 assumed" in a for a in led.assumptions)


def test_qlora_frozen_base_has_no_grad_optimizer_or_master():
    base, adapters = 6_738_415_616, 4_194_304
    lora = {"r": 8, "alpha": 16, "targets": ["q_proj", "v_proj"], "base_bits": 4,
            "modules_to_save": []}
    led = estimate(plan(params=base + adapters, trainable_params=adapters, optimizer="adamw",
                        param_dtype="bf16", mixed_precision="bf16", lora=lora)).ledger
    # adapters in fp32: 4 weights + 4 grads + 8 AdamW, no separate master
    assert led.bytes_of("grads") == 4 * adapters
    assert led.bytes_of("optimizer") == 8 * adapters
    assert led.bytes_of("master") == 0
    frozen = [ln for ln in led.lines if ln.key == "params" and "frozen" in ln.label][0]
    assert frozen.bytes == base // 2                        # 4 bits
    consts = [ln for ln in led.lines if "quantisation constants" in ln.label][0]
    assert consts.bytes == 4 * -(-base // 64)               # one fp32 absmax per 64 weights
    assert led.bytes_of("params") == 4 * adapters + base // 2 + consts.bytes


def test_lora_16_bit_base():
    base, adapters = 1_000_000_000, 1_000_000
    lora = {"r": 16, "base_bits": 16}
    led = estimate(plan(params=base + adapters, trainable_params=adapters, optimizer="adamw",
                        param_dtype="bf16", mixed_precision="bf16", lora=lora)).ledger
    assert led.bytes_of("params") == 4 * adapters + 2 * base
    assert led.states_bytes == 16 * adapters + 2 * base


def test_lora_without_trainable_count_is_unknown():
    led = estimate(plan(params=N7, optimizer="adamw", param_dtype="bf16", mixed_precision="bf16",
                        lora={"r": 8, "base_bits": 4})).ledger
    assert led.bytes_of("grads") is None and "trainable_params" in led.unknown


def test_frozen_layers_without_lora():
    led = estimate(plan(params=10**9, trainable_params=10**8, optimizer="adamw",
                        param_dtype="bf16", mixed_precision="bf16")).ledger
    assert led.bytes_of("params") == 2 * 10**9
    assert led.bytes_of("grads") == 2 * 10**8
    assert led.bytes_of("optimizer") == 8 * 10**8 and led.bytes_of("master") == 4 * 10**8


def test_optimizer_offload_moves_optimizer_and_master_to_host():
    led = estimate(plan(**mixed_adamw(world_size=8, zero_stage=3, offload="optimizer"))).ledger
    assert led.bytes_of("optimizer") == 0 and led.bytes_of("master") == 0
    assert led.bytes_of("params") == 2 * N7 // 8
    opt = [ln for ln in led.lines if ln.key == "optimizer"][0]
    assert "offloaded" in opt.label and "7,000,000,000 B" in opt.formula   # 56e9 / 8 on the host
    led = estimate(plan(**mixed_adamw(world_size=8, zero_stage=3,
                                      offload="optimizer+params"))).ledger
    assert led.bytes_of("params") == 0 and led.bytes_of("grads") == 2 * N7 // 8


def test_ddp_buckets_and_overhead_are_separate_labelled_lines():
    led = estimate(plan(**mixed_adamw(world_size=8, micro_batch=1, seq_len=1024, layers=32,
                                      hidden=4096, heads=32, vocab=32000)), lookup("H100")).ledger
    comm = [ln for ln in led.lines if ln.key == "comm"]
    assert len(comm) == 1 and "DDP" in comm[0].label and comm[0].bytes == 2 * N7
    over = [ln for ln in led.lines if ln.key == "overhead"]
    labels = " | ".join(ln.label for ln in over)
    assert "CUDA context" in labels and "margin" in labels
    margin = [ln for ln in over if ln.margin][0]
    assert margin.bytes == led.capacity_bytes // 5
    assert led.peak == led.total - margin.bytes


def test_zero3_all_gather_buffers_are_sized_by_the_largest_layer():
    h, f, V = 4096, 11008, 32000
    led = estimate(plan(**mixed_adamw(world_size=8, zero_stage=3, micro_batch=1, seq_len=1024,
                                      layers=32, hidden=h, heads=32, ffn_hidden=f, vocab=V,
                                      model="meta-llama/Llama-2-7b-hf", family="llama"))).ledger
    block = 4 * h * h + 3 * h * f + 2 * h      # llama block without GQA
    assert block > V * h
    comm = {ln.label: ln.bytes for ln in led.lines if ln.key == "comm"}
    # DeepSpeed: the unit in use and stage3_prefetch_bucket_size (5e7) elements ahead
    assert comm["gathered parameters (unit in use and prefetched)"] == 2 * (block + 50_000_000)
    assert comm["unsharded gradient of one unit (before reduce-scatter)"] == 2 * block
    assert comm["ZeRO-3 gradient reduce bucket (contiguous_gradients)"] == 2 * 500_000_000
    # FSDP FULL_SHARD: the unit in use and the next one
    fsdp = estimate(plan(**mixed_adamw(world_size=8, fsdp="full_shard", micro_batch=1,
                                       seq_len=1024, layers=32, hidden=h, heads=32,
                                       ffn_hidden=f, vocab=V, model="meta-llama/Llama-2-7b-hf",
                                       family="llama"))).ledger
    gathered = [ln for ln in fsdp.lines if ln.key == "comm" and "all-gathered" in ln.label][0]
    assert gathered.bytes == 2 * 2 * block
    grad = [ln for ln in fsdp.lines if ln.key == "comm" and "gradient" in ln.label][0]
    assert grad.bytes == 2 * block


def test_verdicts():
    small = plan(params=10**8, optimizer="adamw", param_dtype="bf16", mixed_precision="bf16",
                 micro_batch=1, seq_len=512, layers=12, hidden=768, heads=12, vocab=50257)
    led = estimate(small, lookup("H100")).ledger
    assert led.verdict() == "fits" and led.total <= led.capacity_bytes
    # the margin is 20 % of capacity: a card between peak and peak / 0.8 is "tight"
    cap = led.peak + led.peak // 10
    tight = estimate(small, custom(cap)).ledger
    assert tight.peak <= cap < tight.total and tight.verdict() == "tight"
    assert estimate(small, None).ledger.verdict() == "unknown"


def test_states_helper_reports_missing_facts():
    x = Inputs(params=None, trainable=None, param_dtype="bf16", mixed_precision="bf16",
               optimizer="adamw")
    lines, missing = model_states(x)
    assert "params" in missing and all(ln.bytes is None for ln in lines)
    assert precision("bf16", "bf16").master == 4 and precision("bf16", "none").master == 0
