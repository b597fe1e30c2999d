"""Options shared by commands mean, and refuse, the same things everywhere."""

from tests.conftest import run_cli


def test_a_bare_gpu_memory_is_refused_alike_by_check_and_estimate(tmp_path):
    (tmp_path / "train.py").write_text("import torch\n")
    c = run_cli("check", "--gpu-memory", "80", "train.py", cwd=str(tmp_path))
    e = run_cli("estimate", "--params", "7e9", "--gpu-memory", "80", cwd=str(tmp_path))
    assert c.returncode == e.returncode == 2
    lines = [ln for ln in c.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines == [ln for ln in e.stderr.splitlines() if ln.strip()]
    assert lines[0].startswith("Error: --gpu-memory: ") and "GB" in lines[0] and "GiB" in lines[0]


def test_a_bare_gpu_memory_in_the_project_config_is_pf005(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.preflight]\ngpu-memory = 80\n")
    (tmp_path / "train.py").write_text("import torch\n")
    r = run_cli("check", "--format", "concise", "--exit-zero", "train.py", cwd=str(tmp_path))
    assert "pyproject.toml:2:1: PF005 [tool.preflight] gpu-memory: size 80 has no unit" in r.stdout
