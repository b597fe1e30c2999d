"""StarCoder 2's and StableLM's layers against what autograd saves.

StarCoder 2 is GPT-2's table with separate q/k/v projections, an fp32 eager softmax and
grouped KV heads (`physics.decoders`); StableLM is llama's table with nn.LayerNorm on the
residual stream and the partial rotary's concatenation (`physics.dense`). One layer = the
saved bytes of a 2-layer transformers model − those of a 1-layer one, storages counted
once, parameters and autocast's weight copies excluded, on CPU, for eager and sdpa
attention in bf16, fp32 and bf16 autocast over fp32 weights, with grouped KV heads and a
head_dim other than hidden / heads.

What CPU keeps apart from CUDA, which the tables follow, is subtracted: LayerNorm's mean
and rstd in the input's dtype for 16-bit inputs (CUDA: fp32), and dropout's noise, a
tensor of the input's dtype where CUDA's fused dropout keeps a 1-byte mask.
"""

import pytest

from preflight.models import formulas
from preflight.physics.activations import Shape, Variant, layer_activation_bytes
from preflight.physics.decoders import decoder_of
from preflight.physics.dense import layer_of

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from tests.test_estimate_calibration import _saved  # noqa: E402  (needs torch)

S, B, H, A, F = 48, 2, 128, 4, 512
PRECISIONS = [("bfloat16", 2, False), ("float32", 4, False), ("float32", 2, True)]
PRECISION_IDS = ["bf16", "fp32", "autocast"]


def _per_layer(arch: str, attn: str, dtype: str, autocast: bool, **cfg) -> int:
    ids = torch.randint(0, 64, (B, S), generator=torch.Generator().manual_seed(0))
    got = []
    for n in (2, 1):
        torch.manual_seed(0)
        config = transformers.AutoConfig.for_model(
            arch, attn_implementation=attn, hidden_size=H, num_attention_heads=A,
            intermediate_size=F, vocab_size=64, num_hidden_layers=n, **cfg)
        model = transformers.AutoModel.from_config(config).to(getattr(torch, dtype)).train()
        got.append(_saved(model, ids, autocast))
    return got[0] - got[1]


def _layernorm_stats_on_cpu(dtype: str, d: int) -> int:
    # two LayerNorms a layer, mean and rstd per token each: d bytes on CPU, 4 on CUDA
    return 2 * 2 * (4 - d) * S * B if dtype == "bfloat16" else 0


@pytest.mark.parametrize("attn", ["eager", "sdpa"])
@pytest.mark.parametrize("dtype,d,autocast", PRECISIONS, ids=PRECISION_IDS)
@pytest.mark.parametrize("k,hd", [(A, 0), (2, 0), (2, 48)],
                         ids=["mha", "gqa", "gqa-head-dim"])
def test_starcoder2_layer_is_the_gpt2_table_with_its_traits(attn, dtype, d, autocast, k, hd):
    cfg = dict(num_key_value_heads=k, residual_dropout=0.0, embedding_dropout=0.0,
               attention_dropout=0.0, **({"head_dim": hd} if hd else {}))
    shape = Shape(s=S, b=B, h=H, a=A, f=F, k=k, d=d, autocast=autocast,
                  cpu_autocast=autocast, hd=hd)
    want = layer_activation_bytes("gpt2", shape, attn, variant=Variant(
        dropout=False, decoder=decoder_of("starcoder2"))).total
    assert _per_layer("starcoder2", attn, dtype, autocast, **cfg) == \
        want - _layernorm_stats_on_cpu(dtype, d)


@pytest.mark.parametrize("dtype,d,autocast", PRECISIONS, ids=PRECISION_IDS)
def test_starcoder2_dropout_masks(dtype, d, autocast):
    """StarCoder 2's checkpoints train with dropout 0.1: the residual dropouts after o_proj
    and c_proj and the attention probabilities' (eager) keep their masks, and in fp32
    compute the probabilities' dropout output is one more a·s tensor."""
    shape = Shape(s=S, b=B, h=H, a=A, f=F, k=2, d=d, autocast=autocast, cpu_autocast=autocast)
    want = layer_activation_bytes("gpt2", shape, "eager", variant=Variant(
        dropout=True, decoder=decoder_of("starcoder2"))).total
    # CPU's noise tensors: the residual ones in the linears' output dtype (16-bit under
    # autocast), the probabilities' in the softmax's output dtype (fp32 under autocast)
    resid = 2 if autocast else d
    probs = 4 if autocast else d
    cpu_noise = (2 * H * (resid - 1) + A * S * (probs - 1)) * S * B
    got = _per_layer("starcoder2", "eager", dtype, autocast, num_key_value_heads=2,
                     residual_dropout=0.1, embedding_dropout=0.1, attention_dropout=0.1)
    assert got == want - _layernorm_stats_on_cpu(dtype, d) + cpu_noise


@pytest.mark.parametrize("attn", ["eager", "sdpa"])
@pytest.mark.parametrize("dtype,d,autocast", PRECISIONS, ids=PRECISION_IDS)
@pytest.mark.parametrize("k,rotary", [(A, 0.25), (2, 0.25), (2, 1.0)],
                         ids=["mha", "gqa", "gqa-full-rotary"])
def test_stablelm_layer_is_the_llama_table_with_its_traits(attn, dtype, d, autocast, k,
                                                           rotary):
    cfg = dict(num_key_value_heads=k, hidden_dropout=0.0, attention_dropout=0.0,
               partial_rotary_factor=rotary)
    shape = Shape(s=S, b=B, h=H, a=A, f=F, k=k, d=d, autocast=autocast, cpu_autocast=autocast)
    want = layer_activation_bytes("llama", shape, attn,
                                  variant=Variant(layer=layer_of("stablelm"))).total
    assert _per_layer("stablelm", attn, dtype, autocast, **cfg) == \
        want - _layernorm_stats_on_cpu(dtype, d)


def test_the_families_resolve_to_those_tables():
    assert formulas.activation_family("starcoder2", {}) == "gpt2"
    assert formulas.activation_family("stablelm", {"use_qkv_bias": True}) == "llama"
    assert formulas.activation_family("stablelm", {"qk_layernorm": True}) is None
