"""The formats CI tools read: gitlab (Code Quality), junit, rdjson (reviewdog), json-lines.

Each is checked against its consumer's schema or parser (GitLab's Code Quality fields and
reviewdog's format as JSON schemas written from their documentation, JUnit XML read by
the standard library and by junitparser) and against golden files
(`PREFLIGHT_UPDATE_GOLDEN=1 pytest tests/test_report_formats.py` rewrites them).
"""

import json
import os
import xml.etree.ElementTree as ET

import pytest

from preflight.report import FORMATS, render
from tests.conftest import ROOT, run_cli
from tests.report_samples import multi_job_report, write_files

FIXTURES = os.path.join(ROOT, "tests", "fixtures")
GOLDEN = os.path.join(FIXTURES, "report_golden")
EXT = {"gitlab": "json", "junit": "xml", "rdjson": "json", "json-lines": "jsonl"}


@pytest.fixture
def repo(tmp_path, monkeypatch):
    write_files(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _schema(name):
    jsonschema = pytest.importorskip("jsonschema")
    with open(os.path.join(FIXTURES, "schemas", name)) as fh:
        return jsonschema.Draft7Validator(json.load(fh))


def _errors(validator, doc):
    return [f"{list(e.path)}: {e.message}" for e in validator.iter_errors(doc)]


def test_every_format_is_offered_by_the_command():
    r = run_cli("check", "--help")
    for fmt in ("gitlab", "junit", "rdjson", "json-lines"):
        assert fmt in FORMATS and fmt in r.stdout


@pytest.mark.parametrize("fmt", sorted(EXT))
def test_golden_output(repo, fmt):
    out = render(multi_job_report(str(repo)), fmt)
    path = os.path.join(GOLDEN, f"{fmt}.{EXT[fmt]}")
    if os.environ.get("PREFLIGHT_UPDATE_GOLDEN"):
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(out)
    with open(path, encoding="utf-8") as fh:
        assert out == fh.read()


def test_gitlab_code_quality_fields(repo):
    doc = json.loads(render(multi_job_report(str(repo)), "gitlab"))
    v = _schema("gitlab-codequality.schema.json")
    assert _errors(v, doc) == []
    assert [(i["check_name"], i["location"]["path"], i["location"]["lines"]["begin"], i["severity"])
            for i in doc] == [("PF401", "jobs/ds_config.json", 4, "major"),
                              ("PF001", "missing.py", 1, "critical"),
                              ("PF101", "train.py", 5, "critical")]
    assert len({i["fingerprint"] for i in doc}) == len(doc)          # GitLab needs them unique
    # the schema does catch a broken report
    broken = json.loads(json.dumps(doc))
    broken[0]["severity"] = "error"
    del broken[1]["location"]["lines"]
    assert len(_errors(v, broken)) == 2


def test_gitlab_fingerprint_survives_moved_lines_and_new_numbers(repo):
    before = json.loads(render(multi_job_report(str(repo)), "gitlab"))
    text = (repo / "train.py").read_text()
    (repo / "train.py").write_text("# a comment\n" + text)
    moved = multi_job_report(str(repo), message="model states need 110.0 GiB per GPU "
                                                "(16 B/param × 7.00B); H100-80GB has 79.6 GiB")
    moved.jobs[0].diagnostics[0].line += 1
    after = json.loads(render(moved, "gitlab"))
    fp = lambda doc: {i["check_name"]: i["fingerprint"] for i in doc}   # noqa: E731
    assert fp(after)["PF101"] == fp(before)["PF101"]


def test_rdjson_against_reviewdogs_format(repo):
    doc = json.loads(render(multi_job_report(str(repo)), "rdjson"))
    v = _schema("rdjson.schema.json")
    assert _errors(v, doc) == []
    d = {x["code"]["value"]: x for x in doc["diagnostics"]}
    assert d["PF101"]["location"] == {"path": "train.py",
                                      "range": {"start": {"line": 5, "column": 13}}}
    assert d["PF101"]["severity"] == "ERROR" and d["PF401"]["severity"] == "WARNING"
    assert d["PF101"]["related_locations"][0]["location"]["path"] == "jobs/ds_config.json"
    assert d["PF101"]["message"].endswith("\nfix: shard them: ZeRO-3 over 8 GPUs needs 13.0 GiB per GPU")
    assert "range" not in d["PF001"]["location"]                   # no line: no range
    broken = json.loads(json.dumps(doc))
    broken["diagnostics"][0]["location"]["range"]["start"]["line"] = 0
    broken["diagnostics"][1]["severity"] = "warning"
    assert len(_errors(v, broken)) == 2


def test_rdjson_columns_are_utf8_bytes(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.py").write_text("x = 'é'; y = 1\n", encoding="utf-8")
    from preflight.result import Report
    from preflight.plan import Diagnostic
    rep = Report(diagnostics=[Diagnostic(code="PF003", message="m", path="t.py", line=1, col=10)])
    doc = json.loads(render(rep, "rdjson"))
    assert doc["diagnostics"][0]["location"]["range"]["start"]["column"] == 11


def test_junit_parses_and_counts(repo):
    out = render(multi_job_report(str(repo)), "junit")
    root = ET.fromstring(out.encode("utf-8"))
    assert root.tag == "testsuites" and root.get("tests") == "3" and root.get("failures") == "3"
    cases = root.findall("./testsuite/testcase")
    assert [c.get("name") for c in cases] == ["jobs/ds_config.json:4:3 PF401", "missing.py PF001",
                                              "train.py:5:13 PF101"]
    fail = cases[2].find("failure")
    assert fail.get("type") == "PF101"
    assert "fix: shard them" in fail.text
    junitparser = pytest.importorskip("junitparser")
    xml = junitparser.JUnitXml.fromstring(out)
    suites = list(xml)
    assert sum(s.tests for s in suites) == 3 and sum(s.failures for s in suites) == 3
    results = [type(r).__name__ for s in suites for c in s for r in c.result]
    assert results == ["Failure"] * 3


def test_junit_clean_run_is_one_passing_case(tmp_path):
    from preflight.result import Report
    root = ET.fromstring(render(Report(), "junit").encode("utf-8"))
    (case,) = root.findall("./testsuite/testcase")
    assert root.get("failures") == "0" and case.find("failure") is None


def test_json_lines_one_finding_per_line(repo):
    out = render(multi_job_report(str(repo)), "json-lines")
    rows = [json.loads(ln) for ln in out.splitlines()]
    assert [r["code"] for r in rows] == ["PF401", "PF001", "PF101"]
    assert all(set(r) >= {"code", "severity", "message", "path", "line", "col"} for r in rows)
    assert out.endswith("\n") and len(out.splitlines()) == 3


@pytest.mark.parametrize("fmt", sorted(EXT))
def test_real_check_in_every_new_format(fmt):
    r = run_cli("check", "examples/7b-full-finetune-ddp", "--format", fmt)
    assert r.returncode == 1, r.stderr
    if fmt == "junit":
        assert len(ET.fromstring(r.stdout.encode()).findall(".//failure")) == 3
    elif fmt == "json-lines":
        assert sorted(json.loads(ln)["code"] for ln in r.stdout.splitlines()) == \
            ["PF101", "PF102", "PF105"]
    else:
        doc = json.loads(r.stdout)
        items = doc if fmt == "gitlab" else doc["diagnostics"]
        assert len(items) == 3
