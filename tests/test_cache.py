"""The per-file extraction cache (.preflight_cache/): a second run over unchanged files
extracts nothing again (a script that defines the model class is parsed with `ast` only,
to count it); an edit, a changed dependency, a corrupt entry or another version is a
miss, never an error."""

import json
import os

import pytest

from tests.conftest import run_cli
from preflight.options import CheckOptions

SCRIPT = ("import torch\n"
          "class Net(torch.nn.Module):\n"
          "    def __init__(self):\n"
          "        super().__init__()\n"
          "        self.fc = torch.nn.Linear(1024, 1024)\n"
          "model = Net()\n"
          "print(sum(p.numel() for p in model.parameters()) * 4)\n"
          "opt = torch.optim.AdamW(model.parameters(), lr=1e-3)\n"
          "batch_size = 8\n"
          "if __name__ == '__main__':\n"
          "    opt.step()\n")
LAUNCH = "#!/bin/bash\nsource env.sh\ntorchrun --nproc_per_node $GPUS train.py\n"


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / ".git").mkdir()
    (tmp_path / "train.py").write_text(SCRIPT)
    (tmp_path / "launch.sh").write_text(LAUNCH)
    (tmp_path / "env.sh").write_text("GPUS=4\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run(**kw):
    from preflight import pipeline
    from preflight.extract import stats
    stats.clear()
    report = pipeline.run(["launch.sh", "train.py"], CheckOptions(cache=True, fixes=False, **kw))
    return json.dumps(report.to_json(), sort_keys=True), dict(stats)


def test_unchanged_files_are_not_parsed_again(project):
    first, s1 = run()
    # the launcher, the script, and env.sh the launcher sources
    assert s1["extractions"] == 3 and s1.get("cache_hits", 0) == 0
    # the model class Net counted on the `ast` tree the extraction parsed: no other parse
    assert s1.get("ast_reparses", 0) == 0 and s1.get("libcst_parses", 0) == 0
    cache = project / ".preflight_cache"
    assert (cache / ".gitignore").read_text().splitlines()[-1] == "*"
    second, s2 = run()
    assert second == first
    assert s2.get("extractions", 0) == 0 and s2.get("libcst_parses", 0) == 0
    assert s2["cache_hits"] == 3
    # the one parse left: the script that defines Net, with `ast` for the model counter
    # (faster than loading a stored tree)
    assert s2["ast_reparses"] == 1


def test_an_edited_file_is_extracted_again(project):
    first, _ = run()
    (project / "train.py").write_text(SCRIPT.replace("batch_size = 8", "batch_size = 16"))
    second, s = run()
    assert s["extractions"] == 1 and s["cache_hits"] == 2      # only the edited script
    assert '"value": 16' in second and second != first


def test_a_changed_sourced_file_or_environment_invalidates_the_launcher(project, monkeypatch):
    run()
    (project / "env.sh").write_text("GPUS=2\n")
    _, s = run()
    # env.sh, the launcher that sources it, and the script: its launcher's environment
    # (WORLD_SIZE) changed with the process count
    assert s["extractions"] == 3
    monkeypatch.setenv("GPUS", "8")
    (project / "launch.sh").write_text(LAUNCH.replace("source env.sh\n", ""))
    run()
    _, s = run()
    assert s.get("extractions", 0) == 0
    monkeypatch.setenv("GPUS", "16")
    _, s = run()
    assert s["extractions"] == 2            # the launcher read $GPUS; the script's WORLD_SIZE


def test_a_corrupt_cache_is_ignored_silently(project):
    first, _ = run()
    entries = [os.path.join(d, f) for d, _, fs in os.walk(project / ".preflight_cache")
               for f in fs if f.endswith(".pickle")]
    assert entries
    for i, p in enumerate(entries):
        with open(p, "wb") as fh:
            fh.write(b"\x80\x05garbage" if i % 2 else b"")
    second, s = run()
    assert second == first and s["extractions"] == 3
    third, s = run()                      # rewritten: hits again
    assert third == first and s.get("extractions", 0) == 0


def test_another_version_does_not_read_the_entries(project, monkeypatch):
    from preflight import cache
    first, _ = run()
    monkeypatch.setattr(cache, "VERSION", "99.0.0")
    second, s = run()
    assert second == first and s["extractions"] == 3


def test_no_cache_and_cache_dir(project):
    r = run_cli("check", "--no-cache", "launch.sh", "train.py", cwd=str(project))
    assert r.returncode in (0, 1), r.stderr
    assert not (project / ".preflight_cache").exists()
    (project / "pyproject.toml").write_text('[tool.preflight]\ncache-dir = "build/pf-cache"\n')
    r = run_cli("check", "launch.sh", "train.py", cwd=str(project))
    assert r.returncode in (0, 1), r.stderr
    assert (project / "build" / "pf-cache" / ".gitignore").is_file()
    assert not (project / ".preflight_cache").exists()


def test_an_unwritable_cache_folder_is_not_fatal(project):
    (project / ".preflight_cache").write_text("a file, not a folder")
    first, s = run()
    assert s["extractions"] == 3 and '"entry": "train.py"' in first


def test_a_warm_walk_reads_only_the_files_of_jobs(project, monkeypatch):
    from preflight import pipeline
    from preflight.discover import signals
    for i in range(20):
        (project / f"lib_{i}.py").write_text("import torch\n\nclass B(torch.nn.Module):\n    pass\n")
        (project / f"data_{i}.json").write_text('[{"text": "x"}]\n')
    first = pipeline.run(["."], CheckOptions(cache=True, fixes=False))
    read = []
    real = signals.head

    def spy(path):
        read.append(path)
        return real(path)

    monkeypatch.setattr(signals, "head", spy)
    second = pipeline.run(["."], CheckOptions(cache=True, fixes=False))
    assert json.dumps(second.to_json()) == json.dumps(first.to_json())
    assert [j.job.entry for j in second.jobs] == ["train.py"]
    assert set(read) <= {"train.py"}
