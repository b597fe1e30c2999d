"""The GitHub Actions workflow shipped in the docs: valid YAML, real options, one marker."""

import os
import re
import shlex

import yaml

from preflight.cli.check import check
from preflight.report import FORMATS
from preflight.report.markdown import MARKER
from tests.conftest import ROOT

WORKFLOW = os.path.join(ROOT, "docs", "github-workflow.yml")
CI_DOC = os.path.join(ROOT, "docs", "ci.md")


def load():
    with open(WORKFLOW) as fh:
        text = fh.read()
    return text, yaml.safe_load(text)


def preflight_commands(doc):
    for step in doc["jobs"]["preflight"]["steps"]:
        run = step.get("run")
        if run and "preflight check" in run:
            flat = re.sub(r"\$\{\{[^}]*\}\}", "EXPR", " ".join(run.split()))
            yield shlex.split(flat.split(">")[0])


def test_workflow_runs_on_pull_requests_with_the_permissions_it_needs():
    _, doc = load()
    assert "pull_request" in doc[True]               # YAML 1.1 reads the key `on` as true
    assert doc["permissions"] == {"contents": "read", "pull-requests": "write",
                                  "security-events": "write"}
    uses = [s.get("uses", "") for s in doc["jobs"]["preflight"]["steps"]]
    assert any(u.startswith("github/codeql-action/upload-sarif@") for u in uses)
    assert any(u.startswith("actions/github-script@") for u in uses)


def test_every_preflight_command_uses_options_the_cli_has():
    _, doc = load()
    known = {o for p in check.params for o in p.opts}
    cmds = list(preflight_commands(doc))
    assert {c[c.index("--format") + 1] for c in cmds} == {"github", "sarif", "markdown", "concise"}
    for cmd in cmds:
        assert cmd[:2] == ["preflight", "check"]
        for tok in cmd[2:]:
            if tok.startswith("--"):
                assert tok in known, f"{tok} is not an option of preflight check"
        assert cmd[cmd.index("--format") + 1] in FORMATS


def test_sticky_comment_script_looks_for_the_marker_the_writer_emits():
    _, doc = load()
    script = next(s["with"]["script"] for s in doc["jobs"]["preflight"]["steps"]
                  if s.get("uses", "").startswith("actions/github-script@"))
    assert f"const marker = '{MARKER}';" in script
    assert "body.startsWith(marker)" in script and "updateComment" in script and "createComment" in script


def test_the_docs_show_the_shipped_workflow_verbatim():
    text, _ = load()
    with open(CI_DOC) as fh:
        doc = fh.read()
    assert "```yaml\n" + text.rstrip() + "\n```" in doc
