"""The model catalogue as tools/build_catalog.py builds it from the recorded configs.

- the committed catalog.json is exactly what the script builds (it cannot drift from its
  sources);
- every entry's formula count equals the count transformers built from the same config,
  recorded in tools/catalog/transformers_counts.json, and one entry per architecture is
  built again here with transformers on the meta device;
- every entry says where its config was read.
"""

import importlib.util
import json
import os
import re

import pytest

from preflight.models import catalog, formulas

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
torch = pytest.importorskip("torch", reason="torch==2.13.0 not installed (test extra)")
transformers = pytest.importorskip("transformers", reason="pip install -e '.[test]'")


def _script():
    spec = importlib.util.spec_from_file_location(
        "build_catalog", os.path.join(ROOT, "tools", "build_catalog.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


BUILD = _script()
ENTRIES = catalog.entries()


def test_the_committed_catalogue_is_what_the_script_builds():
    text, report, _, _ = BUILD.build(offline=True)
    with open(BUILD.OUT, encoding="utf-8") as f:
        assert f.read() == text
    assert report["mismatch"] == []
    # the same through the command line, as a developer runs it
    assert BUILD.main(["--check"]) == 0


def test_size_sources_and_families():
    names = [e["name"] for e in ENTRIES]
    assert len(names) == len({n.lower() for n in names}) >= 260
    for e in ENTRIES:
        assert e.get("read") or e["source"].endswith("(hand-entered)"), e["name"]
        assert "params" not in e["config"]
    assert {e["arch"] for e in ENTRIES} >= {
        "llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "gemma",
        "gemma2", "gemma3", "gemma3_text", "phi", "phi3", "olmo2", "deepseek_v2", "deepseek_v3",
        "gpt2", "gpt_neox", "opt", "falcon", "bloom", "bert", "roberta", "t5",
        # kept with their full config, counted once their formula exists
        "gpt_oss", "llama4", "qwen3_vl", "qwen3_vl_moe"}
    # a source's hub id and an alias of the hand-entered catalogue are one entry
    hit = catalog.lookup_entry("meta-llama/Meta-Llama-3.1-8B")
    assert hit[0] == "meta-llama/Llama-3.1-8B"
    assert [e for e in ENTRIES if e["name"] == hit[0]][0]["source"].startswith(
        "ai-dynamo/aiconfigurator@")


def test_every_checked_entry_counts_what_transformers_built():
    checked = [e for e in ENTRIES if "checked" in e]
    assert len(checked) >= 230
    record = BUILD.load_record()
    for e in checked:
        assert BUILD.formula_for(e, record[e["name"]])[0] == e["checked"]["params"], e["name"]
    # an architecture with a formula is always checked
    assert not [e["name"] for e in ENTRIES
                if formulas.normalise_arch(e["arch"]) and "checked" not in e]


def _one_per_family():
    best = {}
    for e in ENTRIES:
        if "checked" in e and (e["arch"] not in best or
                               e["checked"]["params"] < best[e["arch"]]["checked"]["params"]):
            best[e["arch"]] = e
    return [best[a] for a in sorted(best)]


@pytest.mark.parametrize("entry", _one_per_family(), ids=lambda e: e["name"])
def test_one_entry_per_family_matches_transformers_on_the_meta_device(entry):
    rec = BUILD.load_record()[entry["name"]]
    classes = list(entry["config"].get("architectures") or [])[:1]
    real = BUILD.transformers_count(entry["arch"], entry["config"], rec["head"], classes)
    mine = BUILD.formula_for(entry, rec)[0]
    assert real["params"] == mine == entry["checked"]["params"]


def test_a_config_the_formula_disagrees_with_is_left_out(tmp_path, monkeypatch):
    """An entry whose recorded transformers count is not the formula's is reported and not
    written; one without a formula is kept and reported as not yet verified."""
    src = tmp_path / "sources"
    src.mkdir()
    cfg = {"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2,
           "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100,
           "torch_dtype": "bfloat16"}
    odd = {"model_type": "no_such_arch", "hidden_size": 8}
    (src / "one.json").write_text(json.dumps({
        "origin": "o", "repository": "https://github.com/o/r", "commit": "c" * 40,
        "read": "2026-12-04", "models": [
            {"id": "acme/right", "path": "a.json", "config": cfg},
            {"id": "acme/wrong", "path": "b.json", "config": {**cfg, "vocab_size": 101}},
            {"id": "acme/odd", "path": "c.json", "config": odd}]}))
    entries, notes = BUILD.assemble(BUILD.read_sources(str(src)))
    assert notes == []
    right = formulas.count("llama", {k: v for k, v in cfg.items() if k != "model_type"}).params
    record = {e["name"]: {"digest": BUILD.digest(e["arch"], e["config"]), "head": "causal_lm",
                          "transformers": "5.24.0", "class": "LlamaForCausalLM",
                          "params": right} for e in entries}
    kept, report = BUILD.verify(entries, record)
    assert [e["name"] for e in kept] == ["acme/right", "acme/odd"]
    assert report["verified"] == ["acme/right"]
    assert report["mismatch"] == [f"acme/wrong (llama): formula {right + 128:,}, "
                                  f"transformers {right:,}"]
    assert report["not yet verified"] == ["acme/odd (no_such_arch): no preflight formula"]
    out = json.loads(BUILD.render(kept))["models"]
    assert out[0]["name"] == "acme/odd" and "checked" not in out[0]
    assert out[1]["checkpoint_dtype"] == "bf16"
    assert out[1]["source"] == "o/r@" + "c" * 40 + ":a.json"
    assert out[1]["checked"] == {"params": right, "transformers": "5.24.0",
                                 "class": "LlamaForCausalLM"}


def test_a_quantized_checkpoint_has_no_float_dtype():
    # DeepSeek-V3 is published in FP8 (its config.json has a quantization_config)
    assert catalog.checkpoint_dtype("deepseek-ai/DeepSeek-V3") is None
    assert catalog.checkpoint_dtype("Qwen/Qwen3-8B") == ("bf16", "Qwen/Qwen3-8B")


@pytest.mark.parametrize("name,params", [
    ("allenai/OLMo-2-1124-7B", 7_298_617_344),
    ("microsoft/phi-4", 14_659_507_200),
    ("meta-llama/Llama-3.1-8B-Instruct", 8_030_261_248),
    ("Qwen/Qwen2.5-7B-Instruct", 7_615_616_512),
])
def test_models_people_fine_tune_resolve_exactly(name, params):
    arch, cfg = catalog.lookup(name)
    assert formulas.count(arch, cfg).params == params


def test_a_config_read_from_a_hub_page_names_that_page():
    """hub_pages.json: each record is the config.json page of the very repository it is
    recorded for, the revision is the one in the page's address, and the entry's source is
    that address."""
    with open(os.path.join(BUILD.SOURCES, "hub_pages.json"), encoding="utf-8") as f:
        src = json.load(f)
    assert "commit" not in src and src["read"] == "2026-12-04"
    page = re.compile(r"https://huggingface\.co/([^/]+/[^/]+)/(?:blob|raw|blame)/([^/]+)"
                      r"/config\.json")
    by_name = {e["name"]: e for e in ENTRIES}
    for rec in src["models"]:
        m = page.fullmatch(rec["path"])
        assert m and m.group(1) == rec["id"] and m.group(2) == rec["revision"], rec["path"]
        assert by_name[rec["id"]]["source"] == rec["path"]
    tulu = by_name["allenai/tulu-2-7b"]
    assert tulu["revision"] == "b6355c59be95aadfdaca742a6f6b31b4174dfdfb"
    assert tulu["checked"]["params"] == 6_738_415_616
    assert formulas.count("llama", tulu["config"]).params == 6_738_415_616
    # a fine-tune tag falls back to the recorded checkpoint, and the reason names it
    assert catalog.lookup_entry("allenai/Llama-3.1-Tulu-3-8B-DPO")[0] == \
        "allenai/Llama-3.1-Tulu-3-8B"
    assert by_name["allenai/Llama-3.1-Tulu-3-8B"]["checked"]["params"] == 8_030_326_784
    assert by_name["Salesforce/xgen-7b-8k-base"]["checked"]["params"] == 6_895_702_016
