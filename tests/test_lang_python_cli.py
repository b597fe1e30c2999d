"""The Python command-line languages' examples (`preflight.lang.python.cli_examples`), run
through the real pipeline: each expected fact has its value, at its file and line, with
its origin."""

from __future__ import annotations

import pytest

from preflight.frameworks import UNKNOWN, Example
from preflight.lang.python import cli_examples
from tests.test_frameworks import mismatches, outcome, run_example


def _example(d: dict) -> Example:
    facts = {k: ((UNKNOWN,) + v[1:] if v[0] == cli_examples.UNKNOWN else v)
             for k, v in d["facts"].items()}
    return Example(files=d["files"], facts=facts, command=d.get("command"), title=d["title"])


@pytest.mark.parametrize("ex", [pytest.param(_example(d), id=d["title"][:60])
                                for d in cli_examples.EXAMPLES])
def test_cli_example(ex, tmp_path, monkeypatch):
    report = run_example(ex, tmp_path, monkeypatch)
    assert report.jobs, ex.title
    assert mismatches(ex, outcome(report, ex)) == []


def _repeated_cli_script() -> tuple[str, list[str]]:
    """~64 KB of the CLI idioms repeated: options with set_defaults, later assignments, a
    wide dataclass read by tyro, and a command line of a thousand flags."""
    lines = ["import argparse", "from dataclasses import dataclass", "import torch", "import tyro",
             "", "parser = argparse.ArgumentParser()"]
    for i in range(500):
        lines.append(f"parser.add_argument('--opt{i}', type=int, default={i})")
        lines.append(f"parser.set_defaults(opt{i}={i + 1})")
    lines.append("args = parser.parse_args()")
    for i in range(300):
        lines.append(f"args.opt{i} = args.opt{i} * 2")
    lines += ["", "@dataclass", "class C:"] + [f"    f{i}: int = {i}" for i in range(600)]
    lines += ["cfg = tyro.cli(C)",
              "loader = torch.utils.data.DataLoader(range(3), batch_size=args.opt5)"]
    argv = [w for i in range(500) for w in (f"--f{i}", "1")] + \
        [w for i in range(500) for w in (f"--opt{i}", "3")]
    return "\n".join(lines) + "\n", argv


def test_repeated_cli_idioms_are_read_in_linear_time(tmp_path, monkeypatch):
    import time

    text, argv = _repeated_cli_script()
    assert len(text) <= 64 * 1024
    ex = Example(files={"train.py": text}, facts={},
                 command="python train.py " + " ".join(argv), title="repeated")
    t0 = time.perf_counter()
    report = run_example(ex, tmp_path, monkeypatch)
    elapsed = time.perf_counter() - t0
    f = report.jobs[0].job.plan.facts["micro_batch"]
    assert (f.value, f.origin.value) == (6, "derived")
    assert elapsed < 2.0, f"{elapsed:.2f} s"
