"""Qwen3.5 / Qwen3.5-MoE (Gated DeltaNet hybrid), Qwen3-VL-MoE, GLM-4.7-Flash
(`glm4_moe_lite`), GLM-5 (`glm_moe_dsa`), DeepSeek-V4, Gemma 4, Nemotron-H and GPT-J: the
formula's count equals the count transformers builds on torch's meta device, for the
catalogue's own config of a published checkpoint and for small configs that switch each
option; the names they go by; and their layers' saved activations said unknown (their layer
tables are not modelled), not guessed from the name."""

import copy
import json
import os

import pytest

from preflight.models import formulas

_CATALOG = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "preflight", "models", "catalog.json")


def _entry(name: str) -> dict:
    """The catalogue's entry (its config as the recorded source gave it)."""
    with open(_CATALOG, encoding="utf-8") as f:
        return next(e for e in json.load(f)["models"] if e["name"] == name)


# (model id, architecture, parameters, active parameters per token)
PUBLISHED = [
    ("Qwen/Qwen3.5-27B", "qwen3_5", 27_356_728_560, 27_356_728_560),
    ("Qwen/Qwen3.5-35B-A3B", "qwen3_5_moe", 35_107_181_936, 3_901_560_176),
    ("Qwen/Qwen3-VL-30B-A3B-Instruct", "qwen3_vl_moe", 31_070_754_032, 3_891_664_112),
    ("zai-org/GLM-4.7-Flash", "glm4_moe_lite", 29_943_390_976, 3_896_763_136),
    ("google/gemma-4-26B-A4B", "gemma4", 25_805_933_872, 4_395_322_672),
    ("google/gemma-4-E2B-it", "gemma4", 4_628_569_344, 4_628_569_344),
    ("zai-org/GLM-5", "glm_moe_dsa", 743_911_199_232, 41_784_709_632),
    ("zai-org/GLM-5.2", "glm_moe_dsa", 743_377_000_704, 41_250_511_104),
    ("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", "nemotron_h", 31_577_937_344,
     3_580_073_408),
    ("nvidia/Nemotron-H-56B-Base-8K", "nemotron_h", 56_324_350_464, 56_324_350_464),
    ("EleutherAI/gpt-j-6b", "gptj", 6_050_882_784, 6_050_882_784),
    ("deepseek-ai/DeepSeek-V4-Flash", "deepseek_v4", 284_332_230_231, 13_799_622_231),
]


@pytest.mark.parametrize("name,arch,params,active", PUBLISHED, ids=[p[0] for p in PUBLISHED])
def test_catalogue_configs_count_exactly(name, arch, params, active):
    e = _entry(name)
    assert e["arch"] == arch
    shape = formulas.count(arch, e["config"])
    assert (shape.params, shape.active_params) == (params, active)
    assert e["checked"]["params"] == params          # what transformers built, recorded


def test_moe_shape_facts():
    q = formulas.count("qwen3_5_moe", _entry("Qwen/Qwen3.5-35B-A3B")["config"])
    assert (q.experts, q.experts_per_token, q.expert_ffn, q.shared_expert_ffn, q.moe_layers,
            q.norm_topk) == (256, 8, 512, 512, 40, True)
    glm = formulas.count("glm4_moe_lite", _entry("zai-org/GLM-4.7-Flash")["config"])
    assert (glm.moe_layers, glm.experts, glm.experts_per_token, glm.shared_expert_ffn) == \
        (46, 64, 4, 1536)
    assert glm.latent_attention["kv_lora_rank"] == 512
    g = formulas.count("gemma4", _entry("google/gemma-4-26B-A4B")["config"])
    assert (g.experts, g.experts_per_token, g.expert_ffn, g.moe_layers) == (128, 8, 704, 30)


@pytest.mark.parametrize("cfg,arch", [
    ({"architectures": ["Qwen3_5ForConditionalGeneration"]}, "qwen3_5"),
    ({"architectures": ["Qwen3_5MoeForConditionalGeneration"]}, "qwen3_5_moe"),
    ({"architectures": ["Qwen3_5ForCausalLM"]}, "qwen3_5_text"),
    ({"architectures": ["Qwen3_5MoeForCausalLM"]}, "qwen3_5_moe_text"),
    ({"architectures": ["Qwen3VLMoeForConditionalGeneration"]}, "qwen3_vl_moe"),
    ({"architectures": ["Glm4MoeLiteForCausalLM"]}, "glm4_moe_lite"),
    ({"architectures": ["Glm4MoeForCausalLM"]}, "glm4_moe"),
    ({"architectures": ["Gemma4ForConditionalGeneration"]}, "gemma4"),
    ({"architectures": ["Gemma4ForCausalLM"]}, "gemma4_text"),
    ({"architectures": ["GlmMoeDsaForCausalLM"]}, "glm_moe_dsa"),
    ({"architectures": ["NemotronHForCausalLM"]}, "nemotron_h"),
    ({"architectures": ["GPTJForCausalLM"]}, "gptj"),
    ({"architectures": ["DeepseekV4ForCausalLM"]}, "deepseek_v4"),
    ({"architectures": ["DeepseekV3ForCausalLM"]}, "deepseek_v3"),
    ({"model_type": "qwen3_5_moe_text"}, "qwen3_5_moe_text"),
    ({"model_type": "gemma4_text"}, "gemma4_text"),
])
def test_architecture_names(cfg, arch):
    assert formulas.arch_of_config(cfg) == arch


def test_layers_not_modelled_are_unknown():
    """No layer table of these families is checked against autograd (linear attention,
    gemma 4's layer kinds, latent attention under GLM's router and GLM-5's indexer,
    DeepSeek-V4's compressed attention and hyper-connections, the
    Mamba-2 and squared-ReLU blocks, GPT-J's parallel block, the vision towers): the
    activation family is unknown, not a llama block assumed from the name."""
    for arch in ("qwen3_5", "qwen3_5_moe", "qwen3_5_text", "qwen3_5_moe_text", "qwen3_vl_moe",
                 "glm4_moe_lite", "glm_moe_dsa", "deepseek_v4", "gemma4", "gemma4_text",
                 "nemotron_h", "gptj"):
        assert formulas.activation_family(arch) is None


def test_gemma4_audio_encoder_is_not_counted():
    with pytest.raises(formulas.UnsupportedArchitecture):
        formulas.count("gemma4", {"text_config": {}, "audio_config": {"hidden_size": 1024}})


# ------------------------------------------------------------------ against transformers

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")


def _meta_count(arch: str, cfg: dict, cls: str) -> int:
    import logging
    logging.getLogger("transformers").setLevel(logging.ERROR)
    config = transformers.AutoConfig.for_model(arch, **copy.deepcopy(cfg))
    with torch.device("meta"):
        model_cls = getattr(transformers, cls)
        model = model_cls.from_config(config) if cls.startswith("Auto") else model_cls(config)
    return sum(p.numel() for p in model.parameters())


CAUSAL, IMAGE_TEXT = "AutoModelForCausalLM", "AutoModelForImageTextToText"


@pytest.mark.parametrize("name", [p[0] for p in PUBLISHED])
def test_catalogue_configs_match_transformers(name):
    e = _entry(name)
    cls = e["config"]["architectures"][0]
    assert formulas.count(e["arch"], e["config"]).params == _meta_count(e["arch"], e["config"],
                                                                        cls)


#: small configs switching each option the formulas read
VARIANTS = [
    ("qwen3_5", dict(text_config=dict(num_hidden_layers=4), vision_config=dict(depth=2)),
     IMAGE_TEXT),
    ("qwen3_5", dict(tie_word_embeddings=True,
                     text_config=dict(num_hidden_layers=3, attention_bias=True,
                                      full_attention_interval=2, linear_num_value_heads=16,
                                      linear_key_head_dim=64),
                     vision_config=dict(depth=1, deepstack_visual_indexes=[0])), IMAGE_TEXT),
    ("qwen3_5", dict(text_config=dict(num_hidden_layers=2, tie_word_embeddings=True),
                     vision_config=dict(depth=1)), IMAGE_TEXT),
    ("qwen3_5_moe", dict(text_config=dict(num_hidden_layers=4), vision_config=dict(depth=2)),
     IMAGE_TEXT),
    ("qwen3_5_moe", dict(text_config=dict(num_hidden_layers=2,
                                          layer_types=["full_attention", "linear_attention"],
                                          num_experts=8, shared_expert_intermediate_size=96),
                         vision_config=dict(depth=1)), IMAGE_TEXT),
    ("qwen3_5_text", dict(num_hidden_layers=4), CAUSAL),
    ("qwen3_5_moe_text", dict(num_hidden_layers=4, tie_word_embeddings=True), CAUSAL),
    ("qwen3_vl_moe", dict(text_config=dict(num_hidden_layers=2), vision_config=dict(depth=2)),
     IMAGE_TEXT),
    ("qwen3_vl_moe", dict(tie_word_embeddings=True,
                          text_config=dict(num_hidden_layers=3, decoder_sparse_step=2,
                                           mlp_only_layers=[2], head_dim=64),
                          vision_config=dict(depth=2, deepstack_visual_indexes=[1])),
     IMAGE_TEXT),
    ("glm4_moe_lite", dict(num_hidden_layers=3), CAUSAL),
    ("glm4_moe_lite", dict(num_hidden_layers=4,
                           mlp_layer_types=["sparse", "dense", "sparse", "dense"],
                           first_k_dense_replace=3, attention_bias=True, q_lora_rank=None,
                           tie_word_embeddings=True, n_shared_experts=2), CAUSAL),
    ("gemma4", dict(text_config=dict(num_hidden_layers=3),
                    vision_config=dict(num_hidden_layers=1)), IMAGE_TEXT),
    ("gemma4", dict(text_config=dict(num_hidden_layers=3)), IMAGE_TEXT),
    ("gemma4", dict(text_config=dict(num_hidden_layers=3), vision_config={}), IMAGE_TEXT),
    ("gemma4", dict(tie_word_embeddings=False,
                    text_config=dict(num_hidden_layers=4, attention_k_eq_v=True,
                                     layer_types=["sliding_attention", "full_attention",
                                                  "sliding_attention", "sliding_attention"],
                                     num_global_key_value_heads=1, global_head_dim=128,
                                     num_kv_shared_layers=2, use_double_wide_mlp=True,
                                     enable_moe_block=True, num_experts=4, top_k_experts=2,
                                     moe_intermediate_size=64, hidden_size_per_layer_input=0,
                                     attention_bias=True),
                    vision_config=dict(num_hidden_layers=2, num_key_value_heads=4,
                                       head_dim=32)), IMAGE_TEXT),
    ("gemma4_text", dict(num_hidden_layers=3, num_kv_shared_layers=3), CAUSAL),
    ("gemma4_text", dict(num_hidden_layers=2, tie_word_embeddings=False,
                         num_global_key_value_heads=1), CAUSAL),
    ("glm_moe_dsa", dict(num_hidden_layers=4), CAUSAL),
    ("glm_moe_dsa", dict(num_hidden_layers=6, index_topk_freq=2, index_skip_topk_offset=1,
                         mlp_layer_types=["dense", "sparse", "dense", "sparse", "sparse",
                                          "sparse"], hidden_size=512, index_n_heads=4,
                         index_head_dim=32, n_routed_experts=8, attention_bias=True,
                         tie_word_embeddings=True), CAUSAL),
    ("glm_moe_dsa", dict(num_hidden_layers=4, index_topk_pattern="FSSF", hidden_size=512,
                         n_routed_experts=8), CAUSAL),
    ("glm_moe_dsa", dict(num_hidden_layers=4, indexer_types=["full", "shared", "full", "shared"],
                         first_k_dense_replace=1, hidden_size=512, n_routed_experts=8), CAUSAL),
    ("nemotron_h", dict(), CAUSAL),
    ("nemotron_h", dict(hybrid_override_pattern="M-E*M", hidden_size=256, mamba_num_heads=8,
                        n_groups=2, use_bias=True, use_conv_bias=False, mlp_bias=True,
                        moe_latent_size=64, n_routed_experts=4, moe_intermediate_size=96,
                        moe_shared_expert_intermediate_size=80, tie_word_embeddings=True,
                        attention_bias=True, num_hidden_layers=9), CAUSAL),
    ("nemotron_h", dict(layers_block_type=["mamba", "attention", "moe"], hidden_size=256,
                        head_dim=32), CAUSAL),
    ("deepseek_v4", dict(num_hidden_layers=3), CAUSAL),
    ("deepseek_v4", dict(num_hidden_layers=4, hidden_size=512, num_attention_heads=8, head_dim=64,
                         o_groups=2, o_lora_rank=96, n_routed_experts=8,
                         moe_intermediate_size=128, n_shared_experts=2,
                         compress_ratios=[0, 4, 128, 4], q_lora_rank=96, index_n_heads=4,
                         index_head_dim=32, hc_mult=2, mlp_bias=True, tie_word_embeddings=True,
                         num_hash_layers=1), CAUSAL),
    ("deepseek_v4", dict(num_hidden_layers=3, hidden_size=512, num_attention_heads=8, head_dim=64,
                         n_routed_experts=8,
                         layer_types=["compressed_sparse_attention", "sliding_attention",
                                      "heavily_compressed_attention"],
                         compress_rates={"compressed_sparse_attention": 8,
                                         "heavily_compressed_attention": 64}), CAUSAL),
    ("deepseek_v4", dict(num_hidden_layers=3, hidden_size=512, num_attention_heads=8, head_dim=64,
                         n_routed_experts=8, compress_rate_csa=2, compress_rate_hca=16), CAUSAL),
    ("gptj", dict(n_layer=2), CAUSAL),
    ("gptj", dict(n_layer=2, n_embd=256, n_head=4, n_inner=300, tie_word_embeddings=True,
                  rotary_dim=32), CAUSAL),
]


@pytest.mark.parametrize("arch,cfg,cls", VARIANTS,
                         ids=[f"{a}-{i}" for i, (a, _, _) in enumerate(VARIANTS)])
def test_config_variants_match_transformers(arch, cfg, cls):
    assert formulas.count(arch, cfg).params == _meta_count(arch, cfg, cls)


def test_gptj_base_model_matches_transformers():
    assert formulas.count("gptj", {"n_layer": 2}, head="base").params == \
        _meta_count("gptj", {"n_layer": 2}, "AutoModel")


def test_estimate_sizes_qwen35_moe_and_says_its_layers_unknown(tmp_path):
    """`estimate --model` on Qwen3.5-35B-A3B's config.json: total and active parameters
    sized, the layers' saved activations unknown with the reason, no block assumed."""
    from tests.conftest import run_cli

    d = tmp_path / "Qwen3.5-35B-A3B"
    d.mkdir()
    (d / "config.json").write_text(json.dumps(
        {"model_type": "qwen3_5_moe", **_entry("Qwen/Qwen3.5-35B-A3B")["config"]}))
    r = run_cli("estimate", "--model", str(d), "--precision", "bf16", "--optimizer", "adamw",
                "--micro-batch", "1", "--seq-len", "2048", "--gpu", "H100", "--format", "json")
    assert r.returncode in (0, 1), r.stderr
    job = json.loads(r.stdout)["jobs"][0]
    assert job["facts"]["params"]["value"] == 35_107_181_936
    assert job["facts"]["params"]["reason"].endswith(
        "mixture of experts: 3,901,560,176 active per token (8 of 256 experts)")
    assert job["ledger"]["per_gpu_bytes"]["params"] == 2 * 35_107_181_936
    assert "family" in job["ledger"]["unknown"]
    layers = [ln for ln in job["ledger"]["lines"] if ln["key"] == "activations"
              and ln["label"] == "transformer layers (saved activations)"]
    assert [ln["bytes"] for ln in layers] == [None]
