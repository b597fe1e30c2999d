"""Assembly: precedence, DeepSpeed "auto" from the command line, derived world size and
the PF4xx consistency findings pointing at both places."""

import os

import pytest

from preflight.assemble import assemble
from preflight.discover.jobs import discover

REPO = os.path.join(os.path.dirname(__file__), "fixtures", "launch", "repo")


@pytest.fixture(autouse=True)
def in_repo(monkeypatch):
    monkeypatch.chdir(REPO)


def job_of(path, launcher=None, command=None):
    specs, _ = discover([path] if path else [], command)
    if launcher:
        specs = [s for s in specs if launcher in s.files]
    (spec,) = specs
    return assemble(spec, {})


def codes(job):
    return sorted((d.code, d.path, d.line) for d in job.diagnostics)


def findings(job):
    """What assembly reports, then the consistency rules (PF4xx) over the assembled job."""
    from preflight import engine
    ctx = engine.RuleContext(plan=job.plan, job=job)
    return job.diagnostics + engine.run_rules(ctx, select=["PF4"])


def test_deepspeed_auto_resolved_from_hf_flags_and_batch_mismatch():
    job = job_of("launch/run_ds.sh")
    p = job.plan
    assert (p.value("micro_batch"), p.fact("micro_batch").origin.value) == (4, "cli")
    assert p.value("grad_accum") == 2
    assert p.value("mixed_precision") == "bf16"
    assert (p.value("param_dtype"), p.fact("param_dtype").origin.value) == ("bf16", "derived")
    assert (p.value("world_size"), p.fact("world_size").reason) == (4, "nodes 1 × gpus_per_node 4")
    assert p.value("zero_stage") == 3 and str(p.source("zero_stage")) == "configs/ds_z3.json:6:5"
    (d,) = findings(job)
    assert (d.code, d.path, d.line) == ("PF403", "configs/ds_z3.json", 13)
    assert "64" in d.message and "= 32" in d.message
    # micro-batch and accumulation where their flags are written, world size at --num_gpus
    assert [str(s) for s in d.related] == ["launch/run_ds.sh:4:3", "launch/run_ds.sh:5:3", "launch/run_ds.sh:2:11"]


def test_deepspeed_auto_filled_by_the_trainer_arguments_of_the_script():
    # no HF flag on the line, but the script parses TrainingArguments: the Trainer fills
    # "auto" from its defaults (per_device_train_batch_size=8, no bf16/fp16)
    job = job_of("launch/multi.sh")
    assert codes(job) == [("PF006", "launch/multi.sh", 2)]
    p = job.plan
    assert (p.value("micro_batch"), p.fact("micro_batch").origin.value) == (8, "default")
    assert str(p.source("micro_batch")) == "train_hf.py:4:15"
    assert (p.value("grad_accum"), p.value("mixed_precision")) == (1, "none")


def test_deepspeed_auto_unresolved_without_a_trainer(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text("[project]\nname='x'\n")
    (tmp_path / "train.py").write_text(
        "import deepspeed\nimport torch\n\nmodel = torch.nn.Linear(8, 8)\n"
        "engine, *_ = deepspeed.initialize(model=model, config='ds.json')\n")
    (tmp_path / "ds.json").write_text(
        '{\n  "bf16": {"enabled": "auto"},\n  "train_micro_batch_size_per_gpu": "auto",\n'
        '  "gradient_accumulation_steps": 2,\n  "zero_optimization": {"stage": 2}\n}\n')
    (tmp_path / "run.sh").write_text("deepspeed --num_gpus 2 train.py --deepspeed ds.json\n")
    (spec,), _ = discover(["run.sh"])
    job = assemble(spec, {})
    # the script's own "no autocast found" default does not stand in for the Trainer
    assert codes(job) == [("PF401", "ds.json", 2), ("PF401", "ds.json", 3)]
    assert job.plan.value("grad_accum") == 2


def test_accelerate_flag_overrides_the_yaml_precision_without_pf402():
    job = job_of("configs/accelerate_fsdp.yaml")
    # `accelerate launch --mixed_precision bf16` over the file's `mixed_precision: no` is
    # accelerate's documented override, not a conflict
    assert findings(job) == []
    f = job.plan.fact("mixed_precision")
    assert (f.value, str(f.source)) == ("bf16", "launch/accel.sh:3:35")
    assert "configs/accelerate_fsdp.yaml:8:1" in [
        str(c.source) for c in job.plan.candidates["mixed_precision"]]
    assert job.plan.value("world_size") == 8
    assert (job.plan.value("gpus_per_node"), job.plan.fact("gpus_per_node").origin.value) == (8, "derived")


def test_parallel_sizes_not_dividing_world_size_is_pf404():
    job = job_of("configs/titan.toml")
    (d,) = findings(job)
    assert (d.code, d.path, d.line) == ("PF404", "configs/titan.toml", 15)
    assert "do not divide the world size 8" in d.message
    assert "launch/titan.sh:2:10" in [str(s) for s in d.related]


def test_sequence_parallel_with_tp_1_is_pf405():
    job = job_of("launch/megatron.sh")
    (d,) = findings(job)
    # --sequence-parallel is written in the GPT_ARGS variable on line 2
    assert (d.code, d.path, d.line, d.col) == ("PF405", "launch/megatron.sh", 2, 75)
    p = job.plan
    assert (p.value("micro_batch"), p.value("seq_len"), p.value("tp")) == (2, 4096, 1)
    assert p.value("grad_accum") == 4         # 64 / (2 × 8)
    assert p.fact("grad_accum").origin.value == "derived"


def test_sbatch_and_torchrun_make_world_size():
    job = job_of("slurm/job.sbatch")
    p = job.plan
    assert (p.value("nodes"), p.value("gpus_per_node"), p.value("world_size")) == (2, 8, 16)
    assert p.value("gpu") == "H100-SXM5-80GB"
    assert job.diagnostics == []


def test_declared_overrides_are_project_facts():
    job = job_of("declared.py")
    f = job.plan.fact("gpu")
    assert (f.value, f.origin.value) == ("H100-SXM5-80GB", "project")
    assert job.plan.value("world_size") == 2


def test_one_extraction_per_file_with_a_shared_cache(monkeypatch):
    import preflight.assemble as A
    calls = []
    real = A.extract_file
    monkeypatch.setattr(A, "extract_file",
                        lambda p, args=None, **kw: calls.append(p) or real(p, args=args, **kw))
    specs, _ = discover(["configs/ds_z3.json"])
    cache = {}
    for s in specs:
        assemble(s, cache)
    assert calls.count("configs/ds_z3.json") == 1


def test_deepspeed_dict_in_the_script_with_parameter_defaults_and_cli(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text("[project]\nname='x'\n")
    (tmp_path / "train.py").write_text(
        "import deepspeed\n"
        "\n"
        "def train(batch_size: int = 8, dtype: str = 'bf16'):\n"
        "    ds_config = {\n"
        "        'train_micro_batch_size_per_gpu': batch_size,\n"
        "        dtype: {'enabled': True},\n"
        "        'zero_optimization': {'stage': 1, 'offload_optimizer': {'device': 'cpu'}},\n"
        "    }\n"
        "    deepspeed.initialize(config=ds_config)\n"
        "\n"
        "if __name__ == '__main__':\n"
        "    import fire\n"
        "    fire.Fire(train)\n")
    (tmp_path / "run.sh").write_text("deepspeed --num_gpus 2 train.py --batch_size 4\n")
    (spec,), _ = discover(["run.sh"])
    p = assemble(spec, {}).plan
    assert (p.value("micro_batch"), p.fact("micro_batch").origin.value) == (4, "cli")
    assert str(p.source("micro_batch")) == "train.py:5:9"
    assert (p.value("zero_stage"), p.fact("zero_stage").origin.value) == (1, "literal")
    assert (p.value("offload"), p.value("mixed_precision")) == ("optimizer", "bf16")
    assert p.fact("mixed_precision").origin.value == "default"    # the key came from dtype='bf16'
    assert p.value("world_size") == 2


def test_torchtitan_registry_entry_chosen_by_name(monkeypatch):
    monkeypatch.chdir(os.path.join(os.path.dirname(__file__), "fixtures", "launch", "titan"))
    monkeypatch.delenv("CONFIG", raising=False)
    (spec,), _ = discover(["run.slurm"])
    job = assemble(spec, {})
    p = job.plan
    reg = "torchtitan/models/toy/config_registry.py"
    assert reg in job.files
    assert (p.value("tp"), str(p.source("tp"))) == (4, f"{reg}:14:13")
    assert (p.value("seq_len"), str(p.source("seq_len"))) == (4096, f"{reg}:11:13")
    assert (p.value("micro_batch"), p.fact("micro_batch").origin.value) == (4, "derived")
    assert (p.value("activation_checkpointing"), p.value("selective_policy")) == ("selective", "op")
    assert (p.value("fsdp"), p.fact("fsdp").origin.value) == ("full_shard", "default")
    assert str(p.source("fsdp")) == "torchtitan/config/configs.py:16:5"
    assert (p.value("pp"), p.value("grad_accum"), p.value("world_size")) == (1, 1, 16)
    assert (p.value("mixed_precision"), p.value("param_dtype"), p.value("optimizer")) == ("bf16", "fp32", "adamw")
    assert p.value("model") == "toy:big"


def test_model_resolver_receives_recipe_refs(monkeypatch):
    import sys
    import types

    from preflight.plan import Fact, Origin
    seen = {}

    def resolve(refs, search_dirs=None, project_models=None, params_override=None, modules=None,
                hub=False):
        seen["refs"] = refs
        return [("params", Fact(value=6_738_415_616, origin=Origin.CATALOG, reason="fake catalogue"))]

    mod = types.ModuleType("preflight.resolve.entry")
    mod.resolve = resolve
    monkeypatch.setitem(sys.modules, "preflight.resolve.entry", mod)
    (spec,), _ = discover(["recipes/axolotl.yml"])
    job = assemble(spec, {})
    kinds = [(r["kind"], r.get("name"), r.get("bits"), r.get("r")) for r in seen["refs"]]
    assert kinds == [("hub", "NousResearch/Llama-2-7b-hf", None, None), ("quant", None, 4, None),
                     ("lora", None, None, 16)]
    assert str(seen["refs"][0]["source"]) == "recipes/axolotl.yml:1:1"
    assert job.plan.value("params") == 6_738_415_616


@pytest.mark.parametrize("line,fsdp_known", [
    ("torchrun --nproc_per_node 8 train.py --output_dir out", True),
    # accelerate launch without --config_file: the machine's default config may set FSDP
    ("accelerate launch train.py --output_dir out", False),
])
def test_the_trainer_does_not_shard_with_fsdp_unless_told(tmp_path, monkeypatch, line,
                                                          fsdp_known):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text("[project]\nname='x'\n")
    (tmp_path / "train.py").write_text(
        "from transformers import AutoModelForCausalLM, HfArgumentParser, Trainer, "
        "TrainingArguments\n\n(args,) = HfArgumentParser(TrainingArguments)"
        ".parse_args_into_dataclasses()\nmodel = AutoModelForCausalLM.from_pretrained('gpt2')\n"
        "Trainer(model=model, args=args).train()\n")
    (tmp_path / "run.sh").write_text(line + "\n")
    (spec,), _ = discover(["run.sh"])
    f = assemble(spec, {}).plan.fact("fsdp")
    assert f.known is fsdp_known
    if fsdp_known:
        assert (f.value, f.origin.value) == (None, "default")
