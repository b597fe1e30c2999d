"""Config files: each fact at the line (and column) of its key; malformed input located."""

import os

import pytest

from preflight.extract import extract_file
from preflight.options import CheckOptions
from preflight.plan import Origin

HERE = os.path.dirname(__file__)
REPO = os.path.join(HERE, "fixtures", "launch", "repo")
BAD = os.path.join(HERE, "fixtures", "launch", "bad")


@pytest.fixture(autouse=True)
def in_repo(monkeypatch):
    monkeypatch.chdir(REPO)


def table(e):
    return {n: (f.value, f.origin.value, f"{f.source.line}:{f.source.col}" if f.source else None)
            for n, f in e.facts}


def test_deepspeed_json_facts_at_key_positions():
    e = extract_file("configs/ds_z3.json")
    assert e.kind == "deepspeed"
    t = table(e)
    assert t["zero_stage"] == (3, "config", "6:5")
    assert t["offload"] == ("optimizer+params", "config", "8:23")
    assert t["optimizer"] == ("adamw", "config", "10:17")
    assert t["fsdp"] == (None, "config", "5:3")
    # "auto" values are unknowns that name the Trainer as their source
    assert t["micro_batch"] == (None, "unknown", "11:3")
    assert t["mixed_precision"] == (None, "unknown", "3:5")
    assert set(e.extras["auto"]) == {"mixed_precision", "micro_batch", "grad_accum"}
    assert e.extras["train_batch_size"]["value"] == 64
    assert e.extras["train_batch_size"]["source"].line == 13


def test_accelerate_yaml():
    e = extract_file("configs/accelerate_fsdp.yaml")
    t = table(e)
    assert t["fsdp"] == ("shard_grad_op", "config", "6:3")
    assert t["activation_checkpointing"] == ("full", "config", "4:3")
    assert t["offload"] == ("none", "config", "5:3")
    assert t["mixed_precision"] == ("none", "config", "8:1")
    assert t["nodes"] == (1, "config", "9:1")
    assert t["world_size"] == (8, "config", "10:1")


def test_axolotl_recipe_with_qlora():
    e = extract_file("recipes/axolotl.yml")
    t = table(e)
    assert e.kind == "axolotl"
    assert t["model"] == ("NousResearch/Llama-2-7b-hf", "config", "1:1")
    assert t["param_dtype"] == ("int4", "config", "2:1")
    assert t["lora"] == ({"r": 16, "alpha": 32, "targets": ["all-linear"], "base_bits": 4}, "config", "3:1")
    assert t["seq_len"] == (2048, "config", "7:1")
    assert t["micro_batch"] == (2, "config", "8:1")
    assert t["grad_accum"] == (4, "config", "9:1")
    assert t["optimizer"] == ("paged_adamw_8bit", "config", "10:1")
    assert t["mixed_precision"] == ("bf16", "config", "11:1")
    assert t["activation_checkpointing"] == ("full", "config", "12:1")
    assert t["attention"] == ("flash", "config", "13:1")
    kinds = [r["kind"] for r in e.extras["model_refs"]]
    assert kinds == ["hub", "quant", "lora"]
    assert e.extras["model_refs"][0]["name"] == "NousResearch/Llama-2-7b-hf"


def test_axolotl_lora_dropout_is_read(tmp_path):
    """axolotl's `lora_dropout:` reaches the lora fact (not written: not in it)."""
    recipe = open("recipes/axolotl.yml").read()
    (tmp_path / "axolotl.yml").write_text(recipe + "lora_dropout: 0.05\n")
    t = table(extract_file(str(tmp_path / "axolotl.yml")))
    assert t["lora"][0] == {"r": 16, "alpha": 32, "targets": ["all-linear"], "base_bits": 4,
                            "dropout": 0.05}


def test_llamafactory_recipe_names_its_deepspeed_config():
    e = extract_file("recipes/llamafactory.yaml")
    t = table(e)
    assert e.kind == "llamafactory"
    assert t["seq_len"] == (4096, "config", "5:1")
    assert t["micro_batch"] == (1, "config", "6:1")
    assert t["grad_accum"] == (8, "config", "7:1")
    assert e.references == ["configs/ds_z2.json"]


def test_litgpt_recipe_derives_accumulation():
    e = extract_file("recipes/litgpt.yaml")
    t = table(e)
    assert t["model"] == ("meta-llama/Meta-Llama-3-8B", "config", "1:1")
    assert t["mixed_precision"] == ("bf16", "config", "2:1")
    assert t["param_dtype"] == ("bf16", "config", "2:1")
    assert t["gpus_per_node"] == (4, "config", "3:1")
    assert t["micro_batch"] == (4, "config", "7:3")
    assert t["seq_len"] == (512, "config", "8:3")
    # the global batch is divided in assembly, after command-line overrides of the micro-batch
    assert "grad_accum" not in t
    assert e.extras["global_batch_size"]["value"] == 64
    assert e.extras["global_batch_size"]["source"].line == 6
    assert t["fsdp"][:2] == ("full_shard", "default")
    from preflight import pipeline
    from preflight.config import ProjectConfig
    job = pipeline.run(["recipes/litgpt.yaml"], CheckOptions(
        command=["litgpt", "finetune_full", "--config", "recipes/litgpt.yaml"],
        config=ProjectConfig(), apply_rules=False, fixes=False)).jobs[0].job
    ga = job.plan.fact("grad_accum")
    assert (ga.value, ga.origin.value, ga.source.line) == (4, "derived", 6)    # 64 / (4 × 4 × 1)


def test_torchtitan_toml():
    e = extract_file("configs/titan.toml")
    t = table(e)
    assert e.kind == "torchtitan"
    assert t["micro_batch"] == (2, "config", "9:1")
    assert t["seq_len"] == (8192, "config", "10:1")
    assert t["mixed_precision"] == ("bf16", "config", "11:1")
    assert t["fsdp"] == ("full_shard", "config", "14:1")
    assert t["tp"] == (3, "config", "15:1")
    assert t["pp"] == (1, "config", "16:1")
    assert t["activation_checkpointing"] == ("selective", "config", "19:1")
    assert t["selective_policy"] == ("op", "config", "20:1")


@pytest.mark.parametrize("name,line,col,text", [
    ("bad.json", 4, 3, "malformed JSON"),
    ("bad.yaml", 4, 14, "malformed YAML"),
    ("bad.toml", 3, 20, "malformed TOML"),
])
def test_malformed_config_is_pf005_at_the_error(name, line, col, text):
    e = extract_file(os.path.join(BAD, name))
    (d,) = e.diagnostics
    assert (d.code, d.line, d.col) == ("PF005", line, col)
    assert d.message.startswith(text)


def test_yaml_python_tag_constructs_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    e = extract_file(os.path.join(BAD, "evil.yaml"))
    assert not (tmp_path / "PWNED_MARKER").exists()
    assert not os.path.exists(os.path.join(BAD, "PWNED_MARKER"))
    (d,) = e.diagnostics
    assert (d.code, d.line, d.col, d.severity) == ("PF005", 3, 10, "warning")
    assert "python/object/apply:os.system" in d.message
    # the rest of the file is still read
    t = table(e)
    assert t["world_size"] == (2, "config", "2:1")
    assert t["mixed_precision"] == ("bf16", "config", "4:1")


def test_non_deepspeed_json_has_no_facts(tmp_path):
    p = tmp_path / "package.json"
    p.write_text('{"name": "x", "version": "1"}')
    e = extract_file(str(p))
    assert (e.kind, e.facts, e.diagnostics) == ("json", [], [])


def test_gpt_neox_yaml_with_deepspeed_keys(tmp_path):
    p = tmp_path / "small.yml"
    p.write_text(
        '{\n'
        '  "pipe_parallel_size": 1,\n'
        '  "model_parallel_size": 2,\n'
        '  "num_layers": 12,\n'
        '  "seq_length": 2048,\n'
        '  "zero_optimization": {"stage": 1},\n'
        '  "fp16": {"enabled": true, "type": "bfloat16"},\n'
        '  "train_micro_batch_size_per_gpu": 8,\n'
        '  "checkpoint_activations": true,\n'
        '}\n')
    t = table(extract_file(str(p)))
    assert t["pp"] == (1, "config", "2:3")
    assert t["tp"] == (2, "config", "3:3")
    assert t["layers"] == (12, "config", "4:3")
    assert t["seq_len"] == (2048, "config", "5:3")
    assert t["zero_stage"] == (1, "config", "6:25")
    assert t["mixed_precision"][:2] == ("bf16", "config")
    assert t["micro_batch"] == (8, "config", "8:3")
    assert t["activation_checkpointing"] == ("full", "config", "9:3")


def test_yaml_alias_bomb_is_bounded(tmp_path):
    import time
    rows = ["a: &a [x, x, x, x, x, x, x, x, x]"]
    for prev, cur in zip("abcdefg", "bcdefgh"):
        rows.append(f"{cur}: &{cur} [" + ", ".join([f"*{prev}"] * 9) + "]")
    p = tmp_path / "bomb.yaml"
    p.write_text("\n".join(rows) + "\n")
    t = time.monotonic()
    e = extract_file(str(p))
    assert time.monotonic() - t < 10
    assert e.facts == []
