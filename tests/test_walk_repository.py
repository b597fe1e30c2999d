"""`preflight check DIR`: which files of a repository form jobs (a job needs training), how
the walk skips what holds none (.gitignore, exclude settings, default skips), and each
project checked with its own [tool.preflight]."""

import json
import os
import textwrap

import pytest

from tests.conftest import ROOT, run_cli
from preflight.options import CheckOptions

TRAIN = textwrap.dedent("""\
    import argparse
    import torch
    from mylib.blocks import Block

    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--batch_size", type=int, default=4)
        args = p.parse_args()
        model = torch.nn.Linear(1024, 1024)
        print(sum(p.numel() for p in model.parameters()))
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
        for step in range(10):
            loss = model(torch.zeros(args.batch_size, 1024)).sum()
            loss.backward()
            opt.step()

    if __name__ == "__main__":
        main()
    """)
DS_TRAIN = textwrap.dedent("""\
    import deepspeed
    import torch
    from transformers import AutoModelForCausalLM

    def main():
        model = AutoModelForCausalLM.from_pretrained("gpt2")
        engine, opt, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters())
        for step in range(10):
            loss = engine(torch.zeros(1, 128, dtype=torch.long)).loss
            engine.backward(loss)
            engine.step()

    if __name__ == "__main__":
        main()
    """)
DS_JSON = '{\n  "train_micro_batch_size_per_gpu": 2,\n  "zero_optimization": {"stage": 3}\n}\n'
LIB = "import torch\n\nclass Block(torch.nn.Module):\n    pass\n"


def write(root, files):
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


def check(root, *paths, **kw):
    from preflight import pipeline
    old = os.getcwd()
    os.chdir(root)
    try:
        return pipeline.run(list(paths) or ["."], CheckOptions(fixes=False, **kw))
    finally:
        os.chdir(old)


def jobs(report):
    return [(j.job.entry, j.job.files) for j in report.jobs]


@pytest.fixture
def repo(tmp_path):
    (tmp_path / ".git").mkdir()
    write(tmp_path, {
        "train.py": TRAIN,
        "ds/train_ds.py": DS_TRAIN,
        "ds/ds_config.json": DS_JSON,
        "ds/launch.sh": "#!/bin/bash\ndeepspeed --num_gpus 8 ds/train_ds.py --deepspeed ds/ds_config.json\n",
        "mylib/__init__.py": "",
        "mylib/blocks.py": LIB,
        "mylib/other.py": LIB.replace("Block", "Other"),
        # stray files that are no training job
        "package.json": '{"name": "site", "scripts": {"build": "vite build"}}\n',
        "mkdocs.yml": "site_name: x\nnav:\n  - Home: index.md\n",
        ".github/workflows/ci.yml": "name: ci\non: [push]\njobs:\n  t:\n    runs-on: ubuntu-latest\n",
        "data/train.json": '[{"instruction": "q", "output": "a"}]\n',
        "data/meta.yaml": "source: web\nsplit: train\n",
        "Makefile": "install:\n\tpython -m venv .venv\n\t.venv/bin/pip install -e .\n"
                    "test:\n\tpytest -q\n\tpython -m pytest tests\n",
        "README.md": "# project\n",
    })
    return tmp_path


def test_only_training_forms_jobs_in_a_walked_repository(repo):
    r = check(repo)
    assert jobs(r) == [
        ("ds/train_ds.py", ["ds/train_ds.py", "ds/launch.sh", "ds/ds_config.json"]),
        ("train.py", ["train.py"]),       # mylib/blocks.py is imported but gives nothing
    ]
    assert r.diagnostics == []
    # the DeepSpeed JSON named by the launcher is read as the job's config
    ds = r.jobs[0].job.plan
    assert (ds.value("zero_stage"), ds.facts["zero_stage"].source.path) == (3, "ds/ds_config.json")


def test_an_imported_module_is_a_member_only_when_it_contributes(tmp_path):
    # both scripts import mylib.model; only the one whose model is the class defined there
    # lists it (its parameter count comes from that file)
    (tmp_path / ".git").mkdir()
    model = ("import torch\n\nclass Net(torch.nn.Module):\n    def __init__(self):\n"
             "        super().__init__()\n        self.fc = torch.nn.Linear(4096, 4096)\n")
    uses = TRAIN.replace("from mylib.blocks import Block", "from mylib.model import Net").replace(
        "torch.nn.Linear(1024, 1024)", "Net()")
    write(tmp_path, {"mylib/__init__.py": "", "mylib/model.py": model,
                     "a/train.py": TRAIN.replace("mylib.blocks import Block", "mylib.model import Net"),
                     "b/train.py": uses})
    r = check(tmp_path)
    assert jobs(r) == [("a/train.py", ["a/train.py"]), ("b/train.py", ["b/train.py", "mylib/model.py"])]
    assert r.jobs[1].job.plan.value("params") == 4096 * 4096 + 4096


def test_a_training_config_recognised_by_content_is_a_job_a_stray_one_is_not(repo):
    write(repo, {"configs/zero2.json": DS_JSON.replace("3", "2"),
                 "configs/accelerate.yaml": "compute_environment: LOCAL_MACHINE\n"
                                            "distributed_type: MULTI_GPU\nnum_processes: 8\n",
                 "configs/tokenizer.json": '{"model_max_length": 2048, "padding_side": "right"}\n'})
    entries = [e for e, _ in jobs(check(repo))]
    assert entries == ["ds/train_ds.py", "train.py", "configs/accelerate.yaml", "configs/zero2.json"]


def test_recognise_training_configs_by_content():
    from preflight.extract.recognise import is_training_config, launches_training
    assert is_training_config("ds.json", DS_JSON)
    assert is_training_config("a.yaml", "compute_environment: LOCAL_MACHINE\ndistributed_type: FSDP\n")
    assert is_training_config("sft.yaml", "base_model: meta-llama/Llama-2-7b-hf\nmicro_batch_size: 2\n")
    assert is_training_config("t.toml", "[training]\nlocal_batch_size = 8\nseq_len = 2048\n")
    for name, text in (("package.json", '{"name": "x", "version": "1.0.0"}'),
                       ("mkdocs.yml", "site_name: x\ntheme:\n  name: material\n"),
                       ("ci.yml", "name: ci\non: [push]\njobs:\n  t:\n    runs-on: ubuntu-latest\n"),
                       ("data.json", '[{"text": "batch_size is a word here"}]'),
                       ("config.json", '{"hidden_size": 768, "num_hidden_layers": 12}'),
                       # records of finished runs: the settings beside what was measured
                       ("trainer_state.json", '{\n  "best_metric": null,\n  "global_step": 10,\n'
                                              '  "log_history": [],\n  "train_batch_size": 8,\n'
                                              '  "num_train_epochs": 3\n}'),
                       ("results/lora.json", '{\n  "run_info": {\n    "train_config": {\n'
                                             '      "batch_size": 4,\n      "max_seq_length": 768\n'
                                             '    }\n  },\n  "train_info": {\n'
                                             '    "accelerator_memory_max": 22292725760\n  }\n}')):
        assert not is_training_config(name, text), name
    # the same settings in a config that records nothing are one
    assert is_training_config("train.json", '{\n  "batch_size": 4,\n  "max_seq_length": 768\n}')
    assert not launches_training("venv", None) and not launches_training("pytest", None)
    assert not launches_training(None, "setup.py")
    assert launches_training("torch.distributed.run", None) and launches_training(None, "train.py")


def test_gitignore_exclude_settings_and_default_skips(repo):
    write(repo, {
        ".gitignore": "ignored/\n*.tmp.py\n!keep/\n",
        "ignored/train.py": TRAIN,
        "scratch.tmp.py": TRAIN,
        "nested/.gitignore": "old_*.py\n",
        "nested/old_train.py": TRAIN,
        "nested/new_train.py": TRAIN,
        "venv_custom/pyvenv.cfg": "home = /usr/bin\n",
        "venv_custom/lib/train.py": TRAIN,
        "node_modules/x/train.py": TRAIN,
        "build/train.py": TRAIN,
        ".hidden/train.py": TRAIN,
        "tests/test_train.py": TRAIN,
        "tests/fixtures/train.py": TRAIN,
        "docs/train.py": TRAIN,
        "experiments/old/train.py": TRAIN,
    })
    entries = [e for e, _ in jobs(check(repo))]
    assert "nested/new_train.py" in entries and "experiments/old/train.py" in entries
    assert not [e for e in entries if e.startswith(("ignored", "scratch", "nested/old", "venv_custom",
                                                    "node_modules", "build", ".hidden", "tests", "docs"))]
    # extend-exclude adds to the defaults; exclude replaces them (tests/ is read again)
    write(repo, {"pyproject.toml": '[tool.preflight]\nextend-exclude = ["experiments/old/"]\n'})
    entries = [e for e, _ in jobs(check(repo))]
    assert "experiments/old/train.py" not in entries and "tests/test_train.py" not in entries
    write(repo, {"pyproject.toml": '[tool.preflight]\nexclude = ["experiments/"]\n'})
    entries = [e for e, _ in jobs(check(repo))]
    assert "experiments/old/train.py" not in entries and "tests/test_train.py" in entries
    # a folder given explicitly is read even where a walk would skip it
    assert [e for e, _ in jobs(check(repo, "docs"))] == ["docs/train.py"]


def test_malformed_exclude_setting_is_a_located_finding(tmp_path):
    write(tmp_path, {"pyproject.toml": "[tool.preflight]\nexclude = \"nope\"\n", "train.py": TRAIN})
    r = check(tmp_path)
    assert [(d.code, d.line) for d in r.diagnostics] == [("PF005", 2)]
    assert [e for e, _ in jobs(r)] == ["train.py"]


def test_each_project_uses_its_own_settings_and_a_parent_folder_reports_the_same(tmp_path):
    for name, gpu in (("a", "A100-40GB"), ("b", "H100-80GB")):
        write(tmp_path / "projects" / name, {
            "pyproject.toml": f'[project]\nname = "{name}"\n\n[tool.preflight]\ngpu = "{gpu}"\n',
            "train.py": TRAIN,
            "launch.sh": "#!/bin/bash\ntorchrun --nproc_per_node 4 train.py --batch_size 8\n",
        })
    whole = run_cli("check", "projects", "--format", "json", "--exit-zero", "--no-cache", cwd=str(tmp_path))
    each = run_cli("check", "projects/a/", "projects/b/", "--format", "json", "--exit-zero", "--no-cache",
                   cwd=str(tmp_path))
    assert whole.returncode == 0, whole.stderr
    assert whole.stdout == each.stdout
    out = json.loads(whole.stdout)
    assert [(j["entry"], j["gpu"]) for j in out["jobs"]] == [
        ("projects/a/train.py", "A100-SXM4-40GB"), ("projects/b/train.py", "H100-SXM5-80GB")]


def test_examples_folder_reports_what_each_example_reports():
    whole = run_cli("check", "examples/", "--format", "json", "--exit-zero", "--no-cache")
    names = sorted(os.path.join("examples", d) + "/" for d in os.listdir(os.path.join(ROOT, "examples")))
    each = run_cli("check", *names, "--format", "json", "--exit-zero", "--no-cache")
    assert whole.returncode == 0 and whole.stdout == each.stdout
    assert len(json.loads(whole.stdout)["jobs"]) == len(names)


def test_launcher_index_is_one_pass_by_file_name(tmp_path):
    from preflight.discover.index import Index
    write(tmp_path, {"a.sh": "deepspeed x.py --deepspeed=configs/ds.json\n",
                     "b.sh": "python my_ds.json.py\n",
                     "c.yaml": "deepspeed: 'ds.json'\n"})
    idx = Index(str(tmp_path))
    old = os.getcwd()
    os.chdir(tmp_path)
    try:
        assert idx.naming("configs/ds.json", (".sh",)) == ["a.sh"]
        assert idx.naming("configs/ds.json", (".sh", ".yaml")) == ["a.sh", "c.yaml"]
    finally:
        os.chdir(old)


def test_parallel_extraction_reports_what_serial_does(repo):
    for i in range(6):
        write(repo, {f"exp{i}/train.py": TRAIN.replace("default=4", f"default={i + 1}")})
    serial = check(repo, jobs=1)
    parallel = check(repo, jobs=2)
    assert json.dumps(parallel.to_json()) == json.dumps(serial.to_json())
    assert len(parallel.jobs) == 8


class _Tty:
    def __init__(self):
        self.text = ""

    def write(self, s):
        self.text += s

    def flush(self):
        pass

    def isatty(self):
        return True


def test_progress_appears_when_a_run_grows_long_and_never_when_piped(monkeypatch):
    import io
    import time

    from preflight.progress import progress
    monkeypatch.delenv("PREFLIGHT_NO_PROGRESS", raising=False)

    def slow(n):
        for i in range(n):
            time.sleep(0.02)
            yield i

    tty = _Tty()
    assert list(progress(slow(5), 5, stream=tty, label="reading", delay=0.05, interval=0)) == list(range(5))
    assert "\rpreflight: reading 4/5" in tty.text and "reading 0/5" not in tty.text
    assert tty.text.endswith("\r")
    quick = _Tty()
    assert list(progress(range(5), 5, stream=quick, delay=10)) == list(range(5))
    assert quick.text == ""
    pipe = io.StringIO()
    assert list(progress(slow(5), 5, stream=pipe, delay=0)) == list(range(5))
    assert pipe.getvalue() == ""


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs and symlinks")
def test_a_walk_skips_fifos_dangling_links_and_symlink_loops(tmp_path):
    write(tmp_path, {"a/train.py": TRAIN, ".gitignore": "[\n\\\\\n!\n**/***\n"})
    os.mkfifo(tmp_path / "a" / "pipe.json")         # opening it for reading would block
    os.symlink("..", tmp_path / "a" / "loop")
    os.symlink("/nonexistent/x.py", tmp_path / "a" / "dangling.py")
    (tmp_path / "a" / "bad.yaml").write_bytes(b"\xff\xfe\x00 not text")
    from preflight.walk import walk
    assert walk(str(tmp_path)) == [os.path.join(str(tmp_path), "a", "bad.yaml"),
                                   os.path.join(str(tmp_path), "a", "train.py")]
    r = run_cli("check", ".", "--no-cache", "--format", "json", cwd=str(tmp_path))
    assert [j["entry"] for j in json.loads(r.stdout)["jobs"]] == ["a/train.py"], r.stderr
