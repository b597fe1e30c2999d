"""The seed scenarios as realistic jobs, through the real CLI: each misconception and case
fires at the line that causes it. Uses the bundled examples/ where one exists."""

import json
import os
import shutil


from preflight.rules._common import hf_cli_launch, hf_cli_script, hf_script, line_of
from tests.conftest import ROOT, run_cli

EXAMPLES = os.path.join(ROOT, "examples")

def findings(*args, cwd):
    r = run_cli("check", "--format", "json", *args, cwd=cwd)
    assert r.returncode in (0, 1), r.stderr
    data = json.loads(r.stdout)
    diags = data["diagnostics"] + [d for j in data["jobs"] for d in j["diagnostics"]]
    return r.returncode, {(d["code"], os.path.basename(d["path"] or ""), d["line"]) for d in diags}


def text(path):
    with open(path) as fh:
        return fh.read()


def copy_example(name, tmp_path):
    dst = tmp_path / name
    shutil.copytree(os.path.join(EXAMPLES, name), dst)
    return dst


def test_7b_ddp_case_a_and_misconception_1(tmp_path):
    d = copy_example("7b-full-finetune-ddp", tmp_path)
    src = text(d / "train.py")
    rc, got = findings(".", cwd=str(d))
    assert rc == 1
    assert ("PF101", "train.py", line_of(src, "optim=")) in got
    assert ("PF102", "train.py", line_of(src, "AutoModelForCausalLM.from_pretrained(")) in got


def test_batch_one_is_misconception_2(tmp_path):
    d = copy_example("7b-full-finetune-ddp", tmp_path)
    src = text(d / "train.py").replace("per_device_train_batch_size=4", "per_device_train_batch_size=1")
    (d / "train.py").write_text(src)
    rc, got = findings(".", cwd=str(d))
    assert ("PF104", "train.py", line_of(src, "per_device_train_batch_size=1")) in got
    assert ("PF101", "train.py", line_of(src, "optim=")) in got


def test_bf16_as_the_fix_is_misconception_3(tmp_path):
    (tmp_path / "train.py").write_text(hf_cli_script("meta-llama/Llama-2-7b-hf"))
    launch = hf_cli_launch("torchrun --nproc_per_node 8", "--bf16 True")
    (tmp_path / "launch.sh").write_text(launch)
    rc, got = findings("--gpu", "H100-80GB", "launch.sh", cwd=str(tmp_path))
    assert ("PF105", "launch.sh", line_of(launch, "--bf16")) in got


def test_zero3_fixes_the_7b_job(tmp_path):
    d = copy_example("7b-zero3", tmp_path)
    rc, got = findings(".", cwd=str(d))
    assert not {c for c, _, _ in got} & {"PF101", "PF102", "PF104", "PF105", "PF107", "PF109"}


def test_zero3_on_activation_problem_is_misconception_4_and_case_b(tmp_path):
    d = copy_example("long-context-1.3b", tmp_path)
    src, ds = text(d / "train.py"), text(d / "ds_zero3.json")
    rc, got = findings(".", cwd=str(d))
    assert ("PF106", "ds_zero3.json", line_of(ds, '"stage"')) in got
    assert ("PF107", "train.py", line_of(src, "max_seq_length =")) in got


def test_125m_on_64_gpus_is_misconception_5(tmp_path):
    d = copy_example("small-model-64-gpus", tmp_path)
    src = text(d / "train.py")
    rc, got = findings(".", cwd=str(d))
    assert ("PF301", "train.py", line_of(src, "per_device_train_batch_size")) in got


def test_90_percent_of_capacity_is_misconception_6(tmp_path):
    from preflight.rules.pf112_inside_headroom import InsideHeadroom
    ex = InsideHeadroom.INVALID[0]
    (tmp_path / "train.py").write_text(ex.files["train.py"])
    rc, got = findings("--gpu", ex.gpu, "--", *ex.command.split(), cwd=str(tmp_path))
    assert set(ex.expect) <= got
    # and the same job with a 5 % margin is not inside the headroom
    rc, got = findings("--gpu", ex.gpu, "--headroom", "0.05", "--", *ex.command.split(),
                       cwd=str(tmp_path))
    assert not {c for c, _, _ in got} & {"PF112"}


def test_gpu_memory_and_project_headroom(tmp_path):
    d = copy_example("7b-full-finetune-ddp", tmp_path)
    src = text(d / "train.py")
    # 107.8 GB of fp32-autocast AdamW states fit a 200 GB card: no case A any more
    rc, got = findings("--gpu-memory", "200GB", ".", cwd=str(d))
    assert not {c for c, _, _ in got} & {"PF101", "PF102", "PF105"}
    rc, got = findings("--gpu-memory", "80GB", ".", cwd=str(d))
    assert ("PF101", "train.py", line_of(src, "optim=")) in got

    from preflight.rules.pf112_inside_headroom import InsideHeadroom
    ex = InsideHeadroom.INVALID[0]
    (tmp_path / "train.py").write_text(ex.files["train.py"])
    (tmp_path / "pyproject.toml").write_text('[tool.preflight]\ngpu = "H100-80GB"\nheadroom = 0.05\n')
    rc, got = findings("--", *ex.command.split(), cwd=str(tmp_path))
    assert "PF112" not in {c for c, _, _ in got}
    (tmp_path / "pyproject.toml").write_text('[tool.preflight]\ngpu = "H100-80GB"\n')
    rc, got = findings("--", *ex.command.split(), cwd=str(tmp_path))
    assert set(ex.expect) <= got


def test_noqa_on_a_launch_line_and_per_file_ignores_for_json(tmp_path):
    (tmp_path / "train.py").write_text(hf_cli_script("meta-llama/Llama-2-7b-hf"))
    launch = hf_cli_launch("torchrun --nproc_per_node 8", "--bf16 True  # noqa: PF105")
    (tmp_path / "launch.sh").write_text(launch)
    rc, got = findings("--gpu", "H100-80GB", "launch.sh", cwd=str(tmp_path))
    assert "PF105" not in {c for c, _, _ in got} and "PF101" in {c for c, _, _ in got}

    d = copy_example("long-context-1.3b", tmp_path)
    with open(d / "pyproject.toml", "a") as fh:
        fh.write('\n[tool.preflight.per-file-ignores]\n"ds_*.json" = ["PF106"]\n')
    rc, got = findings(".", cwd=str(d))
    codes = {c for c, _, _ in got}
    assert "PF106" not in codes and "PF107" in codes
