"""gpt-oss's saved activations: the eager attention with sinks, its RMSNorm's fp32
normalised tensor and the top-k-softmax router with the clamped SwiGLU experts, against
autograd on CPU; and the layers' line of `estimate --model` on a gpt-oss config."""

import pytest

from preflight.physics.activations import Shape, embedding_and_head_bytes, layer_activation_bytes
from preflight.physics.moe import MoE
from tests.model_dir import estimate_model_dir, layers_lines
from tests.test_families_moe_ssm_vlm import GPT_OSS_20B

S, B, H, A, KV = 48, 2, 128, 4, 2


def _job(tmp_path, *args: str) -> dict:
    return estimate_model_dir(tmp_path, "gpt-oss-20b", {"model_type": "gpt_oss", **GPT_OSS_20B}, "--micro-batch", "2", "--seq-len", "2048", *args)


_layers = layers_lines


def test_estimate_sizes_gpt_oss_layers_with_eager_attention(tmp_path):
    """No attention stated: eager, transformers' default for gpt-oss (it has no sdpa path
    for the sinks); the 24 layers by the gpt-oss table, the final norm's fp32 tensor."""
    job = _job(tmp_path, "--precision", "bf16")
    shape = Shape(s=2048, b=2, h=2880, a=64, f=2880, k=8, d=2, sinks=True,
                  moe=MoE(32, 4, 2880, topk_softmax=True, weights_f32=False))
    la = layer_activation_bytes("llama", shape, "eager")
    lines = _layers(job)
    # the layers' line without the s² softmax output, which has a line of its own
    assert [ln["bytes"] for ln in lines] == [24 * (la.total - la.scores)]
    assert "attention sinks, MoE: 4 of 32 experts per token, eager" in lines[0]["label"]
    scores = [ln for ln in job["ledger"]["lines"]
              if ln["label"].startswith("attention scores materialised")]
    assert [ln["bytes"] for ln in scores] == [24 * la.scores] == [24 * 2 * 2048 * 64 * 2048 * 2]
    assert ("attention implementation not given: eager assumed (transformers' default for "
            "gpt-oss, which has no sdpa path)") in job["ledger"]["assumptions"]
    head = [ln for ln in job["ledger"]["lines"]
            if ln["label"] == "embedding output, final norm and lm_head input"]
    assert [ln["bytes"] for ln in head] == [embedding_and_head_bytes("llama", shape)[0]]
    assert embedding_and_head_bytes("llama", shape)[0] == 2 * 2048 * ((4 + 4 + 2) * 2880 + 4)


@pytest.mark.parametrize("args,why", [
    (("--precision", "bf16", "--attention", "sdpa"),
     "unknown: gpt-oss's attention with sinks is modelled for eager attention (its "
     "transformers default), not sdpa"),
    (("--precision", "bf16-autocast"),
     "unknown: gpt-oss's layers are modelled in 16-bit and fp32 compute, not under autocast"),
])
def test_what_the_table_does_not_cover_is_unknown(tmp_path, args, why):
    lines = _layers(_job(tmp_path, *args))
    assert [(ln["bytes"], ln["note"]) for ln in lines] == [(None, why)]


# ------------------------------------------------------------------ against autograd

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from tests.saved_storage import saved_bytes as _saved  # noqa: E402


@pytest.mark.parametrize("dtype,d", [("float32", 4), ("bfloat16", 2)])
@pytest.mark.parametrize("experts,top_k", [(4, 2), (8, 2), (4, 1), (8, 4)])
@pytest.mark.parametrize("layer_type", ["full_attention", "sliding_attention"])
def test_gpt_oss_layer_matches_autograd(dtype, d, experts, top_k, layer_type):
    """One layer = a 2-layer model's saved bytes − a 1-layer model's (eager attention, the
    sliding window shorter than the sequence)."""
    def build(n):
        torch.manual_seed(0)
        cfg = transformers.GptOssConfig(
            num_hidden_layers=n, hidden_size=H, num_attention_heads=A, num_key_value_heads=KV,
            head_dim=32, intermediate_size=96, vocab_size=64, num_local_experts=experts,
            num_experts_per_tok=top_k, layer_types=[layer_type] * n, sliding_window=16,
            attn_implementation="eager")
        return transformers.GptOssModel(cfg).to(getattr(torch, dtype)).train()

    ids = torch.randint(0, 64, (B, S), generator=torch.Generator().manual_seed(0))
    got = _saved(build(2), ids) - _saved(build(1), ids)
    shape = Shape(s=S, b=B, h=H, a=A, f=96, k=KV, d=d, sinks=True,
                  moe=MoE(experts, top_k, 96, topk_softmax=True, weights_f32=False))
    assert got == layer_activation_bytes("llama", shape, "eager").total
