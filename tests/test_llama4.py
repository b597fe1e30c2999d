"""Llama 4's saved activations: the tables of its RoPE (L2 q/k norm) and NoPE (temperature)
layers and of its MoE MLP (every expert over every token) against autograd on CPU, and the
layers' line of `estimate --model` on a Llama 4 config."""

import pytest

from preflight.models import formulas
from preflight.physics.activations import Shape, layer_activation_bytes
from preflight.physics.moe import MoE
from tests.model_dir import estimate_model_dir, layers_lines
from tests.test_families_moe_ssm_vlm import SCOUT

S, B, H, A, KV = 48, 2, 128, 4, 2


def _moe(experts: int, top_k: int) -> MoE:
    return MoE(experts, top_k, 96, 96, norm_topk=False, weights_f32=False, shared_gate=False,
               dense_dispatch=True)


def _table(kind: str, moe, d: int, attention: str, s: int = S, b: int = B) -> int:
    return layer_activation_bytes("llama", Shape(s=s, b=b, h=H, a=A, f=192, k=KV, d=d, moe=moe,
                                                 llama4=kind), attention).total


def test_scout_layer_kinds():
    shape = formulas.count("llama4", SCOUT)
    assert shape.llama4_layers == {"l2_moe": 36, "l2_dense": 0, "nope_moe": 12,
                                   "nope_dense": 0, "chunk": 8192, "qk_norm": 1,
                                   "temperature": 1}
    assert formulas.activation_family("llama4") == "llama"
    # Maverick's layout: MoE in every second layer, NoPE in every fourth (all MoE ones)
    mav = formulas.count("llama4_text", {**SCOUT["text_config"], "interleave_moe_layer_step": 2})
    assert (mav.llama4_layers["l2_moe"], mav.llama4_layers["l2_dense"],
            mav.llama4_layers["nope_moe"], mav.llama4_layers["nope_dense"]) == (12, 24, 12, 0)


def _job(tmp_path, *args: str) -> dict:
    return estimate_model_dir(tmp_path, "Llama-4-Scout-17B-16E", {"model_type": "llama4", **SCOUT}, "--micro-batch", "1", *args)


_layers = layers_lines


def test_estimate_sizes_scout_layers_by_their_kinds(tmp_path):
    """36 RoPE layers and 12 NoPE layers, all MoE (1 of 16 experts and the shared one)."""
    job = _job(tmp_path, "--precision", "bf16", "--seq-len", "4096", "--attention", "sdpa")
    shape = dict(s=4096, b=1, h=5120, a=40, f=16384, k=8, d=2,
                 moe=MoE(16, 1, 8192, 8192, norm_topk=False, weights_f32=False,
                         shared_gate=False, dense_dispatch=True))
    rope = layer_activation_bytes("llama", Shape(**shape, llama4="l2"), "sdpa").total
    nope = layer_activation_bytes("llama", Shape(**shape, llama4="temperature"), "sdpa").total
    lines = _layers(job)
    assert [ln["bytes"] for ln in lines] == [36 * rope + 12 * nope]
    assert "Llama 4 (RoPE + L2 q/k norm, NoPE + temperature), MoE: 1 of 16 experts per " \
           "token, shared experts 8,192 wide in 48 of 48 layers" in lines[0]["label"]


@pytest.mark.parametrize("args,why", [
    (("--precision", "bf16", "--seq-len", "16384", "--attention", "sdpa"),
     "unknown: chunked attention over 16,384 tokens (chunks of 8,192) is not modelled; "
     "sequences shorter than a chunk are"),
    (("--precision", "bf16", "--seq-len", "8192", "--attention", "sdpa"),
     "unknown: chunked attention over 8,192 tokens (chunks of 8,192) is not modelled; "
     "sequences shorter than a chunk are"),
    (("--precision", "bf16-autocast", "--seq-len", "2048", "--attention", "sdpa"),
     "unknown: Llama 4's layers are modelled in 16-bit and fp32 compute, not under autocast"),
])
def test_what_the_tables_do_not_cover_is_unknown(tmp_path, args, why):
    lines = _layers(_job(tmp_path, *args))
    assert [(ln["bytes"], ln["note"]) for ln in lines] == [(None, why)]


# ------------------------------------------------------------------ against autograd

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from tests.saved_storage import saved_bytes as _saved  # noqa: E402


def _build(n: int, *, rope: int, moe: bool, experts: int, top_k: int, dtype: str,
           attention: str, chunk=None):
    torch.manual_seed(0)
    cfg = transformers.Llama4TextConfig(
        num_hidden_layers=n, hidden_size=H, num_attention_heads=A, num_key_value_heads=KV,
        head_dim=32, intermediate_size=96, intermediate_size_mlp=192, vocab_size=64,
        num_local_experts=experts, num_experts_per_tok=top_k, no_rope_layers=[rope] * n,
        moe_layers=list(range(n)) if moe else [], attention_chunk_size=chunk,
        attn_implementation=attention)
    return transformers.Llama4TextModel(cfg).to(getattr(torch, dtype)).train()


@pytest.mark.parametrize("dtype,d", [("float32", 4), ("bfloat16", 2)])
@pytest.mark.parametrize("attention", ["sdpa", "eager"])
@pytest.mark.parametrize("rope", [1, 0], ids=["rope", "nope"])
@pytest.mark.parametrize("moe,experts,top_k", [(True, 4, 1), (True, 8, 2), (False, 4, 1)],
                         ids=["moe-4-1", "moe-8-2", "dense"])
def test_llama4_layer_matches_autograd(dtype, d, attention, rope, moe, experts, top_k):
    """One layer = a 2-layer model's saved bytes − a 1-layer model's."""
    kw = dict(rope=rope, moe=moe, experts=experts, top_k=top_k, dtype=dtype,
              attention=attention)
    ids = torch.randint(0, 64, (B, S), generator=torch.Generator().manual_seed(0))
    got = _saved(_build(2, **kw), ids) - _saved(_build(1, **kw), ids)
    want = _table("l2" if rope else "temperature", _moe(experts, top_k) if moe else None, d,
                  attention)
    assert got == want


def test_chunks_longer_than_the_sequence_are_causal_attention():
    """A chunk longer than the sequence leaves the RoPE layer's tensors as they are; from a
    chunk as long as the sequence on, transformers masks the chunks and the layer keeps
    more (the ledger says it unknown)."""
    kw = dict(rope=1, moe=True, experts=4, top_k=1, dtype="bfloat16", attention="sdpa",
              chunk=S + 1)
    ids = torch.randint(0, 64, (B, S), generator=torch.Generator().manual_seed(0))
    got = _saved(_build(2, **kw), ids) - _saved(_build(1, **kw), ids)
    assert got == _table("l2", _moe(4, 1), 2, "sdpa")
    got = _saved(_build(2, **{**kw, "chunk": S}), ids) - _saved(_build(1, **{**kw, "chunk": S}),
                                                                  ids)
    assert got > _table("l2", _moe(4, 1), 2, "sdpa")
