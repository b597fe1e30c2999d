"""Every framework adapter's EXAMPLES, run through the real pipeline: each expected fact has
its value, at its file and line (and origin, where the example names one). Adding an
adapter adds its tests."""

from __future__ import annotations

import os
import shlex

import pytest

from preflight.frameworks import UNKNOWN, adapters
from preflight.options import CheckOptions

CASES = [pytest.param(a, i, ex, id=f"{a.name}-{i}") for a in adapters() for i, ex in enumerate(a.EXAMPLES)]


def _materialise(files: dict[str, str], root) -> None:
    for rel, text in files.items():
        p = os.path.join(str(root), rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w", encoding="utf-8") as fh:
            fh.write(text)


def run_example(ex, root, monkeypatch):
    from preflight import pipeline
    from preflight.config import ProjectConfig

    _materialise(ex.files, root)
    monkeypatch.chdir(str(root))
    paths = ex.paths if ex.paths is not None else ([] if ex.command else sorted(ex.files))
    command = shlex.split(ex.command) if ex.command else None
    return pipeline.run(paths, CheckOptions(command=command, gpu="H100-80GB", config=ProjectConfig(),
                                           apply_rules=False, fixes=False))


def outcome(report, ex) -> dict[str, tuple]:
    """name → (value, "path:line", origin) of the job that has the example's facts."""
    best: dict[str, tuple] = {}
    for jr in report.jobs:
        got = {}
        for name in ex.facts:
            f = jr.job.plan.facts.get(name)
            if f is None:
                continue
            where = f"{f.source.path}:{f.source.line}" if f.source else None
            got[name] = (UNKNOWN if not f.known else f.value, where, f.origin.value)
        if len(got) > len(best):
            best = got
    return best


def mismatches(ex, got: dict[str, tuple]) -> list[str]:
    out = []
    for name, want in ex.facts.items():
        value, where = want[0], want[1]
        origin = want[2] if len(want) > 2 else None
        g = got.get(name)
        if g is None:
            out.append(f"{name}: missing (want {value!r} at {where})")
            continue
        gpath = os.path.normpath(g[1]) if g[1] else None
        got_value = g[0]
        if isinstance(value, dict) and isinstance(got_value, dict):
            # a LoRA value gains the counts model resolution adds; the example states its settings
            got_value = {k: got_value.get(k) for k in value}
        if got_value is not value and got_value != value or gpath != os.path.normpath(where) or \
                (origin is not None and g[2] != origin):
            out.append(f"{name}: got {g[0]!r} at {g[1]} ({g[2]}), want {value!r} at {where}"
                       + (f" ({origin})" if origin else ""))
    return out


@pytest.mark.parametrize("adapter,index,ex", CASES)
def test_example(adapter, index, ex, tmp_path, monkeypatch):
    report = run_example(ex, tmp_path, monkeypatch)
    assert report.jobs, f"{adapter.name} example {index} ({ex.title}): no job found"
    assert mismatches(ex, outcome(report, ex)) == []


def test_every_adapter_has_examples_and_coverage():
    for a in adapters():
        assert a.EXAMPLES, a.name
        assert a.reads and a.title, a.name


def test_coverage_table_is_current():
    """docs/frameworks.md holds the table the adapters describe."""
    from preflight.frameworks.coverage import coverage_markdown

    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with open(os.path.join(here, "docs", "frameworks.md"), encoding="utf-8") as fh:
        doc = fh.read()
    assert coverage_markdown() in doc
