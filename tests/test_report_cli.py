"""The writers behind the real command line: `preflight check --format …`."""

import json
import os
import re
import subprocess

import pytest

from tests.conftest import run_cli
from tests.test_report_sarif import assert_valid

GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid",
           "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}


def git(cwd, *args):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                   env=dict(os.environ, **GIT_ENV))


@pytest.fixture
def repo(tmp_path):
    (tmp_path / "bad.py").write_text("import torch\n\nx = (1,\n")
    (tmp_path / "good.py").write_text("import torch\nmodel = torch.nn.Linear(4, 4)\n"
                                      "opt = torch.optim.AdamW(model.parameters(), lr=1e-3)\n")
    git(tmp_path, "init", "-q", "-b", "main")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-qm", "base")
    return tmp_path


def where(repo):
    r = run_cli("check", "bad.py", "good.py", "--format", "concise", "--ignore", "PF007",
                cwd=str(repo))
    assert r.returncode == 1, r.stderr
    # the verdict names the job it could not size (bad.py was not read)
    m = re.fullmatch(r"bad\.py:(\d+):(\d+): PF002 (.+)\nFound 1 finding \(1 error\) in \d jobs\.\n"
                     r"1 of 2 jobs not sized: [^\n]+\.\n", r.stdout)
    assert m, r.stdout
    return int(m.group(1)), int(m.group(2)), m.group(3)


def test_github_sarif_and_markdown_agree_on_the_finding(repo):
    line, col, msg = where(repo)
    # good.py (a Linear layer and AdamW, no GPU) is not sized: its PF007 is left out here
    gh = run_cli("check", "bad.py", "good.py", "--format", "github", "--ignore", "PF007",
                 cwd=str(repo))
    assert gh.returncode == 1
    assert gh.stdout.strip() == f"::error file=bad.py,line={line},col={col},title=PF002::{msg}"

    sa = run_cli("check", "bad.py", "good.py", "--format", "sarif", "--ignore", "PF007",
                 cwd=str(repo))
    assert sa.returncode == 1
    assert_valid(json.loads(sa.stdout))
    res = json.loads(sa.stdout)["runs"][0]["results"]
    assert [(r["ruleId"], r["level"]) for r in res] == [("PF002", "error")]
    assert res[0]["locations"][0]["physicalLocation"] == {
        "artifactLocation": {"uri": "bad.py", "uriBaseId": "%SRCROOT%"},
        "region": {"startLine": line, "startColumn": col}}

    md = run_cli("check", "bad.py", "good.py", "--format", "markdown", "--ignore", "PF007",
                 cwd=str(repo))
    assert md.returncode == 1
    assert md.stdout.startswith("<!-- preflight-report -->\n## preflight: 2 jobs, 1 finding (1 error)\n")
    assert f"[`bad.py:{line}`](bad.py#L{line})" in md.stdout


def test_text_is_plain_under_no_color(repo):
    r = run_cli("check", "bad.py", "good.py", cwd=str(repo))       # run_cli sets NO_COLOR=1
    assert r.returncode == 1
    assert "\033[" not in r.stdout
    assert r.stdout.rstrip().splitlines()[-2:] == [
        "Found 2 findings (1 error, 1 info) in 2 jobs.",
        "1 of 2 jobs not sized: params, micro_batch, seq_len, layers, hidden, heads, vocab "
        "unknown; no GPU given."]


def test_diff_base_limits_the_comment_to_touched_jobs(repo):
    git(repo, "checkout", "-qb", "feature")
    (repo / "good.py").write_text("import torch\nmodel = torch.nn.Linear(8, 8)\n"
                                  "opt = torch.optim.AdamW(model.parameters(), lr=1e-3)\n")
    git(repo, "commit", "-qam", "touch good.py")
    r = run_cli("check", "bad.py", "good.py", "--format", "markdown", "--diff-base", "main",
                cwd=str(repo))
    assert r.returncode == 0, r.stdout + r.stderr      # bad.py was not touched
    assert re.search(r"^### \S+ `good.py`$", r.stdout, re.M) and "bad.py" not in r.stdout
    assert "Jobs touched since `main`." in r.stdout

    bad_ref = run_cli("check", "good.py", "--diff-base", "no-such-ref", cwd=str(repo))
    assert bad_ref.returncode == 2
    assert "--diff-base" in bad_ref.stderr and "Traceback" not in bad_ref.stderr


def test_files_without_training_settings_are_named_not_drawn(repo):
    (repo / "ci.yaml").write_text("on: push\n")
    r = run_cli("check", "ci.yaml", "--format", "markdown", cwd=str(repo))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "No training settings found in `ci.yaml`." in r.stdout
    assert "###" not in r.stdout
    t = run_cli("check", "ci.yaml", cwd=str(repo))
    assert t.stdout.splitlines()[-3:] == ["No training settings found in ci.yaml.", "",
                                          "All checks passed (1 job)."]
