"""verl lines read against the config a checkout ships (a fork of verl, or verl itself):
the global micro-batch of an older verl, and interpolations that see the line's values."""

from __future__ import annotations

from preflight import pipeline
from preflight.config import ProjectConfig
from preflight.frameworks import UNKNOWN
from preflight.options import CheckOptions

#: an older verl's shipped config: a global `ppo_micro_batch_size` only, the critic's
#: dynamic batching following the actor's by interpolation
_LEGACY = """\
actor_rollout_ref:
  model:
    path: ~/models/placeholder
  actor:
    strategy: fsdp
    ppo_mini_batch_size: 256
    ppo_micro_batch_size: 64
    use_dynamic_bsz: False
    ulysses_sequence_parallel_size: 1
  rollout:
    n: 1
critic:
  strategy: fsdp
  model:
    path: ~/models/placeholder
  ppo_micro_batch_size: 64
  use_dynamic_bsz: ${actor_rollout_ref.actor.use_dynamic_bsz}
trainer:
  nnodes: 1
  n_gpus_per_node: 8
"""

#: today's shape: the per-GPU key exists (null), the global one divides by the
#: data-parallel groups only
_CURRENT = _LEGACY.replace("    ppo_micro_batch_size: 64\n",
                           "    ppo_micro_batch_size: null\n    ppo_micro_batch_size_per_gpu: null\n", 1)

_GRPO = """\
python3 -m verl.trainer.main_ppo \\
  algorithm.adv_estimator=grpo \\
  actor_rollout_ref.model.path=Qwen/Qwen2.5-3B \\
  actor_rollout_ref.actor.ppo_micro_batch_size=16 \\
  actor_rollout_ref.rollout.n=8 \\
  trainer.n_gpus_per_node=4
"""

_PPO_DYNAMIC = """\
python3 -m verl.trainer.main_ppo \\
  actor_rollout_ref.model.path=Qwen/Qwen2.5-3B \\
  critic.model.path=Qwen/Qwen2.5-3B \\
  actor_rollout_ref.actor.use_dynamic_bsz=True \\
  critic.ppo_micro_batch_size=8 \\
  trainer.n_gpus_per_node=2
"""

_SP = """\
python3 -m verl.trainer.main_ppo \\
  algorithm.adv_estimator=grpo \\
  actor_rollout_ref.model.path=Qwen/Qwen2.5-3B \\
  actor_rollout_ref.actor.ppo_micro_batch_size=16 \\
  actor_rollout_ref.actor.ulysses_sequence_parallel_size=2 \\
  actor_rollout_ref.rollout.n=8
"""

CFG = "verl/trainer/config/ppo_trainer.yaml"


def _jobs(tmp_path, monkeypatch, config: str, line: str) -> dict:
    """Each job's facts as (value, path:line, origin), the launcher checked in the checkout."""
    (tmp_path / CFG).parent.mkdir(parents=True)
    (tmp_path / CFG).write_text(config)
    (tmp_path / "run.sh").write_text(line)
    monkeypatch.chdir(tmp_path)
    r = pipeline.run(["run.sh"], CheckOptions(gpu="H100-80GB", config=ProjectConfig(),
                                              apply_rules=False, fixes=False))
    return {jr.job.entry: {n: (f.value if f.known else UNKNOWN,
                               f"{f.source.path}:{f.source.line}" if f.source else None, f.origin.value)
                           for n, f in jr.job.plan.facts.items()} for jr in r.jobs}


def test_an_older_verl_multiplies_the_actors_global_micro_batch_by_rollout_n(tmp_path, monkeypatch):
    jobs = _jobs(tmp_path, monkeypatch, _LEGACY, _GRPO)
    actor = jobs["verl.trainer.main_ppo [actor]"]
    # 16 sequences over 4 GPUs, each prompt's 8 responses: 32 per GPU
    assert actor["micro_batch"] == (32, "run.sh:4", "derived")
    assert list(jobs) == ["verl.trainer.main_ppo [actor]"]


def test_todays_verl_divides_the_global_micro_batch_by_the_data_parallel_groups(tmp_path, monkeypatch):
    actor = _jobs(tmp_path, monkeypatch, _CURRENT, _SP)["verl.trainer.main_ppo [actor]"]
    # 16 over 8 GPUs / sequence parallel 2 = 4 groups; no rollout.n factor
    assert actor["micro_batch"] == (4, "run.sh:4", "derived")


def test_a_config_interpolation_sees_the_lines_value(tmp_path, monkeypatch):
    jobs = _jobs(tmp_path, monkeypatch, _LEGACY, _PPO_DYNAMIC)
    assert jobs["verl.trainer.main_ppo [actor]"]["micro_batch"] == (UNKNOWN, "run.sh:4", "unknown")
    # the critic follows the actor's dynamic batching through the config's ${…}
    assert jobs["verl.trainer.main_ppo [critic]"]["micro_batch"] == (UNKNOWN, f"{CFG}:17", "unknown")



def test_a_data_key_word_names_no_config_file(tmp_path, monkeypatch):
    """`data.train_files=x.yaml` is data: no missing-config finding; `config=run.yaml` is read
    (the EasyR1 adapter's examples)."""
    (tmp_path / "train.py").write_text("import torch\n")
    (tmp_path / "run.sh").write_text("python train.py data.train_files=absent.yaml config=gone.yaml\n")
    monkeypatch.chdir(tmp_path)
    r = pipeline.run(["run.sh"], CheckOptions(gpu="H100-80GB", config=ProjectConfig(),
                                              apply_rules=False, fixes=False))
    missing = [d.message for d in r.diagnostics if d.code == "PF006"]
    assert missing == ["config file 'gone.yaml' named on the launch line does not exist"]
