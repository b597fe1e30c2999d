"""Jupyter notebooks: code cells read as one script, magics and `!` lines as the launch
lines they are, `%%writefile` cells as files of the job, findings at cell and line in
every format, `--fix` in the cell's source with the notebook's layout kept."""

from __future__ import annotations

import json
import os
import shutil

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from preflight.lang import notebook
from preflight.report.common import fingerprint
from tests.conftest import ROOT, run_cli

FIX = os.path.join("tests", "fixtures", "notebooks")
QLORA = os.path.join(FIX, "qlora")
NB = os.path.join(QLORA, "qlora_colab.ipynb")
#: the facts a notebook and its plain script + launcher must agree on
SAME = ("model", "params", "trainable_params", "param_dtype", "mixed_precision", "optimizer",
        "micro_batch", "seq_len", "grad_accum", "nodes", "gpus_per_node", "world_size",
        "zero_stage", "lora")


def check(*args: str, cwd: str = ROOT) -> tuple[int, str, str]:
    p = run_cli("check", *args, "--gpu", "A6000", "--no-cache", cwd=cwd)
    assert "Traceback" not in p.stderr, p.stderr
    return p.returncode, p.stdout, p.stderr


def jobs(*args: str, cwd: str = ROOT) -> dict:
    rc, out, err = check(*args, "--format", "json", cwd=cwd)
    assert rc in (0, 1), err
    return {j["entry"]: j for j in json.loads(out)["jobs"]}


def values(job: dict) -> dict:
    return {k: job["facts"][k]["value"] for k in SAME}


def write(path: str, cells: list) -> None:
    nb = new_notebook(cells=cells)
    for i, c in enumerate(nb.cells):
        c["id"] = f"c{i + 1}"
    nbformat.write(nb, path)


# ---------------------------------------------------------------- same facts as the script

def test_qlora_notebook_has_the_facts_of_its_plain_script():
    nb = jobs(NB)[NB]
    py = jobs(os.path.join(QLORA, "qlora_colab.py"))[os.path.join(QLORA, "qlora_colab.py")]
    assert values(nb) == values(py)
    v = values(nb)
    assert (v["model"], v["params"], v["param_dtype"], v["mixed_precision"], v["optimizer"]) == \
        ("meta-llama/Llama-3.1-8B-Instruct", 8_043_892_736, "int4", "bf16", "paged_adamw_8bit")
    assert (v["micro_batch"], v["seq_len"], v["grad_accum"], v["world_size"]) == (8, 2048, 4, 1)
    assert {k: v["lora"][k] for k in ("r", "alpha", "base_bits", "adapter_params")} == \
        {"r": 16, "alpha": 32, "base_bits": 4, "adapter_params": 13_631_488}
    # each fact at its cell and line (cell 7 is the training cell: `%pip` and markdown
    # cells before it count, as Jupyter numbers them)
    src = {k: nb["facts"][k]["source"] for k in ("model", "param_dtype", "micro_batch", "lora")}
    assert src == {"model": f"{NB}:cell 5:2:12", "param_dtype": f"{NB}:cell 5:4:18",
                   "micro_batch": f"{NB}:cell 7:3:33", "lora": f"{NB}:cell 6:1:15"}


def test_accelerate_launch_of_a_writefile_cell_is_the_script_and_its_launcher():
    nb_path = os.path.join(FIX, "launch_nb", "launch.ipynb")
    assert not os.path.exists(os.path.join(FIX, "launch_nb", "train.py"))   # only the cell
    sh_path = os.path.join(FIX, "launch_script", "launch.sh")
    nb_jobs, sh_jobs = jobs(nb_path), jobs(sh_path)
    entry = nb_path + "#train.py"
    assert list(nb_jobs) == [entry]
    assert list(sh_jobs) == [os.path.join(FIX, "launch_script", "train.py")]
    nb, sh = nb_jobs[entry], next(iter(sh_jobs.values()))
    assert nb["files"] == [entry, nb_path, nb_path + "#accelerate_config.yaml"]
    assert values(nb) == values(sh)
    assert (values(nb)["world_size"], values(nb)["gpus_per_node"], values(nb)["micro_batch"]) == (2, 2, 8)
    # the accelerate config a %%writefile cell wrote: `num_processes: 2` is its 5th line,
    # the cell's 6th (after the magic)
    assert nb["facts"]["world_size"]["source"] == f"{nb_path}:cell 3:6:1"
    assert nb["facts"]["micro_batch"]["source"] == f"{nb_path}:cell 4:28:33"
    assert nb["ledger"]["per_gpu_bytes"] == sh["ledger"]["per_gpu_bytes"]


def test_run_torchrun_and_deepspeed_lines_launch_their_script(tmp_path):
    (tmp_path / "train.py").write_text(
        "import torch\nmodel = torch.nn.Linear(8, 8)\nopt = torch.optim.AdamW(model.parameters())\n"
        "loss = model(torch.randn(4, 8)).sum()\nloss.backward()\nopt.step()\n")
    write(str(tmp_path / "runs.ipynb"), [
        new_code_cell("%pip install -q torch\n%run train.py --lr 1e-4"),
        new_code_cell("!torchrun --nproc_per_node 4 train.py\n!deepspeed --num_gpus 2 train.py"),
        new_code_cell("!python -m torch.distributed.run --nproc_per_node 3 train.py"),
    ])
    rc, out, err = check("runs.ipynb", "--format", "json", cwd=str(tmp_path))
    got = [(j["entry"], j["facts"]["world_size"]["value"], j["facts"]["world_size"]["source"])
           for j in json.loads(out)["jobs"]]
    assert got == [("train.py", 1, "runs.ipynb:cell 1:2:1"), ("train.py", 4, "runs.ipynb:cell 2:1:1"),
                   ("train.py", 2, "runs.ipynb:cell 2:2:1"), ("train.py", 3, "runs.ipynb:cell 3:1:1")]


def test_a_script_the_notebook_launches_takes_nothing_from_the_notebooks_own_cells(tmp_path):
    # the notebook prepares its data with another script (`!python prep.py …`), then trains
    # in its own kernel: the prep job is the launch line's, its kernel code is its own job's
    (tmp_path / "prep.py").write_text(
        "import argparse\np = argparse.ArgumentParser()\np.add_argument('--model_name_or_path')\n"
        "p.add_argument('--max_len', type=int)\nprint(p.parse_args())\n")
    write(str(tmp_path / "nb.ipynb"), [
        new_code_cell("!python prep.py --model_name_or_path my-org/unlisted-1b --max_len 128"),
        new_code_cell("import torch\nfrom transformers import AutoModelForCausalLM\n"
                      "model = AutoModelForCausalLM.from_pretrained('gpt2-medium', torch_dtype=torch.bfloat16)\n"
                      "opt = torch.optim.AdamW(model.parameters())\n"
                      "loader = torch.utils.data.DataLoader(range(64), batch_size=8)\n"
                      "for b in loader:\n    model(b).loss.backward()\n    opt.step()"),
    ])
    by_entry = jobs("nb.ipynb", cwd=str(tmp_path))
    prep, own = by_entry["prep.py"], by_entry["nb.ipynb"]
    assert own["facts"]["micro_batch"]["value"] == 8
    assert own["facts"]["param_dtype"]["value"] == "bf16"
    assert own["facts"]["params"]["source"].startswith("nb.ipynb:cell 2:3")
    # the prep job: nothing of the kernel's load, batch, dtype or optimizer
    assert prep["facts"]["model"]["value"] == "my-org/unlisted-1b"
    assert prep["facts"]["params"]["source"].startswith("nb.ipynb:cell 1:1")
    assert prep["facts"]["param_dtype"]["value"] != "bf16"
    assert prep["facts"]["micro_batch"]["value"] is None
    assert prep["facts"]["optimizer"]["value"] is None
    assert [d["line"] for d in prep["diagnostics"] if d["code"] == "PF004"] == [1]


# ---------------------------------------------------------------- cell locations, every format

def test_a_finding_is_at_cell_and_line_in_text_json_sarif_and_github():
    rc, text, _ = check(NB, "--format", "concise")
    assert rc == 1
    assert text.splitlines()[0].startswith(
        f"{NB}:cell 7:3:33: PF112 predicted peak 41.8 GiB is 87 % of RTX-A6000's 48.0 GiB")
    _, full, _ = check(NB)
    assert full.splitlines()[0].startswith(f"{NB}:cell 7:3:33: PF112 predicted peak 41.8 GiB")

    _, out, _ = check(NB, "--format", "json")
    d = json.loads(out)["jobs"][0]["diagnostics"][0]
    assert {k: d[k] for k in ("code", "path", "cell", "line", "col")} == \
        {"code": "PF112", "path": NB, "cell": 7, "line": 3, "col": 33}

    _, out, _ = check(NB, "--format", "sarif")
    res = json.loads(out)["runs"][0]["results"][0]
    assert res["ruleId"] == "PF112"
    assert res["locations"] == [{
        "physicalLocation": {"artifactLocation": {"uri": NB.replace(os.sep, "/"), "uriBaseId": "%SRCROOT%"},
                             "region": {"startLine": 3, "startColumn": 33}},
        "properties": {"cell": 7}}]

    _, out, _ = check(NB, "--format", "github")
    assert out.startswith(f"::warning file={NB},line=3,col=33,title=PF112 (cell 7)::predicted peak 41.8 GiB")


def test_findings_in_a_written_file_are_at_its_cell(tmp_path):
    _, out, _ = check(os.path.join(FIX, "launch_nb", "launch.ipynb"), "--format", "concise")
    nb = os.path.join(FIX, "launch_nb", "launch.ipynb")
    assert out.splitlines()[0].startswith(f"{nb}:cell 4:28:33: PF112 predicted peak 42.3 GiB")


# ---------------------------------------------------------------- --fix

def test_fix_edits_the_cell_and_keeps_the_notebook_layout(tmp_path):
    shutil.copytree(os.path.join(ROOT, QLORA), tmp_path / "q")
    path = tmp_path / "q" / "qlora_colab.ipynb"
    before_text = path.read_text()
    before = nbformat.read(str(path), as_version=4)
    rc, out, err = check("qlora_colab.ipynb", "--fix", cwd=str(tmp_path / "q"))
    assert "fixed qlora_colab.ipynb: micro-batch 4 × 8 accumulation steps (was 8 × 4)" in err
    after = nbformat.read(str(path), as_version=4)
    want = before.cells[6].source.replace("per_device_train_batch_size=8",
                                          "per_device_train_batch_size=4").replace(
        "gradient_accumulation_steps=4", "gradient_accumulation_steps=8")
    assert after.cells[6].source == want != before.cells[6].source
    for i, (b, a) in enumerate(zip(before.cells, after.cells)):
        if i != 6:
            assert a == b
    assert after.cells[1].outputs == before.cells[1].outputs and after.cells[1].outputs
    assert after.metadata == before.metadata
    # the JSON itself: two lines changed, Colab's key order, indent and no final newline kept
    text = path.read_text()
    changed = [(a, b) for a, b in zip(before_text.splitlines(), text.splitlines()) if a != b]
    assert changed == [('        "    per_device_train_batch_size=8,\\n",', '        "    per_device_train_batch_size=4,\\n",'),
                       ('        "    gradient_accumulation_steps=4,\\n",', '        "    gradient_accumulation_steps=8,\\n",')]
    assert len(text.splitlines()) == len(before_text.splitlines())
    assert text.startswith('{\n  "nbformat": 4,\n  "nbformat_minor": 0,') and not text.endswith("\n")


def test_fix_of_a_writefile_cell_keeps_the_magic(tmp_path):
    shutil.copytree(os.path.join(ROOT, FIX, "launch_nb"), tmp_path / "l")
    path = tmp_path / "l" / "launch.ipynb"
    before = nbformat.read(str(path), as_version=4)
    before_text = path.read_text()
    rc, out, err = check("launch.ipynb", "--fix", cwd=str(tmp_path / "l"))
    assert "fixed launch.ipynb: micro-batch 4 × 8 accumulation steps (was 8 × 4)" in err
    after = nbformat.read(str(path), as_version=4)
    assert after.cells[3].source.splitlines()[0] == "%%writefile train.py"
    assert after.cells[3].source == before.cells[3].source.replace(
        "per_device_train_batch_size=8", "per_device_train_batch_size=4").replace(
        "gradient_accumulation_steps=4", "gradient_accumulation_steps=8")
    assert [c for i, c in enumerate(after.cells) if i != 3] == [c for i, c in enumerate(before.cells) if i != 3]
    text = path.read_text()
    assert text.endswith("}\n") and len(text.splitlines()) == len(before_text.splitlines())
    assert not (tmp_path / "l" / "train.py").exists()
    # the fixed notebook now fits
    rc, out, _ = check("launch.ipynb", "--format", "concise", cwd=str(tmp_path / "l"))
    assert rc == 0 and "PF112" not in out


def test_fix_restores_the_magics_of_the_edited_cell(tmp_path):
    script = open(os.path.join(ROOT, QLORA, "qlora_colab.py")).read().split("\n")
    train = ("%%time\n!nvidia-smi\n" + "\n".join(script[24:33]) + "\n%env WANDB_DISABLED=true\n"
             + "\n".join(script[33:36]))
    write(str(tmp_path / "nb.ipynb"), [new_code_cell("\n".join(script[1:24])), new_code_cell(train)])
    _, out, _ = check("nb.ipynb", "--format", "concise", cwd=str(tmp_path))
    assert out.startswith("nb.ipynb:cell 2:5:33: PF112 ")
    check("nb.ipynb", "--fix", cwd=str(tmp_path))
    after = nbformat.read(str(tmp_path / "nb.ipynb"), as_version=4)
    assert after.cells[1].source == train.replace(
        "per_device_train_batch_size=8", "per_device_train_batch_size=4").replace(
        "gradient_accumulation_steps=4", "gradient_accumulation_steps=8") != train
    lines = after.cells[1].source.splitlines()
    assert (lines[0], lines[1], lines[11]) == ("%%time", "!nvidia-smi", "%env WANDB_DISABLED=true")


# ---------------------------------------------------------------- bad notebooks, directories

def test_bad_notebooks_are_located_findings_and_the_other_files_are_checked(tmp_path):
    (tmp_path / "notjson.ipynb").write_text("{\n  \"cells\": [\n    oops\n")
    (tmp_path / "future.ipynb").write_text('{"nbformat": 99, "nbformat_minor": 0, "metadata": {}, "cells": []}')
    (tmp_path / "cells.ipynb").write_text('{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [5]}')
    (tmp_path / "list.ipynb").write_text('[]')
    write(str(tmp_path / "syntax.ipynb"), [
        new_code_cell("import torch\nfrom transformers import Trainer, TrainingArguments"),
        new_code_cell("x = 1\ndef broken(:\n    pass"),
        new_code_cell("args = TrainingArguments(output_dir='o', per_device_train_batch_size=4)\n"
                      "Trainer(model=None, args=args).train()"),
    ])
    shutil.copy(os.path.join(ROOT, QLORA, "qlora_colab.py"), tmp_path)
    rc, out, err = check("notjson.ipynb", "future.ipynb", "cells.ipynb", "list.ipynb",
                         "syntax.ipynb", "qlora_colab.py",
                         "--format", "concise", cwd=str(tmp_path))
    assert rc == 1
    lines = out.splitlines()
    assert "notjson.ipynb:3:5: PF002 cannot read notebook: not JSON (Expecting value)" in lines
    assert "future.ipynb:1:1: PF002 cannot read notebook: Unsupported nbformat version 99" in lines
    assert any(ln.startswith("cells.ipynb:1:1: PF002 cannot read notebook: not a valid notebook (")
               for ln in lines)
    assert "list.ipynb:1:1: PF002 cannot read notebook: JSON without a list of cells" in lines
    assert "syntax.ipynb:cell 2:2:12: PF002 cannot parse cell 2 as Python: invalid syntax; " \
           "the cell is not read" in lines
    assert any(ln.startswith("qlora_colab.py:27:33: PF112") for ln in lines)
    found = jobs("syntax.ipynb", cwd=str(tmp_path))["syntax.ipynb"]
    assert found["facts"]["micro_batch"]["value"] == 4          # the cells after it are read
    assert found["facts"]["micro_batch"]["source"] == "syntax.ipynb:cell 3:1:70"


def test_directory_mode_reads_notebooks_and_keeps_the_ignore_rules(tmp_path):
    repo = tmp_path / "repo"
    shutil.copytree(os.path.join(ROOT, FIX), repo)
    shutil.rmtree(repo / "launch_script")
    os.remove(repo / "qlora" / "qlora_colab.py")
    (repo / ".gitignore").write_text("archive/\n")
    for hidden in ("archive", ".ipynb_checkpoints"):
        os.makedirs(repo / hidden)
        shutil.copy(repo / "qlora" / "qlora_colab.ipynb", repo / hidden / "old.ipynb")
    write(str(repo / "plots.ipynb"), [new_markdown_cell("# plots"),
                                      new_code_cell("import matplotlib\n%matplotlib inline")])
    got = jobs(".", cwd=str(repo))
    assert sorted(got) == [os.path.join("launch_nb", "launch.ipynb#train.py"),
                           os.path.join("qlora", "qlora_colab.ipynb")]


# ---------------------------------------------------------------- the views

def test_magics_are_read_as_what_they_are_and_lines_keep_their_place(tmp_path):
    nb = new_notebook(cells=[
        new_markdown_cell("# notes"),
        new_code_cell("%pip install x\nimport os\nfiles = !ls\nos?\n%env A=1\n%cd sub\n%run -m pkg.train --x 1"),
        new_code_cell("%%bash\naccelerate launch t.py"),
        new_code_cell("%%html\n<b>x</b>"),
        new_code_cell("%%writefile t.py\nimport torch"),
        new_code_cell("%%writefile -a t.py\nprint(1)"),
        new_code_cell("if True:\n    !echo hi\n%sx nvidia-smi"),
    ])
    got = notebook.parse("n.ipynb", nbformat.writes(nb))
    assert not got.diagnostics
    assert got.script.split("\n") == ["pass", "import os", "pass", "pass", "pass", "pass", "pass",
                                      "", "",
                                      "", "",
                                      "", "",
                                      "", "",
                                      "if True:", "    pass", "pass", ""]
    assert got.shell.split("\n") == ["", "", "ls", "", "export A=1", "cd sub",
                                     "python -m pkg.train --x 1",
                                     "", "accelerate launch t.py", "", "", "", "", "", "",
                                     "", "echo hi", "nvidia-smi", ""]
    assert got.written["t.py"].text == "import torch\nprint(1)\n"
    assert notebook.locate(got.written["t.py"].spans, 2) == (6, 2)
    assert notebook.locate(got.spans, 7) == (2, 7)
    assert notebook.locate(got.spans, 16) == (7, 1)


def test_a_writefile_deepspeed_config_is_read_at_its_cell(tmp_path):
    write(str(tmp_path / "ds.ipynb"), [
        new_code_cell('%%writefile ds_config.json\n{\n  "train_micro_batch_size_per_gpu": 2,\n'
                      '  "zero_optimization": {"stage": 3},\n  "bf16": {"enabled": true}\n}'),
        new_code_cell("%%writefile train.py\nfrom transformers import AutoModelForCausalLM, "
                      "HfArgumentParser, Trainer, TrainingArguments\n"
                      "(args,) = HfArgumentParser(TrainingArguments).parse_args_into_dataclasses()\n"
                      "model = AutoModelForCausalLM.from_pretrained('meta-llama/Llama-3.1-8B-Instruct')\n"
                      "Trainer(model=model, args=args).train()"),
        new_code_cell("!deepspeed --num_gpus 4 train.py --deepspeed ds_config.json "
                      "--per_device_train_batch_size 2 --bf16 True --output_dir o"),
    ])
    job = jobs("ds.ipynb", cwd=str(tmp_path))["ds.ipynb#train.py"]
    assert job["files"] == ["ds.ipynb#train.py", "ds.ipynb", "ds.ipynb#ds_config.json"]
    got = {k: (job["facts"][k]["value"], job["facts"][k]["source"])
           for k in ("zero_stage", "world_size", "micro_batch", "params")}
    assert got == {"zero_stage": (3, "ds.ipynb:cell 1:4:25"), "world_size": (4, "ds.ipynb:cell 3:1:1"),
                   "micro_batch": (2, "ds.ipynb:cell 3:1:1"), "params": (8_030_261_248, "ds.ipynb:cell 2:4:9")}


def test_noqa_in_a_cell_and_the_other_formats_name_the_cell(tmp_path):
    _, out, _ = check(NB, "--format", "markdown")
    assert f"[`{NB}:cell 7:3`]({NB})" in out
    _, out, _ = check(NB, "--format", "junit")
    assert f'<testcase name="{NB}:cell 7:3:33 PF112"' in out
    _, out, _ = check(NB, "--format", "gitlab")
    assert json.loads(out)[0]["description"].endswith("[inside-headroom] (cell 7, line 3)")
    shutil.copytree(os.path.join(ROOT, QLORA), tmp_path / "q")
    path = tmp_path / "q" / "qlora_colab.ipynb"
    path.write_text(path.read_text().replace('per_device_train_batch_size=8,\\n',
                                             'per_device_train_batch_size=8,  # noqa: PF112\\n'))
    rc, out, _ = check("qlora_colab.ipynb", "--format", "concise", cwd=str(tmp_path / "q"))
    assert rc == 0 and "PF112" not in out


def test_per_file_ignores_name_the_notebook_also_for_the_files_it_writes(tmp_path):
    shutil.copytree(os.path.join(ROOT, FIX, "launch_nb"), tmp_path / "l")
    rc, out, _ = check("launch.ipynb", "--format", "concise", cwd=str(tmp_path / "l"))
    assert rc == 1 and out.startswith("launch.ipynb:cell 4:28:33: PF112")
    (tmp_path / "l" / "pyproject.toml").write_text(
        '[tool.preflight]\n[tool.preflight.per-file-ignores]\n"launch.ipynb" = ["PF112"]\n')
    rc, out, _ = check("launch.ipynb", "--format", "concise", cwd=str(tmp_path / "l"))
    assert rc == 0 and "PF112" not in out


def test_a_sarif_fingerprint_keeps_when_cells_move(tmp_path):
    shutil.copytree(os.path.join(ROOT, QLORA), tmp_path / "q")
    path = tmp_path / "q" / "qlora_colab.ipynb"

    def result() -> dict:
        _, out, _ = check("qlora_colab.ipynb", "--format", "sarif", cwd=str(tmp_path / "q"))
        return json.loads(out)["runs"][0]["results"][0]

    before = result()
    raw = json.loads(path.read_text())
    raw["cells"].insert(0, {"cell_type": "markdown", "metadata": {}, "source": ["# new\n", "\n", "text"]})
    path.write_text(json.dumps(raw, indent=2))
    after = result()
    assert before["locations"][0]["properties"] == {"cell": 7}
    assert after["locations"][0]["properties"] == {"cell": 8}
    assert after["partialFingerprints"] == before["partialFingerprints"]
    # the flagged line's text is the cell's line, not the JSON file's line of that number
    _, out, _ = check("qlora_colab.ipynb", "--format", "json", cwd=str(tmp_path / "q"))
    msg = json.loads(out)["jobs"][0]["diagnostics"][0]["message"]
    want = fingerprint("PF112", "qlora_colab.ipynb", msg, "per_device_train_batch_size=8,")
    assert list(before["partialFingerprints"].values()) == [want + ":1"]


def test_a_walk_finds_the_training_cell_after_large_outputs(tmp_path):
    repo = tmp_path / "r"
    os.makedirs(repo)
    script = open(os.path.join(ROOT, QLORA, "qlora_colab.py")).read()
    log = new_code_cell("print('x')")
    log.outputs = [nbformat.v4.new_output("stream", name="stdout", text="step loss\n" * 60_000)]
    write(str(repo / "big.ipynb"), [log, new_code_cell(script)])
    assert os.path.getsize(repo / "big.ipynb") > 512 * 1024
    got = jobs(".", cwd=str(repo))
    assert list(got) == ["big.ipynb"] and got["big.ipynb"]["facts"]["micro_batch"]["value"] == 8


def test_a_script_given_alone_finds_the_notebook_that_launches_it(tmp_path):
    os.makedirs(tmp_path / "nbs")
    shutil.copy(os.path.join(ROOT, FIX, "launch_script", "train.py"), tmp_path / "train.py")
    (tmp_path / "pyproject.toml").write_text("[tool.preflight]\n")
    write(str(tmp_path / "nbs" / "run.ipynb"), [
        new_code_cell("%cd ..\n!torchrun --nproc_per_node 4 train.py")])
    got = jobs("train.py", cwd=str(tmp_path))
    assert list(got) == ["train.py"]
    job = got["train.py"]
    assert job["files"] == ["train.py", os.path.join("nbs", "run.ipynb")]
    assert (job["facts"]["world_size"]["value"], job["facts"]["world_size"]["source"]) == \
        (4, f"{os.path.join('nbs', 'run.ipynb')}:cell 1:2:1")


def test_estimate_of_a_notebook_prints_its_findings_at_cell_and_line():
    p = run_cli("estimate", os.path.join(FIX, "launch_nb", "launch.ipynb"), "--gpu", "A6000")
    nb = os.path.join(FIX, "launch_nb", "launch.ipynb")
    assert p.stderr.startswith(f"{nb}:cell 4:28:33: PF112 predicted peak 42.3 GiB"), p.stderr
    assert f"{nb}#train.py: per-GPU memory ledger" in p.stdout


def test_a_written_file_already_on_disk_is_the_notebook_cell_not_a_second_job(tmp_path):
    shutil.copytree(os.path.join(ROOT, FIX, "launch_nb"), tmp_path / "l")
    # an earlier run of the notebook left the files its cells write
    shutil.copy(os.path.join(ROOT, FIX, "launch_script", "train.py"), tmp_path / "l" / "train.py")
    shutil.copy(os.path.join(ROOT, FIX, "launch_script", "accelerate_config.yaml"), tmp_path / "l")
    for args in ((".",), ("launch.ipynb", "train.py")):
        got = jobs(*args, cwd=str(tmp_path / "l"))
        assert list(got) == ["launch.ipynb#train.py"], args
        assert got["launch.ipynb#train.py"]["facts"]["world_size"]["source"] == "launch.ipynb:cell 3:6:1"


def test_a_shell_line_continued_with_a_backslash_is_one_launch_line(tmp_path):
    shutil.copy(os.path.join(ROOT, FIX, "launch_script", "train.py"), tmp_path / "train.py")
    cell = ("import os\n!torchrun --nnodes 1 \\\n    --nproc_per_node 8 \\\n  train.py\n"
            "os.environ['X'] = '1'")
    write(str(tmp_path / "run.ipynb"), [new_code_cell(cell)])
    got = notebook.parse("run.ipynb", (tmp_path / "run.ipynb").read_text())
    assert not got.diagnostics
    assert got.script.split("\n")[:5] == ["import os", "pass", "", "", "os.environ['X'] = '1'"]
    job = jobs("run.ipynb", cwd=str(tmp_path))["train.py"]
    assert (job["facts"]["world_size"]["value"], job["facts"]["world_size"]["source"]) == \
        (8, "run.ipynb:cell 1:2:1")


def test_fix_keeps_a_continued_shell_line_in_the_edited_cell(tmp_path):
    script = open(os.path.join(ROOT, QLORA, "qlora_colab.py")).read().split("\n")
    train = ("!echo start \\\n      --quiet\n" + "\n".join(script[24:36]))
    write(str(tmp_path / "nb.ipynb"), [new_code_cell("\n".join(script[1:24])), new_code_cell(train)])
    check("nb.ipynb", "--fix", cwd=str(tmp_path))
    after = nbformat.read(str(tmp_path / "nb.ipynb"), as_version=4)
    assert after.cells[1].source == train.replace(
        "per_device_train_batch_size=8", "per_device_train_batch_size=4").replace(
        "gradient_accumulation_steps=4", "gradient_accumulation_steps=8") != train


def test_python_values_in_a_shell_line_are_expanded_as_ipython_does(tmp_path):
    shutil.copy(os.path.join(ROOT, FIX, "launch_script", "train.py"), tmp_path / "train.py")
    write(str(tmp_path / "v.ipynb"), [
        new_code_cell("n_gpus = 4\nbs = 2"),
        new_code_cell("!torchrun --nproc_per_node {n_gpus} train.py --per_device_train_batch_size $bs\n"
                      "!torchrun --nproc_per_node {n_gpus * 2} train.py\n"
                      "!torchrun --nproc_per_node {len(devices)} train.py"),
    ])
    got = [(j["facts"]["gpus_per_node"]["value"], j["facts"]["gpus_per_node"].get("reason"),
            j["facts"]["micro_batch"]["value"])
           for j in json.loads(check("v.ipynb", "--format", "json", cwd=str(tmp_path))[1])["jobs"]]
    assert got == [(4, "--nproc_per_node 4", 2), (8, "--nproc_per_node 8", 8),
                   (None, "--nproc_per_node: {len(devices)} is a Python value of the notebook, "
                          "known when it runs", 8)]
    unknown: dict = {}
    assert notebook.expand("""echo '{"a": 1}' ${HOME} {{x}}""", {}, unknown, "1") == \
        """echo '{"a": 1}' ${HOME} {{x}}"""          # not a Python expression: left as it is
    assert notebook.expand("echo {{x}} $$ $n {n}", {"n": 3}, unknown, "1") == "echo {x} $ 3 3"
    assert unknown == {}


def test_locations_inside_reasons_are_said_at_cell_and_line(tmp_path):
    """A reason that names a place of the notebook's script view (`line 4`, `nb.ipynb:6:9`)
    names it at cell and line, as the fact's own location is (whatever the notebook's name
    holds: Colab's `Llama3.1_(8B)-Alpaca.ipynb`)."""
    nb = str(tmp_path / "Llama_(8B).ipynb")
    write(nb, [new_code_cell(
        "import torch\nfrom transformers import AutoModelForCausalLM, BitsAndBytesConfig\n"
        "from peft import LoraConfig, get_peft_model\n"
        "q = BitsAndBytesConfig(load_in_4bit=True)\n"
        "model = AutoModelForCausalLM.from_pretrained('gpt2', quantization_config=q)\n"
        "model = get_peft_model(model, LoraConfig(r=8, target_modules=['c_attn']))\n"
        "opt = torch.optim.AdamW(model.parameters())\naccum = 4"),
        new_code_cell("for step, batch in enumerate(loader):\n    model(**batch).loss.backward()\n"
                      "    if (step + 1) % accum == 0:\n        opt.step()")])
    facts = next(iter(jobs(nb).values()))["facts"]
    assert facts["grad_accum"]["reason"] == \
        "optimizer.step() once every `accum` = 4 batches (cell 2 line 4)"
    assert facts["lora"]["reason"].endswith(f"({nb}:cell 1:5:9)")


DATABRICKS = '''# Databricks notebook source
# MAGIC %md
# MAGIC ## Train
# MAGIC The model is fine-tuned with DeepSpeed.

# COMMAND ----------

# MAGIC %pip install -r requirements.txt

# COMMAND ----------

gpu_family = dbutils.widgets.get("gpu_family")
batch_size = 3
if gpu_family == "a100":
    batch_size = 6
model_name = "EleutherAI/pythia-1b"

# COMMAND ----------

!deepspeed --num_gpus=8 train.py --model {model_name} --per_device_train_batch_size {batch_size}
'''


def test_a_databricks_notebook_source_file_is_read_as_a_notebook(tmp_path):
    """A Databricks notebook exported as `.py` (`# Databricks notebook source`, cells split
    by `# COMMAND ----------`, `# MAGIC` magics, `!` lines): its launch line is the job, its
    `{name}` words the notebook's values (a batch size set under an undecided `if` is
    unknown, never the first value written), every place at the file's own lines."""
    (tmp_path / "train.py").write_text(
        "import argparse, torch\nfrom transformers import AutoModelForCausalLM\n"
        "p = argparse.ArgumentParser()\np.add_argument('--model')\n"
        "p.add_argument('--per_device_train_batch_size', type=int)\na = p.parse_args()\n"
        "m = AutoModelForCausalLM.from_pretrained(a.model)\n"
        "opt = torch.optim.AdamW(m.parameters())\nopt.step()\n")
    (tmp_path / "train_nb.py").write_text(DATABRICKS)
    got = jobs(str(tmp_path / "train_nb.py"), cwd=str(tmp_path))
    job = got["train.py"]
    assert job["facts"]["model"]["value"] == "EleutherAI/pythia-1b"
    assert job["facts"]["gpus_per_node"]["value"] == 8
    mb = job["facts"]["micro_batch"]
    assert mb["value"] is None and "{batch_size}" in mb["reason"]
    # the `!` line is line 20 of the file, the flag at its column
    assert mb["source"].replace("\\", "/").endswith("train_nb.py:20:55")
    # a walk of the folder finds the same job through the notebook
    (tmp_path / "pyproject.toml").write_text("[project]\nname='x'\n")
    walked = jobs(str(tmp_path), cwd=str(tmp_path))
    assert walked["train.py"]["facts"]["model"]["value"] == "EleutherAI/pythia-1b"
