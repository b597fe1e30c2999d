"""The trap corpus (tests/traps/cases.json): small jobs where a confident guess is easy and
wrong — a setting under a branch the launch does not take, a flag the command does not
give, an optimizer replaced by the script's own class, a precision the GPU decides, a class
name as the model, a global batch divided at run time. Each runs through the real CLI;
every trap fact must come out with the exact value, origin and source of the table, and
none may be wrong with a confident origin (literal / cli / config)."""

from __future__ import annotations

import pytest

from tests.traps import runner

CASES = runner.load()


def test_the_corpus_has_twenty_traps_at_least():
    assert len(CASES) >= 20
    assert sum(len(c["facts"]) for c in CASES.values()) >= 25


@pytest.mark.parametrize("name", sorted(CASES))
def test_trap(name, tmp_path):
    case = CASES[name]
    job = runner.run_case(name, case, workdir=str(tmp_path))
    outcomes = runner.judge(name, case, job)
    confident = [o.detail for o in outcomes if o.verdict == "confident-wrong"]
    assert not confident, f"{name}: wrong with confidence: {confident}"
    mismatched = [f"{o.fact}: {o.detail}" for o in outcomes if not o.matches]
    assert not mismatched, f"{name} ({case['trap']}): {mismatched}"
    assert not runner.ledger_problems(case, job)
