"""Terminal writers: concise lines, text with its ledger bars, colour rules, progress."""

import io
import json
import re

import pytest

from preflight.physics.result import Estimate, Ledger, LedgerLine, Walls
from preflight.result import JobResult, Report
from preflight.plan import Job
from preflight.progress import progress
from preflight.report import FORMATS, render
from preflight.report.common import verdict
from tests.report_samples import H100, multi_job_report, plan, write_files

ANSI = re.compile(r"\033\[[0-9;]*m")


@pytest.fixture
def report(tmp_path, monkeypatch):
    write_files(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NO_COLOR", raising=False)
    return multi_job_report(str(tmp_path))


class _Pipe(io.StringIO):
    encoding = "utf-8"


class _Tty(_Pipe):
    def isatty(self):
        return True


def test_concise_is_one_line_per_finding_in_file_order(report):
    assert render(report, "concise") == (
        "jobs/ds_config.json:4:3: PF401 bf16 is enabled here and by the launcher\n"
        "missing.py: PF001 no such file or directory\n"
        "train.py:5:13: PF101 model states need 104.3 GiB per GPU (16 B/param × 7.00B); "
        "H100-80GB has 79.6 GiB\n"
        "Found 3 findings (2 errors, 1 warning) in 2 jobs.\n")


def test_concise_of_a_clean_report_is_one_summary_line():
    assert render(Report(), "concise") == "All checks passed (0 jobs).\n"
    assert render(Report(), "concise", quiet=True) == ""


def test_json_is_the_report_contract(report):
    assert json.loads(render(report, "json")) == report.to_json()


def test_text_lists_findings_fix_and_a_verdict_per_job(report):
    out = render(report, "text", color=False)
    assert not ANSI.search(out)
    lines = out.splitlines()
    assert lines[0] == "jobs/ds_config.json:4:3: PF401 bf16 is enabled here and by the launcher [precision-set-twice]"
    assert "  fix: shard them: ZeRO-3 over 8 GPUs needs 13.0 GiB per GPU" in lines
    assert "  see: jobs/ds_config.json:3:25" in lines
    assert "train.py (+1 file) on H100-80GB, 2 findings" in lines
    over = lines[lines.index("train.py (+1 file) on H100-80GB, 2 findings") + 1]
    # 149,580,963,840 B of 85,520,809,984 B: the bar is full and flags the overflow
    assert over == "  [" + "█" * 29 + "▶] does not fit: 139.3 GiB per GPU, 175 % of 79.6 GiB on H100-80GB"
    fits = lines[lines.index("jobs/small.py on H100-80GB") + 1]
    # 1.0 GiB of 79.6 GiB rounds to no cell; one is drawn; │ marks the 20 % headroom (cell 24)
    assert fits == ("  [█" + "░" * 23 + "│" + "░" * 5 + "] fits: 1.0 GiB per GPU, 1 % of 79.6 GiB on "
                    "H100-80GB, 20% headroom kept")
    assert lines[-1] == "Found 3 findings (2 errors, 1 warning) in 2 jobs."


def test_text_show_ledger_prints_every_line_with_its_formula(report):
    out = render(report, "text", color=False, show_ledger=True)
    assert re.search(r"optimizer state \(AdamW m, v fp32\)\s+52\.2 GiB  = 8 B × 7,000,000,000", out)
    assert re.search(r"CUDA context\s+1\.0 GiB  = 1 GiB\n\s+\(assumed\)\n", out)
    assert re.search(r"parameters \(fp32\)\s+2\.3 MiB", out)
    # the peak is every line but the headroom margin (a reserve, not an allocation)
    assert re.search(r"\n    predicted peak\s+139\.3 GiB\n    total with the margin\s+155\.2 GiB\n"
                     r"    capacity\s+79\.6 GiB\n", out)
    assert "= 8 B" not in render(report, "text", color=False)


def _job(*lines, cap=100 * 2**30):
    led = Ledger(capacity_bytes=cap, headroom=0.2, lines=list(lines))
    return JobResult(job=Job(entry="t.py", files=["t.py"], plan=plan()),
                     estimate=Estimate(ledger=led, walls=Walls()))


def _margin(cap=100 * 2**30):
    return LedgerLine(key="overhead", label="margin", bytes=cap // 5, margin=True)


def test_verdicts_follow_the_estimator_and_count_the_margin_apart():
    tight = verdict(_job(LedgerLine(key="params", label="p", bytes=90 * 2**30), _margin()))
    assert (tight.status, tight.peak) == ("tight", 90 * 2**30)
    assert tight.text == ("tight: 90.0 GiB per GPU, 90 % of 100.0 GiB on H100-80GB, "
                          "inside the 20% headroom margin")
    fits = verdict(_job(LedgerLine(key="params", label="p", bytes=80 * 2**30), _margin()))
    assert fits.status == "fits" and fits.fraction == 0.8
    over = verdict(_job(LedgerLine(key="params", label="p", bytes=101 * 2**30), _margin()))
    assert over.status == "over"
    # unknown lines, but the known ones alone are over capacity: a lower bound that does not fit
    lower = verdict(_job(LedgerLine(key="params", label="p", bytes=120 * 2**30),
                         LedgerLine(key="activations", label="a", bytes=None), _margin()))
    assert (lower.status, lower.at_least) == ("over", True)
    assert lower.text.startswith("does not fit: at least 120.0 GiB per GPU (some lines unknown)")
    nocap = verdict(_job(LedgerLine(key="params", label="p", bytes=2**30), cap=None))
    assert (nocap.status, nocap.text) == ("unknown", "1.0 GiB per GPU; capacity unknown (no GPU given)")


def test_unknown_total_says_what_is_missing():
    led = Ledger(capacity_bytes=H100, unknown=["seq_len"],
                 lines=[LedgerLine(key="activations", label="a", bytes=None, note="seq_len unknown")])
    jr = JobResult(job=Job(entry="t.py", files=["t.py"], plan=plan()),
                   estimate=Estimate(ledger=led, walls=Walls()))
    out = render(Report(jobs=[jr]), "text", color=False)
    assert "peak per GPU unknown; missing: seq_len" in out
    assert out.splitlines()[-1] == "All checks passed (1 job)."


def test_colour_only_on_a_tty_and_never_under_no_color(report, monkeypatch):
    tty = _Tty()
    monkeypatch.setattr("sys.stdout", tty)
    coloured = render(report, "text")
    assert "\033[31m\033[1mPF101\033[0m" in coloured          # errors in bold red
    assert "\033[33m\033[1mPF401\033[0m" in coloured          # warnings in bold yellow
    assert ANSI.sub("", coloured) == render(report, "text", color=False)
    monkeypatch.setenv("NO_COLOR", "1")
    assert not ANSI.search(render(report, "text"))
    monkeypatch.delenv("NO_COLOR")
    monkeypatch.setattr("sys.stdout", _Pipe())               # a pipe or a file
    assert not ANSI.search(render(report, "text"))
    assert render(report, "text", color=True) == coloured    # an explicit choice wins


def test_ascii_bar_when_the_terminal_cannot_print_blocks(report, monkeypatch):
    class Latin1(io.StringIO):
        encoding = "latin-1"
    monkeypatch.setattr("sys.stdout", Latin1())
    out = render(report, "text", color=False)
    assert "  [" + "#" * 29 + ">] does not fit" in out


def test_unknown_format_is_refused(report):
    assert "markdown" in FORMATS
    with pytest.raises(ValueError, match="unknown report format 'xml'"):
        render(report, "xml")


def test_progress_draws_on_a_tty_and_erases_itself():
    tty = _Tty()
    items = list(progress(range(25), 25, stream=tty, interval=0))
    assert items == list(range(25))
    drawn = tty.getvalue()
    assert "\rpreflight: checking 0/25" in drawn and "\rpreflight: checking 24/25" in drawn
    assert drawn.endswith("\r" + " " * len("preflight: checking 24/25") + "\r")


def test_progress_is_silent_off_a_tty_or_for_few_items(monkeypatch):
    pipe = io.StringIO()
    assert list(progress(range(50), 50, stream=pipe)) == list(range(50))
    assert pipe.getvalue() == ""
    tty = _Tty()
    assert list(progress(range(3), 3, stream=tty)) == [0, 1, 2]
    assert tty.getvalue() == ""
    monkeypatch.setenv("PREFLIGHT_NO_PROGRESS", "1")
    assert list(progress(range(30), 30, stream=tty)) == list(range(30))
    assert tty.getvalue() == ""


def test_locations_without_a_column_or_line_are_not_invented():
    from preflight.plan import Diagnostic
    rep = Report(diagnostics=[
        Diagnostic(code="PF005", message="bad TOML", path="pyproject.toml", line=7, col=0),
        Diagnostic(code="PF001", message="cannot read", path="gone.sh"),
        Diagnostic(code="PF003", message="no file at all")])
    assert render(rep, "concise") == ("preflight: PF003 no file at all\n"
                                      "gone.sh: PF001 cannot read\n"
                                      "pyproject.toml:7: PF005 bad TOML\n"
                                      "Found 3 findings (3 errors) in 0 jobs.\n")
