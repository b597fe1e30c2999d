"""The registry and the filters: every rule is complete and distinct; select / ignore,
noqa and per-file-ignores behave as documented; [tool.preflight] loads."""

import re

import pytest

from preflight import engine
from preflight.config import load_project_config
from preflight.units import parse_size
from preflight.engine import DOC_SECTIONS, Rule, is_selected, load_rules
from preflight.noqa import noqa_codes
from preflight.plan import Diagnostic

RULES = load_rules(entry_points=False)


def test_codes_and_names_are_distinct_and_well_formed():
    codes = [r.code for r in RULES]
    names = [r.name for r in RULES]
    assert len(codes) == len(set(codes)) and len(names) == len(set(names))
    for r in RULES:
        assert re.fullmatch(r"PF[0-4]\d\d", r.code), r.code
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)+", r.name), r.name
        assert r.severity in ("error", "warning", "info")
        assert r.misconception in (None, 1, 2, 3, 4, 5, 6)
        assert r.case in (None, "A", "B", "C")
        assert r.summary and not r.summary.endswith(".")


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.code)
def test_every_rule_has_docs_and_examples(rule):
    sections = rule.doc_sections()
    assert list(sections) == list(DOC_SECTIONS), rule.code
    assert all(sections[s] for s in DOC_SECTIONS)
    assert re.search(r"\d", sections["Why is this bad"]), "the why must carry numbers"
    assert rule.VALID and rule.INVALID
    for ex in rule.INVALID:
        assert ex.expect and all(c == rule.code for c, _, _ in ex.expect)
        for _, path, ln in ex.expect:
            if path in ex.files:
                assert 1 <= ln <= len(ex.files[path].splitlines())


def test_the_six_misconceptions_and_three_cases_are_covered():
    assert {r.misconception for r in RULES} >= {1, 2, 3, 4, 5, 6}
    assert {r.case for r in RULES} >= {"A", "B", "C"}
    assert any(r.code.startswith("PF2") for r in RULES)
    assert any(r.code.startswith("PF3") for r in RULES)


@pytest.mark.parametrize("code,select,ignore,kept", [
    ("PF101", [], [], True),
    ("PF101", ["PF1"], [], True),
    ("PF201", ["PF1"], [], False),
    ("PF101", [], ["PF1"], False),
    ("PF101", ["PF101"], ["PF1"], True),       # the more specific prefix wins
    ("PF102", ["PF1"], ["PF102"], False),
    ("PF102", ["pf1"], [], True),
])
def test_select_ignore_prefixes(code, select, ignore, kept):
    assert is_selected(code, select, ignore) is kept


@pytest.mark.parametrize("text,codes", [
    ("x = 1", None),
    ("x = 1  # noqa", []),
    ("x = 1  # NOQA:PF101", ["PF101"]),
    ("x = 1  # noqa: PF101, PF203", ["PF101", "PF203"]),
    ("torchrun train.py  # noqa: PF105 PF101", ["PF105", "PF101"]),
    ("  stage: 3 # noqa:PF106", ["PF106"]),
])
def test_noqa_parsing(text, codes):
    assert noqa_codes(text) == codes


def test_noqa_index_reads_shell_and_yaml_lines(tmp_path):
    sh = tmp_path / "launch.sh"
    sh.write_text("#!/bin/bash\ntorchrun --nproc_per_node 8 train.py --bf16 True  # noqa: PF105\n")
    ym = tmp_path / "cfg.yaml"
    ym.write_text("zero_stage: 3  # noqa\nmixed_precision: bf16\n")
    js = tmp_path / "ds.json"
    js.write_text('{"stage": 3}\n')
    idx = engine.NoqaIndex()
    d = lambda code, path, line: Diagnostic(code=code, message="m", path=str(path), line=line)
    assert idx.suppresses(d("PF105", sh, 2))
    assert not idx.suppresses(d("PF101", sh, 2))
    assert idx.suppresses(d("PF106", ym, 1)) and not idx.suppresses(d("PF106", ym, 2))
    assert not idx.suppresses(d("PF106", js, 1))


def test_per_file_ignores_globs(tmp_path):
    d = Diagnostic(code="PF106", message="m", path=str(tmp_path / "configs" / "ds.json"), line=3)
    assert engine.per_file_ignored(d, {"configs/*.json": ["PF106"]}, str(tmp_path))
    assert engine.per_file_ignored(d, {"configs/": ["PF1"]}, str(tmp_path))
    assert not engine.per_file_ignored(d, {"configs/*.json": ["PF2"]}, str(tmp_path))
    assert not engine.per_file_ignored(d, {"*.yaml": ["PF106"]}, str(tmp_path))


def test_crashing_rule_reports_itself():
    class Broken(Rule):
        code, name, summary = "PF199", "broken-rule", "Breaks"

        def check(self, ctx):
            raise ZeroDivisionError("boom")
            yield

    from preflight.testing import context as ctx, plan
    (d,) = engine.run_rules(ctx(plan({"model": "m"})), [Broken()])
    assert d.code == "PF199" and "ZeroDivisionError: boom" in d.message


@pytest.mark.parametrize("text,value", [("40GB", 40 * 10**9), ("80GiB", 80 * 2**30),
                                        ("81559MiB", 81559 * 2**20)])
def test_parse_size(text, value):
    assert parse_size(text) == value


def test_parse_size_rejects_nonsense():
    for bad in ("forty", "-1GB", 0, True, 80, 24e9, "80"):
        with pytest.raises(ValueError):
            parse_size(bad)


def test_project_config_loads_every_field(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[tool.preflight]\ngpu = "A100-40GB"\nheadroom = 0.25\n'
        'select = ["PF1", "PF2"]\nignore = ["PF112"]\nfail-level = "error"\n'
        '[tool.preflight.per-file-ignores]\n"configs/*.json" = ["PF106"]\n'
        '[tool.preflight.models]\n"my/model" = { params = 1300000000 }\n'
        '[[tool.preflight.jobs]]\nentry = "train.py"\ngpu = "H100"\n')
    sub = tmp_path / "src"
    sub.mkdir()
    cfg = load_project_config(str(sub))
    assert (cfg.gpu, cfg.headroom, cfg.select, cfg.ignore, cfg.fail_level) == \
        ("A100-40GB", 0.25, ["PF1", "PF2"], ["PF112"], "error")
    assert cfg.per_file_ignores == {"configs/*.json": ["PF106"]}
    assert cfg.models == {"my/model": {"params": 1300000000}}
    assert cfg.jobs == [{"entry": "train.py", "gpu": "H100"}]
    assert cfg.root == str(tmp_path) and cfg.diagnostics == []


def test_project_config_defaults_and_bad_values(tmp_path):
    assert load_project_config(str(tmp_path)).headroom == 0.2
    (tmp_path / "pyproject.toml").write_text('[tool.preflight]\nheadroom = 1.5\nselect = 3\n')
    cfg = load_project_config(str(tmp_path))
    assert cfg.headroom == 0.2
    assert [(d.code, d.line) for d in cfg.diagnostics] == [("PF005", 2), ("PF005", 3)]
    (tmp_path / "pyproject.toml").write_text('[tool.preflight\ngpu = 1\n')
    (d,) = load_project_config(str(tmp_path)).diagnostics
    assert d.code == "PF005" and d.line == 1


def test_docs_index_lists_every_rule():
    import os
    from tests.conftest import ROOT
    with open(os.path.join(ROOT, "docs", "rules.md"), encoding="utf-8") as fh:
        doc = fh.read()
    for r in RULES:
        assert f"| `{r.name}` |" in doc and f"### {r.code} {r.name}" in doc, r.code


def test_every_code_preflight_emits_is_a_rule():
    """`preflight rules --format json` lists every code found anywhere in the code base."""
    import json
    import os
    import re

    from tests.conftest import ROOT, run_cli

    emitted = set()
    for top in ("preflight", "rules"):
        for d, _, files in os.walk(os.path.join(ROOT, top)):
            for f in files:
                if f.endswith(".py"):
                    with open(os.path.join(d, f), encoding="utf-8") as fh:
                        emitted |= set(re.findall(r"[\"'](PF\d{3})[\"']", fh.read()))
    r = run_cli("rules", "--format", "json")
    listed = {x["code"] for x in json.loads(r.stdout)}
    assert emitted and emitted <= listed, sorted(emitted - listed)


@pytest.mark.parametrize("code", ["PF401", "PF001", "PF004", "PF403"])
def test_explain_prints_the_docs_of_every_code(code):
    from tests.conftest import run_cli

    r = run_cli("explain", code)
    assert r.returncode == 0, r.stderr
    for section in DOC_SECTIONS:
        assert f"## {section}" in r.stdout


def test_docs_rules_md_carries_every_rules_documentation():
    import os

    from preflight.cli.rules import reference_markdown
    from tests.conftest import ROOT
    with open(os.path.join(ROOT, "docs", "rules.md"), encoding="utf-8") as fh:
        doc = fh.read()
    assert reference_markdown(RULES) in doc
