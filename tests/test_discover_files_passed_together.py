"""Files passed together (as a pre-commit hook passes them) go to the jobs that use them:
unrelated scripts stay separate jobs, files that are not training files form no job with
others and produce no findings, a broken script is reported at its own path."""

import json
import re
import subprocess

import pytest

from tests.conftest import run_cli

TRAIN = ("import torch\n"
         "from transformers import AutoModelForCausalLM\n"
         "from utils import lr_for\n"
         "model = AutoModelForCausalLM.from_pretrained('meta-llama/Llama-2-7b-hf')\n"
         "opt = torch.optim.AdamW(model.parameters(), lr=lr_for(7))\n"
         "if __name__ == '__main__':\n"
         "    pass\n")
BROKEN = "import torch\n\ndef step(:\n    pass\n"
UTILS = "def lr_for(size):\n    return 1e-4 / size\n"
PRECOMMIT = "repos:\n  - repo: local\n    hooks:\n      - id: preflight\n"
DS = ('{\n  "zero_optimization": {"stage": 3},\n  "bf16": {"enabled": true},\n'
      '  "train_micro_batch_size_per_gpu": 2\n}\n')
READS_DS = ("import torch\nimport deepspeed\n"
            "engine, *_ = deepspeed.initialize(model=torch.nn.Linear(8, 8), config='ds.json')\n"
            "if __name__ == '__main__':\n    pass\n")


@pytest.fixture
def repo(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    files = {"train.py": TRAIN, "broken.py": BROKEN, "utils.py": UTILS,
             ".pre-commit-config.yaml": PRECOMMIT, "notes.yaml": "title: notes\nitems: [1, 2]\n",
             "settings.json": '{"theme": "dark"}\n', "lint.toml": "[tool]\nline = 99\n",
             "ds.json": DS, "ds_train.py": READS_DS,
             "plain.py": "def main():\n    print('hello')\n\nif __name__ == '__main__':\n    main()\n"}
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    return tmp_path


def jobs_of(r):
    assert "Traceback" not in r.stderr, r.stderr
    doc = json.loads(r.stdout)
    return ({j["entry"]: j["files"] for j in doc["jobs"]},
            sorted((d["code"], d["path"], d["line"]) for j in doc["jobs"] for d in j["diagnostics"])
            + sorted((d["code"], d["path"], d["line"]) for d in doc["diagnostics"]))


def test_precommit_style_file_list_is_not_folded_into_one_job(repo):
    r = run_cli("check", "--format", "json", "train.py", "broken.py", ".pre-commit-config.yaml",
                cwd=str(repo))
    jobs, findings = jobs_of(r)
    # each file is its own job: nothing joins train.py's, nothing is named "(+2 files)"
    assert jobs == {"train.py": ["train.py"], "broken.py": ["broken.py"],
                    ".pre-commit-config.yaml": [".pre-commit-config.yaml"]}
    assert [f for f in findings if f[0] == "PF002"] == [("PF002", "broken.py", 3)]
    assert not [f for f in findings if f[1] == ".pre-commit-config.yaml"]
    assert r.returncode == 1

    text = run_cli("check", "train.py", "broken.py", ".pre-commit-config.yaml", cwd=str(repo))
    assert re.search(r"^broken\.py:3:\d+: PF002 cannot parse Python", text.stdout, re.M), text.stdout
    assert not re.search(r"\(\+\d+ files?\)", text.stdout)
    assert "No training settings found in .pre-commit-config.yaml." in text.stdout.splitlines()


def test_files_without_training_settings_form_no_job_with_others_and_say_nothing(repo):
    r = run_cli("check", "--format", "json", "notes.yaml", "settings.json", "lint.toml", "plain.py",
                "train.py", cwd=str(repo))
    jobs, findings = jobs_of(r)
    for f in ("notes.yaml", "settings.json", "lint.toml", "plain.py"):
        assert jobs[f] == [f]
        assert not [x for x in findings if x[1] == f], findings
    assert jobs["train.py"] == ["train.py"]
    text = run_cli("check", "notes.yaml", "settings.json", "lint.toml", "plain.py", cwd=str(repo))
    assert text.returncode == 0, text.stdout + text.stderr
    assert text.stdout.splitlines() == [
        "No training settings found in notes.yaml, settings.json, lint.toml, plain.py.", "",
        "All checks passed (4 jobs)."]


def test_a_module_joins_the_script_that_imports_it(repo):
    jobs, _ = jobs_of(run_cli("check", "--format", "json", "utils.py", "train.py", "ds_train.py",
                              cwd=str(repo)))
    assert jobs == {"train.py": ["train.py", "utils.py"], "ds_train.py": ["ds_train.py"]}


def test_a_config_joins_the_script_that_reads_it_not_an_unrelated_one(repo):
    jobs, _ = jobs_of(run_cli("check", "--format", "json", "train.py", "ds_train.py", "ds.json",
                              cwd=str(repo)))
    assert jobs == {"train.py": ["train.py"], "ds_train.py": ["ds_train.py", "ds.json"]}


def test_a_launcher_in_the_repository_still_claims_its_script(repo):
    (repo / "run.sh").write_text("#!/bin/bash\ntorchrun --nproc_per_node 4 broken.py\n")
    jobs, findings = jobs_of(run_cli("check", "--format", "json", "train.py", "broken.py",
                                     cwd=str(repo)))
    assert jobs == {"train.py": ["train.py"], "broken.py": ["broken.py", "run.sh"]}
    assert ("PF002", "broken.py", 3) in findings
