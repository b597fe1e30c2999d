"""Resolution of model references: local dir, HF cache, catalogue, project table, --params."""

import json
import os

import pytest

from preflight.models import catalog, formulas
from preflight.resolve.entry import facts_for_name, resolve
from preflight.plan import Origin, Source, merge

FIX = os.path.join(os.path.dirname(__file__), "fixtures", "models")
SRC = Source(path="train.py", line=12, col=9)


def _run(refs, **kw):
    kw.setdefault("search_dirs", [])
    kw.setdefault("project_models", {})
    kw.setdefault("params_override", None)
    facts, diags = resolve(refs, **kw)
    return merge(facts), facts, diags


def hub(name, **extra):
    return {"kind": "hub", "name": name, "source": SRC, **extra}


@pytest.fixture(autouse=True)
def _empty_hf_cache(tmp_path, monkeypatch):
    for v in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "TRANSFORMERS_CACHE"):
        monkeypatch.delenv(v, raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.chdir(tmp_path)


@pytest.mark.parametrize("name,canonical", [
    ("meta-llama/Llama-2-7b-hf", "meta-llama/Llama-2-7b-hf"),
    ("LLAMA-2-7B-CHAT-HF", "meta-llama/Llama-2-7b-chat-hf"),
    ("NousResearch/Llama-2-7b-hf", "meta-llama/Llama-2-7b-hf"),
    ("meta-llama/Meta-Llama-3.1-8B", "meta-llama/Llama-3.1-8B"),
    ("TheBloke/Mistral-7B-Instruct-v0.2-GPTQ", "mistralai/Mistral-7B-v0.1"),
    ("mistralai/Mistral-7B-Instruct-v0.3", "mistralai/Mistral-7B-Instruct-v0.3"),
    ("Qwen/Qwen2.5-7B-Instruct-AWQ", "Qwen/Qwen2.5-7B"),
    ("acme/Qwen3-4B-sft-v2", "Qwen/Qwen3-4B"),
    ("google/gemma-2-9b-it", "google/gemma-2-9b-it"),
    ("google/gemma-3-12b-it", "google/gemma-3-12b-pt"),
    ("google/gemma-3-1b-it", "google/gemma-3-1b-it"),
    ("TinyLlama/TinyLlama-1.1B-Chat-v0.6", "TinyLlama/TinyLlama-1.1B"),
    ("EleutherAI/pythia-1b-deduped", "EleutherAI/pythia-1b-deduped"),
    ("tiiuae/falcon-7b-instruct", "tiiuae/falcon-7b"),
    ("~/model_weights/llama-7b", "huggyllama/llama-7b"),
    ("openai-community/gpt2", "gpt2"),
    ("google-bert/bert-base-cased", "bert-base-cased"),
    ("llama3_70b", "meta-llama/Meta-Llama-3-70B"),
    ("Llama 2 7B", "meta-llama/Llama-2-7b-hf"),
    # a re-published quantized checkpoint has the parameters of the model it quantizes
    ("nvidia/Qwen3-30B-A3B-NVFP4", "Qwen/Qwen3-30B-A3B"),
    ("hugging-quants/Meta-Llama-3.1-405B-BNB-NF4-BF16", "meta-llama/Llama-3.1-405B"),
    ("axolotl-quants/Llama-4-Scout-17B-16E-Linearized-bnb-nf4-bf16",
     "meta-llama/Llama-4-Scout-17B-16E-Instruct"),
])
def test_catalogue_names(name, canonical):
    assert catalog.lookup_entry(name)[0] == canonical


def test_catalogue_size_and_families():
    entries = catalog.entries()
    assert len(entries) >= 40
    assert {e["arch"] for e in entries} >= {
        "llama", "mistral", "mixtral", "qwen2", "gemma", "gemma2", "gemma3", "phi", "gpt2", "gpt_neox",
        "opt", "falcon", "bloom", "bert", "t5"}
    # shapes, never counts
    assert not any("params" in e["config"] for e in entries)
    assert catalog.lookup("no-such-model-anywhere") is None


def test_hub_name_from_catalogue():
    plan, facts, diags = _run([hub("meta-llama/Llama-2-7b-hf")])
    assert diags == []
    f = plan.fact("params")
    assert (f.value, f.origin, f.source) == (6_738_415_616, Origin.CATALOG, SRC)
    assert [plan.value(k) for k in ("layers", "hidden", "heads", "kv_heads", "ffn_hidden",
                                    "vocab")] == [32, 4096, 32, 32, 11008, 32000]
    assert plan.value("trainable_params") == 6_738_415_616
    assert plan.known("lora") and plan.value("lora") is None


def test_sequence_classification_head():
    plan, _, _ = _run([hub("bert-base-cased", **{"class": "AutoModelForSequenceClassification",
                                                "kwargs": {"num_labels": 2}})])
    assert plan.value("params") == 108_311_810
    assert (plan.value("vocab"), plan.value("layers")) == (28996, 12)


def test_local_directory_wins(tmp_path):
    d = tmp_path / "ckpt"
    d.mkdir()
    (d / "config.json").write_text(json.dumps({
        "model_type": "llama", "hidden_size": 256, "intermediate_size": 688,
        "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 1000}))
    plan, _, diags = _run([hub("ckpt")], search_dirs=[str(tmp_path)])
    h, i, v = 256, 688, 1000
    assert plan.value("params") == 2 * v * h + 2 * (4 * h * h + 3 * h * i + 2 * h) + h
    assert str(d / "config.json") in plan.fact("params").reason
    assert diags == []


def test_hf_cache_offline(tmp_path):
    snap = tmp_path / "hf" / "hub" / "models--acme--tiny-gpt" / "snapshots" / "0123abcd"
    snap.mkdir(parents=True)
    (snap / "config.json").write_text(json.dumps({
        "model_type": "gpt2", "n_embd": 64, "n_layer": 2, "n_head": 4, "vocab_size": 500,
        "n_positions": 128}))
    plan, _, diags = _run([hub("acme/tiny-gpt")])
    h = 64
    assert plan.value("params") == 500 * h + 128 * h + 2 * (12 * h * h + 13 * h) + 2 * h
    assert "Hugging Face cache" in plan.fact("params").reason


def test_malformed_cached_config_falls_through(tmp_path):
    snap = tmp_path / "hf" / "hub" / "models--openai-community--gpt2" / "snapshots" / "x"
    snap.mkdir(parents=True)
    (snap / "config.json").write_text("{not json")
    plan, _, diags = _run([hub("openai-community/gpt2")])
    assert plan.value("params") == 124_439_808
    assert [(d.code, d.path, d.line) for d in diags] == [("PF005", str(snap / "config.json"), 1)]


def test_unknown_model_is_a_located_finding():
    plan, _, diags = _run([hub("acme/secret-13b")])
    assert [(d.code, d.path, d.line, d.col) for d in diags] == [("PF004", "train.py", 12, 9)]
    assert "[tool.preflight.models]" in diags[0].fix and "--params" in diags[0].fix
    assert not plan.known("params")
    assert "acme/secret-13b" in plan.fact("params").reason


def test_project_table_and_params_flag():
    plan, _, diags = _run([hub("acme/secret-13b")],
                          project_models={"acme/secret-13b": 13_000_000_000})
    assert (plan.value("params"), plan.fact("params").origin) == (13_000_000_000, Origin.PROJECT)
    assert diags == []
    fields = {"model_type": "llama", "hidden_size": 512, "num_hidden_layers": 4,
              "num_attention_heads": 8, "intermediate_size": 1024, "vocab_size": 3000}
    plan, _, _ = _run([hub("acme/secret-13b")], project_models={"Secret-13B": fields})
    assert plan.value("params") == 2 * 3000 * 512 + 4 * (4 * 512 * 512 + 3 * 512 * 1024
                                                        + 2 * 512) + 512
    plan, _, diags = _run([hub("acme/secret-13b")], params_override=7_000_000_000)
    assert (plan.value("params"), plan.fact("params").origin) == (7_000_000_000, Origin.CLI)
    assert diags == []


def test_config_objects_and_auto_config():
    cfg = {"kind": "config", "class": "LlamaConfig", "source": SRC,
           "fields": {"hidden_size": 512, "num_hidden_layers": 4, "num_attention_heads": 8,
                      "num_key_value_heads": 2, "intermediate_size": 1376, "vocab_size": 32000}}
    plan, _, _ = _run([cfg])
    assert plan.fact("params").origin is Origin.DERIVED
    assert plan.value("params") == 2 * 32000 * 512 + 4 * (
        2 * 512 * 512 + 2 * 512 * 128 + 3 * 512 * 1376 + 2 * 512) + 512
    assert plan.value("kv_heads") == 2
    auto = {"kind": "auto_config", "name": "gpt2", "overrides": {"n_layer": 6}, "source": SRC}
    plan, _, _ = _run([auto])
    assert plan.value("params") == 124_439_808 - 6 * (12 * 768 * 768 + 13 * 768)
    assert plan.fact("params").origin is Origin.DERIVED


def test_custom_module_with_config_object():
    src = Source(path=os.path.join(FIX, "tiny_gpt.py"), line=90, col=1)
    refs = [{"kind": "config", "class": "GPTConfig", "source": src,
             "fields": {"n_layer": 2, "n_head": 2, "n_embd": 32, "vocab_size": 100,
                        "block_size": 64, "bias": False}},
            {"kind": "class", "class": "GPT", "args": [], "source": src}]
    plan, _, diags = _run(refs)
    h, V, P = 32, 100, 64
    expected = V * h + P * h + 2 * (h + 3 * h * h + h * h + h + 8 * h * h) + h
    assert (plan.value("params"), plan.fact("params").origin) == (expected, Origin.DERIVED)
    assert (plan.value("layers"), plan.value("hidden"), plan.value("vocab")) == (2, 32, 100)
    assert diags == []


def test_custom_module_that_cannot_be_sized():
    src = Source(path=os.path.join(FIX, "tiny_gpt.py"), line=90, col=1)
    plan, _, diags = _run([{"kind": "class", "class": "Mystery", "source": src}])
    assert [d.code for d in diags] == ["PF004"]
    assert "Mystery is not defined" in diags[0].message


def test_qlora_refs():
    refs = [hub("NousResearch/Llama-2-7b-hf", kwargs={"load_in_4bit": True}),
            {"kind": "lora", "r": 32, "alpha": 16, "targets": "all-linear",
             "source": Source(path="qlora.yml", line=30, col=1), "origin": "config"}]
    plan, _, diags = _run(refs)
    assert plan.value("trainable_params") == 79_953_920
    assert plan.value("params") == 6_818_369_536
    lora = plan.value("lora")
    assert (lora["r"], lora["base_bits"], lora["targets"]) == (32, 4, ["all-linear"])
    assert plan.fact("lora").source == Source(path="qlora.yml", line=30, col=1)
    # peft's default targets for qwen2 when none are named, 8-bit base via a quant ref
    refs = [hub("Qwen/Qwen2-0.5B"), {"kind": "quant", "bits": 8, "source": SRC},
            {"kind": "lora", "r": 32, "source": SRC}]
    plan, _, _ = _run(refs)
    assert (plan.value("trainable_params"), plan.value("params")) == (2_162_688, 496_195_456)
    assert plan.value("lora")["targets"] == ["q_proj", "v_proj"]
    assert plan.value("lora")["base_bits"] == 8


def test_bad_refs_never_raise():
    refs = [None, {"kind": "hub", "name": None}, {"kind": "config", "class": "LlamaConfig",
                                                  "fields": {"hidden_size": "big"}},
            {"kind": "lora", "r": "x"}, {"kind": "weird"}]
    facts, diags = resolve(refs, search_dirs=[], project_models={}, params_override=None)
    assert all(d.code in ("PF004", "PF005") for d in diags)


def test_facts_for_name():
    facts = dict(facts_for_name("mistralai/Mixtral-8x7B-Instruct-v0.1"))
    assert facts["params"].value == 46_702_792_704
    assert "12,879,925,248 active" in facts["params"].reason
    assert facts_for_name("no-such/model") is None


CORPUS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "shared", "corpus", "dev-expected.json")

# case → the model references its files make (names as the job writes them)
CORPUS_REFS = {
    "accelerate_slurm_multinode_fsdp_bert_nlp": [hub(
        "bert-base-cased", **{"class": "AutoModelForSequenceClassification"},
        kwargs={"return_dict": True})],
    "alpaca_llama7b_deepspeed_zero3_offload_4gpu": [hub("llama-7b", resize_vocab=32001)],
    "axolotl_llama2_7b_qlora": [hub("NousResearch/Llama-2-7b-hf", kwargs={"load_in_4bit": True}),
                                {"kind": "lora", "r": 32, "targets": "all-linear"}],
    "axolotl_llama31_8b_full_finetune_1gpu": [hub("NousResearch/Meta-Llama-3.1-8B")],
    "fastchat_llama7b_qlora_zero2": [hub("~/model_weights/llama-7b"),
                                     {"kind": "lora", "r": 8, "targets": ["q_proj", "v_proj"]}],
    "gptneox_pythia_1b": [hub("EleutherAI/pythia-1b")],
    "litgpt_llama3_8b_full_finetune_4gpu": [hub("meta-llama/Meta-Llama-3-8B")],
    "litgpt_tinyllama_1b_pretrain": [hub("TinyLlama/TinyLlama-1.1B-intermediate-step-1431k-3T")],
    "llamafactory_qwen3_4b_full_sft_zero3": [hub("Qwen/Qwen3-4B-Instruct-2507")],
    "megatron_llama3_8b_fp8_8gpu": [hub("meta-llama/Llama-3.1-8B")],
    "megatron_mixtral_8x7b_pp4_ep8": [hub("mistralai/Mixtral-8x7B-v0.1")],
    "peft_lora_fsdp_llama2_70b_8gpu": [hub("meta-llama/Llama-2-70b-hf", resize_vocab=32008),
                                       {"kind": "lora", "r": 8, "targets": "all-linear"}],
    "torchtitan_llama3_70b_registry_slurm_4nodes": [hub("meta-llama/Meta-Llama-3-70B")],
    "trl_sft_gemma3_12b_zero3_8gpu": [hub("google/gemma-3-12b-it")],
    "trl_sft_qwen2_05b_lora_1gpu": [hub("Qwen/Qwen2-0.5B"),
                                    {"kind": "lora", "r": 32, "targets": None}],
}


@pytest.mark.skipif(not os.path.exists(CORPUS), reason="dev corpus not present")
@pytest.mark.parametrize("case", sorted(CORPUS_REFS))
def test_dev_corpus_model_facts(case):
    with open(CORPUS, encoding="utf-8") as f:
        expected = json.load(f)["cases"][case]["facts"]
    plan, _, diags = _run(CORPUS_REFS[case])
    assert diags == []
    for name in ("params", "trainable_params", "layers", "hidden", "heads", "kv_heads", "vocab"):
        if name in expected:
            assert plan.value(name) == expected[name]["value"], name


def test_resolution_imports_neither_torch_nor_transformers():
    import subprocess
    import sys
    code = ("import sys\n"
            "from preflight.resolve.entry import resolve\n"
            "from preflight.plan import Source\n"
            "import os\n"
            "src = Source(path=os.path.join(%r, 'tiny_gpt.py'), line=1, col=1)\n"
            "f, d = resolve([{'kind': 'hub', 'name': 'gpt2', 'source': src},\n"
            "                {'kind': 'class', 'class': 'GPT', 'source': src}],\n"
            "               search_dirs=[], project_models={}, params_override=None)\n"
            "print(sorted(m for m in ('torch', 'transformers', 'peft') if m in sys.modules))\n"
            % FIX)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60)
    assert out.stdout.strip() == "[]", out.stderr


def test_class_ref_with_call_expression():
    src = Source(path=os.path.join(FIX, "tiny_resnet.py"), line=1, col=1)
    plan, _, diags = _run([{"kind": "class", "class": "ResNet", "source": src,
                            "expr": "ResNet(Bottleneck, [1, 1, 1, 1], num_classes=5)"}])
    from preflight.models.modules import count_expression
    import libcst as cst
    with open(src.path, encoding="utf-8") as f:
        module = cst.parse_module(f.read())
    n, _ = count_expression(module, "ResNet(Bottleneck, [1, 1, 1, 1], num_classes=5)")
    assert plan.value("params") == n and diags == []


def test_extractor_encodings():
    """Refs exactly as the Python extractor writes them (objects as {"call", "kwargs"},
    unknown values as {"unknown": reason})."""
    path = os.path.join(FIX, "tiny_gpt.py")
    fields = {"bias": False, "block_size": 256, "dropout": 0.0, "n_embd": 128, "n_head": 4,
              "n_layer": 4, "vocab_size": 50304}
    refs = [{"kind": "config", "class": "GPTConfig", "fields": fields,
             "source": Source(path=path, line=14, col=11)},
            {"kind": "class", "class": "GPT", "args": [{"call": "GPTConfig", "kwargs": fields}],
             "source": Source(path=path, line=15, col=9)}]
    plan, _, diags = _run(refs)
    h, V, P, L = 128, 50304, 256, 4
    assert plan.value("params") == V * h + P * h + L * (h + 3 * h * h + h * h + h + 8 * h * h) + h
    assert plan.source("params") == Source(path=path, line=15, col=9)
    assert diags == []
    # a non-model config dataclass is not taken for the model
    plan, _, diags = _run([{"kind": "config", "class": "TrainConfig", "source": SRC,
                            "fields": {"lr": 3e-4, "epochs": 3}}])
    assert (plan.facts, diags) == ({}, [])
    refs = [hub("meta-llama/Llama-2-7b-hf", **{"class": "AutoModelForCausalLM"},
                kwargs={"quantization_config": {"call": "BitsAndBytesConfig", "kwargs": {
                    "load_in_4bit": True, "bnb_4bit_quant_type": "nf4"}}}),
            {"kind": "lora", "r": {"unknown": "args.lora_r from the command line"},
             "alpha": 16, "targets": ["q_proj"], "base_bits": 16, "modules_to_save": [],
             "source": SRC}]
    plan, _, _ = _run(refs)
    assert plan.value("lora")["base_bits"] == 4 and plan.value("lora")["r"] is None
    assert not plan.known("trainable_params")
    assert plan.fact("trainable_params").reason == "the LoRA rank is not known"
    assert plan.value("params") == 6_738_415_616


def test_facts_for_a_model_name():
    from preflight.resolve.entry import facts_for_name
    facts = dict(facts_for_name("gpt2"))
    assert facts["params"].value == 124_439_808
    assert facts["family"].value == "gpt2"
    assert facts_for_name("no-such/model") is None


def test_megatron_arguments():
    sc21 = {"--num-layers": 24, "--hidden-size": 2304, "--num-attention-heads": 24,
            "--seq-length": 2048, "--max-position-embeddings": 2048,
            "--tokenizer-type": "GPT2BPETokenizer"}
    plan, _, diags = _run([{"kind": "megatron", "args": sc21, "source": SRC}])
    assert (plan.value("params"), plan.value("vocab"), diags) == (1_650_166_272, 50304, [])
    llama3 = {"--num-layers": 32, "--hidden-size": 4096, "--ffn-hidden-size": 14336,
              "--num-attention-heads": 32, "--group-query-attention": True,
              "--num-query-groups": 8, "--swiglu": True, "--normalization": "RMSNorm",
              "--disable-bias-linear": True, "--position-embedding-type": "rope",
              "--untie-embeddings-and-output-weights": True,
              "--tokenizer-model": "meta-llama/Meta-Llama-3-8B"}
    plan, _, _ = _run([{"kind": "megatron", "args": llama3, "source": SRC}])
    assert (plan.value("params"), plan.value("kv_heads")) == (8_030_261_248, 8)
    moe = {**llama3, "--tokenizer-model": "mistralai/Mixtral-8x7B-v0.1", "--num-experts": 8,
           "--moe-router-topk": 2}
    plan, _, _ = _run([{"kind": "megatron", "args": moe, "source": SRC}])
    assert plan.value("params") == 46_702_792_704
    assert "12,879,925,248 active" in plan.fact("params").reason
    plan, _, diags = _run([{"kind": "megatron", "source": SRC,
                            "args": {**sc21, "--tokenizer-type": "SentencePieceTokenizer"}}])
    assert [d.code for d in diags] == ["PF004"] and not plan.known("params")


def test_saved_peft_adapter_directory(tmp_path):
    d = tmp_path / "out" / "checkpoint-500"
    d.mkdir(parents=True)
    (d / "adapter_config.json").write_text(json.dumps({
        "base_model_name_or_path": "Qwen/Qwen2-0.5B", "peft_type": "LORA", "r": 32,
        "lora_alpha": 64, "target_modules": ["q_proj", "v_proj"], "modules_to_save": None}))
    plan, _, diags = _run([hub("out/checkpoint-500")], search_dirs=[str(tmp_path)])
    assert diags == []
    assert (plan.value("params"), plan.value("trainable_params")) == (496_195_456, 2_162_688)
    assert plan.fact("lora").source == Source(path=str(d / "adapter_config.json"), line=1, col=1)
    assert plan.fact("lora").origin is Origin.CONFIG


def test_model_name_not_known_statically():
    plan, _, diags = _run([hub({"unknown": "args.model_name_or_path from the command line"})])
    assert [(d.code, d.line) for d in diags] == [("PF004", 12)]
    assert diags[0].message == ("cannot size the model: the model name is not known statically "
                                "(args.model_name_or_path from the command line)")
    assert not plan.known("params")


def test_activation_family_of_names():
    assert [catalog.family_of(n) for n in ("Qwen/Qwen2.5-7B", "EleutherAI/pythia-1b",
                                           "google/gemma-2-9b-it", "tiiuae/falcon-7b",
                                           "nope/nope")] == ["llama", "gpt2", "llama", None,
                                                             None]   # Falcon: no table


@pytest.mark.parametrize("vocab,multiple,added,want", [
    (32000, 8, True, 32008),     # 1 to 8 new tokens: one size
    (32000, 8, False, 32000),    # nothing added, already a multiple
    (50257, 64, False, 50304),   # rounded up
    (32000, 1, True, None),      # how many tokens are new is not known
    (32000, 1, False, 32000),
])
def test_resized_vocab(vocab, multiple, added, want):
    assert formulas.resized_vocab(vocab, multiple, added) == want


def test_torchvision_builders_by_name_and_their_size_changing_keywords():
    from preflight.models.vision import torchvision_params
    assert torchvision_params("resnet50", {"pretrained": True}) == 25_557_032
    assert torchvision_params("resnet50", {"num_classes": 1000}) == 25_557_032
    assert torchvision_params("resnet50", {"num_classes": 10}) is None   # another head
    assert torchvision_params("not_a_builder") is None
    facts, diags = resolve([{"kind": "torchvision", "name": "vit_b_16", "kwargs": {},
                             "source": SRC}], search_dirs=[], project_models={},
                           params_override=None)
    assert dict(facts)["params"].value == 86_567_656 and diags == []
