"""A list worked from both ends (`preflight.both_ends`): a forked child from the front,
this process from the back; every item is done, a failed child's share is done here, and
the walk made there and the walked files' tests (`discover.walk_tests.WalkTests`) give the serial
report."""

import json
import os

import pytest

from preflight import both_ends, runcache
from preflight.options import CheckOptions

pytestmark = pytest.mark.skipif(not both_ends.can_fork(), reason="fork with a second core: Linux only")


def test_every_index_is_done_and_the_childs_share_comes_back():
    done: list[int] = []
    calls = []

    def do(start, end):
        done.extend(range(start, end))

    got = both_ends.run(5000, do, lambda: list(done), meanwhile=lambda: calls.append(os.getpid()),
                        block=7)
    assert calls == [os.getpid()]                 # meanwhile ran once, here
    assert got is not None
    assert sorted(set(got) | set(done)) == list(range(5000))
    # this process took its blocks from the back: what it did (if the child left it
    # anything) is one run up to the end
    mine = sorted(set(done))
    assert mine == (list(range(mine[0], 5000)) if mine else [])


def test_a_failed_child_leaves_its_share_to_this_process():
    parent = os.getpid()
    done: list[int] = []

    def do(start, end):
        if os.getpid() != parent:
            raise RuntimeError("the child fails")
        done.extend(range(start, end))

    assert both_ends.run(3000, do, lambda: None, block=10) is None
    assert sorted(set(done)) == list(range(3000))


def test_nothing_to_do():
    assert both_ends.run(0, lambda s, e: None, lambda: "ok") == "ok"


def test_the_list_made_by_the_child_while_this_process_does_something_else():
    parent = os.getpid()
    done: list[int] = []
    seen = []

    def made():
        seen.append(os.getpid())
        return list(range(1000))

    got = both_ends.run_after(made, len, lambda s, e: done.extend(range(s, e)), lambda: list(done),
                              meanwhile=lambda: seen.append(os.getpid()))
    assert got[0] == list(range(1000))
    assert seen == [parent]                     # the list was made in the other process
    assert sorted(set(got[1]) | set(done)) == list(range(1000))


def test_a_child_that_fails_to_make_the_list_leaves_it_all_to_this_process():
    parent = os.getpid()
    done: list[int] = []

    def made():
        if os.getpid() != parent:
            raise OSError("the child fails")
        return "abc"

    assert both_ends.run_after(made, len, lambda s, e: done.extend(range(s, e)), lambda: 1) == ("abc", None)
    assert done == [0, 1, 2]


LIB = "import os\n\n\ndef helper_{i}(x):\n    return os.path.join(x, '{i}')\n"
TRAIN = ("import torch\nfrom lib_{i} import helper_{i}\n"
         "from transformers import AutoModelForCausalLM\n"
         "model = AutoModelForCausalLM.from_pretrained('gpt2')\n"
         "opt = torch.optim.AdamW(model.parameters())\n"
         "def main():\n    for batch in range(10):\n        loss = model(batch).loss\n"
         "        loss.backward()\n        opt.step()\n\n"
         "if __name__ == '__main__':\n    main()\n")


@pytest.fixture
def repo(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / "pyproject.toml").write_text('[tool.preflight]\ngpu = "A100-80GB"\n')
    for i in range(30):
        d = tmp_path / f"exp_{i:02d}"
        d.mkdir()
        (d / "train.py").write_text(TRAIN.format(i=i))
        (d / f"lib_{i}.py").write_text(LIB.format(i=i))
        (d / "launch.sh").write_text("#!/bin/bash\ntorchrun --nproc_per_node 4 train.py\n")
        (d / "data.json").write_text(json.dumps({"rows": [i, i + 1]}))
        (d / "setup.sh").write_text("pip install -r requirements.txt\n")
    return tmp_path


def _run(monkeypatch, fork):
    from preflight import pipeline
    monkeypatch.setattr(both_ends, "can_fork", lambda: fork)
    with runcache.recording() as rec:
        report = pipeline.run(["."], CheckOptions(cache=True, jobs=1, fixes=False))
    return json.dumps(report.to_json(), sort_keys=True), rec.files


def test_walked_files_tested_over_two_processes_give_the_serial_report(repo, monkeypatch):
    monkeypatch.chdir(repo)
    serial, _ = _run(monkeypatch, False)
    import shutil
    shutil.rmtree(repo / ".preflight_cache")
    parallel, read = _run(monkeypatch, True)
    assert parallel == serial
    assert len(json.loads(parallel)["jobs"]) == 30
    # every walked file was read by one process or the other, and the stored run result
    # depends on each: the child's reads came back with its answers
    for i in range(30):
        for name in ("train.py", f"lib_{i}.py", "launch.sh", "data.json", "setup.sh"):
            p = os.path.join(str(repo), f"exp_{i:02d}", name)
            assert read.get(p, (None,))[0] == os.path.getsize(p), p


def test_an_edit_between_two_runs_in_one_process_is_read(tmp_path, monkeypatch):
    """The walked files' texts are remembered within a run only: a recipe edited into a
    site config between two checks in one process is no job of the second."""
    import preflight
    (tmp_path / ".git").mkdir()
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text("base_model: gpt2\nmicro_batch_size: 4\nsequence_len: 1024\n"
                      "gradient_accumulation_steps: 2\n")
    monkeypatch.chdir(tmp_path)
    first = preflight.check(["."], cache=True)
    assert [j.job.entry for j in first.jobs] == ["recipe.yaml"]
    recipe.write_text("site_name: docs\ntheme: material\nnav:\n  - index.md\n")
    second = preflight.check(["."], cache=True)
    assert [j.job.entry for j in second.jobs] == []
