"""The fix in every report: SARIF `fixes` (valid against the 2.1.0 schema, and applying
their replacements gives exactly what `check --fix` writes), GitHub suggestion blocks in
the Markdown comment, the edit under each finding in text."""

import json
import os
import shutil

import pytest

from tests.conftest import ROOT, run_cli
from tests.test_report_sarif import assert_valid

EXAMPLES = os.path.join(ROOT, "examples")


def _copy(name, tmp_path, sub):
    d = tmp_path / sub
    shutil.copytree(os.path.join(EXAMPLES, name), d)
    return str(d)


def _apply_sarif(doc, root):
    """Apply every result's first fix once per file (the fixes of one job are one edit)."""
    done = set()
    for res in doc["runs"][0]["results"]:
        for fx in res.get("fixes", [])[:1]:
            for ch in fx["artifactChanges"]:
                uri = ch["artifactLocation"]["uri"]
                if uri in done:
                    continue
                done.add(uri)
                path = os.path.join(root, uri)
                lines = open(path).read().splitlines(keepends=True)
                for rep in sorted(ch["replacements"], key=lambda r: -r["deletedRegion"]["startLine"]):
                    reg = rep["deletedRegion"]
                    s, e = reg["startLine"], reg["endLine"]
                    tail = lines[e - 1][reg["endColumn"] - 1:]
                    lines[s - 1:e] = [rep["insertedContent"]["text"] + tail]
                open(path, "w").write("".join(lines))


@pytest.mark.parametrize("name", ["7b-full-finetune-ddp", "long-context-1.3b",
                                  "small-model-64-gpus"])
def test_sarif_fixes_validate_and_equal_what_fix_writes(name, tmp_path):
    a = _copy(name, tmp_path, "a")
    b = _copy(name, tmp_path, "b")
    r = run_cli("check", "--format", "sarif", ".", cwd=a)
    doc = json.loads(r.stdout)
    assert_valid(doc)
    fixed = [res for res in doc["runs"][0]["results"] if res.get("fixes")]
    assert fixed
    _apply_sarif(doc, a)
    r = run_cli("check", "--fix", ".", cwd=b)
    assert "preflight: fixed" in r.stderr and "fits:" in r.stdout, r.stdout + r.stderr
    # the job's own files (the extraction cache folder aside) are the same either way
    for f in sorted(f for f in os.listdir(b) if os.path.isfile(os.path.join(b, f))):
        assert open(os.path.join(a, f)).read() == open(os.path.join(b, f)).read(), f


def test_markdown_has_suggestion_blocks_and_the_fit_table(tmp_path):
    d = _copy("7b-full-finetune-ddp", tmp_path, "j")
    r = run_cli("check", "--format", "markdown", ".", cwd=d)
    md = r.stdout
    assert "What would fit" in md and "| **→** |" in md
    assert "**Suggested fix**" in md and "resolves PF101, PF102, PF105" in md
    assert ("`train.py` lines 14–15:\n\n```suggestion\n    per_device_train_batch_size=1,\n"
            "    gradient_accumulation_steps=4,\n```") in md
    assert '```suggestion\n    max_steps=1000,\n    fsdp="shard_grad_op auto_wrap",\n```' in md


def test_text_shows_the_edit_under_the_findings(tmp_path):
    d = _copy("7b-full-finetune-ddp", tmp_path, "j")
    out = run_cli("check", ".", cwd=d).stdout
    lines = out.splitlines()
    first = lines.index(next(ln for ln in lines if ln.startswith("  edit:")))
    # under the finding and its fix (both may wrap onto indented lines)
    finding = max(i for i in range(first) if lines[i].startswith("train.py:"))
    assert any(ln.startswith("  fix:") for ln in lines[finding:first])
    assert all(ln.startswith("  ") for ln in lines[finding + 1:first])
    assert lines[first + 1:first + 9] == [
        "    train.py:14",
        "    -     per_device_train_batch_size=4,",
        "    -     gradient_accumulation_steps=1,",
        "    +     per_device_train_batch_size=1,",
        "    +     gradient_accumulation_steps=4,",
        "    train.py:20 (new)",
        '    +     fsdp="shard_grad_op auto_wrap",',
        "train.py:16:10: PF105" + lines[first + 8][len("train.py:16:10: PF105"):]]
    assert out.count("  edit: the edit under PF102 above") == 2


def test_a_job_that_fits_has_no_fix(tmp_path):
    d = _copy("7b-zero3", tmp_path, "j")
    data = json.loads(run_cli("check", "--format", "json", ".", cwd=d).stdout)
    assert all("fix" not in j and "fit" not in j for j in data["jobs"])
    r = run_cli("check", "--diff", ".", cwd=d)
    assert r.returncode == 0 and r.stdout == ""


def test_fixes_are_searched_only_for_outputs_that_show_them(tmp_path, monkeypatch):
    import preflight
    from preflight.fix import attach

    d = _copy("7b-full-finetune-ddp", tmp_path, "j")
    monkeypatch.chdir(d)
    shown = preflight.check(["."])
    assert shown.jobs[0].fix is not None and shown.jobs[0].fit is not None
    called = []
    monkeypatch.setattr(attach, "attach_fix", lambda *a, **k: called.append(1))
    bare = preflight.check(["."], fixes=False)
    assert called == [] and bare.jobs[0].fix is None and bare.jobs[0].fit is None
    # the same findings either way
    assert [x.code for x in bare.jobs[0].diagnostics] == [x.code for x in shown.jobs[0].diagnostics]
    # formats without a fix still report the findings; json still carries it
    gh = run_cli("check", "--format", "github", "--exit-zero", ".", cwd=d).stdout
    assert "PF101" in gh
    data = json.loads(run_cli("check", "--format", "json", "--exit-zero", ".", cwd=d).stdout)
    assert data["jobs"][0]["fix"]["diff"]
