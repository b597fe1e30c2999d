"""Generated from the rules themselves: every INVALID example fires at exactly its expected
lines and every VALID example is silent for that rule. Add a rule, get these tests.

An example whose job no longer extracts is a failure, never a skip: the examples are the
end-to-end tests of the stages the rules stand on."""

import pytest

from preflight.engine import load_rules
from preflight.testing import check_example

CASES = [(r, kind, i, ex) for r in load_rules(entry_points=False)
         for kind, exs in (("INVALID", r.INVALID), ("VALID", r.VALID))
         for i, ex in enumerate(exs)]


@pytest.mark.parametrize("rule,kind,i,ex", CASES,
                         ids=[f"{r.code}-{k}-{i}" for r, k, i, _ in CASES])
def test_rule_example(rule, kind, i, ex, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = check_example(ex, tmp_path)
    assert not result.missing, f"the pipeline no longer resolves {', '.join(result.missing)}"
    got = {(d.code, d.path, d.line) for d in result.diagnostics if d.code == rule.code}
    if kind == "INVALID":
        assert got == set(ex.expect)
    else:
        assert got == set()


def test_every_rule_has_examples():
    for r in load_rules(entry_points=False):
        assert r.INVALID and r.VALID, r.code


def test_examples_fail_when_the_model_catalogue_knows_nothing(monkeypatch):
    """The examples stand on model resolution: without it they fail, never skip."""
    from preflight.models import catalog
    from preflight.testing import example_failures

    monkeypatch.setattr(catalog, "lookup_entry", lambda name: None)
    monkeypatch.setattr(catalog, "lookup", lambda name: None)
    pf101 = next(r for r in load_rules(entry_points=False) if r.code == "PF101")
    assert example_failures(pf101)
