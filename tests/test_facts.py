"""preflight.facts: the fact names and their specs, merge's validation, the spelling tables
(one per kind, used by every extractor), and the layout computed once."""

import os
import re

import pytest

from preflight.extract import extract_file
from preflight.extract.flags import flag_facts
from preflight.extract.python import extract as extract_python
from preflight.facts import FACT_NAMES, SPECS, FactName, Layout, UnknownFactName, spellings
from preflight.options import CheckOptions
from preflight.plan import Fact, Origin, Source, merge

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def lit(value, line=1):
    return Fact(value=value, origin=Origin.LITERAL, source=Source(path="train.py", line=line, col=1))


# --------------------------------------------------------------------------- names and specs

def test_every_fact_name_has_one_spec_and_the_enum_is_the_json_order():
    assert set(SPECS) == set(FactName)
    assert FACT_NAMES[:3] == ("model", "params", "trainable_params")
    assert FactName.MICRO_BATCH == "micro_batch"


def test_merge_refuses_a_name_outside_the_vocabulary():
    with pytest.raises(UnknownFactName):
        merge([("micro_batch_size", lit(4))])


def test_merge_turns_an_out_of_range_value_into_an_unknown_at_its_source():
    plan = merge([("micro_batch", lit(0, line=7)), ("zero_stage", lit(5, line=9)),
                  ("optimizer", lit("adamw_torch", line=3))])
    for name, line, why in (("micro_batch", 7, "out of range"), ("zero_stage", 9, "out of range"),
                            ("optimizer", 3, "is not one of")):
        f = plan.fact(name)
        assert not f.known and f.source.line == line and why in f.reason, (name, f)


def test_merge_lets_a_weaker_valid_candidate_win_over_an_invalid_one():
    cli = Fact(value=-1, origin=Origin.CLI, source=Source(path="launch.sh", line=2, col=1))
    plan = merge([("grad_accum", cli), ("grad_accum", lit(4, line=5))])
    assert plan.value("grad_accum") == 4
    assert not plan.candidates["grad_accum"][-1].known


def test_an_unknown_flag_overrules_a_config_value_and_lists_it():
    cfg = Fact(value=8, origin=Origin.CONFIG, source=Source(path="ds.json", line=3, col=1))
    flags, _ = flag_facts(["--per_device_train_batch_size", "\x001\x00"],
                          Source(path="run.sh", line=4, col=1))
    plan = merge([("micro_batch", cfg), *flags])
    f = plan.fact("micro_batch")
    assert (f.known, f.default, f.over, f.source.path) == (False, 8, Origin.CLI, "run.sh")
    assert "overrides 8 (config at ds.json:3:1)" in f.reason


def test_a_known_flag_after_an_unknown_one_wins_and_a_weaker_unknown_never_overrules():
    unknown_flag = Fact.unknown("--x: $BS", source=Source(path="run.sh", line=1, col=1)
                                ).model_copy(update={"over": Origin.CLI})
    known_flag = Fact(value=2, origin=Origin.CLI, source=Source(path="run.sh", line=2, col=1))
    assert merge([("micro_batch", unknown_flag), ("micro_batch", known_flag)]).value("micro_batch") == 2
    # an unknown of no stated origin (or a weaker one) leaves the known value standing
    weak = Fact.unknown("env").model_copy(update={"over": Origin.DEFAULT})
    assert merge([("micro_batch", lit(4)), ("micro_batch", weak),
                  ("micro_batch", Fact.unknown("?"))]).value("micro_batch") == 4


def test_merge_gives_whole_numbers_their_type():
    assert merge([("seq_len", lit("2048"))]).value("seq_len") == 2048


# --------------------------------------------------------------------------- spellings

def test_trainer_optim_in_a_script_and_on_a_command_line_is_the_same_optimizer(tmp_path):
    script = ("from transformers import TrainingArguments\n"
              "args = TrainingArguments(output_dir='o', optim=\"adamw_torch_8bit\")\n")
    ext = extract_python(str(tmp_path / "train.py"), script)
    in_script = merge(ext.facts).value("optimizer")
    facts, _ = flag_facts(["--optim", "adamw_torch_8bit"], Source(path="run.sh", line=1, col=1))
    on_line = merge(facts).value("optimizer")
    assert in_script == on_line == "adamw_8bit"


def test_deepspeed_optimizer_type_is_read_alike_from_json_and_from_an_inline_dict(tmp_path,
                                                                                 monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ds.json").write_text('{"train_micro_batch_size_per_gpu": 4,\n'
                                      ' "optimizer": {"type": "OneBitAdam", "params": {"lr": 1e-4}}}\n')
    from_json = merge(extract_file("ds.json").facts).fact("optimizer")
    script = ("import deepspeed\n"
              "engine, *_ = deepspeed.initialize(model=model, config={\n"
              "    'train_micro_batch_size_per_gpu': 4,\n"
              "    'optimizer': {'type': 'OneBitAdam', 'params': {'lr': 1e-4}}})\n")
    from_dict = merge(extract_python("train.py", script).facts).fact("optimizer")
    assert from_json.value == from_dict.value == spellings.deepspeed_optimizer("OneBitAdam")
    assert from_json.known and from_dict.known


@pytest.mark.parametrize("spelling", ["adamw_torch_8bit", "paged_adam_32bit", "adamw_torch_fused", "onebitadam"])
def test_each_spelling_table_is_written_once(spelling):
    """A spelling appears as a table key in preflight/facts/spellings.py and nowhere else
    in the package (adding one is one line in one file)."""
    hits = []
    for d, _, files in os.walk(os.path.join(ROOT, "preflight")):
        for f in files:
            if f.endswith(".py"):
                p = os.path.join(d, f)
                with open(p, encoding="utf-8") as fh:
                    if re.search(rf'"{spelling}"\s*:', fh.read()):
                        hits.append(os.path.relpath(p, ROOT))
    assert hits == [os.path.join("preflight", "facts", "spellings.py")]


def test_spelling_lookups():
    assert spellings.fsdp_strategy("ShardingStrategy.HYBRID_SHARD") == "hybrid_shard"
    assert spellings.fsdp_strategy(2) == "shard_grad_op"
    assert spellings.precision("bf16-mixed") == ("bf16", None)
    assert spellings.dtype("torch.bfloat16") == "bf16"
    assert spellings.attention("flash_attention_2") == "flash"
    assert spellings.optimizer_class("PagedAdamW8bit") == "paged_adamw_8bit"
    assert spellings.optimizer_name("nonsense") is None


# --------------------------------------------------------------------------- layout

def test_fsdp_strategy_decides_the_effective_stage_over_a_zero_stage():
    plan = merge([("fsdp", lit("no_shard")), ("zero_stage", lit(2)), ("world_size", lit(8))])
    lay = Layout.from_plan(plan)
    assert (lay.stage, lay.shard, lay.dp, lay.label) == (0, 1, 8, "DDP")


def test_hybrid_shard_shards_within_a_node_of_model_parallel_groups():
    plan = merge([("fsdp", lit("hybrid_shard")), ("tp", lit(2)), ("nodes", lit(2)),
                  ("gpus_per_node", lit(8))])
    lay = Layout.from_plan(plan)
    assert (lay.world_size, lay.mp, lay.dp, lay.stage, lay.shard) == (16, 2, 8, 3, 4)


def _findings(values, gpu_bytes):
    from preflight import engine, hardware
    from preflight.physics import estimate
    from preflight.testing import plan

    p = plan(values)
    est = estimate(p, hardware.custom(gpu_bytes), 0.2)
    ctx = engine.RuleContext(plan=p, estimate=est, gpu_name="the GPU", headroom=0.2)
    return est, ctx, engine.run_rules(ctx)


SEVEN_B = {"params": 7_000_000_000, "optimizer": "adamw", "param_dtype": "bf16",
           "mixed_precision": "bf16"}


def test_hybrid_shard_with_tp_finding_and_ledger_agree():
    est, ctx, diags = _findings({**SEVEN_B, "fsdp": "hybrid_shard", "tp": 2, "nodes": 2,
                                 "gpus_per_node": 8}, 12 * 10**9)
    assert est.ledger.states_bytes == 14 * 10**9          # 16 B × 7e9 / TP 2 / 4 shards
    (d,) = [d for d in diags if d.code == "PF101"]
    assert "16 B/param" in d.message and "104.3 GiB in all" in d.message, d.message
    assert ctx.shard_degree == est.layout.shard == 4


def test_fsdp_no_shard_beside_zero_2_is_one_effective_stage():
    est, ctx, diags = _findings({**SEVEN_B, "fsdp": "no_shard", "zero_stage": 2,
                                 "world_size": 8}, 80 * 10**9)
    assert ctx.stage == est.layout.stage == 0
    assert est.ledger.states_bytes == 16 * 7 * 10**9       # replicated: DDP
    (d,) = [d for d in diags if d.code == "PF101"]
    assert "under DDP" in d.message


def test_project_model_with_model_type_sets_the_llama_family(tmp_path, monkeypatch):
    from preflight import pipeline
    from preflight.config import load_project_config
    from preflight.rules._common import hf_script

    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text(
        '[tool.preflight.models]\n"acme/secret-1b" = { model_type = "llama", hidden_size = 2048, '
        'num_hidden_layers = 16, num_attention_heads = 32, intermediate_size = 5632, '
        'vocab_size = 32000 }\n')
    (tmp_path / "train.py").write_text(hf_script("acme/secret-1b"))
    rep = pipeline.run(["train.py"], CheckOptions(gpu="H100-80GB", config=load_project_config("."),
                                                fixes=False))
    (job,) = rep.jobs
    assert job.job.plan.value("family") == "llama"
    led = job.estimate.ledger
    acts = [ln for ln in led.lines if ln.key == "activations" and "layers" in ln.label]
    assert acts and "llama block" in acts[0].label
    assert not any("architecture family unknown" in a for a in led.assumptions + [ln.note for ln in led.lines])
