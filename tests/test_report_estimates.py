"""The writers on ledgers from the real estimator: verdicts and sums agree with it."""

import pytest

from preflight import physics as estimate_mod
from preflight.result import JobResult, Report
from preflight.plan import Job, TrainingPlan
from preflight.report import render
from preflight.report.common import verdict

BASE = dict(params=7_000_000_000, optimizer="adamw", mixed_precision="bf16", param_dtype="bf16",
            seq_len=2048, layers=32, hidden=4096, heads=32, vocab=32000, world_size=8,
            gpu="H100-80GB")


def job(entry, **over):
    plan = TrainingPlan.from_values({**BASE, **over})
    return JobResult(job=Job(entry=entry, files=[entry], plan=plan),
                     estimate=estimate_mod.estimate(plan))


@pytest.fixture(scope="module")
def report():
    return Report(jobs=[job("ddp.py", micro_batch=4, zero_stage=0),
                        job("zero3.py", micro_batch=1, zero_stage=3, activation_checkpointing="full")])


def test_verdicts_are_the_estimators(report):
    mapping = {"fits": "fits", "tight": "tight", "does not fit": "over", "unknown": "unknown"}
    got = [(mapping[j.estimate.ledger.verdict()], verdict(j).status) for j in report.jobs]
    assert [g[0] for g in got] == [g[1] for g in got]
    assert [g[1] for g in got] == ["over", "fits"]       # 16 B/param × 7B under DDP; ZeRO-3 over 8


def test_markdown_sums_are_the_ledgers(report):
    text = render(report, "markdown")
    for j in report.jobs:
        led = j.estimate.ledger
        assert f"| **predicted peak** | **{led.peak / 2**30:,.2f}** | {led.peak:,} |" in text
        assert f"| **total with the margin** | **{led.total / 2**30:,.2f}** | {led.total:,} |" in text
    assert "### ❌ `ddp.py`" in text and "### ✅ `zero3.py`" in text


def test_text_bar_per_job(report):
    out = render(report, "text", color=False)
    lines = out.splitlines()
    ddp = lines[lines.index("ddp.py on H100-SXM5-80GB") + 1]
    assert ddp.startswith("  [" + "█" * 29 + "▶] does not fit: ")
    z3 = lines[lines.index("zero3.py on H100-SXM5-80GB") + 1]
    peak = report.jobs[1].estimate.ledger.peak
    cap = report.jobs[1].estimate.ledger.capacity_bytes
    filled = round(peak / cap * 30)
    assert z3.startswith("  [" + "█" * filled + "░")
    assert f"fits: {peak / 2**30:.1f} GiB per GPU" in z3
