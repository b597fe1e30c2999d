"""Generated from the rules themselves: every INVALID example fires at exactly its expected
lines and every VALID example is silent for that rule. Add a rule, get these tests."""

import pytest

from preflight.engine import load_rules
from tests.rule_examples import check_example, pipeline_gap

CASES = [(r, kind, i, ex) for r in load_rules(entry_points=False)
         for kind, exs in (("INVALID", r.INVALID), ("VALID", r.VALID))
         for i, ex in enumerate(exs)]


#: rules that read only the job's Python text, so their examples run without extraction
TEXT_RULES = {"PF103"}


@pytest.mark.parametrize("rule,kind,i,ex", CASES,
                         ids=[f"{r.code}-{k}-{i}" for r, k, i, _ in CASES])
def test_rule_example(rule, kind, i, ex, tmp_path, monkeypatch):
    if rule.code not in TEXT_RULES and pipeline_gap():
        pytest.skip(f"needs the full pipeline: {pipeline_gap()}")
    diags, missing = check_example(ex, tmp_path, monkeypatch)
    if missing:
        pytest.skip(f"the pipeline does not resolve {', '.join(missing)} for this example")
    got = {(d.code, d.path, d.line) for d in diags if d.code == rule.code}
    if kind == "INVALID":
        assert got == set(ex.expect)
    else:
        assert got == set()
