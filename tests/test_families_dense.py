"""The dense architecture families: each formula's parameter count, tensor shapes and
buffers equal what transformers builds on torch's meta device, for the config class's own
defaults (a full-size model), a published checkpoint's config, a tiny config, and the
variants that change the count (tied or untied embeddings, biases, q/k norms, post-norms,
`head_dim` ≠ hidden / heads, partial rotary, sliding windows, fused projections).

Test-time only: preflight itself imports neither torch nor transformers.
"""

import collections
import logging

import pytest

from preflight.models import formulas

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

_AUTO = {"causal_lm": "AutoModelForCausalLM", "masked_lm": "AutoModelForMaskedLM",
         "seq2seq_lm": "AutoModelForSeq2SeqLM", "base": "AutoModel",
         "seq_cls": "AutoModelForSequenceClassification",
         "token_cls": "AutoModelForTokenClassification"}

#: a tiny decoder: b·s-independent, every width distinct so no shape passes for another
T = dict(num_hidden_layers=2, hidden_size=64, intermediate_size=96, num_attention_heads=4,
         num_key_value_heads=2, vocab_size=100, pad_token_id=0)
#: a tiny encoder
E = dict(num_hidden_layers=2, hidden_size=64, intermediate_size=96, num_attention_heads=4,
         vocab_size=100, pad_token_id=0)

#: the count-changing config.json fields of these published checkpoints, transcribed by
#: hand: each test compares preflight's formula with transformers' build of the same fields,
#: so a slip would change which shape is tested, not the verdict (the catalogue's entries,
#: with their recorded sources, are checked against transformers on their own)
PUBLISHED = {
    "allenai/OLMo-2-1124-7B": ("olmo2", dict(
        vocab_size=100352, hidden_size=4096, intermediate_size=11008, num_hidden_layers=32,
        num_attention_heads=32, num_key_value_heads=32, tie_word_embeddings=False,
        pad_token_id=100277)),
    "microsoft/phi-4": ("phi3", dict(
        vocab_size=100352, hidden_size=5120, intermediate_size=17920, num_hidden_layers=40,
        num_attention_heads=40, num_key_value_heads=10, tie_word_embeddings=False,
        pad_token_id=100349)),
    "HuggingFaceTB/SmolLM2-1.7B": ("llama", dict(
        vocab_size=49152, hidden_size=2048, intermediate_size=8192, num_hidden_layers=24,
        num_attention_heads=32, num_key_value_heads=32, tie_word_embeddings=True)),
    "mistralai/Mistral-Small-24B-Base-2501": ("mistral", dict(
        vocab_size=131072, hidden_size=5120, intermediate_size=32768, num_hidden_layers=40,
        num_attention_heads=32, num_key_value_heads=8, head_dim=128,
        tie_word_embeddings=False)),
    "answerdotai/ModernBERT-large": ("modernbert", dict(
        vocab_size=50368, hidden_size=1024, intermediate_size=2624, num_hidden_layers=28,
        num_attention_heads=16)),
}

#: a 7B-sized OLMo 3 shape (a test shape, not a checkpoint's config): three sliding-window
#: layers to one full, repeated
OLMO3_7B_SHAPE = dict(
    vocab_size=100278, hidden_size=4096, intermediate_size=11008, num_hidden_layers=32,
    num_attention_heads=32, num_key_value_heads=32, tie_word_embeddings=False,
    sliding_window=4096, rms_norm_eps=1e-6,
    layer_types=(["sliding_attention"] * 3 + ["full_attention"]) * 8)

CASES = [
    # arch, config, head
    ("llama", {}, None), ("llama", T, None), ("llama", {**T, "tie_word_embeddings": True}, None),
    ("llama", {**T, "attention_bias": True, "mlp_bias": True}, None),
    ("llama", {**T, "head_dim": 24}, None), ("llama", T, "seq_cls"), ("llama", T, "token_cls"),
    ("mistral", {}, None), ("mistral", {**T, "head_dim": 24, "sliding_window": 8}, None),
    ("mistral", {**T, "tie_word_embeddings": True}, None),
    ("qwen2", {}, None), ("qwen2", T, None), ("qwen2", {**T, "tie_word_embeddings": True}, None),
    ("qwen3", {}, None), ("qwen3", {**T, "head_dim": 24}, None),
    ("qwen3", {**T, "head_dim": 16, "attention_bias": True, "tie_word_embeddings": True}, None),
    ("smollm3", {}, None), ("smollm3", T, None),
    ("smollm3", {**T, "tie_word_embeddings": False, "attention_bias": True,
                 "mlp_bias": True}, None),
    ("gemma", {}, None), ("gemma", {**T, "head_dim": 24}, None),
    ("gemma", {**T, "head_dim": 24, "tie_word_embeddings": False}, None),
    ("gemma2", {}, None), ("gemma2", {**T, "head_dim": 24}, None),
    ("gemma2", {**T, "head_dim": 16, "tie_word_embeddings": False}, None),
    ("gemma3_text", {}, None), ("gemma3_text", {**T, "head_dim": 24, "sliding_window": 8}, None),
    ("gemma3_text", {**T, "head_dim": 16, "attention_bias": True}, None),
    ("gemma3n_text", {}, None),
    ("gemma3n_text", {**T, "num_hidden_layers": 6, "head_dim": 24, "num_kv_shared_layers": 2,
                      "hidden_size_per_layer_input": 8, "vocab_size_per_layer_input": 50,
                      "laurel_rank": 4, "altup_num_inputs": 3,
                      "intermediate_size": [96, 96, 128, 128, 96, 80],
                      "layer_types": ["sliding_attention", "full_attention"] * 3,
                      "activation_sparsity_pattern": [0.95] + [0.0] * 5}, None),
    ("gemma3n_text", {**T, "num_hidden_layers": 3, "head_dim": 16, "num_kv_shared_layers": 0,
                      "hidden_size_per_layer_input": 8, "vocab_size_per_layer_input": 50,
                      "laurel_rank": 4, "tie_word_embeddings": False,
                      "activation_sparsity_pattern": [0.0] * 3}, None),
    ("phi", {}, None), ("phi", {**T, "num_key_value_heads": 4}, None),
    ("phi", {**T, "num_key_value_heads": 4, "qk_layernorm": True,
             "partial_rotary_factor": 0.25}, None),
    ("phi3", {}, None), ("phi3", T, None),
    ("phi3", {**T, "tie_word_embeddings": True, "partial_rotary_factor": 0.75}, None),
    ("olmo", {}, None), ("olmo", T, None),
    ("olmo", {**T, "attention_bias": True, "clip_qkv": 8.0, "tie_word_embeddings": True}, None),
    ("olmo2", {}, None), ("olmo2", T, None),
    ("olmo2", {**T, "attention_bias": True, "tie_word_embeddings": True}, None),
    # OLMo 3: a rotary table per kind of layer (two sliding layers: one table; four: both)
    ("olmo3", {}, None), ("olmo3", T, None), ("olmo3", OLMO3_7B_SHAPE, None),
    ("olmo3", {**T, "num_hidden_layers": 4, "head_dim": 24, "attention_bias": True,
               "tie_word_embeddings": True}, None),
    ("olmo3", {**T, "num_hidden_layers": 3, "sliding_window": 8,
               "layer_types": ["full_attention"] * 3}, None),
    ("olmo3", T, "seq_cls"),
    ("glm", {}, None), ("glm", T, None), ("glm", {**T, "attention_bias": False}, None),
    ("glm4", {}, None), ("glm4", T, None),
    ("glm4", {**T, "attention_bias": False, "head_dim": 24, "tie_word_embeddings": True}, None),
    ("glm4", {**T, "partial_rotary_factor": 1.0}, "seq_cls"),
    ("gpt2", {}, None), ("gpt2", dict(n_layer=2, n_embd=64, n_head=4, vocab_size=100), None),
    ("gpt2", dict(n_layer=2, n_embd=64, n_head=4, vocab_size=100, n_inner=80,
                  tie_word_embeddings=False), None),
    ("gpt_neox", {}, None), ("gpt_neox", {**T, "num_key_value_heads": 4}, None),
    ("gpt_neox", {**T, "attention_bias": False, "rotary_pct": 0.5,
                  "tie_word_embeddings": True}, None),
    ("bloom", {}, None), ("bloom", dict(n_layer=3, hidden_size=96, n_head=4, vocab_size=100,
                                        tie_word_embeddings=False), None),
    ("opt", {}, None), ("opt", dict(num_hidden_layers=2, hidden_size=64, ffn_dim=96,
                                    num_attention_heads=4, vocab_size=100,
                                    word_embed_proj_dim=32), None),
    ("opt", dict(num_hidden_layers=2, hidden_size=64, ffn_dim=96, num_attention_heads=4,
                 vocab_size=100, enable_bias=False, do_layer_norm_before=False), None),
    ("falcon", {}, None),
    ("falcon", dict(num_hidden_layers=2, hidden_size=64, num_attention_heads=4, vocab_size=100,
                    new_decoder_architecture=True, num_kv_heads=2), None),
    ("falcon", dict(num_hidden_layers=2, hidden_size=64, num_attention_heads=4, vocab_size=100,
                    multi_query=False, parallel_attn=False, bias=True,
                    tie_word_embeddings=False), None),
    ("t5", {}, None), ("t5", dict(num_layers=2, num_decoder_layers=3, d_model=64, d_kv=16,
                                  d_ff=96, num_heads=4, vocab_size=100,
                                  feed_forward_proj="gated-gelu"), None),
    ("bert", {}, None), ("bert", E, None), ("bert", {**E, "tie_word_embeddings": False}, None),
    ("bert", E, "seq_cls"), ("bert", E, "base"),
    ("roberta", {}, None), ("roberta", {**E, "pad_token_id": 1}, "seq_cls"),
    ("roberta", {**E, "pad_token_id": 1}, "token_cls"),
    ("modernbert", {}, None), ("modernbert", E, None),
    ("modernbert", {**E, "num_hidden_layers": 4, "norm_bias": True, "attention_bias": True,
                    "mlp_bias": True, "classifier_bias": True, "decoder_bias": False}, None),
    ("modernbert", {**E, "tie_word_embeddings": False}, None),
    ("modernbert", E, "seq_cls"), ("modernbert", E, "token_cls"), ("modernbert", E, "base"),
] + [(arch, cfg, None) for arch, cfg in PUBLISHED.values()]


def _build(arch: str, cfg: dict, head: str):
    logging.getLogger("transformers").setLevel(logging.ERROR)
    config = transformers.AutoConfig.for_model(arch, **cfg)
    with torch.device("meta"):
        return getattr(transformers, _AUTO[head]).from_config(config)


def _id(case) -> str:
    arch, cfg, head = case
    return f"{arch}-{'defaults' if not cfg else len(cfg)}-{head or 'default'}"


@pytest.mark.parametrize("case", CASES, ids=[_id(c) for c in CASES])
def test_count_tensors_and_buffers_match_transformers(case):
    arch, cfg, head = case
    shape = formulas.count(arch, cfg, head=head)
    model = _build(arch, cfg, shape.head)
    # parameters() yields a tied weight once
    assert shape.params == sum(p.numel() for p in model.parameters())
    if shape.param_shapes is not None:
        mine = collections.Counter()
        for dims, n in shape.param_shapes:
            mine[tuple(dims)] += n
        assert mine == collections.Counter(tuple(p.shape) for p in model.parameters())
    if shape.buffers is not None:
        dtype = {"float": "torch.float32", "int64": "torch.int64"}
        assert sorted((n.rsplit(".", 1)[-1], tuple(d), dtype[t]) for n, d, t in shape.buffers) \
            == sorted((n.rsplit(".", 1)[-1], tuple(b.shape), str(b.dtype))
                      for n, b in model.named_buffers())


@pytest.mark.parametrize("model_id", sorted(PUBLISHED))
def test_published_checkpoints_resolve_by_config(model_id):
    """A config.json of a known family resolves by its model_type, whatever its name."""
    arch, cfg = PUBLISHED[model_id]
    assert formulas.arch_of_config({"model_type": arch, **cfg}) == formulas.normalise_arch(arch)


def test_olmo3_7b_shape_counts_exactly():
    """The 7B-sized OLMo 3 shape: olmo2's layers (q/k norms over all heads, post-norms) and
    the rotary tables of its two kinds of layer."""
    shape = formulas.count("olmo3", OLMO3_7B_SHAPE)
    assert shape.params == 7_298_011_136
    assert sorted(n for n, _, _ in shape.buffers) == [
        "rotary_emb.full_attention_inv_freq", "rotary_emb.full_attention_original_inv_freq",
        "rotary_emb.sliding_attention_inv_freq",
        "rotary_emb.sliding_attention_original_inv_freq"]
    assert formulas.arch_of_config({"model_type": "olmo3"}) == "olmo3"


@pytest.mark.parametrize("config_class,architecture,arch", [
    ("OlmoConfig", "OlmoForCausalLM", "olmo"), ("Olmo2Config", "Olmo2ForCausalLM", "olmo2"),
    ("Olmo3Config", "Olmo3ForCausalLM", "olmo3"),
    ("GlmConfig", "GlmForCausalLM", "glm"), ("Glm4Config", "Glm4ForCausalLM", "glm4"),
    ("ModernBertConfig", "ModernBertForMaskedLM", "modernbert"),
    ("Gemma3nTextConfig", "Gemma3nForCausalLM", "gemma3n_text"),
    ("SmolLM3Config", "SmolLM3ForCausalLM", "smollm3"),
    ("Phi3Config", "Phi3ForCausalLM", "phi3"),
])
def test_names_of_the_new_families(config_class, architecture, arch):
    """The config class (a script's `Glm4Config(...)`) and a config.json's `architectures`
    entry name the family, and transformers spells them so."""
    assert formulas.CONFIG_CLASSES[config_class] == arch
    assert formulas.arch_of_config({"architectures": [architecture]}) == arch
    assert hasattr(transformers, config_class) and hasattr(transformers, architecture)
