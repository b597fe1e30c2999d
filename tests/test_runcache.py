"""Whole-run results kept by `preflight check` (`preflight.runstore`): a second run of the
same command over an unchanged repository prints the stored report, reading and analysing
nothing; any change to what the run looked at — a file, a new file in a walked folder, a
.gitignore, a pyproject.toml, an environment variable a launcher consulted, preflight's
version — is a miss; a corrupt entry is a miss, never an error."""

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT

SCRIPT = ("import torch\n"
          "model = torch.nn.Linear(4096, 4096)\n"
          "opt = torch.optim.AdamW(model.parameters(), lr=1e-3)\n"
          "batch_size = 8\n"
          "if __name__ == '__main__':\n"
          "    opt.step()\n")
LAUNCH = "#!/bin/bash\ntorchrun --nproc_per_node ${GPUS:-4} train.py\n"

# runs the real command line, then says on stderr whether the analysis was imported: a
# run served from the stored result never imports the plan model
HARNESS = ("import sys\n"
           "from preflight.cli import main\n"
           "code = 0\n"
           "try:\n"
           "    main(sys.argv[1:])\n"
           "except SystemExit as e:\n"
           "    code = e.code\n"
           "sys.stderr.write('\\nANALYSED=%d\\n' % ('preflight.plan' in sys.modules))\n"
           "sys.exit(code)\n")


def check(cwd, *args, env=None):
    e = {k: v for k, v in os.environ.items() if k != "PREFLIGHT_DEBUG"}
    e["NO_COLOR"] = "1"
    e["PYTHONPATH"] = ROOT + os.pathsep + e.get("PYTHONPATH", "")
    e.update(env or {})
    r = subprocess.run([sys.executable, "-c", HARNESS, "check", *args], cwd=cwd,
                       capture_output=True, text=True, env=e, timeout=120)
    analysed = r.stderr.rstrip().endswith("ANALYSED=1")
    return r.stdout, r.returncode, analysed


@pytest.fixture
def repo(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / "pyproject.toml").write_text('[tool.preflight]\ngpu = "A100-40GB"\n')
    (tmp_path / "exp").mkdir()
    (tmp_path / "exp" / "train.py").write_text(SCRIPT)
    (tmp_path / "exp" / "launch.sh").write_text(LAUNCH)
    (tmp_path / "README.md").write_text("# research\n")
    return tmp_path


def jobs(out):
    return sorted(j["entry"] for j in json.loads(out)["jobs"])


def test_an_unchanged_repository_is_not_analysed_again(repo):
    first, code1, analysed1 = check(repo, ".", "--format", "json")
    assert analysed1 and jobs(first) == ["exp/train.py"]
    runs = list((repo / ".preflight_cache" / "runs").iterdir())
    assert len(runs) == 1
    second, code2, analysed2 = check(repo, ".", "--format", "json")
    assert not analysed2                          # served from the stored result
    assert (second, code2) == (first, code1)      # byte for byte, with the same exit code


def test_other_options_are_another_entry(repo):
    check(repo, ".", "--format", "json")
    out, _, analysed = check(repo, ".", "--format", "concise")
    assert analysed and "exp/train.py" in out
    assert len(list((repo / ".preflight_cache" / "runs").iterdir())) == 2


def test_an_edit_is_seen_even_within_the_same_clock_tick(repo):
    first, _, _ = check(repo, ".", "--format", "json")
    f = repo / "exp" / "train.py"
    st = f.stat()
    f.write_text(SCRIPT.replace("batch_size = 8", "batch_size = 9"))   # same size
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))                   # same stamp
    second, _, analysed = check(repo, ".", "--format", "json")
    assert analysed and second != first
    assert json.loads(second)["jobs"][0]["facts"]["micro_batch"]["value"] == 9


def test_a_new_training_script_in_a_walked_folder_is_found(repo):
    check(repo, ".", "--format", "json")
    (repo / "exp2").mkdir()
    (repo / "exp2" / "train.py").write_text(SCRIPT)
    (repo / "exp2" / "launch.sh").write_text(LAUNCH)
    out, _, analysed = check(repo, ".", "--format", "json")
    assert analysed and jobs(out) == ["exp/train.py", "exp2/train.py"]


def test_gitignore_and_settings_changes_are_misses(repo):
    check(repo, ".", "--format", "json")
    (repo / ".gitignore").write_text("exp/\n")
    out, code, analysed = check(repo, ".", "--format", "json")
    assert analysed and jobs(out) == []
    (repo / ".gitignore").unlink()
    out, _, _ = check(repo, ".", "--format", "json")
    assert jobs(out) == ["exp/train.py"]
    (repo / "pyproject.toml").write_text('[tool.preflight]\ngpu = "H100-80GB"\n')
    out, _, analysed = check(repo, ".", "--format", "json")
    assert analysed and json.loads(out)["jobs"][0]["gpu"].startswith("H100")


def test_an_environment_variable_a_launcher_reads_is_part_of_the_result(repo):
    out4, _, _ = check(repo, ".", "--format", "json")
    out8, _, analysed = check(repo, ".", "--format", "json", env={"GPUS": "8"})
    assert analysed
    assert json.loads(out4)["jobs"][0]["facts"]["world_size"]["value"] == 4
    assert json.loads(out8)["jobs"][0]["facts"]["world_size"]["value"] == 8


def test_a_corrupt_or_foreign_entry_is_a_miss_not_an_error(repo):
    first, code, _ = check(repo, ".", "--format", "json")
    (entry,) = (repo / ".preflight_cache" / "runs").iterdir()
    entry.write_bytes(b"\x00\xffnot json")
    out, code2, analysed = check(repo, ".", "--format", "json")
    assert analysed and (out, code2) == (first, code)
    data = json.loads(entry.read_text())
    data["layout"] = 999
    entry.write_text(json.dumps(data))
    out, _, analysed = check(repo, ".", "--format", "json")
    assert analysed and out == first


def test_another_preflight_version_does_not_read_the_entry(repo, monkeypatch):
    from preflight import runstore
    check(repo, ".", "--format", "json")
    (entry,) = (repo / ".preflight_cache" / "runs").iterdir()
    monkeypatch.chdir(repo)
    argv_key = entry.name[:-len(".json")]
    # the same command under another version is another key
    assert runstore.key(["check"], version="0.0.0+other") != argv_key
    assert runstore.load(str(repo / ".preflight_cache"), runstore.key(["check"], version="0.0.0+other")) is None


def test_no_cache_neither_reads_nor_writes_a_stored_result(repo):
    check(repo, ".", "--format", "json", "--no-cache")
    assert not (repo / ".preflight_cache" / "runs").exists()
    check(repo, ".", "--format", "json")
    _, _, analysed = check(repo, ".", "--format", "json", "--no-cache")
    assert analysed


def test_a_visible_cache_dir_is_never_walked(repo):
    (repo / "pyproject.toml").write_text('[tool.preflight]\ngpu = "A100-40GB"\ncache-dir = "cache"\n')
    first, _, _ = check(repo, ".", "--format", "json")
    assert (repo / "cache" / "runs").is_dir() and (repo / "cache" / "CACHEDIR.TAG").is_file()
    second, _, analysed = check(repo, ".", "--format", "json")
    assert not analysed and second == first
    assert not any("cache" in j for j in jobs(second))


def test_a_launcher_added_beside_a_checked_file_is_found(repo):
    """`preflight check exp/ds.json` finds the launchers that name the file anywhere in the
    repository: one added later (in a folder the first run listed) is a miss, not the
    stored result."""
    (repo / "exp" / "ds.json").write_text('{"train_micro_batch_size_per_gpu": 2, '
                                          '"zero_optimization": {"stage": 2}}')
    first, _, _ = check(repo, "exp/ds.json", "--format", "json")
    (repo / "runs").mkdir()
    (repo / "runs" / "go.sh").write_text("deepspeed --num_gpus 8 exp/train.py "
                                         "--deepspeed exp/ds.json\n")
    second, _, analysed = check(repo, "exp/ds.json", "--format", "json")
    assert analysed and second != first
    assert "runs/go.sh" in json.dumps(json.loads(second)["jobs"])
