"""The progress indicator of long checks, and the garbage-collection policy of a check:
set by `pipeline.run` for its duration, never by the extractor (a library function)."""

import gc
import os
import subprocess
import sys
import weakref

import pytest

from tests.conftest import run_cli
from preflight.options import CheckOptions

SCRIPT = ("import torch\n"
          "model = torch.nn.Linear({n}, {n})\n"
          "opt = torch.optim.AdamW(model.parameters(), lr=1e-3)\n"
          "if __name__ == '__main__':\n"
          "    pass\n")


@pytest.fixture
def many_jobs(tmp_path):
    (tmp_path / ".git").mkdir()
    names = []
    for i in range(24):
        (tmp_path / f"job_{i:02d}.py").write_text(SCRIPT.format(n=8 + i))
        names.append(f"job_{i:02d}.py")
    return tmp_path, names


def test_no_progress_drawn_when_stderr_is_not_a_terminal(many_jobs):
    repo, names = many_jobs
    r = run_cli("check", *names, cwd=str(repo))
    assert r.returncode == 0, r.stdout + r.stderr
    # a Linear layer's jobs cannot be sized (no model size, batch or GPU): said, not passed
    assert r.stdout.splitlines()[-1] == (
        "24 of 24 jobs not sized: params, micro_batch, seq_len, layers, hidden, heads, vocab "
        "unknown; no GPU given.")
    assert r.stderr == ""
    assert "checking" not in r.stdout


def _check_on_a_terminal(repo, names, **env):
    """`preflight check` with stderr on a pseudo-terminal: what it drew there."""
    import pty
    master, slave = pty.openpty()
    e = dict(os.environ)
    for k in ("PREFLIGHT_NO_PROGRESS", "PREFLIGHT_DEBUG"):
        e.pop(k, None)
    e.update(NO_COLOR="1", **env)
    p = subprocess.run([sys.executable, "-m", "preflight", "check", *names], cwd=str(repo),
                       stdout=subprocess.PIPE, stderr=slave, env=e, timeout=120)
    os.close(slave)
    drawn = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        drawn += chunk
    os.close(master)
    return p, drawn.decode("utf-8", "replace")


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")
def test_progress_is_drawn_on_a_terminal_and_erased(many_jobs):
    repo, names = many_jobs
    p, drawn = _check_on_a_terminal(repo, names)
    assert p.returncode == 0
    assert "preflight: checking 0/24" in drawn
    assert drawn.endswith("\r")                 # the line is erased before the report
    assert "checking" not in p.stdout.decode()
    # fewer jobs than the threshold, or PREFLIGHT_NO_PROGRESS: nothing drawn
    assert _check_on_a_terminal(repo, names[:5])[1] == ""
    assert _check_on_a_terminal(repo, names, PREFLIGHT_NO_PROGRESS="1")[1] == ""


class _Cycle:
    def __init__(self):
        self.me = self


def test_extraction_leaves_the_garbage_collector_alone(tmp_path):
    from preflight.extract import extract_file
    p = tmp_path / "train.py"
    p.write_text(SCRIPT.format(n=16))
    gc.enable()
    frozen = gc.get_freeze_count()
    ext = extract_file(str(p))
    assert ext.facts                              # it was analysed, not skipped
    assert gc.isenabled()
    assert gc.get_freeze_count() == frozen


def test_check_pauses_the_collector_then_restores_it_and_frees_earlier_garbage(
        tmp_path, monkeypatch):
    from preflight import pipeline
    from preflight.config import ProjectConfig

    (tmp_path / ".git").mkdir()
    (tmp_path / "train.py").write_text(SCRIPT.format(n=16))
    monkeypatch.chdir(tmp_path)
    seen = []
    real = pipeline.assemble

    def spy(spec, cache=None, **kw):
        seen.append(gc.isenabled())
        return real(spec, cache, **kw)

    monkeypatch.setattr(pipeline, "assemble", spy)
    gc.enable()
    garbage = _Cycle()
    alive = weakref.ref(garbage)
    del garbage                                   # cyclic garbage, not yet collected
    frozen = gc.get_freeze_count()
    report = pipeline.run(["train.py"], CheckOptions(config=ProjectConfig(), fixes=False))
    assert [j.job.entry for j in report.jobs] == ["train.py"]
    import preflight.progress
    assert callable(preflight.progress.progress)  # still the function after a check used it
    assert seen == [False]                        # paused while the job was read
    assert gc.isenabled()                         # and restored afterwards
    assert gc.get_freeze_count() == frozen        # nothing moved out of reach
    gc.collect()
    assert alive() is None                        # the earlier garbage is freed

    gc.disable()
    try:
        pipeline.run(["train.py"], CheckOptions(config=ProjectConfig(), fixes=False))
        assert not gc.isenabled()                 # a caller's disabled collector stays so
    finally:
        gc.enable()
