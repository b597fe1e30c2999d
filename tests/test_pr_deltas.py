"""Memory deltas on a pull request: in a temporary git repository, a commit that raises
the sequence length gets a delta line and fails `--fail-on-regression`; a commit that
lowers it passes. Text, JSON and the Markdown comment carry the delta."""

import json
import os
import shutil
import subprocess

import pytest

from tests.conftest import ROOT, run_cli

EXAMPLE = os.path.join(ROOT, "examples", "7b-zero3")
GIT_ENV = dict(GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@t")


def git(d, *args):
    return subprocess.run(["git", *args], cwd=d, check=True, capture_output=True, text=True,
                          env=dict(os.environ, **GIT_ENV)).stdout


def set_seq(d, seq):
    p = os.path.join(d, "train.py")
    src = open(p).read()
    import re
    open(p, "w").write(re.sub(r"max_seq_length = \d+", f"max_seq_length = {seq}", src))


@pytest.fixture
def repo(tmp_path):
    d = str(tmp_path / "repo")
    shutil.copytree(EXAMPLE, d)
    git(d, "init", "-q", "-b", "main", ".")
    git(d, "add", "-A")
    git(d, "commit", "-qm", "base")
    git(d, "checkout", "-q", "-b", "pr")
    return d


def test_raising_the_sequence_length_is_a_regression(repo):
    set_seq(repo, 32768)
    git(repo, "commit", "-qam", "longer sequences")
    r = run_cli("check", "--diff-base", "main", "--fail-on-regression", ".", cwd=repo)
    assert r.returncode == 1, r.stdout + r.stderr
    line = next(ln for ln in r.stdout.splitlines() if ln.startswith("  train.py: seq_len"))
    assert "seq_len 2048 → 32768" in line and "per GPU, now" in line
    assert "(does not fit)" in line and "cheapest fix:" in line
    assert "regression: fitted at the base (fits), does not fit now" in r.stdout

    data = json.loads(run_cli("check", "--diff-base", "main", "--format", "json", ".",
                              cwd=repo).stdout)
    (d,) = data["deltas"]["jobs"]
    assert d["facts"] == [{"name": "seq_len", "base": 2048, "head": 32768}]
    assert d["change_bytes"] > 0 and d["regression"]
    assert d["per_gpu_bytes_change"]["activations"] > 0
    assert "params" not in d["per_gpu_bytes_change"]

    md = run_cli("check", "--diff-base", "main", "--format", "markdown", ".", cwd=repo).stdout
    assert "### Memory changes since `main`" in md and "**regression:**" in md


def test_lowering_the_sequence_length_passes(repo):
    set_seq(repo, 1024)
    git(repo, "commit", "-qam", "shorter sequences")
    r = run_cli("check", "--diff-base", "main", "--fail-on-regression", ".", cwd=repo)
    assert r.returncode == 0, r.stdout + r.stderr
    line = next(ln for ln in r.stdout.splitlines() if ln.startswith("  train.py: seq_len"))
    assert "seq_len 2048 → 1024: −" in line and "(fits)" in line
    assert "regression" not in r.stdout


def test_headroom_loss_threshold(repo):
    set_seq(repo, 4096)
    git(repo, "commit", "-qam", "a bit longer")
    loose = run_cli("check", "--diff-base", "main", "--fail-on-regression",
                    "--max-headroom-loss", "1", ".", cwd=repo)
    strict = run_cli("check", "--diff-base", "main", "--fail-on-regression",
                     "--max-headroom-loss", "0.01", ".", cwd=repo)
    assert loose.returncode == 0, loose.stdout
    assert strict.returncode == 1 and "of the job's headroom" in strict.stdout


def test_untouched_working_tree_and_bad_refs(repo, tmp_path):
    set_seq(repo, 32768)
    git(repo, "commit", "-qam", "longer")
    before = git(repo, "status", "--porcelain")
    run_cli("check", "--diff-base", "main", ".", cwd=repo)
    assert git(repo, "status", "--porcelain") == before
    out = tmp_path / "x"
    r = run_cli("check", "--diff-base", f"--output={out}", ".", cwd=repo)
    assert r.returncode == 2 and not out.exists()
    r = run_cli("check", "--fail-on-regression", ".", cwd=repo)
    assert r.returncode == 2 and "--diff-base" in r.stderr
