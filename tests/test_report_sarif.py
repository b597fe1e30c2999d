"""`--format sarif`: SARIF 2.1.0 validated against the official schema, stable fingerprints."""

import json
import os

import pytest

from preflight.report import render
from preflight.report.sarif import FINGERPRINT_KEY
from tests.conftest import SHARED
from tests.report_samples import RULES, multi_job_report, write_files

SCHEMA = os.path.join(SHARED, "schemas", "sarif-schema-2.1.0.json")


@pytest.fixture
def repo(tmp_path, monkeypatch):
    write_files(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def sarif(report, **kw):
    return json.loads(render(report, "sarif", **kw))


def validator():
    if not os.path.exists(SCHEMA):
        pytest.skip(f"SARIF 2.1.0 schema not found at {SCHEMA} (shared/schemas is not beside the repo)")
    jsonschema = pytest.importorskip("jsonschema")
    with open(SCHEMA) as fh:
        schema = json.load(fh)
    if "properties" not in schema and "Root" in schema.get("definitions", {}):
        # this copy keeps the log-file object under definitions/Root and constrains nothing
        # at the top level: validate against Root, or every document would pass
        schema = dict(schema, **{"$ref": "#/definitions/Root"})
    return jsonschema.Draft7Validator(schema, format_checker=jsonschema.FormatChecker())


def assert_valid(doc):
    errors = sorted(validator().iter_errors(doc), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors)


def test_validates_against_the_sarif_2_1_0_schema(repo):
    for kw in ({"rules": RULES}, {}):
        doc = sarif(multi_job_report(str(repo)), **kw)
        assert_valid(doc)
    # the validator does catch broken documents
    for path, bad in ((("runs", 0, "results", 0, "level"), "fatal"),
                      (("runs", 0, "results", 0, "locations", 0, "physicalLocation", "region",
                        "startLine"), 0),
                      (("version",), "2.0.0")):
        broken = json.loads(json.dumps(doc))
        node = broken
        for k in path[:-1]:
            node = node[k]
        node[path[-1]] = bad
        assert list(validator().iter_errors(broken)), path


def test_driver_rules_carry_the_rule_docs(repo):
    run = sarif(multi_job_report(str(repo)), rules=RULES)["runs"][0]
    driver = run["tool"]["driver"]
    assert driver["name"] == "preflight" and driver["version"]
    assert driver["informationUri"].startswith("https://")
    ids = [r["id"] for r in driver["rules"]]
    assert ids == ["PF101", "PF401", "PF001"]      # given rules first, then codes only seen
    pf101 = driver["rules"][0]
    assert pf101["name"] == "states-over-capacity"
    assert pf101["shortDescription"]["text"] == "Model states exceed GPU memory"
    assert pf101["fullDescription"]["text"].startswith("Flags a job whose model states")
    assert pf101["help"]["markdown"].startswith("## What it does\n")
    assert "## Use instead" in pf101["help"]["markdown"]
    assert "##" not in pf101["help"]["text"] and "Use instead\nShard the states" in pf101["help"]["text"]
    assert pf101["defaultConfiguration"] == {"level": "error"}
    assert pf101["properties"] == {"tags": ["memory"], "misconception": 1, "case": "A"}
    assert driver["rules"][1]["defaultConfiguration"] == {"level": "warning"}
    assert driver["rules"][2]["shortDescription"]["text"] == "unreadable file"


def test_results_have_rule_index_level_and_relative_regions(repo):
    run = sarif(multi_job_report(str(repo), path_prefix=str(repo)), rules=RULES, root=str(repo))["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    by = {r["ruleId"]: r for r in run["results"]}
    assert set(by) == {"PF101", "PF401", "PF001"}
    for r in run["results"]:
        assert rules[r["ruleIndex"]]["id"] == r["ruleId"]
    pf101 = by["PF101"]
    assert pf101["level"] == "error"
    assert pf101["message"]["text"] == ("model states need 104.3 GiB per GPU (16 B/param × 7.00B); "
                                        "H100-80GB has 79.6 GiB\nFix: shard them: ZeRO-3 over 8 GPUs "
                                        "needs 13.0 GiB per GPU")
    loc = pf101["locations"][0]["physicalLocation"]
    assert loc == {"artifactLocation": {"uri": "train.py", "uriBaseId": "%SRCROOT%"},
                   "region": {"startLine": 5, "startColumn": 13}}
    assert pf101["relatedLocations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "jobs/ds_config.json"
    assert by["PF401"]["level"] == "warning"
    assert by["PF001"]["locations"][0]["physicalLocation"]["region"] == {"startLine": 1}
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == repo.as_uri() + "/"
    assert str(repo) not in json.dumps(run["results"])


def _prints(report, **kw):
    return {r["ruleId"]: r["partialFingerprints"][FINGERPRINT_KEY]
            for r in sarif(report, **kw)["runs"][0]["results"]}


def test_fingerprints_survive_moved_lines_new_numbers_and_absolute_paths(repo):
    base = _prints(multi_job_report(str(repo)))
    assert all(len(v) == 34 for v in base.values())            # 32 hex digits + ":1"
    # the same findings given with absolute paths
    assert _prints(multi_job_report(str(repo), path_prefix=str(repo)), root=str(repo)) == base
    # the estimate changed its numbers
    other = _prints(multi_job_report(str(repo), message="model states need 113.9 GiB per GPU "
                                     "(16 B/param × 7.65B); H100-80GB has 79.6 GiB"))
    assert other == base
    # two lines inserted above the flagged line: same line text, so the same fingerprint
    with open(repo / "train.py") as fh:
        text = fh.read()
    (repo / "train.py").write_text("# a comment\n# another\n" + text)
    moved = multi_job_report(str(repo))
    moved.jobs[0].diagnostics[0].line = 7
    assert _prints(moved) == base
    # a different line is a different finding
    moved.jobs[0].diagnostics[0].line = 6
    assert _prints(moved)["PF101"] != base["PF101"]


def test_repeated_identical_findings_get_distinct_fingerprints(repo):
    rep = multi_job_report(str(repo))
    dup = rep.jobs[0].diagnostics[0].model_copy(update={"col": 1})
    rep.jobs[0].diagnostics.append(dup)
    fps = [r["partialFingerprints"][FINGERPRINT_KEY] for r in sarif(rep)["runs"][0]["results"]
           if r["ruleId"] == "PF101"]
    assert len(fps) == 2 and fps[0][:32] == fps[1][:32] and fps[0] != fps[1]


def test_rule_metadata_is_duck_typed(repo):
    import enum

    class Sev(enum.Enum):
        WARNING = "warning"

    class PF401:
        """## What it does
        Flags precision set in two places.

        ## Why is this bad
        The launcher wins silently.
        """
        code, name, summary, severity, misconception, case = (
            "PF401", "precision-set-twice", "Precision set twice", Sev.WARNING, None, None)

    rules = {"PF401": PF401}                      # a registry mapping, classes not instances
    driver = sarif(multi_job_report(str(repo)), rules=rules)["runs"][0]["tool"]["driver"]
    pf401 = driver["rules"][0]
    assert pf401["defaultConfiguration"] == {"level": "warning"}
    assert pf401["fullDescription"]["text"] == "Flags precision set in two places."
    assert pf401["help"]["markdown"].startswith("## What it does\nFlags precision")
    assert pf401["properties"] == {"tags": ["consistency"]}


def test_code_in_rule_docs_keeps_its_comments(repo):
    rule = sarif(multi_job_report(str(repo)), rules=RULES)["runs"][0]["tool"]["driver"]["rules"][0]
    assert "Example\n# plain DDP on 8 x H100-80GB\nmodel = " in rule["help"]["text"]
    assert rule["fullDescription"]["text"].endswith("exceed one GPU's memory.")


def test_the_rule_registry_describes_itself_in_sarif(repo):
    engine = pytest.importorskip("preflight.engine", reason="the rule engine is not in this tree yet")
    rules = engine.load_rules()
    doc = sarif(multi_job_report(str(repo)), rules=rules)
    driver = doc["runs"][0]["tool"]["driver"]
    assert [r["id"] for r in driver["rules"]][:len(rules)] == [r.code for r in rules]
    for r in driver["rules"][:len(rules)]:
        assert r["help"]["markdown"].startswith("## What it does"), r["id"]
        assert r["fullDescription"]["text"] and "##" not in r["fullDescription"]["text"]
    assert_valid(doc)
