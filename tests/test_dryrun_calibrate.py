"""Calibration blocks under CUDA-layout emulation: the measured bytes of a GPT-2 block
reproduce Korthikanti's s·b·h·(34 + 5·a·s/h) to the byte, plus the named extras."""
import pytest

torch = pytest.importorskip("torch")

from preflight.dryrun.calibrate import BlockSpec, coefficients, measure_block  # noqa: E402

B, S, H, A = 2, 64, 256, 4


def test_gpt2_bf16_eager_is_korthikanti_exactly():
    m = measure_block(BlockSpec(kind="gpt2", hidden=H, heads=A, precision="bf16"), B, S)
    sbh = S * B * H
    # 34·sbh + 5·a·s²·b (Korthikanti) + the s×s causal mask that masked_fill saves (1 B)
    # + LayerNorm mean and rstd (2 LNs × 2 × s·b × 2 B on CPU in bf16)
    assert m.saved == 34 * sbh + 5 * A * S * S * B + S * S + 8 * S * B
    assert m.copies == 0


def test_gpt2_bf16_sdpa_drops_the_s2_term():
    m = measure_block(BlockSpec(kind="gpt2", hidden=H, heads=A, precision="bf16",
                                attention="sdpa"), B, S)
    # flash layout: no s² matrix, an fp32 logsumexp of b·a·s instead
    assert m.saved == 34 * S * B * H + 4 * A * S * B + 8 * S * B


@pytest.mark.parametrize("kind", ["gpt2", "llama"])
@pytest.mark.parametrize("precision,nbytes", [("bf16", 2), ("bf16-mixed", 4)])
def test_full_checkpointing_keeps_only_the_block_input(kind, precision, nbytes):
    m = measure_block(BlockSpec(kind=kind, hidden=H, heads=A, precision=precision,
                                checkpointing="full"), B, S)
    # the residual stream is fp32 under autocast (fp32 embeddings + bf16 branches)
    assert m.saved == nbytes * S * B * H


def test_autocast_copies_are_the_bf16_linear_weights():
    m = measure_block(BlockSpec(kind="gpt2", hidden=H, heads=A, precision="bf16-mixed"), B, S)
    linear_weights = 3 * H * H + H * H + 4 * H * H + 4 * H * H
    assert m.copies == 2 * linear_weights


def test_llama_coefficients_scale_with_ffn_width():
    c = {f: coefficients(BlockSpec(kind="llama", hidden=H, heads=A, ffn=f, precision="bf16",
                                   attention="sdpa"), b=1)[0] for f in (768, 1024)}
    # SwiGLU saves gate output, silu output, up output and their product: 4 × 2 B × f
    assert c[1024] - c[768] == pytest.approx(8 * (1024 - 768) / H, abs=1e-9)


def _predicted(spec, b, s):
    from preflight.physics.activations import Shape, layer_activation_bytes
    sh = Shape(s=s, b=b, h=spec.hidden, a=spec.heads, f=spec.ffn or 4 * spec.hidden,
               k=spec.kv_heads or spec.heads, d=4 if spec.precision == "fp32" else 2,
               autocast=spec.precision == "bf16-mixed")
    return layer_activation_bytes(spec.kind, sh, attention=spec.attention,
                                  checkpointing=spec.checkpointing).total


@pytest.mark.parametrize("precision", ["bf16", "fp32"])
@pytest.mark.parametrize("attention", ["eager", "sdpa"])
def test_estimator_llama_table_matches_measurement(precision, attention):
    spec = BlockSpec(kind="llama", hidden=H, heads=A, kv_heads=2, ffn=768,
                     precision=precision, attention=attention)
    assert measure_block(spec, B, S).saved == _predicted(spec, B, S)


def test_estimator_gpt2_sdpa_matches_but_for_cpu_layernorm_stats():
    spec = BlockSpec(kind="gpt2", hidden=H, heads=A, precision="bf16", attention="sdpa")
    # CPU LayerNorm keeps bf16 mean/rstd for bf16 input (CUDA: fp32), 8 B per token less
    assert measure_block(spec, B, S).saved == _predicted(spec, B, S) - 8 * S * B
