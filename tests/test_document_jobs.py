"""Jobs read through the document languages: roles of one RL line as separate jobs,
config documents merged from includes and Hydra compositions, and the budgets that keep
every reader linear in its input."""

from __future__ import annotations

import os
import shlex
import time

from preflight import pipeline
from preflight.config import ProjectConfig
from preflight.extract import extract_file
from preflight.frameworks import UNKNOWN, verl
from preflight.lang import hydra, includes
from preflight.options import CheckOptions


def _check(tmp_path, monkeypatch, files: dict, paths=None, command=None):
    for rel, text in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    monkeypatch.chdir(tmp_path)
    return pipeline.run(paths or [], CheckOptions(command=shlex.split(command) if command else None,
                                                  gpu="H100-80GB", config=ProjectConfig(),
                                                  apply_rules=False, fixes=False))


def _facts(job) -> dict:
    out = {}
    for name, f in job.plan.facts.items():
        out[name] = (UNKNOWN if not f.known else f.value,
                     f"{f.source.path}:{f.source.line}" if f.source else None, f.origin.value)
    return out


def test_ppo_line_is_one_job_per_trained_role(tmp_path, monkeypatch):
    r = _check(tmp_path, monkeypatch, {"ppo.sh": verl._PPO}, paths=["ppo.sh"])
    entries = sorted(jr.job.entry for jr in r.jobs)
    assert entries == ["verl.trainer.main_ppo [actor]", "verl.trainer.main_ppo [critic]"]
    critic = next(jr.job for jr in r.jobs if jr.job.entry.endswith("[critic]"))
    got = _facts(critic)
    for name, want in verl.CRITIC_FACTS.items():
        assert got[name][:2] == want, (name, got[name])


def test_grpo_trains_the_actor_alone_and_never_reads_the_reference(tmp_path, monkeypatch):
    r = _check(tmp_path, monkeypatch, {"grpo.sh": verl._GRPO}, paths=["grpo.sh"])
    assert [jr.job.entry for jr in r.jobs] == ["verl.trainer.main_ppo [actor]"]
    got = _facts(r.jobs[0].job)
    # the reference's param_offload=True (line 13) is not the actor's offload
    assert got["offload"][:2] == ("optimizer", "grpo.sh:12")
    # the rollout's tensor_model_parallel_size=2 is inference, not the actor's tp
    assert got.get("tp", (1,))[0] == 1


def test_ppo_command_after_dashes(tmp_path, monkeypatch):
    cmd = ("python3 -m verl.trainer.main_ppo critic.enable=False "
           "actor_rollout_ref.model.path=Qwen/Qwen2.5-7B "
           "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2 trainer.n_gpus_per_node=8")
    r = _check(tmp_path, monkeypatch, {}, command=cmd)
    assert [jr.job.entry for jr in r.jobs] == ["verl.trainer.main_ppo [actor]"]
    got = _facts(r.jobs[0].job)
    assert got["micro_batch"] == (2, "<command>:1", "cli")
    assert got["model"][0] == "Qwen/Qwen2.5-7B"


def test_dynamic_batch_is_unknown(tmp_path, monkeypatch):
    cmd = ("python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo "
           "actor_rollout_ref.actor.use_dynamic_bsz=True actor_rollout_ref.model.path=Qwen/Qwen2.5-7B")
    r = _check(tmp_path, monkeypatch, {}, command=cmd)
    assert _facts(r.jobs[0].job)["micro_batch"][0] is UNKNOWN


def test_base_chain_facts_point_at_the_file_that_set_them(tmp_path, monkeypatch):
    base = ("model:\n  _component_: torchtune.models.llama3_1.llama3_1_8b\n"
            "tokenizer:\n  max_seq_len: 2048\nbatch_size: 2\ndtype: bf16\n")
    run = "_base_: base.yaml\nbatch_size: 8\n"
    monkeypatch.chdir(tmp_path)
    (tmp_path / "cfg").mkdir()
    (tmp_path / "cfg/base.yaml").write_text(base)
    (tmp_path / "cfg/run.yaml").write_text(run)
    e = extract_file("cfg/run.yaml")
    got = {n: (f.value, f"{f.source.path}:{f.source.line}") for n, f in e.facts if f.known}
    assert got["micro_batch"] == (8, "cfg/run.yaml:2")
    assert got["seq_len"] == (2048, "cfg/base.yaml:4")


def test_missing_include_is_a_located_finding(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.yaml").write_text("x: 1\nopt: !include nowhere.yaml\n")
    e = extract_file("a.yaml")
    assert any(d.code == "PF006" and d.line == 2 for d in e.diagnostics), e.diagnostics


def test_documents_outside_the_project_are_not_read(tmp_path, monkeypatch):
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj/.git").mkdir()
    (tmp_path / "secret.yaml").write_text("token: abc\n")
    (tmp_path / "proj/a.yaml").write_text("_base_: ../secret.yaml\nx: 1\n")
    monkeypatch.chdir(tmp_path / "proj")
    doc = includes.resolve("a.yaml")
    assert "token" not in doc.value and doc.value["x"] == 1
    assert any(d.code == "PF001" for d in doc.diagnostics)


def test_hydra_override_of_a_missing_key_is_a_finding(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf/config.yaml").write_text("trainer:\n  devices: 1\n")
    out = hydra.compose(str(tmp_path / "conf"), "config", ["trainer.gpus=8", "+trainer.x=1"])
    assert any("Hydra needs +trainer.gpus" in d.message for d in out.diagnostics)
    assert out.cfg["trainer"]["x"] == 1


# --------------------------------------------------------------------------- budgets


def _fast(fn, limit: float = 2.0):
    t = time.perf_counter()
    out = fn()
    assert time.perf_counter() - t < limit
    return out


def test_blank_lines_and_many_keys_stay_fast(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    keys = "".join(f"k{i}: ${{.k{i + 1}}}\n" for i in range(1000)) + "k1000: 1\n"
    text = "defaults:\n  - _self_\n" + "\n" * 20_000 + "model:\n  micro_batch_size: 2\n" + keys + \
        "items:\n" + "".join(f"  - {i}\n" for i in range(1500))
    assert len(text) < 64 * 1024
    (tmp_path / "big.yaml").write_text(text)
    e = _fast(lambda: extract_file("big.yaml"))
    assert e is not None


def test_interpolation_chain_past_the_depth_is_unresolved(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "c.yaml").write_text("".join(f"k{i}: ${{k{i + 1}}}\n" for i in range(200)) + "k200: 7\n")
    out = _fast(lambda: hydra.compose(str(tmp_path), "c"))
    assert isinstance(out.cfg["k0"], hydra.Unresolved)
    assert out.cfg["k199"] == 7


def test_cycles_and_huge_arithmetic_are_unresolved(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "c.yaml").write_text("a: ${b}\nb: ${a}\nc: ${eval:'9 ** 9 ** 9'}\n"
                                     "d: ${multiply:${e},${e}}\ne: 1000000000000000\n")
    out = _fast(lambda: hydra.compose(str(tmp_path), "c"))
    assert isinstance(out.cfg["a"], hydra.Unresolved) and isinstance(out.cfg["c"], hydra.Unresolved)
    assert out.cfg["d"] == 10 ** 30


def test_include_chains_stop_at_the_depth(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for i in range(100):
        (tmp_path / f"d{i}.yaml").write_text(f"_base_: d{i + 1}.yaml\nv{i}: {i}\n")
    doc = _fast(lambda: includes.resolve("d0.yaml"))
    assert any("nested over" in d.message for d in doc.diagnostics)
    assert doc.value["v0"] == 0


def test_defaults_cycle_is_a_finding(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "g").mkdir()
    (tmp_path / "config.yaml").write_text("defaults:\n  - g: a\n  - _self_\nx: 1\n")
    (tmp_path / "g/a.yaml").write_text("defaults:\n  - /g: a\ny: 2\n")
    out = _fast(lambda: hydra.compose(str(tmp_path), "config"))
    assert out.cfg["x"] == 1
    assert out.diagnostics


def test_hydra_app_composed_as_launched(tmp_path, monkeypatch):
    files = {
        ".git/HEAD": "",
        "train.py": "import hydra\n\n@hydra.main(version_base=None, config_path='conf', "
                    "config_name='config')\ndef main(cfg):\n    pass\n",
        "conf/config.yaml": "defaults:\n  - trainer: gpu\n  - _self_\ndata:\n  batch_size: 8\n",
        "conf/big.yaml": "defaults:\n  - trainer: gpu\n  - _self_\ndata:\n  batch_size: 32\n",
        "conf/trainer/gpu.yaml": "devices: 2\nprecision: bf16-mixed\naccelerator: gpu\n",
        "conf/trainer/multi.yaml": "devices: 8\nprecision: 16-mixed\nnum_nodes: 2\n",
    }
    r = _check(tmp_path, monkeypatch, files,
               command="python train.py --config-name=big trainer=multi trainer.devices=4")
    job = r.jobs[0].job
    got = _facts(job)
    assert got["gpus_per_node"] == (4, "<command>:1", "cli")
    assert got["nodes"] == (2, "conf/trainer/multi.yaml:3", "config")
    assert got["micro_batch"] == (32, "conf/big.yaml:5", "config")
    assert got["mixed_precision"][:2] == ("fp16", "conf/trainer/multi.yaml:2")
    assert "conf/trainer/multi.yaml" in job.files


def test_verl_checkout_composes_its_own_config(tmp_path, monkeypatch):
    files = {
        ".git/HEAD": "",
        "verl/trainer/config/ppo_trainer.yaml":
            "defaults:\n  - actor@actor_rollout_ref.actor: dp_actor\n  - _self_\n"
            "actor_rollout_ref:\n  model:\n    enable_gradient_checkpointing: false\n"
            "data:\n  max_prompt_length: 256\n  max_response_length: 256\n"
            "trainer:\n  nnodes: 1\n  n_gpus_per_node: 2\n",
        "verl/trainer/config/actor/dp_actor.yaml":
            "strategy: fsdp\nppo_micro_batch_size_per_gpu: 3\nfsdp_config:\n  param_offload: false\n"
            "  optimizer_offload: false\n  model_dtype: bf16\n",
        "run.sh": "python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo "
                  "actor_rollout_ref.model.path=Qwen/Qwen2.5-7B trainer.n_gpus_per_node=8\n",
    }
    r = _check(tmp_path, monkeypatch, files, paths=["run.sh"])
    got = _facts(r.jobs[0].job)
    cfg = "verl/trainer/config/"
    assert got["micro_batch"] == (3, cfg + "actor/dp_actor.yaml:2", "config")
    assert got["param_dtype"] == ("bf16", cfg + "actor/dp_actor.yaml:6", "config")
    assert got["activation_checkpointing"] == ("none", cfg + "ppo_trainer.yaml:6", "config")
    assert got["seq_len"][0] == 512
    assert got["gpus_per_node"] == (8, "run.sh:1", "config")


def test_verl_own_config_not_in_the_repository_assumes_no_defaults(tmp_path, monkeypatch):
    cmd = ("python3 -m verl.trainer.main_ppo --config-path=/elsewhere/config --config-name=mine "
           "actor_rollout_ref.model.path=Qwen/Qwen2.5-7B")
    r = _check(tmp_path, monkeypatch, {}, command=cmd)
    got = _facts(r.jobs[0].job)
    assert "activation_checkpointing" not in got or got["activation_checkpointing"][2] != "default"
    assert "offload" not in got or got["offload"][2] != "default"
