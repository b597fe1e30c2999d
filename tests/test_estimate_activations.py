"""Activations: the 34-byte rule, the attention matrix, Korthikanti, the family tables."""

import pytest

from preflight.physics import estimate
from preflight.physics.activations import (Shape, Variant, activation_bytes_34,
                                            attention_scores_bytes, korthikanti_layer_bytes,
                                            layer_activation_bytes, logits_bytes, saved_tensors)
from preflight.models.catalog import family_from_name
from preflight.physics.inputs import Inputs
from preflight.physics.tensors import block_params, largest_pieces
from preflight.plan import TrainingPlan

L, H, A, B, S = 32, 4096, 32, 4, 2048


def test_34_byte_rule_worked_example():
    assert activation_bytes_34(S, B, H, L) == 36_507_222_016
    # T → 8192 and B → 16 multiplies it by 16
    assert activation_bytes_34(8192, 16, H, L) == 16 * 36_507_222_016


def test_materialised_attention_matrix_per_layer():
    assert attention_scores_bytes(B, A, S, 2) == 1_073_741_824
    # ≈ 34 GB over 32 layers
    assert 34e9 < 32 * attention_scores_bytes(B, A, S, 2) < 35e9


def test_korthikanti_reduces_to_the_34_byte_rule_without_the_attention_term():
    sbh = S * B * H
    assert korthikanti_layer_bytes(S, B, H, A, recompute="selective") * L == 36_507_222_016
    assert korthikanti_layer_bytes(S, B, H, A) == 34 * sbh + 5 * A * S * S * B
    assert korthikanti_layer_bytes(S, B, H, A, recompute="full") == 2 * sbh
    assert korthikanti_layer_bytes(S, B, H, A, t=8) == sbh * 10 + sbh * 24 // 8 + 5 * A * S * S * B // 8
    assert korthikanti_layer_bytes(S, B, H, A, t=8, sp=True) == (34 * sbh + 5 * A * S * S * B) // 8
    assert korthikanti_layer_bytes(S, B, H, A, t=8, sp=True, recompute="full") == 2 * sbh // 8


@pytest.mark.parametrize("t,sp", [(1, False), (2, False), (4, False), (8, True), (4, True)])
@pytest.mark.parametrize("ck", ["none", "selective", "full"])
def test_gpt2_table_sums_to_korthikanti(t, sp, ck):
    """The saved-tensor table of the GPT family (eager, dropout, 16-bit) is the paper's model."""
    sh = Shape(s=S, b=B, h=H, a=A, f=4 * H, k=A, d=2)
    got = layer_activation_bytes("gpt2", sh, "eager", ck, t, sp, Variant(norm_stats=False))
    assert got.total == korthikanti_layer_bytes(S, B, H, A, t, sp, ck)
    # LayerNorm's fp32 mean and rstd, which the paper leaves out: 16 B per token
    real = layer_activation_bytes("gpt2", sh, "eager", ck, t, sp)
    stats = 0 if ck == "full" else 16 * S * B // (t if sp else 1)
    assert real.total == got.total + stats


def test_sdpa_drops_the_s2_matrices_and_keeps_the_log_sum_exp():
    sh = Shape(s=S, b=B, h=H, a=A, f=4 * H, k=A, d=2)
    eager = layer_activation_bytes("gpt2", sh, "eager", variant=Variant(norm_stats=False))
    sdpa = layer_activation_bytes("gpt2", sh, "sdpa", variant=Variant(norm_stats=False))
    assert eager.scores == 5 * A * S * S * B and sdpa.scores == 0
    assert sdpa.total == 34 * S * B * H + 4 * A * S * B


def test_autocast_eager_softmax_in_fp32():
    sh = Shape(s=S, b=B, h=H, a=A, f=4 * H, k=A, d=2, autocast=True)
    # fp32 softmax output 4, dropout mask 1, 16-bit copy for the V matmul 2
    assert layer_activation_bytes("gpt2", sh, "eager").scores == 7 * A * S * S * B


def test_fp32_compute_doubles_all_but_the_masks():
    sh = Shape(s=S, b=B, h=H, a=A, f=4 * H, k=A, d=4)
    got = layer_activation_bytes("gpt2", sh, "eager", variant=Variant(norm_stats=False))
    # 32 of the 34 bytes are 16-bit tensors (two 1-byte masks); scores 2+1+2 → 4+1+4
    assert got.total == (64 + 2) * S * B * H + 9 * A * S * S * B


def test_llama_table_derivation():
    h, f, a, k, s, b = 4096, 11008, 32, 8, 4096, 1
    sh = Shape(s=s, b=b, h=h, a=a, f=f, k=k, d=2)
    hk = k * h // a
    sdpa = layer_activation_bytes("llama", sh, "sdpa")
    # norms 2×(4h + 2h + 4), projection inputs 2×2h, Q 2h, K,V 2×2hk, kernel out 2h
    # (o_proj reads it in place), lse 4a, SwiGLU 4×2f
    per_token = 2 * (6 * h + 4) + 4 * h + 2 * h + 4 * hk + 2 * h + 4 * a + 8 * f
    assert sdpa.total == per_token * s * b
    assert layer_activation_bytes("llama", sh, "flash").total == sdpa.total
    eager = layer_activation_bytes("llama", sh, "eager")
    # repeat_kv widens K, V to h; fp32 softmax + 16-bit copy = 6 bytes per score, no dropout
    assert eager.scores == 6 * a * s * s * b
    assert eager.total - eager.scores == (2 * (6 * h + 4) + 4 * h + 2 * h + 4 * h + 2 * h
                                          + 8 * f) * s * b
    names = [t.name for t in saved_tensors("llama", sh, "eager")]
    assert not any("dropout" in n for n in names)


def test_llama_family_from_the_model_name():
    assert family_from_name("meta-llama/Llama-2-7b-hf") == ("llama", "catalogue")
    assert family_from_name("mistralai/Mistral-7B-v0.1")[0] == "llama"
    assert family_from_name("gpt2-medium")[0] == "gpt2"
    assert family_from_name("acme/my-llama-tune") == ("llama", "model name")
    assert family_from_name("my-own-net") == (None, "")


def _act(**kw):
    base = dict(params=7_000_000_000, optimizer="adamw", param_dtype="bf16",
                mixed_precision="bf16", micro_batch=B, seq_len=S, layers=L, hidden=H, heads=A)
    base.update(kw)
    return estimate(TrainingPlan.from_values(base)).ledger


def test_estimate_activation_lines_use_the_layer_model():
    led = _act(attention="eager")
    layers = [ln for ln in led.lines if ln.key == "activations" and "layers'" in ln.label][0]
    scores = [ln for ln in led.lines if "attention scores" in ln.label][0]
    # 34·sbh·L (LEDGER.md §2) + LayerNorm statistics, 16 B per token per layer
    assert layers.bytes == activation_bytes_34(S, B, H, L) + 16 * S * B * L
    assert activation_bytes_34(S, B, H, L) == 36_507_222_016
    assert scores.bytes == 5 * A * S * S * B * L               # 2.5 × the 2-byte matrix
    assert scores.bytes == 32 * attention_scores_bytes(B, A, S, 2) * 5 // 2
    assert "32 layers × 4 × 2,048" in layers.formula


def test_selective_and_full_checkpointing():
    sel = _act(attention="eager", activation_checkpointing="selective")
    assert not any("attention scores" in ln.label for ln in sel.lines)
    full = _act(attention="eager", activation_checkpointing="full")
    kept = [ln for ln in full.lines if "full checkpointing" in ln.label][0]
    assert kept.bytes == 2 * S * B * H * L
    one = [ln for ln in full.lines if "working set while it is recomputed" in ln.label][0]
    # the whole working set, less the layer's input: that is the kept checkpoint itself
    assert one.bytes == korthikanti_layer_bytes(S, B, H, A) + 16 * S * B - 2 * S * B * H


def test_tensor_and_sequence_parallel_activations():
    led = _act(attention="eager", world_size=8, tp=8, sp=True)
    act = sum(ln.bytes for ln in led.lines if ln.key == "activations"
              and ("layers'" in ln.label or "attention scores" in ln.label))
    assert act == L * (korthikanti_layer_bytes(S, B, H, A, 8, True) + 16 * S * B // 8)


def test_missing_micro_batch_is_unknown_and_named():
    led = _act(micro_batch=None)
    line = [ln for ln in led.lines if ln.key == "activations"][0]
    assert line.bytes is None and "micro_batch" in line.note
    assert "micro_batch" in led.unknown and led.total is None


def test_logits_buffer_fp32_and_largest_tensor():
    V = 128_256
    assert logits_bytes(B, S, V) == 4 * B * S * V
    led = _act(vocab=V)
    logits = [ln for ln in led.lines if ln.label.startswith("logits kept")][0]
    assert logits.bytes == 4 * B * S * V
    pieces = largest_pieces(Inputs(family="gpt2", hidden=H, vocab=V, micro_batch=B, seq_len=S,
                                   heads=A))
    assert pieces[0].label == "logits buffer (fp32)" and pieces[0].bytes == 4 * B * S * V
    labels = {p.label: p.bytes for p in pieces}
    assert labels["embedding / lm_head weight"] == 2 * V * H
    assert labels["one layer's attention scores (if materialised)"] == 1_073_741_824


def test_block_params():
    h = 768
    n, _ = block_params("gpt2", h)
    assert n == 12 * h * h + 13 * h                            # GPT-2 block with biases
    n, _ = block_params("llama", 4096, 14336, 32, 8)
    assert n == 2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336 + 2 * 4096


def test_autocast_weight_copies_are_their_own_line():
    led = _act(param_dtype="fp32", mixed_precision="bf16")
    line = [ln for ln in led.lines if "weight copies" in ln.label][0]
    assert line.key == "activations" and line.bytes == 2 * 7_000_000_000


def test_layer_activations_of_a_plan():
    from preflight.physics.inputs import Inputs
    from preflight.physics.layers import layer_activations

    plan = TrainingPlan.from_values(dict(params=7_000_000_000, param_dtype="bf16",
                                         mixed_precision="bf16", micro_batch=B, seq_len=S,
                                         layers=L, hidden=H, heads=A, attention="eager"))
    one = layer_activations(Inputs.from_plan(plan))
    assert one.full == one.total == korthikanti_layer_bytes(S, B, H, A) + 16 * S * B
    plan.facts.pop("heads")
    assert layer_activations(Inputs.from_plan(plan)) is None


def test_gelu_new_of_transformers_gpt2_saves_three_more_tensors():
    sh = Shape(s=S, b=B, h=H, a=A, f=4 * H, k=A, d=2)
    fused = layer_activation_bytes("gpt2", sh, "sdpa")
    new = layer_activation_bytes("gpt2", sh, "sdpa", variant=Variant(gelu="tanh-unfused"))
    assert new.total - fused.total == 3 * 2 * 4 * H * S * B
    from preflight.physics.inputs import gelu_of
    assert gelu_of("gpt2-medium") == "tanh-unfused" and gelu_of("nanoGPT") == "fused"


def test_autocast_tables():
    h, f, a, k, s, b = 4096, 11008, 32, 8, 2048, 1
    hk = k * h // a
    sh = Shape(s=s, b=b, h=h, a=a, f=f, k=k, d=2, autocast=True)
    # norms 2×(fp32 x 4h + fp32 normalised 4h + rstd 4), 3 + 2 projection-input copies
    # (2h each), Q 2h, K, V 2hk each, kernel output 2h, lse 4a, SwiGLU 8f
    llama = layer_activation_bytes("llama", sh, "sdpa")
    assert llama.total == (16 * h + 8 + 10 * h + 2 * h + 4 * hk + 2 * h + 4 * a + 8 * f) * s * b
    # full checkpointing keeps the fp32 residual stream
    assert layer_activation_bytes("llama", sh, "sdpa", "full").total == 4 * h * s * b
    # GPT block: LayerNorm inputs in fp32 (+2h each) against the 16-bit table
    plain = layer_activation_bytes("gpt2", Shape(s=s, b=b, h=h, a=a, f=4 * h, k=a, d=2), "sdpa")
    auto = layer_activation_bytes("gpt2", Shape(s=s, b=b, h=h, a=a, f=4 * h, k=a, d=2,
                                                autocast=True), "sdpa")
    assert auto.total - plain.total == 4 * h * s * b


# ------------------------------------------------------------------ frozen base (LoRA)
# The bench's tiny models (bench/peak_accuracy.py, configurations 6 and 13): s 128, b 4,
# fp32, sdpa, no dropout. The byte counts below equal the storages the real forward saves
# (transformers 5.24 + peft 0.21, counted through saved_tensors_hooks), layer by layer.
def test_lora_gpt2_frozen_layer_keeps_no_input_for_a_frozen_weight():
    from preflight.physics.activations import embedding_and_head_bytes
    from preflight.physics.lora import frozen_base

    sh = Shape(s=128, b=4, h=128, a=4, f=512, k=4, d=4, r=8)
    fz = frozen_base("gpt2", ["c_attn"])
    assert fz.adapted == frozenset({"qkv"})
    la = layer_activation_bytes("gpt2", sh, "sdpa", variant=Variant(
        dropout=False, gelu="tanh-unfused", kv_cache=True, frozen=fz))
    # (36·h + 16·f + 4·r + 4·a + 16) B per token: the MLP input and GELU output (inputs
    # of the frozen c_fc / c_proj) go; sdpa's own output stays; lora_A's output is 4·r
    assert la.total == 512 * (36 * 128 + 16 * 512 + 4 * 8 + 4 * 4 + 16) == 6_586_368
    names = [t.name for t in saved_tensors("gpt2", sh, "sdpa", Variant(
        False, "tanh-unfused", kv_cache=True, frozen=fz))]
    assert "MLP input" not in names and "GELU output" not in names
    assert "LoRA A output (qkv; lora_B input)" in names
    # layer 0: the LayerNorm before c_attn's adapter sees no grad (frozen embeddings)
    assert la.first_less == 512 * (4 * 128 + 8) == 266_240
    assert la.first_less_names == ("LayerNorm 1 input", "LayerNorm 1 mean and rstd (fp32)")
    # the unfrozen layer keeps both inputs: (4h + 4f) B per token more, less the adapter
    full = layer_activation_bytes("gpt2", sh, "sdpa", variant=Variant(
        dropout=False, gelu="tanh-unfused", kv_cache=True))
    assert full.total - la.total == 512 * (4 * 128 + 4 * 512 - 4 * 8)
    # ln_f's input stays; the frozen (tied) lm_head keeps no input, the embedding no mask
    assert embedding_and_head_bytes("gpt2", sh, True, frozen=fz) == (
        512 * (4 * 128 + 8), "(0 + 4 + 0)·h + 8")
    # LLM.int8 (8-bit base): bitsandbytes' MatMul8bitLt saves its input whenever the
    # input requires grad, so the frozen linears' inputs come back
    fz8 = frozen_base("gpt2", ["c_attn"], base_bits=8)
    assert layer_activation_bytes("gpt2", sh, "sdpa", variant=Variant(
        dropout=False, gelu="tanh-unfused", kv_cache=True, frozen=fz8)).total == \
        6_586_368 + 512 * (4 * 128 + 4 * 512)


def test_lora_llama_frozen_layer_and_head():
    from preflight.physics.activations import embedding_and_head_bytes
    from preflight.physics.lora import frozen_base

    sh = Shape(s=128, b=4, h=128, a=4, f=344, k=2, d=4, r=8)
    fz = frozen_base("llama", ["q_proj", "k_proj", "v_proj", "o_proj"])
    la = layer_activation_bytes("llama", sh, "sdpa", variant=Variant(frozen=fz))
    # RMSNorms keep the fp32 input and rstd (not the normalised tensor: the weight is
    # frozen); gate/up/down frozen: no MLP input, no SwiGLU product; 4 adapters × 4·r
    per = 2 * (4 * 128 + 4) + 4 * 128 + 4 * 128 + 2 * 4 * 64 + 4 * 4 + 4 * 128 \
        + 3 * 4 * 344 + 4 * 4 * 8
    assert la.total == 512 * per == 3_764_224
    assert la.first_less == 512 * (4 * 128 + 4) == 264_192
    assert embedding_and_head_bytes("llama", sh, frozen=fz)[0] == 512 * (4 * 128 + 4)
    # peft's default targets (q_proj, v_proj): k and o frozen, the shared QKV input stays;
    # under autocast each adapted projection has its own 16-bit copy (two, not three)
    fz_qv = frozen_base("llama", ["q_proj", "v_proj"])
    assert fz_qv.adapted == frozenset({"q", "v"})
    ac = Shape(s=128, b=4, h=128, a=4, f=344, k=2, d=2, autocast=True, r=8)
    qkv = [t for t in saved_tensors("llama", ac, "sdpa", Variant(frozen=fz_qv))
           if t.name.startswith("QKV input")]
    assert [t.mult for t in qkv] == [2]
    # "all-linear" adapts every block linear: only the norms' normalised tensors go
    every = frozen_base("llama", "all-linear")
    assert layer_activation_bytes("llama", sh, "sdpa").total - layer_activation_bytes(
        "llama", sh, "sdpa", variant=Variant(frozen=every)).total == 512 * (2 * 4 * 128 - 7 * 4 * 8)



# ------------------------------------------------------------------ the recompute phase
def test_full_checkpointing_recompute_phase_bytes():
    """The bench's GPT-2 with full checkpointing (bench/peak_accuracy.py, configuration 4:
    fp32, SGD with momentum, h 128, f 512, L 2, V 1,000, s 128, b 4, no dropout), whose
    live-storage peak is 16,536,584 B inside layer 0's backward."""
    from preflight.physics.ledger import build_ledger
    from preflight.physics.inputs import Inputs

    plan = TrainingPlan.from_values(dict(
        params=655_872, trainable_params=655_872, optimizer="sgd_momentum", param_dtype="fp32",
        mixed_precision="none", micro_batch=4, seq_len=128, layers=2, hidden=128, heads=4,
        ffn_hidden=512, vocab=1000, attention="sdpa", activation_checkpointing="full",
        family="gpt2", model_type="gpt2", dropout=0.0))
    led = build_ledger(Inputs.from_plan(plan), None, 0.2)
    rec = {ln.label: ln for ln in led.lines if ln.lifetime == "recompute"}
    tok = 4 * 128
    work = rec["one layer's working set while it is recomputed (GPT block, gelu_new)"]
    # (32·h + 20·f + 16 + 4·a) B per token (gelu_new, no K/V cache under checkpointing),
    # less the layer's input, the kept checkpoint itself
    assert work.bytes == tok * (32 * 128 + 20 * 512 + 16 + 16) - tok * 4 * 128 == 7_094_272
    tmp = next(v for k, v in rec.items() if k.startswith("that layer's backward temporaries"))
    assert tmp.bytes == tok * (4 * 128 + 2 * 4 * 512) == 2_359_296
    # the gradients outgrow the inputs: the last layer recomputed (layer 0) is the moment,
    # with 1 input kept and the head's, layer 1's and layer 0's c_proj gradients made
    ins = rec["checkpointed layer inputs still kept at the last layer recomputed (layer 0)"]
    assert ins.bytes == tok * 4 * 128 == 262_144
    made = rec["gradients already made at the last layer recomputed (layer 0)"]
    block = 4 * 128 ** 2 + 2 * 128 * 512 + 512 + 9 * 128
    assert made.key == "grads" and made.bytes == 4 * (1000 * 128 + block + 512 * 128 + 128)
    assert made.bytes == 1_567_744
    states = 2 * 4 * 655_872                     # fp32 weights and momentum
    phases = led.phase_bytes()
    assert phases["recompute"] == states + 7_094_272 + 2_359_296 + 262_144 + 1_567_744
    assert phases["recompute"] == 16_530_432 == max(phases.values())
    assert led.peak_phase == "recompute"
    # the gradients made so far are a part of the gradients, not more of them
    assert led.bytes_of("grads") == 4 * 655_872
    assert led.states_bytes == 3 * 4 * 655_872
