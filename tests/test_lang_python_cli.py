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
