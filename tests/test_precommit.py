"""The pre-commit hook, run by the real `pre-commit` on a throw-away repository.

pre-commit installs preflight from a git repository into a virtualenv of its own, so the
test copies this project's files into a temporary repository and commits them (the
working tree under test, committed or not), then runs `pre-commit try-repo` against it.
The hook environment is built once per test session (~20-40 s) under a pytest tmp dir.
"""

import glob
import os
import shutil
import subprocess
import sys

import pytest

from tests.conftest import ROOT

pytest.importorskip("pre_commit", reason="pre-commit is not installed (pip install pre-commit)")

GIT_ENV = {"GIT_AUTHOR_NAME": "preflight-test", "GIT_AUTHOR_EMAIL": "test@example.invalid",
           "GIT_COMMITTER_NAME": "preflight-test", "GIT_COMMITTER_EMAIL": "test@example.invalid",
           "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
SHIPPED = ("pyproject.toml", "README.md", ".pre-commit-hooks.yaml", "preflight", "rules")

FAILING_JOB = "import torch\n\ndef main(:\n    pass\n"     # PF002 at line 3
PASSING_JOB = "import torch\n\nmodel = torch.nn.Linear(16, 16)\n"


def _git(cwd, *args):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                   env=dict(os.environ, **GIT_ENV))


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
def project(tmp_path):
    """A training repository: one job that cannot be parsed, one that is fine."""
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "broken_train.py").write_text(FAILING_JOB)
    (tmp_path / "train.py").write_text(PASSING_JOB)
    (tmp_path / "NOTES.md").write_text("not a training file\n")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", ".")
    return tmp_path


def try_repo(project, hook_repo, home, *files):
    env = dict(os.environ, PRE_COMMIT_HOME=str(home), NO_COLOR="1", **GIT_ENV)
    env.pop("PREFLIGHT_DEBUG", None)
    return subprocess.run([sys.executable, "-m", "pre_commit", "try-repo", str(hook_repo),
                           "preflight", "--color", "never", "--files", *files],
                          cwd=project, capture_output=True, text=True, env=env, timeout=600)


def test_hook_fails_on_the_broken_job_and_passes_the_good_one(project, hook_repo, pre_commit_home):
    ok = try_repo(project, hook_repo, pre_commit_home, "train.py")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "preflight" in ok.stdout and "Passed" in ok.stdout

    bad = try_repo(project, hook_repo, pre_commit_home, "train.py", "jobs/broken_train.py")
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "Failed" in bad.stdout
    assert "- exit code: 1" in bad.stdout
    assert "jobs/broken_train.py:3:" in bad.stdout and "PF002" in bad.stdout
    assert "Traceback" not in bad.stdout + bad.stderr

    skipped = try_repo(project, hook_repo, pre_commit_home, "NOTES.md")
    assert skipped.returncode == 0
    assert "(no files to check)Skipped" in skipped.stdout

    # the hook's own environment holds preflight and its dependencies, not torch
    envs = glob.glob(os.path.join(pre_commit_home, "repo*", "py_env-*"))
    assert envs, os.listdir(pre_commit_home)
    site = glob.glob(os.path.join(envs[0], "lib", "python*", "site-packages"))[0]
    assert os.path.isdir(os.path.join(site, "preflight"))
    assert not os.path.exists(os.path.join(site, "torch"))
