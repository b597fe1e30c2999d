"""`preflight check`, `rules` and `explain` through the real CLI in a subprocess: exit
codes, noqa (Python, shell, YAML), select / ignore, per-file-ignores (JSON), fail level,
third-party rule packs through the `preflight.rules` entry-point group."""

import json
import os
import textwrap

import pytest

from preflight.rules.pf103_numel_times_four import _BAD
from tests.conftest import run_cli

MSG = ("memory sized as parameters × 4 bytes (`numel() * 4`): that is fp32 weights only — "
       "mixed-precision AdamW training holds 16 B/param (2 params + 2 grads + 4 master + 8 Adam m, v)")

PACK = '''
from preflight.engine import Rule
from preflight.plan import Source


class Marker(Rule):
    """
    ## What it does
    Marks lines with MARK.
    ## Why is this bad
    Test pack: 1 finding per line.
    ## Example
    MARK
    ## Use instead
    nothing
    """
    code = "PF498"
    name = "acme-marker"
    summary = "A line says MARK"
    severity = "warning"

    def check(self, ctx):
        for path in ctx.job.files:
            with open(path) as fh:
                for i, line in enumerate(fh, 1):
                    if "MARKINFO" in line:
                        yield self.diagnostic("info mark", Source(path=path, line=i, col=1),
                                              severity="info")
                    elif "MARK" in line:
                        yield self.diagnostic("marked", Source(path=path, line=i, col=1))
'''


@pytest.fixture
def pack(tmp_path):
    """A third-party rule pack installed only through PYTHONPATH + a dist-info entry point."""
    site = tmp_path / "site"
    (site / "acme_rules-0.1.dist-info").mkdir(parents=True)
    (site / "acme_rules.py").write_text(PACK)
    (site / "acme_rules-0.1.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: acme-rules\nVersion: 0.1\n")
    (site / "acme_rules-0.1.dist-info" / "entry_points.txt").write_text(
        "[preflight.rules]\nacme = acme_rules\n")
    env = {"PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    work = tmp_path / "work"
    work.mkdir()
    return work, env


def write(d, name, text):
    p = d / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(textwrap.dedent(text))
    return p


def test_finding_exit_1_with_exact_line(tmp_path):
    write(tmp_path, "fit_check.py", _BAD)
    r = run_cli("check", "--format", "concise", "fit_check.py", cwd=str(tmp_path))
    assert r.returncode == 1, r.stderr
    assert r.stdout == f"fit_check.py:5:17: PF103 {MSG}\nFound 1 finding (1 warning) in 1 job.\n"
    r = run_cli("check", "fit_check.py", cwd=str(tmp_path))
    assert r.returncode == 1
    # the message's first line, then its details indented under it
    lines = r.stdout.split("\n  fix:")[0].splitlines()
    assert lines[0].startswith("fit_check.py:5:17: PF103 ") and len(lines[0]) <= 120
    shown = " ".join([lines[0].split(" PF103 ", 1)[1]] + [ln.strip() for ln in lines[1:]])
    assert shown.replace("— ", "").startswith(" ".join(MSG.split()).replace("— ", ""))
    assert "fix: count 16 B per trainable parameter" in r.stdout


def test_clean_exit_0_and_exit_zero(tmp_path):
    write(tmp_path, "ok.py", "import torch\nx = torch.zeros(3)\n")
    r = run_cli("check", "ok.py", cwd=str(tmp_path))
    assert r.returncode == 0 and "PF" not in r.stdout
    write(tmp_path, "fit_check.py", _BAD)
    r = run_cli("check", "--exit-zero", "fit_check.py", cwd=str(tmp_path))
    assert r.returncode == 0 and "PF103" in r.stdout


@pytest.mark.parametrize("comment,suppressed", [
    ("  # noqa: PF103", True), ("  # noqa", True), ("  # noqa: PF1", True),
    ("  # noqa: PF101", False), ("  # no qa", False)])
def test_noqa_in_python(tmp_path, comment, suppressed):
    lines = _BAD.splitlines()
    lines[4] += comment
    write(tmp_path, "fit_check.py", "\n".join(lines) + "\n")
    r = run_cli("check", "fit_check.py", cwd=str(tmp_path))
    assert r.returncode == (0 if suppressed else 1)
    assert ("PF103" in r.stdout) is not suppressed


@pytest.mark.parametrize("args,rc", [
    (["--select", "PF2"], 0), (["--ignore", "PF103"], 0), (["--ignore", "PF1"], 0),
    (["--select", "PF1"], 1), (["--select", "PF103", "--ignore", "PF1"], 1),
    (["--select", "PF101,PF103"], 1)])
def test_select_and_ignore(tmp_path, args, rc):
    write(tmp_path, "fit_check.py", _BAD)
    r = run_cli("check", *args, "fit_check.py", cwd=str(tmp_path))
    assert r.returncode == rc, r.stdout + r.stderr
    assert ("PF103" in r.stdout) is (rc == 1)


def test_project_config_ignore_and_select(tmp_path):
    write(tmp_path, "fit_check.py", _BAD)
    write(tmp_path, "pyproject.toml", '[tool.preflight]\nignore = ["PF103"]\n')
    assert run_cli("check", "fit_check.py", cwd=str(tmp_path)).returncode == 0
    write(tmp_path, "pyproject.toml", '[tool.preflight]\nselect = ["PF2"]\n')
    assert run_cli("check", "fit_check.py", cwd=str(tmp_path)).returncode == 0
    # the command line's --select replaces the config's
    assert run_cli("check", "--select", "PF1", "fit_check.py", cwd=str(tmp_path)).returncode == 1


def test_malformed_pyproject_is_a_located_finding(tmp_path):
    write(tmp_path, "ok.py", "x = 1\n")
    write(tmp_path, "pyproject.toml", '[tool.preflight]\nheadroom = "lots"\n')
    r = run_cli("check", "--format", "concise", "ok.py", cwd=str(tmp_path))
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert r.stdout.splitlines()[0].startswith(
        f"{tmp_path / 'pyproject.toml'}:2:1: PF005 [tool.preflight] headroom: expected a fraction")


def test_missing_file_is_pf001_not_a_crash(tmp_path):
    r = run_cli("check", "--format", "concise", "nothere.py", cwd=str(tmp_path))
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert r.stdout.splitlines()[0].startswith("nothere.py: PF001 ")


@pytest.mark.parametrize("args", [["--gpu-memory", "forty", "x.py"], ["--headroom", "1.5", "x.py"],
                                  [], ["--format", "xml", "x.py"], ["--select"]])
def test_usage_errors_exit_2(tmp_path, args):
    r = run_cli("check", *args, cwd=str(tmp_path))
    assert r.returncode == 2 and "Traceback" not in r.stderr + r.stdout


def test_json_format(tmp_path):
    write(tmp_path, "fit_check.py", _BAD)
    r = run_cli("check", "--format", "json", "fit_check.py", cwd=str(tmp_path))
    assert r.returncode == 1
    data = json.loads(r.stdout)
    assert data["version"] == 1
    (job,) = data["jobs"]
    assert [(d["code"], d["path"], d["line"], d["col"]) for d in job["diagnostics"]] == \
        [("PF103", "fit_check.py", 5, 17)]
    assert set(job["facts"]) >= {"model", "params", "optimizer", "micro_batch", "gpu"}


# ---------------------------------------------------------------- through a third-party pack

def test_entry_point_pack_noqa_in_shell_and_yaml(pack):
    work, env = pack
    write(work, "launch.sh", "#!/bin/bash\nMARK=1  # noqa: PF498\ntorchrun train.py  # MARK\n")
    write(work, "acc.yaml", "a: MARK  # noqa\nb: MARK\nc: MARK # noqa: PF101\n")
    r = run_cli("check", "--format", "concise", "launch.sh", "acc.yaml", cwd=str(work), env=env)
    assert r.returncode == 1, r.stderr
    found = [ln.split(": ")[0] for ln in r.stdout.splitlines() if "PF498" in ln]
    assert sorted(found) == ["acc.yaml:2:1", "acc.yaml:3:1", "launch.sh:3:1"]


def test_per_file_ignores_are_the_way_for_json(pack):
    work, env = pack
    write(work, "configs/ds.json", '{\n  "zero_optimization": {"stage": 3},\n  "x": "MARK"\n}\n')
    r = run_cli("check", "configs/ds.json", cwd=str(work), env=env)
    assert r.returncode == 1 and "configs/ds.json:3:1: PF498" in r.stdout
    write(work, "pyproject.toml",
          '[tool.preflight.per-file-ignores]\n"configs/*.json" = ["PF498"]\n')
    r = run_cli("check", "configs/ds.json", cwd=str(work), env=env)
    assert r.returncode == 0 and "PF498" not in r.stdout


def test_fail_level(pack):
    work, env = pack
    write(work, "a.yaml", "x: MARKINFO\n")
    r = run_cli("check", "--format", "json", "a.yaml", cwd=str(work), env=env)
    assert r.returncode == 0
    (d,) = [d for j in json.loads(r.stdout)["jobs"] for d in j["diagnostics"]]
    assert (d["code"], d["severity"], d["line"]) == ("PF498", "info", 1)
    assert run_cli("check", "--fail-level", "info", "a.yaml", cwd=str(work), env=env).returncode == 1
    write(work, "b.yaml", "x: MARK\n")
    assert run_cli("check", "b.yaml", cwd=str(work), env=env).returncode == 1
    write(work, "pyproject.toml", '[tool.preflight]\nfail-level = "error"\n')
    assert run_cli("check", "b.yaml", cwd=str(work), env=env).returncode == 0


def test_rules_json_lists_builtin_and_pack(pack):
    work, env = pack
    r = run_cli("rules", "--format", "json", cwd=str(work), env=env)
    assert r.returncode == 0
    rows = json.loads(r.stdout)
    by = {x["code"]: x for x in rows}
    assert by["PF101"]["name"] == "state-exceeds-capacity" and by["PF101"]["case"] == "A"
    assert by["PF104"]["misconception"] == 2
    assert by["PF498"] == {"code": "PF498", "name": "acme-marker", "summary": "A line says MARK",
                           "severity": "warning", "misconception": None, "case": None,
                           "reported_by": "rule", "origin": "acme_rules"}
    assert by["PF001"]["reported_by"] == "extract" and by["PF402"]["reported_by"] == "rule"
    assert {m for x in rows for m in [x["misconception"]] if m} == {1, 2, 3, 4, 5, 6}


def test_rules_text():
    r = run_cli("rules")
    assert r.returncode == 0
    lines = r.stdout.splitlines()
    assert lines[0].startswith("PF001  unreadable-file")
    pf101 = next(ln for ln in lines if ln.startswith("PF101"))
    assert pf101.startswith("PF101  state-exceeds-capacity") and pf101.endswith("(case A)")


def test_explain():
    r = run_cli("explain", "PF101")
    assert r.returncode == 0
    out = r.stdout
    assert out.startswith("PF101 state-exceeds-capacity: ")
    for h in ("## What it does", "## Why is this bad", "## Example", "## Use instead"):
        assert h in out
    assert "104.3 GiB" in out
    assert run_cli("explain", "small-batch-state-oom").stdout.startswith("PF104 ")
    r = run_cli("explain", "PF999")
    assert r.returncode == 2 and "no rule 'PF999'" in r.stderr


def test_unknown_gpu_in_project_config_is_a_finding(tmp_path):
    write(tmp_path, "ok.py", "x = 1\n")
    write(tmp_path, "pyproject.toml", '[tool.preflight]\nheadroom = 0.2\ngpu = "Z900"\n')
    r = run_cli("check", "--format", "json", "ok.py", cwd=str(tmp_path))
    assert "Traceback" not in r.stderr
    (d,) = [d for j in json.loads(r.stdout)["jobs"] for d in j["diagnostics"]]
    assert (d["code"], d["line"]) == ("PF003", 3) and "Z900" in d["message"]
    assert run_cli("check", "--gpu", "Z900", "ok.py", cwd=str(tmp_path)).returncode == 2


def test_config_option_reads_that_file(tmp_path):
    write(tmp_path, "fit_check.py", _BAD)
    write(tmp_path, "other/preflight.toml", '[tool.preflight]\nignore = ["PF103"]\n')
    assert run_cli("check", "fit_check.py", cwd=str(tmp_path)).returncode == 1
    r = run_cli("check", "--config", "other/preflight.toml", "fit_check.py", cwd=str(tmp_path))
    assert r.returncode == 0, r.stdout


def test_finding_and_bar_speak_one_unit(tmp_path):
    """PF112's finding and the verdict bar beside it: the same peak, the same percentage,
    the same capacity, in GiB, with the GPU's catalogue name; no GB anywhere."""
    import re

    from preflight.rules.pf112_inside_headroom import InsideHeadroom
    ex = InsideHeadroom.INVALID[0]
    for name, text in ex.files.items():
        write(tmp_path, name, text)
    write(tmp_path, "run.sh", ex.command + "\n")
    r = run_cli("check", ".", "--gpu", "h100", "--no-cache",
                cwd=str(tmp_path))
    out = r.stdout
    found = re.search(r"PF112 predicted peak ([\d.]+ GiB) is (\d+) % of H100-SXM5-80GB's "
                      r"79\.6 GiB, inside the 20 % headroom", out)
    assert found, out
    bar = re.search(r"tight: ([\d.]+ GiB) per GPU, (\d+) % of 79\.6 GiB on H100-SXM5-80GB", out)
    assert bar, out
    assert found.groups() == bar.groups()
    assert not re.search(r"\d GB\b", out), out
