"""GLM-4 MoE's saved activations: llama's attention (sdpa's output copied for o_proj, as
the partial rotary's concatenation lays Q out by heads) and the DeepSeek-V3-style router
with routed and shared experts, against autograd on CPU; and the layers' line of
`estimate --model` on GLM-4.5-Air."""

import pytest

from preflight.physics.activations import Shape, layer_activation_bytes
from preflight.physics.moe import MoE
from tests.model_dir import estimate_model_dir, layers_lines
from tests.test_families_moe_ssm_vlm import GLM45_AIR

S, B, H, A, KV = 48, 2, 128, 4, 2


def _router(experts: int, top_k: int, fe: int, fs: int) -> MoE:
    return MoE(experts, top_k, fe, fs, norm_topk=True, weights_f32=True, router_upcast=True,
               shared_gate=False)


def _job(tmp_path, *args: str) -> dict:
    return estimate_model_dir(tmp_path, "GLM-4.5-Air", {"model_type": "glm4_moe", **GLM45_AIR}, "--micro-batch", "1", "--seq-len", "4096", *args)


_layers = layers_lines


def test_estimate_sizes_glm45_air_layers(tmp_path):
    """One dense layer and 45 MoE layers (8 of 128 experts, one shared), bf16, sdpa."""
    job = _job(tmp_path, "--precision", "bf16", "--attention", "sdpa")
    # head_dim 128 (96 heads × 128 = 12,288, not h), half of it rotated
    common = dict(s=4096, b=1, h=4096, a=96, f=10944, k=8, d=2, out_copy=True, hd=128, rot=64)
    moe = layer_activation_bytes("llama", Shape(**common, moe=_router(128, 8, 1408, 1408)),
                                 "sdpa").total
    dense = layer_activation_bytes("llama", Shape(**common), "sdpa").total
    lines = _layers(job)
    assert [ln["bytes"] for ln in lines] == [45 * moe + dense]
    assert "MoE: 8 of 128 experts per token, shared experts 1,408 wide in 45 of 46 layers" in \
        lines[0]["label"]


@pytest.mark.parametrize("args,why", [
    (("--precision", "bf16", "--attention", "flash"),
     "unknown: GLM-4 MoE's attention is modelled for sdpa and eager, not flash"),
    (("--precision", "bf16-autocast"),
     "unknown: GLM-4 MoE's layers are modelled in 16-bit and fp32 compute, not under "
     "autocast"),
])
def test_what_the_tables_do_not_cover_is_unknown(tmp_path, args, why):
    lines = _layers(_job(tmp_path, *args))
    assert [(ln["bytes"], ln["note"]) for ln in lines] == [(None, why)]


# ------------------------------------------------------------------ against autograd

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from tests.saved_storage import saved_bytes_alive as _saved  # noqa: E402


@pytest.mark.parametrize("dtype,d", [("float32", 4), ("bfloat16", 2)])
@pytest.mark.parametrize("attention", ["sdpa", "eager"])
@pytest.mark.parametrize("moe", [True, False], ids=["moe", "dense"])
@pytest.mark.parametrize("rotary", [0.5, 1.0])
def test_glm4_moe_layer_matches_autograd(dtype, d, attention, moe, rotary):
    """One layer = a 2-layer model's saved bytes − a 1-layer model's."""
    def build(n):
        torch.manual_seed(0)
        cfg = transformers.Glm4MoeConfig(
            num_hidden_layers=n, hidden_size=H, num_attention_heads=A, num_key_value_heads=KV,
            head_dim=32, intermediate_size=192, moe_intermediate_size=96, vocab_size=64,
            n_routed_experts=4, num_experts_per_tok=2, first_k_dense_replace=0 if moe else n,
            n_group=1, topk_group=1, partial_rotary_factor=rotary,
            attn_implementation=attention)
        return transformers.Glm4MoeModel(cfg).to(getattr(torch, dtype)).train()

    ids = torch.randint(0, 64, (B, S), generator=torch.Generator().manual_seed(0))
    got = _saved(build(2), ids) - _saved(build(1), ids)
    shape = Shape(s=S, b=B, h=H, a=A, f=192, k=KV, d=d, out_copy=True,
                  moe=_router(4, 2, 96, 96) if moe else None)
    assert got == layer_activation_bytes("llama", shape, attention).total
