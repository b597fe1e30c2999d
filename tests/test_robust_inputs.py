"""Inputs at the edges, through the real CLI: numbers past what a float or Python's int()
takes, special files, git refs that look like options, files outside the project, the
analysed repository's own modules, YAML tags, directories with nothing to check."""

import json
import os
import subprocess

import pytest

from preflight import safe_read
from preflight.plan import Fact, Origin, Source, merge
from tests.conftest import run_cli

BIG = "1" + "0" * 5000          # over the 4,300 digits Python's int() converts


def _json(r):
    assert "internal error" not in r.stderr and "Traceback" not in r.stderr, r.stderr
    return json.loads(r.stdout)


def _diags(rep):
    return [(d["code"], os.path.basename(d["path"] or ""), d["line"], d["message"])
            for d in rep["diagnostics"] + [x for j in rep["jobs"] for x in j["diagnostics"]]]


# --------------------------------------------------------------------------- numbers

def test_huge_integers_in_json_and_toml_are_located_findings(tmp_path):
    (tmp_path / "ds.json").write_text('{"train_micro_batch_size_per_gpu": %s,\n'
                                      ' "zero_optimization": {"stage": 2}}\n' % BIG)
    (tmp_path / "titan.toml").write_text("[training]\nlocal_batch_size = %s\n" % BIG)
    r = run_cli("check", "--format", "json", "ds.json", "titan.toml", cwd=str(tmp_path))
    assert r.returncode == 1
    got = {(c, f, ln) for c, f, ln, m in _diags(_json(r))}
    assert ("PF005", "ds.json", 1) in got
    assert ("PF005", "titan.toml", 2) in got
    assert any("an integer of over 4,300 digits" in m for *_, m in _diags(_json(r)))


@pytest.mark.parametrize("body,line,words", [
    ('tool = 1\n', None, None),
    ('[tool.preflight]\ngpu-memory = inf\n', 2, "cannot read size 'inf'"),
    ('[tool.preflight]\ngpu-memory = "1e999GB"\n', 2, "must be positive and finite"),
    ('[tool.preflight]\ngpu-memory = 1%s\n' % ("0" * 309), 2, "a 310-digit number has no unit"),
    ('[tool.preflight]\ngpu-memory = "1%sGB"\n' % ("0" * 309), 2, "positive and finite: '1000"),
    ('[tool.preflight]\ngpu-memory = "2000000TB"\n', 2, "is over 1 PiB"),
    ('[tool.preflight]\nheadroom = %s\n' % BIG, 2, "an integer of over 4,300 digits"),
    ('[tool.preflight]\nread-outside-root = "yes"\n', 2, "expected true or false"),
])
def test_pyproject_values_at_the_edges(tmp_path, body, line, words):
    (tmp_path / "pyproject.toml").write_text(body)
    (tmp_path / "train.py").write_text("import torch\nbatch_size = 8\n")
    r = run_cli("check", "--format", "json", "train.py", cwd=str(tmp_path))
    d = [x for x in _diags(_json(r)) if x[1] == "pyproject.toml"]
    if line is None:
        assert d == [] and r.returncode == 0
    else:
        assert [(c, ln) for c, _, ln, _ in d] == [("PF005", line)]
        assert words in d[0][3]
        assert r.returncode == 1


@pytest.mark.parametrize("args,words", [
    (["check", "--gpu", "", "t.py"], "--gpu: empty GPU name"),
    (["check", "--gpu-memory", "1e999GB", "t.py"], "--gpu-memory"),
    (["estimate", "--params", "7e9", "--trainable-params", "1e999"], "is not finite"),
    (["estimate", "--params", "7e9", "--hidden", "9" * 400], "not a plausible value"),
    (["estimate", "--params", "7e9", "--gpu", " "], "--gpu: empty GPU name"),
    (["estimate", "--params", "7e9", "--gpu-memory", "1e999GB"], "--gpu-memory"),
    (["dryrun", "--timeout", "inf", "t.py"], "--timeout"),
])
def test_flags_at_the_edges_are_one_line_usage_errors(tmp_path, args, words):
    (tmp_path / "t.py").write_text("import torch\n")
    r = run_cli(*args, cwd=str(tmp_path))
    assert r.returncode == 2
    assert "internal error" not in r.stderr and "Traceback" not in r.stderr
    assert words in r.stderr
    assert len([x for x in r.stderr.splitlines() if x.strip()]) <= 3   # usage, hint, error


@pytest.mark.parametrize("value,why", [
    ("1e300", "micro_batch = 1e+300 is out of range (1–1e+15)"),
    ("float('inf')", "micro_batch = inf is not finite"),
    ("-4", "micro_batch = -4 is out of range"),
    ("float('nan')", "micro_batch = nan is not finite"),
    ("1" + "0" * 400, "micro_batch = a 401-digit number is out of range (1–1e+15)"),
])
def test_absurd_numbers_in_a_script_are_unknown_with_the_reason(tmp_path, value, why):
    (tmp_path / "train.py").write_text(
        "from transformers import TrainingArguments\n"
        f"args = TrainingArguments(output_dir='o', per_device_train_batch_size={value})\n")
    r = run_cli("check", "--format", "json", "train.py", cwd=str(tmp_path))
    mb = _json(r)["jobs"][0]["facts"]["micro_batch"]
    assert mb["value"] is None and mb["origin"] == "unknown"
    assert why in mb["reason"] and mb["source"].startswith("train.py:2:")   # at the value


def test_the_vocabulary_checks_integer_facts():
    src = Source(path="a.py", line=3, col=1)
    plan = merge([("micro_batch", Fact(value=float("inf"), origin=Origin.LITERAL, source=src)),
                  ("seq_len", Fact(value=2048, origin=Origin.LITERAL, source=src))])
    assert not plan.known("micro_batch") and plan.source("micro_batch") == src
    assert plan.value("seq_len") == 2048


# --------------------------------------------------------------------------- files

def test_special_files_are_located_findings_with_the_true_reason(tmp_path):
    os.mkfifo(tmp_path / "run.sh")
    os.mkfifo(tmp_path / "logs.json")
    os.symlink("/dev/zero", tmp_path / "zero.json")
    os.symlink("loop2.yaml", tmp_path / "loop1.yaml")
    os.symlink("loop1.yaml", tmp_path / "loop2.yaml")
    os.symlink("nowhere.toml", tmp_path / "broken.toml")
    (tmp_path / "train.py").write_text("import torch\nbatch_size = 8\n"
                                       "if __name__ == '__main__':\n    opt.step()\n")
    r = run_cli("check", "--format", "json", ".", cwd=str(tmp_path))
    got = {(f, m) for c, f, _, m in _diags(_json(r)) if c == "PF001"}
    assert got == {
        ("run.sh", "cannot read file: a named pipe (FIFO), not a regular file; not read"),
        ("logs.json", "cannot read file: a named pipe (FIFO), not a regular file; not read"),
        ("zero.json", "cannot read file: a character device, not a regular file; not read"),
        ("loop1.yaml", "symbolic link loop (too many levels of symbolic links)"),
        ("loop2.yaml", "symbolic link loop (too many levels of symbolic links)"),
        ("broken.toml", "broken symbolic link"),
    }
    assert any(j["entry"] == "train.py" for j in _json(r)["jobs"])   # the others still run


def test_read_regular_caps_size_and_names_permission_errors(tmp_path, monkeypatch):
    p = tmp_path / "big.json"
    p.write_bytes(b"x" * 1000)
    with pytest.raises(safe_read.Unreadable) as e:
        safe_read.read_regular(str(p), 999)
    assert e.value.size == 1000 and "over the 999-byte limit" in e.value.reason
    assert safe_read.read_regular(str(p), 10, truncate=True) == b"x" * 10

    def denied(*a, **k):
        raise PermissionError(13, "Permission denied")
    monkeypatch.setattr(os, "open", denied)      # the suite may run as root: simulate it
    with pytest.raises(safe_read.Unreadable, match="^permission denied$"):
        safe_read.read_regular(str(p))


def test_a_script_over_the_size_limit_does_not_pass(tmp_path):
    (tmp_path / "gen.py").write_text("import torch\n" + "x = 1\n" * 400_000)
    r = run_cli("check", "gen.py", cwd=str(tmp_path))
    assert r.returncode == 1
    assert "gen.py:1:1: PF001 2.4 MB of Python is generated code or data" in r.stdout


def test_a_directory_with_nothing_to_check_does_not_pass(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "README.txt").write_text("hello\n")
    r = run_cli("check", "docs", cwd=str(tmp_path))
    assert r.returncode == 1
    assert "docs: PF001 nothing to check in this directory" in r.stdout


# --------------------------------------------------------------------------- outside

def test_files_outside_the_project_are_not_read(tmp_path):
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / ".git").mkdir()
    (tmp_path / "outside.json").write_text('{"train_micro_batch_size_per_gpu": 77, '
                                           '"zero_optimization": {"stage": 3}}')
    (proj / "train.py").write_text("import torch\nimport deepspeed\n")
    (proj / "run.sh").write_text(
        "deepspeed train.py --deepspeed ../outside.json\n"
        f"deepspeed train.py --deepspeed {tmp_path / 'outside.json'}\n")
    r = run_cli("check", "--format", "json", "run.sh", cwd=str(proj))
    rep = _json(r)
    assert "outside.json" not in json.dumps(rep["jobs"][0]["files"])
    assert all(j["facts"]["micro_batch"]["value"] != 77 for j in rep["jobs"])
    found = [(c, f, ln) for c, f, ln, m in _diags(rep) if "outside the project root" in m]
    assert sorted(set(found)) == [("PF001", "run.sh", 1), ("PF001", "run.sh", 2)]
    # a project that allows it reads them
    (proj / "pyproject.toml").write_text("[tool.preflight]\nread-outside-root = true\n")
    rep = _json(run_cli("check", "--format", "json", "run.sh", cwd=str(proj)))
    assert any(j["facts"]["micro_batch"]["value"] == 77 for j in rep["jobs"])


# --------------------------------------------------------------------------- git refs

def _repo(tmp_path):
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    for cmd in (["init", "-q"], ["add", "."], ["commit", "-q", "-m", "one"]):
        subprocess.run(["git", *cmd], cwd=tmp_path, check=True, env=env, capture_output=True)


@pytest.mark.parametrize("ref", ["--output=out/x", "--relative=/", "-p", "--", "HEAD\n-p"])
def test_a_diff_base_is_never_read_as_an_option(tmp_path, ref):
    (tmp_path / "train.py").write_text("import torch\nbatch_size = 8\n")
    _repo(tmp_path)
    r = run_cli("check", "--diff-base=" + ref, "train.py", cwd=str(tmp_path))
    assert r.returncode == 2
    assert not (tmp_path / "out").exists()
    assert "is not a git revision" in r.stderr or "diff-base" in r.stderr


def test_a_diff_base_that_names_a_commit_still_works(tmp_path):
    (tmp_path / "train.py").write_text("import torch\nbatch_size = 8\n")
    _repo(tmp_path)
    r = run_cli("check", "--diff-base", "HEAD", "train.py", cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr


# --------------------------------------------------------------------------- misc

def test_python_m_preflight_does_not_import_the_analysed_repository(tmp_path):
    (tmp_path / "click.py").write_text("raise SystemExit('analysed click.py imported')\n")
    (tmp_path / "yaml.py").write_text("raise SystemExit('analysed yaml.py imported')\n")
    (tmp_path / "train.py").write_text("import torch\nbatch_size = 8\n")
    r = run_cli("check", "train.py", cwd=str(tmp_path))     # python -m preflight
    assert r.returncode == 0, r.stderr
    assert "imported" not in r.stderr


def test_each_yaml_tag_is_reported_at_its_own_line(tmp_path):
    (tmp_path / "recipe.yaml").write_text(
        "model: !!python/name:os.system\n"
        "batch_size: 4\n"
        "optimizer: !!python/object:torch.optim.AdamW {}\n"
        "data: !!python/tuple [1, 2]\n")
    r = run_cli("check", "--format", "json", "recipe.yaml", cwd=str(tmp_path))
    tags = sorted((ln, m.split()[2]) for c, f, ln, m in _diags(_json(r))
                  if "YAML tag" in m)
    assert tags == [(1, "!!python/name:os.system"), (3, "!!python/object:torch.optim.AdamW"),
                    (4, "!!python/tuple")]
