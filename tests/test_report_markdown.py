"""`--format markdown`: the PR comment, read back with a CommonMark parser."""

import os
import subprocess

import pytest

from preflight.report import DiffBaseError, filter_changed, render
from preflight.report.markdown import MARKER
from tests.report_samples import multi_job_report, write_files

markdown_it = pytest.importorskip("markdown_it")

BLOB_ENV = ("GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "GITHUB_SHA", "PREFLIGHT_LINK_SHA")


@pytest.fixture
def repo(tmp_path, monkeypatch):
    write_files(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    for k in BLOB_ENV:
        monkeypatch.delenv(k, raising=False)
    return tmp_path


def parse(text):
    md = markdown_it.MarkdownIt("commonmark").enable("table")   # GitHub's tables on CommonMark
    return md.parse(text)


def inline_text(tokens, i):
    """The text of the inline token after tokens[i] (a *_open)."""
    return "".join(c.content for c in tokens[i + 1].children or [])


def tables(tokens):
    out, rows, row = [], None, None
    for t in tokens:
        if t.type == "table_open":
            rows = []
        elif t.type == "tr_open":
            row = []
        elif t.type == "inline" and row is not None:
            row.append("".join(c.content for c in t.children))
        elif t.type == "tr_close":
            rows.append(row)
            row = None
        elif t.type == "table_close":
            out.append(rows)
    return out


def links(tokens):
    found = []
    for t in tokens:
        for i, c in enumerate(t.children or []):
            if c.type == "link_open":
                found.append((t.children[i + 1].content, c.attrs["href"]))
    return found


def test_multi_job_comment_structure(repo):
    text = render(multi_job_report(str(repo)), "markdown")
    tokens = parse(text)
    # the sticky-comment marker is the first block, an HTML comment that renders as nothing
    assert tokens[0].type == "html_block" and tokens[0].content.strip() == MARKER
    headings = [inline_text(tokens, i) for i, t in enumerate(tokens) if t.type == "heading_open"]
    assert headings == ["preflight: 2 jobs, 3 findings (2 errors, 1 warning)",
                        "❌ train.py", "✅ jobs/small.py", "Other findings"]
    # each job heading is followed by its verdict, in bold, and its count of findings
    after = [tokens[i + 4] for i, t in enumerate(tokens) if t.type == "heading_open" and t.tag == "h3"]
    assert [[c.type for c in p.children if c.content or c.type != "text"][:3] for p in after[:2]] == [["strong_open", "text", "strong_close"]] * 2
    assert ["".join(c.content for c in p.children) for p in after[:2]] == [
        "does not fit: 139.3 GiB per GPU, 175 % of 79.6 GiB on H100-80GB · 2 findings (1 error, 1 warning)",
        "fits: 1.0 GiB per GPU, 1 % of 79.6 GiB on H100-80GB, 20% headroom kept · no findings"]

    ledger, formulas, small, _ = tables(tokens)
    assert ledger[0] == ["per GPU", "GiB", "bytes", "of capacity"]
    assert ledger[1:] == [
        ["parameters", "13.04", "14,000,000,000", "16.4 %"],
        ["gradients", "13.04", "14,000,000,000", "16.4 %"],
        ["optimizer state", "52.15", "56,000,000,000", "65.5 %"],
        ["master weights", "26.08", "28,000,000,000", "32.7 %"],
        ["activations", "34.00", "36,507,222,016", "42.7 %"],
        ["runtime overhead", "1.00", "1,073,741,824", "1.3 %"],
        ["predicted peak", "139.31", "149,580,963,840", "174.9 %"],
        ["headroom margin (20%)", "15.93", "17,104,161,996", "20.0 %"],
        ["total with the margin", "155.24", "166,685,125,836", "194.9 %"],
        ["capacity (H100-80GB)", "79.65", "85,520,809,984", "100.0 %"],
    ]
    assert formulas[3] == ["optimizer state (AdamW m, v fp32)", "56,000,000,000", "8 B × 7,000,000,000", ""]
    assert small[-4] == ["predicted peak", "1.00", "1,078,466,560", "1.3 %"]

    fences = [t for t in tokens if t.type == "fence"]
    assert [f.info for f in fences] == ["mermaid", "mermaid"]
    big = fences[0].content.splitlines()
    assert big[0] == "pie showData title per-GPU memory, train.py (GiB)"
    assert big[1:] == ['    "parameters" : 13.04', '    "gradients" : 13.04', '    "optimizer state" : 52.15',
                       '    "master weights" : 26.08', '    "activations" : 34.00',
                       '    "runtime overhead" : 1.00', '    "headroom margin" : 15.93']
    # the job that fits shows its free memory; slices too small to see are left out
    assert fences[1].content.splitlines()[1:] == ['    "runtime overhead" : 1.00',
                                                  '    "headroom margin" : 15.93', '    "free" : 62.71']

    assert links(tokens) == [("jobs/ds_config.json:4", "jobs/ds_config.json#L4"),
                             ("train.py:5", "train.py#L5"),
                             ("missing.py", "missing.py")]
    # message text arrives intact (escaped, not interpreted)
    para = [t for t in tokens if t.type == "inline" and "PF101" in t.content][0]
    rendered = markdown_it.MarkdownIt("commonmark").renderInline(para.content)
    assert "model states need 104.3 GiB per GPU (16 B/param × 7.00B); H100-80GB has 79.6 GiB" in rendered
    assert "<em>fix:</em> shard them: ZeRO-3 over 8 GPUs needs 13.0 GiB per GPU" in rendered


def test_links_are_absolute_blob_links_in_github_actions(repo, monkeypatch):
    monkeypatch.setenv("GITHUB_SERVER_URL", "https://github.com")
    monkeypatch.setenv("GITHUB_REPOSITORY", "acme/llm")
    monkeypatch.setenv("GITHUB_SHA", "0123abc")
    hrefs = [h for _, h in links(parse(render(multi_job_report(str(repo)), "markdown")))]
    assert hrefs[1] == "https://github.com/acme/llm/blob/0123abc/train.py#L5"
    monkeypatch.setenv("PREFLIGHT_LINK_SHA", "fedcba9")        # the PR head, not the merge commit
    hrefs = [h for _, h in links(parse(render(multi_job_report(str(repo)), "markdown")))]
    assert hrefs[1] == "https://github.com/acme/llm/blob/fedcba9/train.py#L5"


def test_markup_in_messages_cannot_break_the_comment(repo):
    rep = multi_job_report(str(repo), message="a | b <script>x</script> *not bold* [x](http://e.vil)\n# h")
    tokens = parse(render(rep, "markdown"))
    para = [t for t in tokens if t.type == "inline" and "PF101" in t.content][0]
    kinds = {c.type for c in para.children}
    assert "html_inline" not in kinds
    assert [c.type for c in para.children].count("em_open") == 1       # only *fix:*
    assert [c.type for c in para.children].count("link_open") == 1     # only the line link
    assert "a | b <script>x</script> *not bold* [x](http://e.vil) # h" in "".join(
        c.content for c in para.children if c.type == "text")
    assert [t.type for t in tokens].count("heading_open") == 4


def git(cwd, *args):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                   env=dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@e",
                            GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@e"))


def test_diff_base_keeps_only_touched_jobs(repo):
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "base")
    git(repo, "checkout", "-qb", "feature")
    with open(repo / "jobs" / "ds_config.json", "a") as fh:      # a config of the 7B job
        fh.write("\n")
    git(repo, "commit", "-qam", "touch the config")
    rep = multi_job_report(str(repo))
    kept = filter_changed(rep, "main", str(repo))
    assert [j.job.entry for j in kept.jobs] == ["train.py"]
    assert kept.diagnostics == []              # missing.py did not change
    text = render(rep, "markdown", diff_base="main", root=str(repo))
    assert "Jobs touched since `main`." in text
    assert "jobs/small.py" not in text and "### ❌ `train.py`" in text
    # absolute job paths and a root below the top level resolve the same way
    rep_abs = multi_job_report(str(repo), path_prefix=str(repo))
    assert [j.job.entry for j in filter_changed(rep_abs, "main", str(repo / "jobs")).jobs] == \
        [str(repo / "train.py")]
    # nothing changed since HEAD: no jobs, and the comment says so
    empty = render(rep, "markdown", diff_base="HEAD", root=str(repo))
    assert "No training jobs among the changed files." in empty


def test_diff_base_errors_are_reported(repo):
    with pytest.raises(DiffBaseError, match="not a git repository|unknown revision|bad revision"):
        filter_changed(multi_job_report(str(repo)), "main", str(repo))
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "base")
    with pytest.raises(DiffBaseError, match="no-such-ref"):
        filter_changed(multi_job_report(str(repo)), "no-such-ref", str(repo))


def test_a_huge_report_still_fits_in_one_github_comment(repo):
    rep = multi_job_report(str(repo))
    d = rep.jobs[0].diagnostics[0]
    rep.jobs[0].diagnostics = [d.model_copy(update={"line": i, "message": d.message + " " + "x" * 300})
                               for i in range(1, 400)]
    text = render(rep, "markdown")
    assert len(text) <= 65536
    shown = text.count("**PF101**")
    assert 5 <= shown < 399
    assert f"- … and {399 - shown} more (see the check's annotations)" in text
    assert text.startswith(MARKER)
