"""gpt-oss, Llama 4, GLM-4 MoE, OLMoE, Mamba / Mamba-2, Falcon-H1, Qwen2-VL, Qwen2.5-VL and
Qwen3-VL: the
formula's count equals the count transformers builds on torch's meta device, for a published
checkpoint's config and for small configs that switch each option; the names they go by;
total and active parameters through `estimate --model`; and, for the families whose layer
tables are not modelled, the saved activations said unknown rather than guessed."""

import json

import pytest

from preflight.models import formulas
from tests.conftest import run_cli

# Published configs, the fields the formulas read. Sources (config.json numbers as quoted
# in public copies; the checkpoints' own config.json on the Hugging Face hub):
# - openai/gpt-oss-20b: EchoCog/gpt-oss-20b, docs/gpt-oss-20b-architecture.md ("Key
#   topology parameters", read from the repository's config.json)
GPT_OSS_20B = dict(vocab_size=201088, hidden_size=2880, intermediate_size=2880,
                   num_hidden_layers=24, num_attention_heads=64, num_key_value_heads=8,
                   head_dim=64, num_local_experts=32, num_experts_per_tok=4,
                   attention_bias=True, tie_word_embeddings=False)
# - meta-llama/Llama-4-Scout-17B-16E: text_config as in
#   Shameerisb/llama-4-scout_Implementation_Pytorch, configs/text_config.py; vision_config
#   (hidden 1408, 34 layers, image 336, patch 14) as in a vLLM test's Scout config, with
#   intermediate_size 5632, vision_output_dim / projector dims 4096 and pixel shuffle 0.5 of
#   the checkpoint's config.json; the count, 108,641,793,536, is the hub's 109B
SCOUT = dict(
    text_config=dict(vocab_size=202048, hidden_size=5120, intermediate_size=8192,
                     intermediate_size_mlp=16384, num_hidden_layers=48, num_attention_heads=40,
                     num_key_value_heads=8, head_dim=128, num_local_experts=16,
                     num_experts_per_tok=1, interleave_moe_layer_step=1),
    vision_config=dict(hidden_size=1408, intermediate_size=5632, num_hidden_layers=34,
                       num_attention_heads=16, image_size=336, patch_size=14,
                       vision_output_dim=4096, projector_input_dim=4096,
                       projector_output_dim=4096, pixel_shuffle_ratio=0.5))
# - Qwen/Qwen2.5-VL-7B-Instruct (a flat config.json: the text fields at the top level):
#   acproject/duorou, docs/qwen2.5vl_graph.md (the module tree of
#   Qwen2_5_VLForConditionalGeneration built from it)
QWEN25_VL_7B = dict(vocab_size=152064, hidden_size=3584, intermediate_size=18944,
                    num_hidden_layers=28, num_attention_heads=28, num_key_value_heads=4,
                    tie_word_embeddings=False,
                    vision_config=dict(depth=32, hidden_size=1280, intermediate_size=3420,
                                       num_heads=16, out_hidden_size=3584, patch_size=14,
                                       spatial_merge_size=2, temporal_patch_size=2))
# - Qwen/Qwen3-VL-8B-Instruct: text 36 layers × 4096 (12,288 MLP, 32 heads, 8 KV heads of
#   128), vision 27 blocks × 1152 (4304 MLP, patch 16, 2304 positions, DeepStack at blocks
#   8, 16, 24) into 4096, from the checkpoint's config.json
QWEN3_VL_8B = dict(
    text_config=dict(vocab_size=151936, hidden_size=4096, intermediate_size=12288,
                     num_hidden_layers=36, num_attention_heads=32, num_key_value_heads=8,
                     head_dim=128),
    vision_config=dict(depth=27, hidden_size=1152, intermediate_size=4304, num_heads=16,
                       out_hidden_size=4096, patch_size=16, num_position_embeddings=2304,
                       deepstack_visual_indexes=[8, 16, 24]))
# - zai-org/GLM-4.5-Air: 46 layers × 4096, 96 heads of 128, 8 KV heads, q/k/v biases, one
#   dense layer, 128 routed experts (8 per token) of 1408 and one shared, from the
#   checkpoint's config.json (its multi-token-prediction layer is not built)
GLM45_AIR = dict(vocab_size=151552, hidden_size=4096, intermediate_size=10944,
                 num_hidden_layers=46, num_attention_heads=96, num_key_value_heads=8,
                 head_dim=128, moe_intermediate_size=1408, n_routed_experts=128,
                 n_shared_experts=1, num_experts_per_tok=8, first_k_dense_replace=1,
                 attention_bias=True, use_qk_norm=False)
# - state-spaces/mamba-130m-hf and mistralai/Mamba-Codestral-7B-v0.1, from their
#   config.json
MAMBA_130M = dict(vocab_size=50280, hidden_size=768, num_hidden_layers=24, state_size=16,
                  expand=2, conv_kernel=4)
CODESTRAL_MAMBA = dict(vocab_size=32768, hidden_size=4096, num_hidden_layers=64, num_heads=128,
                       head_dim=64, state_size=128, n_groups=8, expand=2)
# - Falcon-H1 7B's row of transformers' Falcon-H1 model page (roboalchemist/llm-code-docs,
#   docs/llms-txt/huggingface-transformers/falcon_h1.md): 44 layers × 3072, 12 attention
#   heads, 2 KV heads, 24 Mamba heads of 128 (d_ssm 3072), d_state 256; the fields the
#   table does not give (MLP width, vocabulary) at FalconH1Config's defaults
FALCON_H1_7B_ROW = dict(hidden_size=3072, num_hidden_layers=44, num_attention_heads=12,
                        num_key_value_heads=2, head_dim=128, mamba_n_heads=24, mamba_d_head=128,
                        mamba_d_ssm=3072, mamba_d_state=256)

PUBLISHED = [
    ("gpt_oss", GPT_OSS_20B, None, 20_914_757_184, 4_187_440_704),
    ("llama4", SCOUT, "causal_lm", 107_769_861_120, 17_172_894_720),
    ("llama4", SCOUT, "seq2seq_lm", 108_641_793_536, 18_044_827_136),
    ("qwen2_5_vl", QWEN25_VL_7B, None, 8_292_166_656, 8_292_166_656),
    ("qwen3_vl", QWEN3_VL_8B, None, 8_767_123_696, 8_767_123_696),
    ("glm4_moe", GLM45_AIR, None, 106_852_245_504, 13_424_123_904),
    ("mamba", MAMBA_130M, None, 129_135_360, 129_135_360),
    ("mamba2", CODESTRAL_MAMBA, None, 7_285_403_648, 7_285_403_648),
]


@pytest.mark.parametrize("arch,cfg,head,params,active", PUBLISHED,
                         ids=[f"{a}-{h or 'default'}-{p}" for a, _, h, p, _ in PUBLISHED])
def test_published_configs_count_exactly(arch, cfg, head, params, active):
    shape = formulas.count(arch, cfg, head=head)
    assert (shape.params, shape.active_params) == (params, active)


def test_moe_shape_facts():
    oss = formulas.count("gpt_oss", GPT_OSS_20B)
    assert (oss.experts, oss.experts_per_token, oss.expert_ffn, oss.moe_layers) == \
        (32, 4, 2880, 24)
    # the routed experts with their biases: 24 layers × 32 × (gate_up 2880·5760 + 5760,
    # down 2880·2880 + 2880)
    assert oss.expert_params == 24 * 32 * (2880 * 5760 + 5760 + 2880 * 2880 + 2880)
    scout = formulas.count("llama4", SCOUT)
    assert (scout.experts, scout.experts_per_token, scout.moe_layers,
            scout.shared_expert_ffn) == (16, 1, 48, 8192)
    # Maverick's layout: every second layer MoE
    mav = formulas.count("llama4_text", {**SCOUT["text_config"], "interleave_moe_layer_step": 2})
    assert mav.moe_layers == 24
    glm = formulas.count("glm4_moe", GLM45_AIR)
    assert (glm.moe_layers, glm.experts, glm.shared_expert_ffn) == (45, 128, 1408)


# ------------------------------------------------------------------ names

@pytest.mark.parametrize("cfg,arch", [
    ({"architectures": ["GptOssForCausalLM"]}, "gpt_oss"),
    ({"architectures": ["Llama4ForConditionalGeneration"]}, "llama4"),
    ({"architectures": ["Llama4ForCausalLM"]}, "llama4_text"),
    ({"architectures": ["Glm4MoeForCausalLM"]}, "glm4_moe"),
    ({"architectures": ["MambaForCausalLM"]}, "mamba"),
    ({"architectures": ["Mamba2ForCausalLM"]}, "mamba2"),
    ({"architectures": ["FalconH1ForCausalLM"]}, "falcon_h1"),
    ({"architectures": ["FalconMambaForCausalLM"]}, None),
    ({"architectures": ["Qwen2_5_VLForConditionalGeneration"]}, "qwen2_5_vl"),
    ({"architectures": ["Qwen2VLForConditionalGeneration"]}, "qwen2_vl"),
    ({"model_type": "qwen2-vl"}, "qwen2_vl"),
    ({"architectures": ["Qwen3VLForConditionalGeneration"]}, "qwen3_vl"),
    ({"architectures": ["Qwen3VLMoeForConditionalGeneration"]}, "qwen3_vl_moe"),
    ({"architectures": ["OlmoeForCausalLM"]}, "olmoe"), ({"model_type": "olmoe"}, "olmoe"),
    ({"architectures": ["Olmo3ForCausalLM"]}, "olmo3"),
    ({"model_type": "gpt-oss"}, "gpt_oss"),
    ({"model_type": "llama4_text"}, "llama4_text"),
    ({"model_type": "falcon_h1"}, "falcon_h1"),
])
def test_architecture_names(cfg, arch):
    assert formulas.arch_of_config(cfg) == arch


def test_image_text_classes_count_the_vision_tower():
    """`AutoModelForImageTextToText` and `Llama4ForConditionalGeneration` build Llama 4 with
    its vision tower; `AutoModelForCausalLM` the text decoder alone."""
    for cls, params in (("AutoModelForImageTextToText", 108_641_793_536),
                        ("Llama4ForConditionalGeneration", 108_641_793_536),
                        ("AutoModelForCausalLM", 107_769_861_120)):
        head = formulas.head_of_class(cls)
        assert formulas.count("llama4", SCOUT, head=head).params == params


def test_config_classes():
    for cls, arch in (("GptOssConfig", "gpt_oss"), ("Llama4Config", "llama4"),
                      ("Llama4TextConfig", "llama4_text"), ("Glm4MoeConfig", "glm4_moe"),
                      ("MambaConfig", "mamba"), ("Mamba2Config", "mamba2"),
                      ("FalconH1Config", "falcon_h1"), ("Qwen2_5_VLConfig", "qwen2_5_vl"),
                      ("Qwen2VLConfig", "qwen2_vl"),
                      ("Qwen3VLConfig", "qwen3_vl"), ("OlmoeConfig", "olmoe"),
                      ("Olmo3Config", "olmo3")):
        assert formulas.CONFIG_CLASSES[cls] == arch


def test_layers_not_modelled_are_unknown():
    """The layer tables of these families are not modelled (the SSM scans, the vision
    towers): the activation family is unknown, not a llama block guessed from the name
    (Llama 4's, gpt-oss's and GLM-4 MoE's tables: tests/test_llama4.py, test_gpt_oss.py,
    test_glm4_moe.py)."""
    for arch in ("mamba", "mamba2", "falcon_h1"):
        assert formulas.activation_family(arch) is None


# ------------------------------------------------------------------ estimate --model

def _estimate(tmp_path, name: str, config: dict) -> dict:
    d = tmp_path / name
    d.mkdir()
    (d / "config.json").write_text(json.dumps(config))
    r = run_cli("estimate", "--model", str(d), "--precision", "bf16", "--optimizer", "adamw",
                "--micro-batch", "1", "--seq-len", "2048", "--gpu", "H100", "--format", "json")
    assert r.returncode in (0, 1), r.stderr
    return json.loads(r.stdout)["jobs"][0]


def test_estimate_reports_total_and_active_for_gpt_oss(tmp_path):
    job = _estimate(tmp_path, "gpt-oss-20b", {"model_type": "gpt_oss", **GPT_OSS_20B})
    params = job["facts"]["params"]
    assert params["value"] == 20_914_757_184
    assert params["reason"].endswith(
        "mixture of experts: 4,187,440,704 active per token (4 of 32 experts)")
    assert ("mixture of experts: compute counts the 4,187,440,704 parameters a token uses "
            "(4 of 32 experts), not all 20,914,757,184") in job["walls"]["notes"]
    assert job["ledger"]["per_gpu_bytes"]["params"] == 2 * 20_914_757_184


def test_estimate_says_the_layers_of_an_unmodelled_family_unknown(tmp_path):
    """Mamba-Codestral: parameters and states sized; the layers' saved tensors unknown with
    the reason, not a block assumed from the name. Qwen3-VL: its 36 language layers by
    llama's table with Qwen3's q/k norms, its vision tower unknown."""
    from preflight.physics.activations import Shape, Variant, layer_activation_bytes
    from preflight.physics.dense import layer_of

    job = _estimate(tmp_path, "Mamba-Codestral-7B-v0.1", {"model_type": "mamba2",
                                                          **CODESTRAL_MAMBA})
    assert job["facts"]["params"]["value"] == 7_285_403_648
    assert job["ledger"]["per_gpu_bytes"]["params"] == 2 * 7_285_403_648
    layers = [ln for ln in job["ledger"]["lines"] if ln["key"] == "activations"
              and ln["label"] == "transformer layers (saved activations)"]
    assert [ln["bytes"] for ln in layers] == [None]
    assert "family" in job["ledger"]["unknown"]
    vl = _estimate(tmp_path, "Qwen3-VL-8B-Instruct", {"model_type": "qwen3_vl", **QWEN3_VL_8B})
    assert vl["facts"]["params"]["value"] == 8_767_123_696
    lines = {ln["label"]: ln for ln in vl["ledger"]["lines"] if ln["key"] == "activations"}
    la = layer_activation_bytes("llama", Shape(s=2048, b=1, h=4096, a=32, f=12288, k=8, d=2),
                                "sdpa", variant=Variant(layer=layer_of("qwen3_vl")))
    assert lines["36 layers' saved activations (llama block, sdpa, checkpointing none)"][
        "bytes"] == 36 * la.total
    assert lines["vision tower (saved activations)"]["bytes"] is None
    assert "vision_tower" in vl["ledger"]["unknown"]


def test_estimate_reports_total_and_active_for_llama4_scout(tmp_path):
    """A Llama 4 checkpoint's config.json (`llama4`: text and vision configs): `--model`
    counts what AutoModelForCausalLM builds, the text decoder, and reports the active
    parameters."""
    job = _estimate(tmp_path, "Llama-4-Scout-17B-16E",
                    {"model_type": "llama4", "architectures": ["Llama4ForConditionalGeneration"],
                     **SCOUT})
    assert job["facts"]["params"]["value"] == 107_769_861_120
    assert ("mixture of experts: compute counts the 17,172,894,720 parameters a token uses "
            "(1 of 16 experts), not all 107,769,861,120") in job["walls"]["notes"]


def test_estimate_sizes_qwen25_vl_language_layers_and_says_the_tower_unknown(tmp_path):
    """Qwen2.5-VL: the 28 language-model layers by llama's table (checked below against
    autograd), the vision tower's saved tensors unknown."""
    from preflight.physics.activations import Shape, layer_activation_bytes

    job = _estimate(tmp_path, "Qwen2.5-VL-7B-Instruct", {"model_type": "qwen2_5_vl",
                                                          **QWEN25_VL_7B})
    lines = {ln["label"]: ln for ln in job["ledger"]["lines"] if ln["key"] == "activations"}
    la = layer_activation_bytes("llama", Shape(s=2048, b=1, h=3584, a=28, f=18944, k=4, d=2),
                                "sdpa")
    assert lines["28 layers' saved activations (llama block, sdpa, checkpointing none)"][
        "bytes"] == 28 * la.total
    tower = lines["vision tower (saved activations)"]
    assert (tower["bytes"], tower["note"]) == (None, (
        "unknown: the vision tower's saved tensors are not modelled (they follow the number "
        "and size of the images a batch holds)"))
    assert "vision_tower" in job["ledger"]["unknown"]


def test_estimate_sizes_qwen2_vl_language_layers_and_says_the_tower_unknown(tmp_path):
    """Qwen2-VL (a flat config.json): its Qwen2 layers by llama's table, the vision tower's
    saved tensors unknown, as for Qwen2.5-VL."""
    from preflight.physics.activations import Shape, layer_activation_bytes

    cfg = dict(model_type="qwen2_vl", architectures=["Qwen2VLForConditionalGeneration"],
               vocab_size=1000, hidden_size=256, intermediate_size=384, num_hidden_layers=2,
               num_attention_heads=4, num_key_value_heads=2,
               vision_config=dict(depth=2, embed_dim=64, num_heads=4, hidden_size=256))
    job = _estimate(tmp_path, "Qwen2-VL-tiny", cfg)
    assert job["facts"]["params"]["value"] == formulas.count("qwen2_vl", cfg).params == 1_804_288
    lines = {ln["label"]: ln for ln in job["ledger"]["lines"] if ln["key"] == "activations"}
    la = layer_activation_bytes("llama", Shape(s=2048, b=1, h=256, a=4, f=384, k=2, d=2),
                                "sdpa")
    assert lines["2 layers' saved activations (llama block, sdpa, checkpointing none)"][
        "bytes"] == 2 * la.total
    assert lines["vision tower (saved activations)"]["bytes"] is None
    assert "vision_tower" in job["ledger"]["unknown"]


# ------------------------------------------------------------------ against transformers

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from tests.saved_storage import saved_bytes as _saved  # noqa: E402


def _meta_count(arch: str, cfg: dict, cls: str) -> int:
    import logging
    logging.getLogger("transformers").setLevel(logging.ERROR)
    config = transformers.AutoConfig.for_model(arch, **cfg)
    with torch.device("meta"):
        model_cls = getattr(transformers, cls)
        model = model_cls.from_config(config) if cls.startswith("Auto") else model_cls(config)
    # parameters() yields a tied weight once
    return sum(p.numel() for p in model.parameters())


CAUSAL, IMAGE_TEXT = "AutoModelForCausalLM", "AutoModelForImageTextToText"

#: each published config, built by the class that loads it
REAL = [("gpt_oss", GPT_OSS_20B, CAUSAL, None), ("llama4", SCOUT, CAUSAL, None),
        ("llama4", SCOUT, "Llama4ForConditionalGeneration", "seq2seq_lm"),
        ("qwen2_5_vl", QWEN25_VL_7B, IMAGE_TEXT, None), ("qwen3_vl", QWEN3_VL_8B, IMAGE_TEXT, None),
        ("glm4_moe", GLM45_AIR, CAUSAL, None), ("mamba", MAMBA_130M, CAUSAL, None),
        ("mamba2", CODESTRAL_MAMBA, CAUSAL, None), ("falcon_h1", FALCON_H1_7B_ROW, CAUSAL, None)]


@pytest.mark.parametrize("arch,cfg,cls,head", REAL,
                         ids=[f"{a}-{c}" for a, _, c, _ in REAL])
def test_published_configs_match_transformers(arch, cfg, cls, head):
    assert formulas.count(arch, cfg, head=head).params == _meta_count(arch, cfg, cls)


#: small configs switching each option the formulas read (two layers or so; the vision
#: towers one or two blocks)
VARIANTS = [
    ("gpt_oss", dict(num_hidden_layers=2), CAUSAL, None),
    # OLMoE: q/k norms over hidden and (hidden / heads) × KV heads, every layer MoE
    ("olmoe", dict(num_hidden_layers=2), CAUSAL, None),
    ("olmoe", dict(num_hidden_layers=2, num_key_value_heads=4, attention_bias=True,
                   tie_word_embeddings=True, num_experts=16, num_experts_per_tok=2), CAUSAL,
     None),
    ("gpt_oss", dict(num_hidden_layers=2, attention_bias=False, tie_word_embeddings=True,
                     head_dim=32, num_local_experts=8, num_experts_per_tok=2), CAUSAL, None),
    ("glm4_moe", dict(num_hidden_layers=3), CAUSAL, None),
    ("glm4_moe", dict(num_hidden_layers=3, attention_bias=True, use_qk_norm=True, head_dim=128,
                      first_k_dense_replace=0, n_shared_experts=2), CAUSAL, None),
    ("llama4_text", dict(num_hidden_layers=4, interleave_moe_layer_step=2), CAUSAL, None),
    ("llama4_text", dict(num_hidden_layers=3, moe_layers=[1], attention_bias=True,
                         tie_word_embeddings=True), CAUSAL, None),
    ("llama4", dict(text_config=dict(num_hidden_layers=2),
                    vision_config=dict(num_hidden_layers=1)), CAUSAL, None),
    ("llama4", dict(text_config=dict(num_hidden_layers=2),
                    vision_config=dict(num_hidden_layers=1)),
     "Llama4ForConditionalGeneration", "seq2seq_lm"),
    ("mamba", dict(num_hidden_layers=2), CAUSAL, None),
    ("mamba", dict(num_hidden_layers=2, use_bias=True, use_conv_bias=False, time_step_rank=7,
                   tie_word_embeddings=False), CAUSAL, None),
    ("mamba2", dict(num_hidden_layers=2), CAUSAL, None),
    ("mamba2", dict(num_hidden_layers=2, use_bias=True, n_groups=2, tie_word_embeddings=True),
     CAUSAL, None),
    ("falcon_h1", dict(num_hidden_layers=2), CAUSAL, None),
    ("falcon_h1", dict(num_hidden_layers=2, mamba_rms_norm=True, mamba_proj_bias=True,
                       projectors_bias=True, attention_bias=True, mlp_bias=True,
                       mamba_d_ssm=None, head_dim=64, tie_word_embeddings=True), CAUSAL, None),
    # Qwen2-VL: LayerNorm blocks `embed_dim` wide with a fc1 / fc2 MLP, a merger into the
    # vision config's `hidden_size`; the class defaults (the 72B-sized model), a flat
    # config.json, and the head tied by the text config
    ("qwen2_vl", {}, IMAGE_TEXT, None),
    ("qwen2_vl", dict(text_config=dict(num_hidden_layers=2),
                      vision_config=dict(depth=2)), IMAGE_TEXT, None),
    ("qwen2_vl", dict(text_config=dict(num_hidden_layers=2, tie_word_embeddings=True),
                      vision_config=dict(depth=1, embed_dim=64, num_heads=4, hidden_size=8192,
                                         mlp_ratio=3, spatial_merge_size=3, patch_size=8,
                                         temporal_patch_size=1, in_channels=1)),
     IMAGE_TEXT, None),
    ("qwen2_vl", dict(vocab_size=1000, hidden_size=256, intermediate_size=384,
                      num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                      tie_word_embeddings=True,
                      vision_config=dict(depth=2, embed_dim=64, num_heads=4, hidden_size=256)),
     IMAGE_TEXT, None),
    ("qwen2_vl", dict(text_config=dict(vocab_size=1000, hidden_size=256,
                                       intermediate_size=384, num_hidden_layers=2,
                                       num_attention_heads=4, num_key_value_heads=2),
                      vision_config=dict(depth=2, embed_dim=64, num_heads=4, hidden_size=256)),
     "AutoModel", "base"),
    ("qwen2_5_vl", dict(text_config=dict(num_hidden_layers=2),
                        vision_config=dict(depth=2)), IMAGE_TEXT, None),
    ("qwen2_5_vl", dict(text_config=dict(num_hidden_layers=2, tie_word_embeddings=True),
                        vision_config=dict(depth=2)), IMAGE_TEXT, None),
    ("qwen3_vl", dict(text_config=dict(num_hidden_layers=2),
                      vision_config=dict(depth=2)), IMAGE_TEXT, None),
    ("qwen3_vl", dict(tie_word_embeddings=True, text_config=dict(num_hidden_layers=2),
                      vision_config=dict(depth=2, deepstack_visual_indexes=[0])),
     IMAGE_TEXT, None),
]


@pytest.mark.parametrize("arch,cfg,cls,head", VARIANTS,
                         ids=[f"{a}-{i}" for i, (a, _, _, _) in enumerate(VARIANTS)])
def test_config_variants_match_transformers(arch, cfg, cls, head):
    assert formulas.count(arch, cfg, head=head).params == _meta_count(arch, cfg, cls)


def test_qwen3_vl_ties_only_through_its_own_setting():
    """Qwen3-VL reads `tie_word_embeddings` from the top-level config alone (Qwen2.5-VL also
    from its text config)."""
    cfg = dict(text_config=dict(num_hidden_layers=2, tie_word_embeddings=True),
               vision_config=dict(depth=1))
    assert not formulas.count("qwen3_vl", cfg).tied
    assert formulas.count("qwen2_5_vl", cfg).tied


_TINY_TOWERS = {"qwen2_5_vl": dict(depth=1, hidden_size=32, out_hidden_size=128,
                                   intermediate_size=64, num_heads=2),
                "qwen2_vl": dict(depth=1, embed_dim=32, hidden_size=128, num_heads=2),
                "qwen3_vl": dict(depth=1, hidden_size=32, out_hidden_size=128,
                                 intermediate_size=64, num_heads=2,
                                 deepstack_visual_indexes=[0])}


@pytest.mark.parametrize("dtype,d", [("float32", 4), ("bfloat16", 2)])
@pytest.mark.parametrize("attention", ["sdpa", "eager"])
@pytest.mark.parametrize("arch", ["qwen2_5_vl", "qwen2_vl", "qwen3_vl"])
def test_qwen25_vl_language_layer_matches_the_llama_table(dtype, d, attention, arch):
    """One language-model layer of Qwen2.5-VL or Qwen2-VL (multimodal RoPE, text-only
    input) = a 2-layer model's saved bytes − a 1-layer model's = llama's table; Qwen3-VL's
    (interleaved multimodal RoPE, deep-stacked visual features) = the table with Qwen3's
    per-head q/k norms."""
    from preflight.physics.activations import Shape, Variant, layer_activation_bytes
    from preflight.physics.dense import layer_of

    assert formulas.activation_family(arch) == "llama"

    def build(n):
        torch.manual_seed(0)
        text = dict(num_hidden_layers=n, hidden_size=128, num_attention_heads=4,
                    num_key_value_heads=2, intermediate_size=192, vocab_size=64,
                    rope_parameters={"rope_type": "default", "mrope_section": [4, 6, 6],
                                     "rope_theta": 10000.0,
                                     **({"mrope_interleaved": True} if arch == "qwen3_vl"
                                        else {})},
                    **({"head_dim": 32} if arch == "qwen3_vl" else {}))
        cfg = transformers.AutoConfig.for_model(
            arch, text_config=text, attn_implementation=attention,
            vision_config=_TINY_TOWERS[arch])
        model = transformers.AutoModelForImageTextToText.from_config(cfg)
        return model.model.language_model.to(getattr(torch, dtype)).train()

    ids = torch.randint(0, 60, (2, 48), generator=torch.Generator().manual_seed(0))
    got = _saved(build(2), ids) - _saved(build(1), ids)
    want = layer_activation_bytes("llama", Shape(s=48, b=2, h=128, a=4, f=192, k=2, d=d),
                                  attention, variant=Variant(layer=layer_of(arch)))
    assert got == want.total
