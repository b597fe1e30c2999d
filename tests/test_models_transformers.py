"""Catalogue models, one per architecture: the formula's count equals transformers' own count.

transformers builds each model from the catalogue's config fields on torch's meta device
(no memory, no weights), and `sum(p.numel())` is compared with `formulas.count`. Test-time
only: preflight itself imports neither library.
"""

import json

import pytest

from preflight.models import catalog, formulas

torch = pytest.importorskip("torch", reason="torch==2.13.0 not installed (test extra)")
transformers = pytest.importorskip(
    "transformers", reason="transformers not installed: pip install -e '.[test]' to run the "
    "formula-vs-transformers comparison")

_AUTO = {"causal_lm": "AutoModelForCausalLM", "masked_lm": "AutoModelForMaskedLM",
         "seq2seq_lm": "AutoModelForSeq2SeqLM", "base": "AutoModel",
         "seq_cls": "AutoModelForSequenceClassification",
         "token_cls": "AutoModelForTokenClassification"}


#: image-text checkpoints: no causal-LM class of their own; the formula counts the vision
#: tower and the language model, as the image-text class builds them
_IMAGE_TEXT = ("qwen2_vl", "qwen2_5_vl", "qwen3_vl", "qwen3_vl_moe", "qwen3_5", "qwen3_5_moe",
               "gemma4", "llava", "mistral3")


def _auto_class(arch: str, head: str):
    if head == "causal_lm" and arch in _IMAGE_TEXT:
        return transformers.AutoModelForImageTextToText
    return getattr(transformers, _AUTO[head])


def _real_count(arch: str, cfg: dict, head: str, **extra) -> int:
    import logging
    logging.getLogger("transformers").setLevel(logging.ERROR)
    config = transformers.AutoConfig.for_model(arch, **cfg, **extra)
    auto = _auto_class(arch, head)
    with torch.device("meta"):
        model = auto.from_config(config)
    return sum(p.numel() for p in model.parameters())


def _unique_shapes():
    """One catalogue entry per architecture that has a formula, the smallest (every entry's
    count is checked against transformers' when the catalogue is built, and recorded:
    tests/test_catalog.py)."""
    best = {}
    for e in catalog.entries():
        if formulas.normalise_arch(e["arch"]) is None:
            continue
        n = formulas.count(e["arch"], e["config"]).params
        if e["arch"] not in best or n < best[e["arch"]][0]:
            best[e["arch"]] = (n, json.dumps(e["config"], sort_keys=True), e)
    return [best[a][2] for a in sorted(best)]


@pytest.mark.parametrize("entry", _unique_shapes(), ids=lambda e: e["name"])
def test_catalogue_count_matches_transformers(entry):
    arch, cfg = entry["arch"], entry["config"]
    shape = formulas.count(arch, cfg)
    assert shape.params == _real_count(arch, cfg, shape.head)


@pytest.mark.parametrize("name,head,labels", [
    ("bert-base-cased", "seq_cls", 2),
    ("bert-base-uncased", "base", None),
    ("bert-base-uncased", "token_cls", 9),
    ("roberta-base", "seq_cls", 3),
    ("roberta-base", "base", None),
    ("meta-llama/Llama-2-7b-hf", "seq_cls", 2),
    ("gpt2", "base", None),
    ("t5-small", "base", None),
])
def test_task_heads_match_transformers(name, head, labels):
    arch, cfg = catalog.lookup(name)
    shape = formulas.count(arch, cfg, head=head, num_labels=labels)
    extra = {"num_labels": labels} if labels else {}
    assert shape.params == _real_count(arch, cfg, head, **extra)


@pytest.mark.parametrize("arch,cfg", [
    ("llama", {"attention_bias": True, "mlp_bias": True, "num_hidden_layers": 2}),
    ("qwen2", {"num_hidden_layers": 2, "tie_word_embeddings": True}),
    ("phi", {"qk_layernorm": True, "num_hidden_layers": 2, "tie_word_embeddings": True}),
    ("falcon", {"num_hidden_layers": 2, "multi_query": False, "parallel_attn": False,
                "bias": True}),
    ("opt", {"num_hidden_layers": 2, "enable_bias": False, "_remove_final_layer_norm": True}),
    ("t5", {"num_layers": 2, "num_decoder_layers": 3, "feed_forward_proj": "gated-gelu"}),
    ("gpt2", {"n_layer": 2, "n_inner": 1000}),
    ("gpt_neox", {"num_hidden_layers": 2, "attention_bias": False}),
    ("gemma3_text", {"num_hidden_layers": 2, "tie_word_embeddings": False}),
    ("olmo2", {"num_hidden_layers": 2, "num_key_value_heads": 8, "attention_bias": True}),
    ("olmo3", {"num_hidden_layers": 4, "num_key_value_heads": 8, "attention_bias": True}),
    ("olmoe", {"num_hidden_layers": 2, "num_key_value_heads": 4, "num_experts": 8}),
    ("qwen2_vl", {"text_config": {"num_hidden_layers": 2}, "vision_config": {"depth": 1}}),
    # SigLIP's defaults, with its attention-pooling head
    ("gemma3", {"text_config": {"num_hidden_layers": 2}, "vision_config": {}}),
])
def test_config_variants_match_transformers(arch, cfg):
    shape = formulas.count(arch, cfg)
    assert shape.params == _real_count(arch, cfg, shape.head)


def _real_tensors(arch: str, cfg: dict, head: str):
    import collections
    import logging
    logging.getLogger("transformers").setLevel(logging.ERROR)
    config = transformers.AutoConfig.for_model(arch, **cfg)
    with torch.device("meta"):
        model = _auto_class(arch, head).from_config(config)
    shapes = collections.Counter(tuple(p.shape) for p in model.parameters())
    buffers = sorted((n.rsplit(".", 1)[-1], tuple(b.shape), str(b.dtype))
                     for n, b in model.named_buffers())
    return shapes, buffers


@pytest.mark.parametrize("entry", [e for e in _unique_shapes()
                                   if formulas.count(e["arch"], e["config"]).param_shapes
                                   is not None], ids=lambda e: e["name"])
def test_catalogue_tensors_match_transformers(entry):
    """Every parameter tensor's shape (what torch.optim keeps per tensor follows from it)
    and every registered buffer, with its dtype, as transformers builds the model."""
    import collections
    arch, cfg = entry["arch"], entry["config"]
    shape = formulas.count(arch, cfg)
    mine = collections.Counter()
    for dims, n in shape.param_shapes:
        mine[tuple(dims)] += n
    real, buffers = _real_tensors(arch, cfg, shape.head)
    assert mine == real
    assert shape.buffers is not None
    dtype = {"float": "torch.float32", "int64": "torch.int64"}
    assert sorted((n.rsplit(".", 1)[-1], tuple(d), dtype[t])
                  for n, d, t in shape.buffers) == buffers
