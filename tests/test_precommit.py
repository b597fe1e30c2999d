"""The pre-commit hook, run by the real `pre-commit` on a throw-away repository.

pre-commit installs preflight from a git repository into a virtualenv of its own, so the
test copies this project's files into a temporary repository and commits them (the
working tree under test, committed or not); a training repository then names that
repository in its `.pre-commit-config.yaml`, as a user's would. The hook environment is
built once per test session (~15 s) under a pytest tmp dir (PRE_COMMIT_HOME).
"""

import glob
import importlib.util
import os
import re
import shutil
import subprocess
import sys

import pytest

from tests.conftest import ROOT, run_cli

pytest.importorskip("pre_commit", reason="pre-commit is not installed (pip install pre-commit)")

GIT_ENV = {"GIT_AUTHOR_NAME": "preflight-test", "GIT_AUTHOR_EMAIL": "test@example.invalid",
           "GIT_COMMITTER_NAME": "preflight-test", "GIT_COMMITTER_EMAIL": "test@example.invalid",
           "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
SHIPPED = ("pyproject.toml", "README.md", ".pre-commit-hooks.yaml", "preflight", "rules")

FAILING_JOB = "import torch\n\ndef main(:\n    pass\n"     # cannot be parsed: PF002
PASSING_JOB = "import torch\n\nmodel = torch.nn.Linear(16, 16)\n"
#: a Llama-2-7B full fine-tune under plain DDP on 8 × H100: the model states alone are
#: 16 B/param — far over 80 GB per GPU. The GPU comes from the launcher, which pre-commit
#: does not pass when only the script changed: discovery must find it.
BIG_JOB = """from transformers import AutoModelForCausalLM, Trainer, TrainingArguments

model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf")
args = TrainingArguments(output_dir="out", per_device_train_batch_size=4, bf16=True,
                         optim="adamw_torch")
Trainer(model=model, args=args).train()
"""
BIG_LAUNCHER = """#!/bin/bash
#SBATCH --gpus-per-node=8
#SBATCH --constraint=h100
torchrun --nproc_per_node 8 jobs/finetune_7b.py --max_seq_length 2048
"""


def _git(cwd, *args):
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True,
                          env=dict(os.environ, **GIT_ENV)).stdout


@pytest.fixture(scope="session")
def hook_repo(tmp_path_factory):
    repo = tmp_path_factory.mktemp("hook-repo")
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", ".venv", "build")
    for name in SHIPPED:
        src = os.path.join(ROOT, name)
        if os.path.isdir(src):
            shutil.copytree(src, repo / name, ignore=ignore)
        elif os.path.exists(src):
            shutil.copy2(src, repo / name)
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "preflight under test")
    return repo


@pytest.fixture(scope="session")
def pre_commit_home(tmp_path_factory):
    return tmp_path_factory.mktemp("pre-commit-home")


@pytest.fixture
def project(tmp_path, hook_repo):
    """A training repository using the hook: one job that cannot be parsed, one that is fine."""
    rev = _git(hook_repo, "rev-parse", "HEAD").strip()
    (tmp_path / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {hook_repo}\n    rev: {rev}\n    hooks:\n      - id: preflight\n")
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "broken_train.py").write_text(FAILING_JOB)
    (tmp_path / "train.py").write_text(PASSING_JOB)
    (tmp_path / "NOTES.md").write_text("not a training file\n")
    (tmp_path / "jobs" / "finetune_7b.py").write_text(BIG_JOB)
    (tmp_path / "launch_7b.sh").write_text(BIG_LAUNCHER)
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", ".pre-commit-config.yaml", "train.py", "NOTES.md")
    return tmp_path


def pre_commit(project, home, *args):
    env = dict(os.environ, PRE_COMMIT_HOME=str(home), NO_COLOR="1", **GIT_ENV)
    env.pop("PREFLIGHT_DEBUG", None)
    return subprocess.run([sys.executable, "-m", "pre_commit", *args], cwd=project,
                          capture_output=True, text=True, env=env, timeout=600)


def test_hook_fails_on_the_broken_job_and_passes_the_good_one(project, pre_commit_home):
    ok = pre_commit(project, pre_commit_home, "run", "--color", "never", "--files", "train.py")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert re.search(r"^preflight\.+Passed$", ok.stdout, re.M), ok.stdout

    bad = pre_commit(project, pre_commit_home, "run", "--color", "never", "--files",
                     "train.py", "jobs/broken_train.py")
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert re.search(r"^preflight\.+Failed$", bad.stdout, re.M), bad.stdout
    assert "- exit code: 1" in bad.stdout
    finding = re.search(r"^jobs/broken_train\.py:(\d+):(\d+): PF002 cannot parse Python",
                        bad.stdout, re.M)
    assert finding, bad.stdout
    assert int(finding.group(1)) in (3, 4)      # the bad `def` line, or the token after it
    assert "train.py:" not in bad.stdout.replace("broken_train.py:", "")
    assert "Traceback" not in bad.stdout + bad.stderr
    # the hook reports what `preflight check` itself reports for the same file
    direct = run_cli("check", "jobs/broken_train.py", cwd=str(project))
    assert direct.returncode == 1
    assert finding.group(0) in direct.stdout

    # only the script changed: discovery adds the launcher, the estimate sees 8 × H100, and
    # the hook reports exactly what `preflight check` on the whole job reports
    big = pre_commit(project, pre_commit_home, "run", "--color", "never", "--verbose",
                     "--files", "jobs/finetune_7b.py")
    whole = run_cli("check", "launch_7b.sh", "jobs/finetune_7b.py", cwd=str(project))
    assert "jobs/finetune_7b.py (+1 file) on H100" in big.stdout, big.stdout
    assert "] does not fit: " in big.stdout
    for line in whole.stdout.splitlines():
        assert line in big.stdout.splitlines(), (line, big.stdout)
    assert big.returncode == whole.returncode, big.stdout
    if importlib.util.find_spec("preflight.engine") is not None:
        # with the rule pack: a memory finding (PF1xx) and a failed hook
        assert big.returncode == 1
        assert re.search(r"^jobs/finetune_7b\.py:\d+:\d+: PF1\d\d ", big.stdout, re.M), big.stdout

    skipped = pre_commit(project, pre_commit_home, "run", "--color", "never", "--files", "NOTES.md")
    assert skipped.returncode == 0
    assert re.search(r"^preflight\.+\(no files to check\)Skipped$", skipped.stdout, re.M)

    # the hook's own environment holds preflight and its dependencies, not torch
    envs = glob.glob(os.path.join(pre_commit_home, "repo*", "py_env-*"))
    assert len(envs) == 1, os.listdir(pre_commit_home)
    site = glob.glob(os.path.join(envs[0], "lib", "python*", "site-packages"))[0]
    assert os.path.isdir(os.path.join(site, "preflight"))
    assert os.path.isdir(os.path.join(site, "libcst"))
    assert not os.path.exists(os.path.join(site, "torch"))


def test_installed_hook_blocks_the_commit_of_a_broken_job(project, pre_commit_home):
    inst = pre_commit(project, pre_commit_home, "install")
    assert inst.returncode == 0, inst.stdout + inst.stderr
    env = dict(os.environ, PRE_COMMIT_HOME=str(pre_commit_home), NO_COLOR="1",
               PRE_COMMIT_COLOR="never", **GIT_ENV)

    def commit(msg):
        return subprocess.run(["git", "commit", "-m", msg], cwd=project, capture_output=True,
                              text=True, env=env, timeout=600)

    first = commit("a job that fits")
    assert first.returncode == 0, first.stdout + first.stderr
    _git(project, "add", "jobs/broken_train.py")
    second = commit("a job that cannot be parsed")
    assert second.returncode == 1
    assert re.search(r"^jobs/broken_train\.py:\d+:\d+: PF002 ", second.stdout + second.stderr, re.M)
    assert _git(project, "log", "--format=%s").splitlines() == ["a job that fits"]
