"""LLaVA, Mistral 3 (with a Mistral or a Ministral-3 language model), StarCoder 2 and
StableLM: the formula's count, every parameter tensor's shape and every
registered buffer equal what transformers builds on torch's meta device, for the config
classes' own defaults (LlavaConfig's is the llava-1.5-7b layout, Mistral3Config's the
Mistral-Small-3.1-24B one, StableLmConfig's StableLM-3B-4E1T's, Starcoder2Config's a
30-layer 3072-wide model) and for small configs that switch each option; the names they
go by; and the language layers of the image-text models against llama's table
(StarCoder 2's and StableLM's layers: tests/test_families_starcoder2_stablelm_saved.py)."""

import collections
import json

import pytest

from preflight.models import formulas
from tests.conftest import run_cli

IMAGE_TEXT, CAUSAL = "AutoModelForImageTextToText", "AutoModelForCausalLM"

#: (model_type, config fields, the class that loads it)
CASES = [
    # the config classes' defaults
    ("llava", {}, IMAGE_TEXT),
    ("mistral3", {}, IMAGE_TEXT),
    ("starcoder2", {}, CAUSAL),
    ("stablelm", {}, CAUSAL),
    # LLaVA: a Mistral language model, several feature layers, no projector bias; the text
    # config's tying; a SigLIP tower and a Qwen2 language model
    ("llava", dict(text_config=dict(num_hidden_layers=2, model_type="mistral"),
                   vision_config=dict(num_hidden_layers=1), vision_feature_layer=[-2, -5],
                   multimodal_projector_bias=False), IMAGE_TEXT),
    ("llava", dict(text_config=dict(num_hidden_layers=2, tie_word_embeddings=True),
                   vision_config=dict(num_hidden_layers=1, image_size=336, patch_size=14)),
     IMAGE_TEXT),
    ("llava", dict(text_config=dict(num_hidden_layers=2, model_type="qwen2"),
                   vision_config=dict(model_type="siglip_vision_model", num_hidden_layers=1)),
     IMAGE_TEXT),
    # Mistral 3: sub-configs given as dicts take their classes' defaults; a Ministral-3
    # language model (Ministral-3's layout), untied, biased projector, two feature layers,
    # a 3×3 patch merger
    ("mistral3", dict(text_config=dict(num_hidden_layers=2),
                      vision_config=dict(num_hidden_layers=1)), IMAGE_TEXT),
    ("mistral3", dict(text_config=dict(num_hidden_layers=2, model_type="ministral3",
                                       head_dim=64),
                      vision_config=dict(num_hidden_layers=1, hidden_size=256,
                                         num_attention_heads=4),
                      tie_word_embeddings=False, multimodal_projector_bias=True,
                      vision_feature_layer=[-1, -2], spatial_merge_size=3), IMAGE_TEXT),
    # StarCoder 2 without biases, untied, head_dim ≠ hidden / heads
    ("starcoder2", dict(num_hidden_layers=2, use_bias=False, tie_word_embeddings=False,
                        head_dim=64), CAUSAL),
    # StableLM with q/k/v biases, per-head q/k LayerNorms, the parallel residual, grouped
    # KV heads, half-rotary, tied (StableLM-2-12B's options)
    ("stablelm", dict(num_hidden_layers=2, use_qkv_bias=True, qk_layernorm=True,
                      use_parallel_residual=True, num_key_value_heads=8,
                      partial_rotary_factor=0.5, tie_word_embeddings=True), CAUSAL),
]

#: the defaults' counts (what the catalogue's checkpoints of these layouts are checked by)
DEFAULTS = {"llava": 7_062_902_784, "mistral3": 23_340_272_640,
            "starcoder2": 3_030_371_328, "stablelm": 2_795_443_200}


@pytest.mark.parametrize("arch,params", sorted(DEFAULTS.items()))
def test_default_configs_count(arch, params):
    shape = formulas.count(arch, {})
    assert (shape.params, shape.active_params) == (params, params)


@pytest.mark.parametrize("cfg,arch", [
    ({"architectures": ["LlavaForConditionalGeneration"]}, "llava"),
    ({"architectures": ["LlavaNextForConditionalGeneration"]}, None),
    ({"architectures": ["Mistral3ForConditionalGeneration"]}, "mistral3"),
    ({"architectures": ["MistralForCausalLM"]}, "mistral"),
    ({"architectures": ["Starcoder2ForCausalLM"]}, "starcoder2"),
    ({"architectures": ["StableLmForCausalLM"]}, "stablelm"),
    ({"model_type": "mistral3"}, "mistral3"),
    ({"model_type": "llava"}, "llava"),
    ({"model_type": "starcoder2"}, "starcoder2"),
    ({"model_type": "stablelm"}, "stablelm"),
])
def test_architecture_names(cfg, arch):
    assert formulas.arch_of_config(cfg) == arch


def test_config_classes():
    for cls, arch in (("LlavaConfig", "llava"), ("Mistral3Config", "mistral3"),
                      ("Starcoder2Config", "starcoder2"),
                      ("StableLmConfig", "stablelm")):
        assert formulas.CONFIG_CLASSES[cls] == arch


def test_mistral3_ties_by_its_own_setting_and_llava_also_by_its_text_config():
    """Mistral3Config ties the head unless its top-level `tie_word_embeddings` is false;
    LlavaConfig unties it by default but takes its text config's tying."""
    assert formulas.count("mistral3", {}).tied
    assert not formulas.count("mistral3", {"tie_word_embeddings": False}).tied
    assert not formulas.count("llava", {}).tied
    assert formulas.count("llava", {"text_config": {"tie_word_embeddings": True}}).tied


def test_activation_families():
    """The image-text models' language layers are Llama's (checked below); Ministral-3's
    position-scaled queries and StableLM-2-12B's per-head q/k norms and parallel residual
    have no checked table: unknown. StarCoder 2's layer is GPT-2's table with its traits,
    StableLM's llama's (tests/test_families_starcoder2_stablelm_saved.py)."""
    assert formulas.activation_family("llava") == "llama"
    assert formulas.activation_family("mistral3", {}) == "llama"
    assert formulas.activation_family(
        "mistral3", {"text_config": {"model_type": "ministral3"}}) is None
    assert formulas.activation_family(
        "llava", {"text_config": {"model_type": "qwen3"}}) is None
    assert formulas.activation_family("starcoder2") == "gpt2"
    assert formulas.activation_family("stablelm", {}) == "llama"
    for cfg in ({"qk_layernorm": True}, {"use_parallel_residual": True},
                {"hidden_dropout": 0.1}, {"attention_dropout": "0.1"}):
        assert formulas.activation_family("stablelm", cfg) is None
    # Falcon's and T5's layers are not GPT-2's: no table, said unknown
    for arch in ("falcon", "t5"):
        assert formulas.activation_family(arch) is None


def test_unknown_towers_and_language_models_are_refused():
    from preflight.models.shape import UnsupportedArchitecture

    with pytest.raises(UnsupportedArchitecture):
        formulas.count("llava", {"vision_config": {"model_type": "dinov2"}})
    with pytest.raises(UnsupportedArchitecture):
        formulas.count("mistral3", {"text_config": {"model_type": "no_such_decoder"}})


def _estimate(tmp_path, name: str, config: dict) -> dict:
    d = tmp_path / name
    d.mkdir()
    (d / "config.json").write_text(json.dumps(config))
    r = run_cli("estimate", "--model", str(d), "--precision", "bf16", "--optimizer", "adamw",
                "--micro-batch", "1", "--seq-len", "2048", "--gpu", "H100", "--format", "json")
    assert r.returncode in (0, 1), r.stderr
    return json.loads(r.stdout)["jobs"][0]


def test_estimate_sizes_llava_language_layers_and_says_the_tower_unknown(tmp_path):
    """A LLaVA config.json: parameters counted with the tower, the 32 Llama layers by
    llama's table, the vision tower's saved tensors unknown; a StarCoder 2 one: parameters
    sized, its layers by GPT-2's table with StarCoder 2's traits; a Falcon one: parameters
    sized, layers unknown."""
    from preflight.physics.activations import Shape, layer_activation_bytes

    job = _estimate(tmp_path, "llava-1.5-7b-hf", {"model_type": "llava",
                                                  "architectures":
                                                  ["LlavaForConditionalGeneration"]})
    assert job["facts"]["params"]["value"] == DEFAULTS["llava"]
    lines = {ln["label"]: ln for ln in job["ledger"]["lines"] if ln["key"] == "activations"}
    la = layer_activation_bytes("llama", Shape(s=2048, b=1, h=4096, a=32, f=11008, k=32, d=2),
                                "sdpa")
    assert lines["32 layers' saved activations (llama block, sdpa, checkpointing none)"][
        "bytes"] == 32 * la.total
    assert lines["vision tower (saved activations)"]["bytes"] is None
    assert "vision_tower" in job["ledger"]["unknown"]
    from preflight.physics.activations import Variant
    from preflight.physics.decoders import decoder_of

    sc = _estimate(tmp_path, "starcoder2-3b", {"model_type": "starcoder2"})
    assert sc["facts"]["params"]["value"] == DEFAULTS["starcoder2"]
    lines = {ln["label"]: ln for ln in sc["ledger"]["lines"] if ln["key"] == "activations"}
    la = layer_activation_bytes("gpt2", Shape(s=2048, b=1, h=3072, a=24, f=12288, k=2, d=2),
                                "sdpa", variant=Variant(decoder=decoder_of("starcoder2")))
    assert lines["30 layers' saved activations (GPT block, sdpa, checkpointing none)"][
        "bytes"] == 30 * la.total
    assert "family" not in sc["ledger"]["unknown"]
    fa = _estimate(tmp_path, "falcon-7b", {"model_type": "falcon"})
    assert fa["facts"]["params"]["value"] > 0
    layers = [ln for ln in fa["ledger"]["lines"] if ln["key"] == "activations"
              and ln["label"] == "transformer layers (saved activations)"]
    assert [ln["bytes"] for ln in layers] == [None]
    assert "family" in fa["ledger"]["unknown"]


# ------------------------------------------------------------------ against transformers

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from tests.saved_storage import saved_bytes as _saved  # noqa: E402


def _built(arch: str, cfg: dict, cls: str):
    import logging
    logging.getLogger("transformers").setLevel(logging.ERROR)
    config = transformers.AutoConfig.for_model(arch, **cfg)
    with torch.device("meta"):
        return getattr(transformers, cls).from_config(config)


def _catalogue_config(name: str) -> dict:
    from preflight.models import catalog

    e = next((e for e in catalog.entries() if e["name"] == name), None)
    if e is None:
        pytest.skip(f"{name} not in the catalogue")
    return e["config"]


def test_ministral3_checkpoint_config_matches_transformers():
    """Ministral-3-3B's image-text config.json as the catalogue records it (a
    Mistral3ForConditionalGeneration with a `ministral3` text config and a Pixtral tower):
    counted as `mistral3`, equal to transformers' image-text model."""
    cfg = _catalogue_config("mistralai/Ministral-3-3B-Reasoning-2512")
    assert formulas.arch_of_config(cfg) == "mistral3"
    model = _built("mistral3", cfg, IMAGE_TEXT)
    shape = formulas.count("mistral3", cfg)
    assert shape.tied and shape.params == sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("arch,cfg,cls", CASES, ids=[f"{a}-{i}" for i, (a, _, _) in
                                                     enumerate(CASES)])
def test_counts_tensors_and_buffers_match_transformers(arch, cfg, cls):
    shape = formulas.count(arch, cfg)
    model = _built(arch, cfg, cls)
    # parameters() yields a tied weight once
    assert shape.params == sum(p.numel() for p in model.parameters())
    if shape.param_shapes is None:                           # SigLIP's tower: counted only
        assert cfg.get("vision_config", {}).get("model_type") == "siglip_vision_model"
        return
    mine = collections.Counter()
    for dims, n in shape.param_shapes:
        mine[tuple(dims)] += n
    assert mine == collections.Counter(tuple(p.shape) for p in model.parameters())
    dtype = {"float": "torch.float32", "int64": "torch.int64"}
    assert sorted((n.rsplit(".", 1)[-1], tuple(d), dtype[t]) for n, d, t in shape.buffers) == \
        sorted((n.rsplit(".", 1)[-1], tuple(b.shape), str(b.dtype))
               for n, b in model.named_buffers())


@pytest.mark.parametrize("arch", ["llava", "mistral3"])
@pytest.mark.parametrize("dtype,d", [("float32", 4), ("bfloat16", 2)])
@pytest.mark.parametrize("attention", ["sdpa", "eager"])
def test_language_layer_matches_the_llama_table(arch, dtype, d, attention):
    """One language-model layer of LLaVA (Llama) and Mistral 3 (Mistral), text-only input,
    head_dim ≠ hidden / heads = a 2-layer model's saved bytes − a 1-layer model's = llama's
    table."""
    from preflight.physics.activations import Shape, Variant, layer_activation_bytes

    def build(n):
        torch.manual_seed(0)
        text = dict(num_hidden_layers=n, hidden_size=128, num_attention_heads=4,
                    num_key_value_heads=2, intermediate_size=344, vocab_size=64,
                    head_dim=24, pad_token_id=0)
        vision = dict(num_hidden_layers=1, hidden_size=32, intermediate_size=64,
                      num_attention_heads=2)
        cfg = transformers.AutoConfig.for_model(arch, text_config=text, vision_config=vision,
                                                attn_implementation=attention)
        model = transformers.AutoModelForImageTextToText.from_config(cfg)
        return model.model.language_model.to(getattr(torch, dtype)).train()

    ids = torch.randint(0, 60, (2, 48), generator=torch.Generator().manual_seed(0))
    got = _saved(build(2), ids) - _saved(build(1), ids)
    want = layer_activation_bytes("llama", Shape(s=48, b=2, h=128, a=4, f=344, k=2, d=d,
                                                 hd=24, rot=24),
                                  attention, variant=Variant(dropout=False))
    assert got == want.total


def test_peft_default_lora_targets():
    """peft's default LoRA targets: StableLM's q_proj and v_proj; LLaVA, Mistral 3 and
    StarCoder 2 have none (peft asks for target_modules)."""
    peft_constants = pytest.importorskip("peft.utils.constants")
    from preflight.models.lora import default_targets

    mapping = peft_constants.TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING
    for arch in ("stablelm", "llava", "mistral3", "starcoder2"):
        assert default_targets(arch) == mapping.get(arch)
