"""Pipeline parallel: a ledger per 1F1B stage and the busiest rank judged, to the byte.

The cases are small enough to work by hand. The model is a GPT block (sdpa, dropout,
fused GELU) in fp32 with h = 64, 4 heads, f = 256, V = 1,000 and tokens b·s = 2 × 16 = 32;
one layer saves 32 × (34·64 + 8·256 + 4·4 + 16) = 32 × 4,256 = 136,192 B per micro-batch
(the table of tests/test_estimate_activations.py). SGD without momentum in fp32 keeps
4 + 4 B per parameter; the gradients are alive through the forward (accumulation).
"""

import json

from preflight.physics import estimate
from preflight.physics.stages import in_flight, stage_layers
from preflight.plan import TrainingPlan
from tests.conftest import run_cli

LAYER = 32 * (34 * 64 + 8 * 256 + 4 * 4 + 16)          # 136,192 B per layer, per micro-batch
TABLE = 1_000 * 64                                        # the V·h embedding / head table
BLOCK = (329_600 - TABLE) // 4                            # 66,400 parameters per layer


def shape(layers=4, **kw):
    v = dict(params=BLOCK * layers + TABLE, layers=layers, hidden=64, heads=4, ffn_hidden=256,
             vocab=1_000, micro_batch=2, seq_len=16, param_dtype="fp32", mixed_precision="none",
             optimizer="sgd", world_size=2, pp=2, grad_accum=4, attention="sdpa",
             activation_checkpointing="none")
    v.update(kw)
    return TrainingPlan.from_values({k: x for k, x in v.items() if x is not None})


def test_1f1b_schedule_in_flight_and_layer_split():
    # stage i of p holds p − i micro-batches, fewer when the step has fewer
    assert [in_flight(4, i, 8) for i in range(4)] == [4, 3, 2, 1]
    assert [in_flight(4, i, 2) for i in range(4)] == [2, 2, 2, 1]
    assert [in_flight(4, i, None) for i in range(4)] == [4, 3, 2, 1]
    # 10 layers over 4 stages: the first two take one more
    assert [stage_layers(10, 4, i) for i in range(4)] == [3, 3, 2, 2]


def test_last_stage_is_the_busiest_when_the_logits_dominate():
    led = estimate(shape()).ledger
    first, last = led.stages
    # parameters: (329,600 − 64,000) / 2 = 132,800 of the blocks, plus the V·h table on
    # the first stage (embedding) and on the last (output head)
    assert first.params == last.params == 132_800 + 64_000 == 196_800
    states = 8 * 196_800                                                  # 1,574,400
    assert first.states_bytes == last.states_bytes == states
    # stage 0: min(2 − 0, 4) = 2 micro-batches × 2 layers, and the embedding dropout mask
    # (1 B × h per token) of each
    assert (first.layers, first.in_flight) == (2, 2)
    assert first.phases["forward"] == states + 2 * 2 * LAYER + 2 * 32 * 64 == 2_123_264
    assert first.tensors_peak == 2_123_264 and first.holds == "embeddings"
    # stage 1: one micro-batch × 2 layers, the final norm and lm_head input
    # 32 × ((4 + 4)·64 + 8) = 16,640, the fp32 logits (4 B × 32 × 1,000 = 128,000) and, at
    # the start of backward, their two fp32 gradients (256,000)
    assert (last.layers, last.in_flight) == (2, 1)
    assert last.phases["loss backward"] == states + 2 * LAYER + 16_640 + 128_000 + 256_000 \
        == 2_247_424
    assert last.peak_phase == "loss backward"
    # the ledger judged is the busiest rank's: the last stage
    assert led.busiest_stage == 1 and led.tensors_peak == 2_247_424
    assert led.peak_phase == "loss backward"
    labels = [ln.label for ln in led.lines if ln.key == "activations"]
    assert "final norm and lm_head input (last stage)" in labels
    assert not any("embedding output" in lb for lb in labels)


def test_first_stage_is_the_busiest_for_a_deeper_model():
    led = estimate(shape(layers=8)).ledger
    first, last = led.stages
    # blocks 8 × 66,400 = 531,200, half on each stage, plus the table
    assert first.params == last.params == 265_600 + 64_000 == 329_600
    states = 8 * 329_600                                                  # 2,636,800
    assert first.tensors_peak == states + 2 * 4 * LAYER + 2 * 32 * 64 == 3_730_432
    assert last.tensors_peak == states + 4 * LAYER + 16_640 + 128_000 + 256_000 == 3_582_208
    assert led.busiest_stage == 0 and led.tensors_peak == 3_730_432
    assert led.peak_phase == "forward"
    acts = {ln.label: ln for ln in led.lines if ln.key == "activations"}
    kept = acts["4 layers' saved activations (GPT block, sdpa, checkpointing none), "
                "2 micro-batches in flight"]
    assert kept.bytes == 2 * 4 * LAYER
    assert kept.formula == "2 micro-batches × 4 layers × 2 × 16 × (34×64 + 8×256 + 4×4 + 16) B"
    assert "logits kept for the loss (fp32)" not in acts        # on the last stage only


def test_one_micro_batch_per_step_keeps_one_in_flight_everywhere():
    led = estimate(shape(grad_accum=1)).ledger
    assert [st.in_flight for st in led.stages] == [1, 1]
    # no accumulation: the gradients are None through the forward
    assert led.stages[0].phases["forward"] == 4 * 196_800 + 2 * LAYER + 32 * 64


def test_unknown_micro_batches_per_step_take_the_schedules_most_and_say_so():
    led = estimate(shape(grad_accum=None)).ledger
    assert [st.in_flight for st in led.stages] == [2, 1]
    notes = " ".join(ln.note for ln in led.lines)
    assert "micro-batches per step not given: the 2 − 0 = 2 the 1F1B schedule can keep " \
           "in flight assumed" in notes


def test_cli_json_and_text_carry_every_stage():
    args = ("estimate", "--params", "329600", "--layers", "4", "--hidden", "64", "--heads", "4",
            "--ffn-hidden", "256", "--vocab", "1000", "--micro-batch", "2", "--seq-len", "16",
            "--precision", "fp32", "--optimizer", "sgd", "--world-size", "2", "--pp", "2",
            "--grad-accum", "4", "--attention", "sdpa", "--checkpointing", "none")
    r = run_cli(*args, "--format", "json")
    led = json.loads(r.stdout)["jobs"][0]["ledger"]
    assert led["busiest_stage"] == 1
    assert [(s["index"], s["layers"], s["in_flight"], s["tensors_peak"], s["peak_phase"])
            for s in led["stages"]] == [(0, 2, 2, 2_123_264, "forward"),
                                        (1, 2, 1, 2_247_424, "loss backward")]
    assert led["tiers"]["tensors"] == 2_247_424
    text = run_cli(*args).stdout
    assert "pipeline stages (1F1B; the ledger above is stage 1's, the busiest):" in text
    assert "1: 2 layers × 1 in flight, tensors peak at loss backward  ← busiest" in text
    assert "196,800 parameters, states 0.00 GB (0.00 GiB); holds embeddings" in text


def test_no_pipeline_no_stages():
    led = estimate(shape(pp=None, world_size=1)).ledger
    assert led.stages == [] and led.busiest_stage is None
