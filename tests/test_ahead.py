"""`preflight check DIR` walks ahead (`preflight.ahead`): the walk and the walked files'
tests start in a second process as soon as no stored result is found. The report is the
one a check without it gives, what the helper read is part of the stored result, and a
helper nobody takes is ended."""

import json
import os
import subprocess
import sys

import pytest

from preflight import ahead, both_ends
from tests.conftest import ROOT

pytestmark = pytest.mark.skipif(not both_ends.can_fork(), reason="fork with a second core: Linux only")

TRAIN = ("import torch\nfrom transformers import AutoModelForCausalLM\n"
         "model = AutoModelForCausalLM.from_pretrained('{model}')\n"
         "opt = torch.optim.AdamW(model.parameters())\n"
         "def main():\n    for batch in range(10):\n        model(batch).loss.backward()\n"
         "        opt.step()\n\nif __name__ == '__main__':\n    main()\n")
HELPER = "import os\n\n\ndef helper(x):\n    return os.path.join(x, 'a')\n"


@pytest.fixture
def repo(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / "pyproject.toml").write_text('[tool.preflight]\ngpu = "A100-80GB"\n')
    for i, model in enumerate(["gpt2", "EleutherAI/pythia-1b", "meta-llama/Llama-2-7b-hf"]):
        d = tmp_path / f"exp_{i}"
        d.mkdir()
        (d / "train.py").write_text(TRAIN.format(model=model))
        (d / "launch.sh").write_text("#!/bin/bash\ntorchrun --nproc_per_node 4 train.py\n")
        (d / "util.py").write_text(HELPER)
        (d / "data.json").write_text('{"rows": [1, 2, 3]}')
    return tmp_path


def _check(cwd, *extra):
    env = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    env.pop("PREFLIGHT_DEBUG", None)
    r = subprocess.run([sys.executable, "-m", "preflight", "check", ".", "--format", "json", *extra],
                       cwd=cwd, capture_output=True, text=True, env=env, timeout=300)
    assert r.stderr == ""
    return json.loads(r.stdout)


def test_the_report_is_the_one_a_check_without_the_helper_gives(repo):
    plain = _check(repo, "--no-cache")          # no stored result, no helper
    ahead_of_run = _check(repo)                 # cold: the helper walks
    assert [j["entry"] for j in ahead_of_run["jobs"]] == \
        ["exp_0/train.py", "exp_1/train.py", "exp_2/train.py"]
    assert ahead_of_run == plain


def test_an_edit_to_a_file_only_the_helper_read_is_seen(repo):
    first = _check(repo)
    assert len(first["jobs"]) == 3
    # a module no job used becomes a training script of its own: the stored result of
    # the first run depended on its text, which only the walk's tests read
    (repo / "exp_1" / "util.py").write_text(TRAIN.format(model="gpt2"))
    second = _check(repo)
    assert "exp_1/util.py" in [j["entry"] for j in second["jobs"]]


def test_a_helper_nobody_takes_is_ended(repo, monkeypatch):
    monkeypatch.chdir(repo)
    ahead.start(["."], str(repo / ".preflight_cache"))
    helper = ahead._PENDING[1]
    pid = helper.pid
    assert ahead.take(["exp_0"]) is None        # started for other paths: not this run's
    ahead.cancel()
    assert ahead._PENDING is None and helper.pid is None
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)             # reaped: no zombie left


def test_nothing_starts_for_files_or_without_a_cache(repo, monkeypatch):
    monkeypatch.chdir(repo)
    ahead.start(["exp_0/train.py"], str(repo / ".preflight_cache"))
    assert ahead._PENDING is None
    ahead.start(["."], None)
    assert ahead._PENDING is None
