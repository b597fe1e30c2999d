"""AdamW's per-tensor `step` counts and autocast's weight copies as backward keeps them."""

from preflight.models.param_tensors import catalogue_tensors, with_catalogue_tensors
from preflight.physics import estimate
from preflight.physics.inputs import param_tensor_count
from preflight.plan import TrainingPlan

LLAMA2_7B = 6_738_415_616
GPT2 = 124_439_808


def _led(**kw):
    if kw.get("param_dtype") in ("bf16", "fp16") and kw.get("mixed_precision") in ("bf16", "fp16"):
        kw.setdefault("master_weights", True)       # the framework keeps fp32 masters
    return estimate(with_catalogue_tensors(TrainingPlan.from_values(kw))).ledger


def test_parameter_tensors_of_catalogue_models():
    # Llama-2-7B: 32 blocks × (q, k, v, o, gate, up, down, 2 RMSNorms) + embedding, final
    # norm, lm_head; GPT-2: 12 blocks × (4 linears with bias, 2 LayerNorms with bias) +
    # wte, wpe, ln_f weight and bias (the head is tied)
    assert param_tensor_count("meta-llama/Llama-2-7b-hf", LLAMA2_7B,
                              catalogue_tensors("meta-llama/Llama-2-7b-hf"))[0] == 32 * 9 + 3
    assert param_tensor_count("gpt2", GPT2, catalogue_tensors("gpt2"))[0] == 12 * 12 + 4
    # a plan whose size is not the catalogue's does not have the catalogue's tensors
    n, why = param_tensor_count("gpt2", GPT2 + 1, catalogue_tensors("gpt2"))
    assert n is None and "differ" in why
    assert param_tensor_count(None, GPT2, None)[0] is None


def test_step_counts_are_their_own_line_when_the_tensors_are_known():
    led = _led(model="meta-llama/Llama-2-7b-hf", params=LLAMA2_7B, optimizer="adamw",
               param_dtype="bf16", mixed_precision="bf16")
    opt = [ln for ln in led.lines if ln.key == "optimizer" and ln.lifetime != "step"]
    # torch.optim keeps them on the host unless fused=True / capturable=True: 0 B on the GPU
    assert [ln.bytes for ln in opt] == [8 * LLAMA2_7B, 0]
    assert opt[1].formula.startswith("0 (on the host: 4 B × 291 tensors")
    assert opt[1].formula.endswith("= 1,164 B)")
    assert led.bytes_of("optimizer") == 8 * LLAMA2_7B
    led = _led(model="meta-llama/Llama-2-7b-hf", params=LLAMA2_7B, optimizer="adamw",
               param_dtype="bf16", mixed_precision="bf16", optimizer_fused=True)
    assert led.bytes_of("optimizer") == 8 * LLAMA2_7B + 4 * 291


def test_step_counts_left_out_with_a_note_otherwise():
    # params only: the LEDGER.md numbers stay exact, and the optimizer line says why
    led = _led(params=7_000_000_000, optimizer="adamw", param_dtype="bf16",
               mixed_precision="bf16")
    opt = [ln for ln in led.lines if ln.key == "optimizer" and ln.lifetime != "step"]
    assert len(opt) == 1 and opt[0].bytes == 56_000_000_000
    assert "`step` tensor per parameter tensor not counted" in opt[0].note
    # sharded optimizers step flat partitions
    led = _led(model="gpt2", params=GPT2, optimizer="adamw", zero_stage=2, world_size=8)
    opt = [ln for ln in led.lines if ln.key == "optimizer"]
    assert len(opt) == 1 and "ZeRO-2 steps flat partitions" in opt[0].note
    # SGD has no step tensors and no note about them
    led = _led(model="gpt2", params=GPT2, optimizer="sgd")
    assert "step" not in [ln for ln in led.lines if ln.key == "optimizer"][0].note


SHAPE = dict(params=GPT2, optimizer="adamw", param_dtype="fp32", mixed_precision="bf16",
             micro_batch=2, seq_len=1024, layers=12, hidden=768, heads=12, vocab=50257)


def test_autocast_copies_are_the_linear_weights_not_the_embeddings():
    led = _led(**SHAPE)
    line, = [ln for ln in led.lines if "weight copies" in ln.label]
    h, V = 768, 50257
    assert line.bytes == 2 * (12 * (4 * h * h + 2 * h * 4 * h) + V * h)
    assert line.bytes < 2 * GPT2          # no copy of the position table, norms, biases


def test_full_checkpointing_keeps_only_the_head_copy_and_one_block_transiently():
    led = _led(**SHAPE, activation_checkpointing="full")
    h, V = 768, 50257
    kept, = [ln for ln in led.lines if "kept for backward" in ln.label]
    transient, = [ln for ln in led.lines if "recomputed (transient)" in ln.label]
    assert kept.bytes == 2 * V * h
    assert transient.bytes == 2 * (4 * h * h + 8 * h * h)


def test_autocast_copies_of_a_llama_block_use_the_kv_width():
    led = _led(**{**SHAPE, "layers": 2, "hidden": 1024, "heads": 16, "kv_heads": 4,
                  "ffn_hidden": 2816, "vocab": 32000}, model="llama", family="llama")
    line, = [ln for ln in led.lines if "weight copies" in ln.label]
    h, hk, f = 1024, 256, 2816
    assert line.bytes == 2 * (2 * (2 * h * h + 2 * h * hk + 3 * h * f) + 32000 * h)


def test_autocast_copies_without_shapes_stay_the_upper_bound():
    led = _led(params=7_000_000_000, param_dtype="fp32", mixed_precision="bf16")
    line, = [ln for ln in led.lines if "weight copies" in ln.label]
    assert line.bytes == 2 * 7_000_000_000 and "upper bound" in line.note
