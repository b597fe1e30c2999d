"""The GPT-style layers' activation tables against what autograd saves: GPT-2, GPT-NeoX,
Phi, OPT, BLOOM and ModernBERT (the gpt2 table with each one's traits,
`physics.decoders`), and RoBERTa (the bert table).

One layer = the saved bytes of a 2-layer transformers model − those of a 1-layer one
(ModernBERT: 3 − 2, its first layer having no attention norm),
storages counted once, parameters and autocast's weight copies excluded, on CPU, dropout
0, for eager and sdpa attention in bf16, fp32 and bf16 autocast over fp32 weights.
The tables follow CUDA, whose layer_norm keeps mean and rstd in fp32 for 16-bit inputs;
CPU's keeps them in the input dtype: (4 − 2) bytes less per statistic and LayerNorm in
bf16, subtracted here (as tests/test_estimate_calibration.py does for BERT).
"""

import pytest

from preflight.physics.activations import Shape, Variant, layer_activation_bytes
from preflight.physics.decoders import decoder_of

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from tests.test_estimate_calibration import _saved  # noqa: E402  (needs torch)

S, B, H, A, F = 48, 2, 128, 4, 512

#: model_type → (its layer-count field, a tiny config with dropout 0, attention kernels
#: transformers 5.24 gives it)
FAMILIES = {
    "gpt2": ("n_layer", dict(n_embd=H, n_head=A, vocab_size=64, n_positions=S, resid_pdrop=0.0,
                             embd_pdrop=0.0, attn_pdrop=0.0), ("eager", "sdpa")),
    "gpt_neox": ("num_hidden_layers", dict(hidden_size=H, num_attention_heads=A,
                                           intermediate_size=F, vocab_size=64),
                 ("eager", "sdpa")),
    "phi": ("num_hidden_layers", dict(hidden_size=H, num_attention_heads=A, intermediate_size=F,
                                      vocab_size=64, resid_pdrop=0.0, embd_pdrop=0.0,
                                      attention_dropout=0.0), ("eager", "sdpa")),
    "opt": ("num_hidden_layers", dict(hidden_size=H, num_attention_heads=A, ffn_dim=F,
                                      vocab_size=64, dropout=0.0, attention_dropout=0.0,
                                      pad_token_id=0), ("eager", "sdpa")),
    "bloom": ("n_layer", dict(hidden_size=H, n_head=A, vocab_size=64, hidden_dropout=0.0,
                              attention_dropout=0.0), ("eager",)),
    "modernbert": ("num_hidden_layers", dict(hidden_size=H, num_attention_heads=A,
                                             intermediate_size=F // 2, vocab_size=64,
                                             pad_token_id=0, embedding_dropout=0.0,
                                             mlp_dropout=0.0, attention_dropout=0.0),
                   ("eager", "sdpa")),
}
_CASES = [(fam, attn) for fam, (_, _, attns) in FAMILIES.items() for attn in attns]


def _per_layer(arch: str, attn: str, dtype: str, autocast: bool) -> int:
    field, cfg, _ = FAMILIES[arch]
    ids = torch.randint(0, 64, (B, S), generator=torch.Generator().manual_seed(0))
    got = []
    for n in ((3, 2) if arch == "modernbert" else (2, 1)):
        torch.manual_seed(0)
        config = transformers.AutoConfig.for_model(arch, attn_implementation=attn,
                                                   **{**cfg, field: n})
        model = transformers.AutoModel.from_config(config).to(getattr(torch, dtype)).train()
        got.append(_saved(model, ids, autocast))
    return got[0] - got[1]


@pytest.mark.parametrize("arch,attn", _CASES, ids=[f"{f}-{a}" for f, a in _CASES])
@pytest.mark.parametrize("dtype,d,autocast", [("bfloat16", 2, False), ("float32", 4, False),
                                              ("float32", 2, True)],
                         ids=["bf16", "fp32", "autocast"])
def test_layer_table_equals_autograd(arch, attn, dtype, d, autocast):
    dec = decoder_of(arch)
    # transformers' GPT-2: gelu_new in Python ops, and with sdpa the K, V copies its cache
    # makes (Q, a view of the fused c_attn output, keeps that alive)
    variant = Variant(dropout=False, decoder=dec, gelu="tanh-unfused" if arch == "gpt2"
                      else "fused", kv_cache=arch == "gpt2" and attn == "sdpa")
    f = F // 2 if arch == "modernbert" else F
    shape = Shape(s=S, b=B, h=H, a=A, f=f, k=A, d=d, autocast=autocast, cpu_autocast=autocast)
    want = layer_activation_bytes("gpt2", shape, attn, variant=variant).total
    norms = 1 if dec.parallel == 1 else 2
    cpu = norms * 2 * (4 - d) * S * B if dtype == "bfloat16" else 0
    assert _per_layer(arch, attn, dtype, autocast) == want - cpu


@pytest.mark.parametrize("attn", ["eager", "sdpa"])
@pytest.mark.parametrize("dtype,d,autocast", [("bfloat16", 2, False), ("float32", 4, False),
                                              ("float32", 2, True)],
                         ids=["bf16", "fp32", "autocast"])
def test_roberta_layer_is_the_bert_table(attn, dtype, d, autocast):
    ids = torch.randint(0, 64, (B, S), generator=torch.Generator().manual_seed(0))
    got = []
    for n in (2, 1):
        torch.manual_seed(0)
        config = transformers.RobertaConfig(
            hidden_size=H, num_attention_heads=A, intermediate_size=F, num_hidden_layers=n,
            vocab_size=64, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
            attn_implementation=attn)
        model = transformers.RobertaModel(config, add_pooling_layer=False).to(
            getattr(torch, dtype)).train()
        got.append(_saved(model, ids, autocast))
    shape = Shape(s=S, b=B, h=H, a=A, f=F, k=A, d=d, autocast=autocast, cpu_autocast=autocast)
    want = layer_activation_bytes("bert", shape, attn, variant=Variant(dropout=False)).total
    cpu = 2 * 2 * (4 - d) * S * B if dtype == "bfloat16" else 0
    assert got[0] - got[1] == want - cpu


def test_estimate_reads_the_decoder_traits():
    """The estimator's layer table for an OPT model is OPT's (ReLU keeps one f-wide tensor,
    not GELU's two)."""
    from preflight.physics.inputs import Inputs
    from preflight.physics.layers import layer_activations

    common = dict(family="gpt2", hidden=H, heads=A, ffn_hidden=F, micro_batch=B, seq_len=S,
                  param_dtype="bf16", mixed_precision="bf16", attention="sdpa")
    opt = layer_activations(Inputs(model_type="opt", **common))
    neo = layer_activations(Inputs(model_type="gpt_neo", **common))
    assert neo.total - opt.total == 2 * F * S * B       # one bf16 f-wide tensor per token
