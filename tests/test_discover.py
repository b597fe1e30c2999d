"""Discovery: a changed config or script alone finds the job(s) that use it; a launch
command after `--` is read like that line in a launcher file; declared jobs."""

import json
import os

import pytest

from preflight.discover.jobs import discover

REPO = os.path.join(os.path.dirname(__file__), "fixtures", "launch", "repo")


@pytest.fixture(autouse=True)
def in_repo(monkeypatch):
    monkeypatch.chdir(REPO)


def entries(specs):
    return sorted((s.entry, tuple(s.files)) for s in specs)


def test_changed_deepspeed_json_alone_finds_both_launchers():
    specs, diags = discover(["configs/ds_z3.json"])
    assert entries(specs) == [
        ("train_hf.py", ("train_hf.py", "launch/multi.sh", "configs/ds_z3.json")),
        ("train_hf.py", ("train_hf.py", "launch/run_ds.sh", "configs/ds_z3.json")),
    ]
    assert diags == []


def test_changed_accelerate_yaml_alone_finds_its_launcher():
    specs, _ = discover(["configs/accelerate_fsdp.yaml"])
    assert entries(specs) == [("train_hf.py", ("train_hf.py", "launch/accel.sh", "configs/accelerate_fsdp.yaml"))]
    assert specs[0].invocation.args[:2] == ["--per_device_train_batch_size", "2"]


def test_deepspeed_json_named_by_a_recipe_reaches_the_recipe():
    specs, _ = discover(["configs/ds_z2.json"])
    assert entries(specs) == [("recipes/llamafactory.yaml", ("recipes/llamafactory.yaml", "configs/ds_z2.json"))]


def test_script_alone_finds_its_launchers():
    specs, _ = discover(["train.py"])
    launchers = sorted(s.files[1] for s in specs)
    assert launchers == ["launch/train.sh", "launch/unknown.sh", "slurm/job.sbatch"]
    assert all(s.entry == "train.py" for s in specs)


def test_script_nobody_launches_is_its_own_job(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text("[project]\nname='x'\n")
    (tmp_path / "solo.py").write_text("print(1)\n")
    specs, diags = discover(["solo.py"])
    assert entries(specs) == [("solo.py", ("solo.py",))]
    assert diags == []


def test_command_after_dashdash_is_the_launcher_line():
    cmd = ["torchrun", "--nproc_per_node", "8", "train.py", "--batch_size", "4"]
    (spec,), diags = discover([], cmd)
    assert (spec.entry, spec.files) == ("train.py", ["train.py"])
    f = dict(spec.invocation.facts)
    assert (f["gpus_per_node"].value, f["gpus_per_node"].origin.value) == (8, "cli")
    assert spec.invocation.args == ["--batch_size", "4"]
    assert diags == []


def test_declared_job_in_pyproject():
    specs, _ = discover(["declared.py"])
    (spec,) = specs
    assert spec.declared and spec.entry == "declared.py"
    assert spec.overrides == {"gpu": "H100-SXM5-80GB", "nodes": 1}
    assert dict(spec.invocation.facts)["gpus_per_node"].value == 2
    assert spec.invocation.args == ["--lr", "1e-4"]


def test_missing_path_is_reported_and_others_go_on():
    specs, diags = discover(["nope.json", "configs/ds_z2.json"])
    assert [d.code for d in diags] == ["PF001"]
    assert len(specs) == 1


def test_cli_check_with_a_command(cli):
    r = cli("check", "--format", "json", "--exit-zero", "--",
            "torchrun", "--nproc_per_node", "8", "train.py", "--batch_size", "4", cwd=REPO)
    assert r.returncode == 0, r.stderr
    (job,) = json.loads(r.stdout)["jobs"]
    assert job["entry"] == "train.py"
    f = job["facts"]
    assert f["gpus_per_node"] == {"value": 8, "origin": "cli", "source": "<command>:1:10",
                                  "reason": "--nproc_per_node 8"}
    assert (f["world_size"]["value"], f["world_size"]["origin"]) == (8, "derived")
    assert (f["nodes"]["value"], f["nodes"]["origin"]) == (1, "default")


def test_hydra_config_groups_are_the_scripts_job_not_jobs_of_their_own(tmp_path):
    """A walked repository with a Hydra app: `@hydra.main(config_path="conf")`, config
    groups under conf/ and a launcher overriding them. The group file with training keys
    (conf/trainer/default.yaml) is composed into the script's job, not a job of its own."""
    from tests.conftest import run_cli

    (tmp_path / "pyproject.toml").write_text("[project]\nname='x'\n")
    (tmp_path / "conf" / "trainer").mkdir(parents=True)
    (tmp_path / "train.py").write_text(
        "import hydra\nimport torch\nfrom transformers import AutoModelForCausalLM\n\n\n"
        "@hydra.main(config_path=\"conf\", config_name=\"config\", version_base=None)\n"
        "def main(cfg):\n"
        "    model = AutoModelForCausalLM.from_pretrained(\"gpt2\")\n"
        "    opt = torch.optim.AdamW(model.parameters())\n"
        "    loader = torch.utils.data.DataLoader(ds, batch_size=cfg.trainer.micro_batch_size)\n"
        "    for batch in loader:\n"
        "        model(**batch).loss.backward()\n"
        "        opt.step()\n\n\nif __name__ == \"__main__\":\n    main()\n")
    (tmp_path / "conf" / "config.yaml").write_text("defaults:\n  - trainer: default\n")
    (tmp_path / "conf" / "trainer" / "default.yaml").write_text(
        "micro_batch_size: 2\ngradient_accumulation_steps: 8\nlr: 1e-5\n")
    (tmp_path / "launch.sh").write_text("torchrun --nproc_per_node 8 train.py "
                                        "trainer.micro_batch_size=4\n")
    r = run_cli("check", str(tmp_path), "--format", "json", "--exit-zero", "--no-cache")
    jobs = json.loads(r.stdout)["jobs"]
    assert len(jobs) == 1, [j["files"] for j in jobs]
    assert os.path.join("conf", "trainer", "default.yaml") in " ".join(jobs[0]["files"])
    assert jobs[0]["facts"]["micro_batch"]["value"] == 4
