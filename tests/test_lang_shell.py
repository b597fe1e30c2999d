"""The shell language: its EXAMPLES through `preflight check` (each fact's value, file,
line and origin; the reason of an unknown), and its budgets — a launch script of up to
64 KB of any shape is checked in well under 2 s, in time linear in its size."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time

import pytest

from preflight.extract import extract_file
from preflight.lang.shell import examples
from preflight.lang.shell.examples import EXAMPLES, UNKNOWN
from preflight.lang.shell.lines import logical_lines
from preflight.lang.shell.values import reason_of
from tests.test_frameworks import run_example


def _facts(jr) -> dict:
    return jr.job.plan.facts


def _mismatches(want: dict, facts: dict) -> list[str]:
    out = []
    for name, spec in want.items():
        value, where = spec[0], spec[1]
        origin = spec[2] if len(spec) > 2 else None
        f = facts.get(name)
        if f is None:
            out.append(f"{name}: missing")
            continue
        got = UNKNOWN if not f.known else f.value
        at = f"{f.source.path}:{f.source.line}" if f.source else None
        if (got is not value and got != value) or at is None or os.path.normpath(at) != where \
                or (origin is not None and f.origin.value != origin):
            out.append(f"{name}: got {got!r} at {at} ({f.origin.value}), want {value!r} at {where}"
                       + (f" ({origin})" if origin else ""))
    return out


def _best(report, want: dict):
    return max(report.jobs, key=lambda jr: sum(n in _facts(jr) and not _mismatches({n: s}, _facts(jr))
                                               for n, s in want.items()))


@pytest.mark.parametrize("ex", EXAMPLES, ids=[f"{i}-{e.title[:40]}" for i, e in enumerate(EXAMPLES)])
def test_example(ex, tmp_path, monkeypatch):
    report = run_example(ex, tmp_path, monkeypatch)
    assert report.jobs, ex.title
    if ex.runs is not None:
        assert len(report.jobs) == len(ex.runs), [jr.job.entry for jr in report.jobs]
        for jr, want in zip(report.jobs, ex.runs):
            assert _mismatches(want, _facts(jr)) == []
        return
    jr = _best(report, ex.facts)
    assert _mismatches(ex.facts, _facts(jr)) == []
    for name, piece in ex.reasons.items():
        assert piece in (_facts(jr)[name].reason or ""), _facts(jr)[name].reason


def test_examples_have_what_the_runner_needs():
    for ex in EXAMPLES:
        assert ex.title and ex.files and (ex.facts or ex.runs), ex
    assert examples.UNKNOWN is UNKNOWN


# --------------------------------------------------------------------------- budgets

_TRAIN = "import argparse\np = argparse.ArgumentParser()\np.add_argument('--lr', type=float)\n" \
         "args = p.parse_args()\n"


def _launcher(n: int, shape: str) -> str:
    head = "#!/bin/bash\ntorchrun --nproc_per_node 8 train.py --lr 1e-4\n"
    if shape == "repeated":
        body = "python eval.py --ckpt x\n" * n
    elif shape == "distinct":
        body = "".join(f"python eval.py --ckpt x{i}\n" for i in range(n))
    elif shape == "continued":
        body = "torchrun --nproc_per_node 8 train.py \\\n" + "  --lr 1e-4 \\\n" * n + "  --lr 2e-4\n"
    elif shape == "blank":
        body = "\n" * (8 * n)
    else:                                   # a value that doubles on every line
        body = "A=x\n" + 'A="$A$A"\n' * n + "python train.py --lr $A\n"
    return head + body


def _check_seconds(tmp_path, text: str) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of `preflight check run.sh` in a process of its own (its
    workers included). The CPU time is what the reading costs whatever else the machine
    runs; the wall time is bounded loosely, for a machine shared with other work."""
    (tmp_path / "run.sh").write_text(text)
    (tmp_path / "train.py").write_text(_TRAIN)
    (tmp_path / "eval.py").write_text("print('eval')\n")
    cmd = [sys.executable, "-m", "preflight", "check", "--exit-zero", "--no-cache", "run.sh"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    r = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "Traceback" not in r.stderr
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), wall


@pytest.mark.parametrize("shape", ["repeated", "distinct", "continued", "blank", "doubling"])
def test_a_launcher_of_any_shape_is_checked_in_linear_time(shape, tmp_path):
    """A launch line followed by thousands of command lines (repeated or each different),
    continuation lines, blank lines, or a variable doubled on each line: the whole check,
    through the command line, stays well under 2 s at 64 KB, and four times the lines cost
    no more than a small multiple of the time (a quadratic reading would cost 16 times)."""
    small = _launcher(500, shape)
    big = _launcher(2000, shape)
    assert len(big.encode()) <= 64 * 1024
    (tmp_path / "small").mkdir()
    (tmp_path / "big").mkdir()
    c_small, _ = min(_check_seconds(tmp_path / "small", small) for _ in range(2))
    c_big, w_big = min(_check_seconds(tmp_path / "big", big) for _ in range(2))
    assert c_big < 2.0, f"{shape}: {c_big:.2f} s of CPU for {len(big)} bytes"
    assert w_big < 10.0, f"{shape}: {w_big:.2f} s"
    # start-up dominates both; what the lines add must not grow with their square
    assert c_big < 3 * c_small + 0.5, f"{shape}: {c_small:.2f} s → {c_big:.2f} s of CPU"


def test_repeated_launch_lines_are_one_job_and_many_different_ones_are_capped(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.sh").write_text(_launcher(2000, "repeated"))
    e = extract_file("a.sh")
    assert [inv.script for inv in e.invocations] == ["train.py", "eval.py"]
    assert str(e.invocations[1].source) == "a.sh:3:1"         # the first of the repeated lines
    (tmp_path / "b.sh").write_text(_launcher(2000, "distinct"))
    e = extract_file("b.sh")
    assert len(e.invocations) == 64
    (d,) = [d for d in e.diagnostics if "launch lines" in d.message]
    assert (d.code, d.severity, d.line) == ("PF003", "info", 2 + 64)


def test_a_doubling_value_is_unknown_past_the_budget(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.sh").write_text(_launcher(40, "doubling"))
    inv = [i for i in extract_file("a.sh").invocations if i.launcher == "python"][0]
    assert "characters: not expanded" in reason_of(inv.args[1])


def test_logical_lines_join_thousands_of_continuations_at_their_first_line():
    text = "torchrun train.py \\\n" + "  --lr 1 \\\n" * 3000 + "  --end\nnext\n"
    lines = logical_lines(text)
    assert [n for n, _ in lines] == [1, 3003]
    assert lines[0][1].count("--lr 1") == 3000 and lines[0][1].endswith("--end")
    # a multi-line array and an open quote are joined too; a comment's quote is not
    assert logical_lines('A=(a\n b "c)"\n)\nB=1\n') == [(1, 'A=(a\n b "c)"\n)'), (4, "B=1")]
    assert logical_lines('# it"s\nX=1\n') == [(1, '# it"s'), (2, "X=1")]
    assert logical_lines('X="a\nb"\nY=2\n') == [(1, 'X="a b"'), (3, "Y=2")]


def test_a_case_pattern_line_of_long_blanks_is_read_at_once(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    text = "case $1 in\n  a" + " " * 60000 + "b\nesac\ntorchrun --nproc_per_node 2 train.py\n"
    (tmp_path / "a.sh").write_text(text)
    t = time.perf_counter()
    (inv,) = extract_file("a.sh").invocations
    assert time.perf_counter() - t < 1.0
    assert inv.script == "train.py"
