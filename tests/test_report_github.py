"""`--format github`: workflow commands with the Actions runner's escaping."""

from preflight.result import JobResult, Report
from preflight.plan import Diagnostic, Job
from preflight.report import render
from preflight.report.github import command, escape_data, escape_property
from tests.report_samples import multi_job_report, write_files


def test_one_command_per_finding_by_severity(tmp_path, monkeypatch):
    write_files(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    out = render(multi_job_report(str(tmp_path)), "github")
    assert out.splitlines() == [
        "::warning file=jobs/ds_config.json,line=4,col=3,title=PF401::bf16 is enabled here and by the launcher",
        "::error file=missing.py,title=PF001::no such file or directory",
        "::error file=train.py,line=5,col=13,title=PF101::model states need 104.3 GiB per GPU "
        "(16 B/param × 7.00B); H100-80GB has 79.6 GiB%0Afix: shard them: ZeRO-3 over 8 GPUs needs 13.0 GiB per GPU",
    ]


def test_absolute_paths_become_repo_relative(tmp_path):
    write_files(str(tmp_path))
    rep = multi_job_report(str(tmp_path), path_prefix=str(tmp_path))
    out = render(rep, "github", root=str(tmp_path))
    assert "file=train.py,line=5,col=13," in out
    assert str(tmp_path) not in out


def test_escaping_of_percent_colon_comma_and_newlines_in_message_and_path(tmp_path):
    odd = "cfg 100%,a:b\r\nc.json"
    d = Diagnostic(code="PF005", name="malformed-config", severity="info",
                   message="50% of 2:1, then\r\nline two\nline three", path=odd, line=2, col=7)
    rep = Report(jobs=[JobResult(job=Job(entry=odd, files=[odd]), diagnostics=[d])])
    out = render(rep, "github", root=str(tmp_path.parent / "elsewhere"))
    assert out == ("::notice file=cfg 100%25%2Ca%3Ab%0D%0Ac.json,line=2,col=7,title=PF005::"
                   "50%25 of 2:1, then%0D%0Aline two%0Aline three\n")


def test_escape_functions_escape_percent_first():
    assert escape_data("%0A\n") == "%250A%0A"
    assert escape_property("a%3Ab:c,d") == "a%253Ab%3Ac%2Cd"
    assert command("warning", "m", title="t,1") == "::warning title=t%2C1::m"
    # no file: no line or col either (they would annotate nothing)
    assert command("error", "m", line=3, col=1) == "::error::m"
