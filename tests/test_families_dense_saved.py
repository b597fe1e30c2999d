"""The llama-style dense families' activation tables against what autograd saves.

One layer = the saved bytes of a 2-layer transformers model − those of a 1-layer one (the
embedding, final norm and rotary tables cancel), storages counted once, parameters and
autocast's weight copies excluded (tests/test_estimate_calibration.py's counter), on CPU,
for a tiny config of each family with head_dim ≠ hidden / heads: eager and sdpa
attention, bf16, fp32 and bf16 autocast over fp32 weights. The table is the llama one
with the family's layer traits (`physics.dense.layer_of(model_type)`); the equality is
exact.
"""

import json

import pytest

from preflight.models import formulas
from preflight.physics.activations import Shape, Variant, layer_activation_bytes
from preflight.physics.dense import LAYERS, layer_of
from tests.conftest import causal_lm_script, run_cli

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from tests.test_estimate_calibration import _saved  # noqa: E402  (needs torch)

S, B, H, A, K, F, HD = 48, 2, 128, 4, 2, 344, 24
TINY = dict(hidden_size=H, num_attention_heads=A, num_key_value_heads=K, intermediate_size=F,
            vocab_size=64, pad_token_id=0, head_dim=HD)

#: model_type → what its tiny config adds (GLM rotates half of each head by default; OLMo 3's
#: two layers are sliding-window ones, the window longer than the sequence)
FAMILIES = {"llama": {}, "mistral": {}, "qwen2": {}, "qwen3": {}, "smollm3": {}, "olmo": {},
            "olmo2": {}, "olmo3": {}, "gemma": {}, "gemma2": {}, "gemma3_text": {}, "phi3": {},
            "glm": {"partial_rotary_factor": 0.5}, "glm4": {"partial_rotary_factor": 0.5},
            "phi3-partial": {"partial_rotary_factor": 0.5}}
#: transformers 5.24's Gemma 2 has no sdpa path
_EAGER_ONLY = ("gemma2",)

_CASES = [(fam, attn) for fam in FAMILIES for attn in ("sdpa", "eager")
          if not (attn == "sdpa" and fam in _EAGER_ONLY)]


def _per_layer(arch: str, cfg: dict, attn: str, dtype: str, autocast: bool) -> int:
    ids = torch.randint(0, 64, (B, S), generator=torch.Generator().manual_seed(0))
    got = []
    for n in (2, 1):
        torch.manual_seed(0)
        config = transformers.AutoConfig.for_model(arch, num_hidden_layers=n,
                                                   attn_implementation=attn, **cfg)
        model = transformers.AutoModel.from_config(config).to(getattr(torch, dtype)).train()
        got.append(_saved(model, ids, autocast))
    return got[0] - got[1]


@pytest.mark.parametrize("fam,attn", _CASES, ids=[f"{f}-{a}" for f, a in _CASES])
@pytest.mark.parametrize("dtype,d,autocast", [("bfloat16", 2, False), ("float32", 4, False),
                                              ("float32", 2, True)],
                         ids=["bf16", "fp32", "autocast"])
def test_layer_table_equals_autograd(fam, attn, dtype, d, autocast):
    arch = fam.split("-")[0]
    cfg = {**TINY, **FAMILIES[fam]}
    rot = int(HD * cfg.get("partial_rotary_factor", 1.0))
    shape = Shape(s=S, b=B, h=H, a=A, f=F, k=K, d=d, hd=HD, rot=rot, autocast=autocast,
                  cpu_autocast=autocast)
    want = layer_activation_bytes("llama", shape, attn,
                                  variant=Variant(dropout=False, layer=layer_of(arch)))
    assert _per_layer(arch, cfg, attn, dtype, autocast) == want.total


@pytest.mark.parametrize("dtype,d,autocast", [("bfloat16", 2, False), ("float32", 4, False),
                                              ("float32", 2, True)],
                         ids=["bf16", "fp32", "autocast"])
def test_olmo3_window_shorter_than_the_sequence_under_sdpa_is_beyond_the_table(dtype, d,
                                                                              autocast):
    """A sliding window shorter than the sequence makes transformers pass sdpa a mask: K
    and V are then repeated to every head (no native GQA with a mask) and each layer keeps
    the (b, 1, s, s) mask in the compute dtype. The table assumes the unmasked kernel, so it
    is short by b·s·(2·(Q − K widths) + s)·d per layer; the equality holds for eager."""
    cfg = {**TINY, "sliding_window": 16}
    shape = Shape(s=S, b=B, h=H, a=A, f=F, k=K, d=d, hd=HD, rot=HD, autocast=autocast,
                  cpu_autocast=autocast)
    variant = Variant(dropout=False, layer=layer_of("olmo3"))
    for attn in ("eager", "sdpa"):
        want = layer_activation_bytes("llama", shape, attn, variant=variant).total
        gap = B * S * (2 * (A - K) * HD + S) * d if attn == "sdpa" else 0
        assert _per_layer("olmo3", cfg, attn, dtype, autocast) - want == gap


def test_every_llama_style_family_has_its_traits_or_is_llama():
    """Each dense llama-style model_type the formulas know maps to the llama block, and
    its traits are Llama's unless `LAYERS` says otherwise (each listed one is measured
    above)."""
    dense = [a for a in formulas.ARCHITECTURES if formulas.activation_family(a) == "llama"
             and a not in ("mixtral", "qwen2_moe", "qwen3_moe", "deepseek_v2", "deepseek_v3",
                           "megatron", "gemma3n_text",
                           # mixture-of-experts and image-text models: measured in their own
                           # tests (test_gpt_oss, test_llama4, test_glm4_moe, test_moe,
                           # test_families_moe_ssm_vlm, test_families_llava_starcoder2),
                           # and StableLM (test_families_starcoder2_stablelm_saved)
                           "gpt_oss", "llama4", "llama4_text", "glm4_moe", "olmoe",
                           "qwen2_5_vl", "qwen2_vl", "qwen3_vl", "llava", "mistral3",
                           "stablelm")]
    assert set(LAYERS) - {"gemma3", "olmoe", "stablelm", "qwen3_vl"} <= \
        {f.split("-")[0] for f in FAMILIES}
    assert {a for a in dense if a != "gemma3"} <= {f.split("-")[0] for f in FAMILIES}


def test_estimate_reads_the_family_layer(tmp_path):
    """A script training `Qwen3ForCausalLM(Qwen3Config(...))`: the layers' line is the
    llama table with Qwen3's q/k norms and its head_dim (not hidden / heads)."""
    (tmp_path / "train.py").write_text(causal_lm_script(
        "Qwen3Config", "Qwen3ForCausalLM",
        "num_hidden_layers=3, hidden_size=128, num_attention_heads=4, num_key_value_heads=2, "
        "intermediate_size=344, vocab_size=1000, head_dim=24, attn_implementation='sdpa'",
        cast=".to(torch.bfloat16)"))
    r = run_cli("estimate", str(tmp_path / "train.py"), "--format", "json")
    assert r.returncode in (0, 1), r.stderr
    job = json.loads(r.stdout)["jobs"][0]
    lines = [ln["bytes"] for ln in job["ledger"]["lines"]
             if ln["label"].startswith("3 layers' saved")]
    shape = Shape(s=128, b=4, h=128, a=4, f=344, k=2, d=2, hd=24, rot=24)
    one = layer_activation_bytes("llama", shape, "sdpa", variant=Variant(layer=LAYERS["qwen3"]))
    plain = layer_activation_bytes("llama", Shape(s=128, b=4, h=128, a=4, f=344, k=2, d=2),
                                   "sdpa")
    assert lines == [3 * one.total] and one.total != plain.total


@pytest.mark.parametrize("fam", ["qwen3", "olmo2", "gemma3_text", "glm4"])
@pytest.mark.parametrize("attn", ["sdpa", "eager"])
def test_frozen_base_with_lora_equals_autograd(fam, attn):
    """peft's LoRA on q_proj and v_proj over a frozen fp32 base: the traits' entries kept
    for a weight's gradient alone (normalised tensors, o_proj's input copy) go with the
    frozen weights, the others stay. One layer = 3 − 2 layers (layer 0 keeps less)."""
    peft = pytest.importorskip("peft")
    from preflight.physics.lora import frozen_base

    cfg = {**TINY, **FAMILIES[fam]}
    ids = torch.randint(0, 64, (B, S), generator=torch.Generator().manual_seed(0))
    got = []
    for n in (3, 2):
        torch.manual_seed(0)
        config = transformers.AutoConfig.for_model(fam, num_hidden_layers=n,
                                                   attn_implementation=attn, **cfg)
        model = transformers.AutoModel.from_config(config).float().train()
        model = peft.get_peft_model(model, peft.LoraConfig(r=8, lora_dropout=0.0,
                                                           target_modules=["q_proj", "v_proj"]))
        got.append(_saved(model, ids))
    rot = int(HD * cfg.get("partial_rotary_factor", 1.0))
    shape = Shape(s=S, b=B, h=H, a=A, f=F, k=K, d=4, hd=HD, rot=rot, r=8)
    variant = Variant(dropout=False, layer=layer_of(fam),
                      frozen=frozen_base("llama", ["q_proj", "v_proj"], 16, ()))
    assert got[0] - got[1] == layer_activation_bytes("llama", shape, attn, variant=variant).total
