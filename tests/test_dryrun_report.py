"""Measured vs predicted rows, verdicts on static findings, text and JSON output — on
constructed results (no torch needed)."""
from preflight.dryrun import DryrunResult, RankLedger, compare, format_text, mark_findings
from preflight.dryrun.result import PhaseMemory
from preflight.physics.result import Estimate, Ledger, LedgerLine, Walls
from preflight.plan import Diagnostic

N = 1_000_000


def est(**b):
    lines = [LedgerLine(key=k, label=k, bytes=v) for k, v in b.items()]
    return Estimate(ledger=Ledger(lines=lines, capacity_bytes=80 * 10**9), walls=Walls())


def result(status="ok", phase="step", **kw):
    r = RankLedger(params=2 * N, grads=2 * N, optimizer=8 * N + 4 * 10, master=4 * N,
                   activations=3 * N, autocast_copies=N, status=status, phase=phase, **kw)
    return DryrunResult(script="train.py", device="cpu", ranks=[r], status=status)


def test_compare_rows_item_by_item_with_ratios():
    rows = compare(result(), est(params=2 * N, grads=2 * N, optimizer=8 * N, master=4 * N,
                                 activations=5 * N))
    got = {r.item: r.as_tuple() for r in rows}
    assert got["params"] == ("params", 2 * N, 2 * N, 1.0)
    assert got["optimizer"] == ("optimizer", 8 * N, 8 * N + 40, round((8 * N + 40) / (8 * N), 4))
    # activations measured = saved for backward + autocast weight copies
    assert got["activations"] == ("activations", 5 * N, 4 * N, 0.8)
    assert got["states"][1:3] == (16 * N, 16 * N + 40)
    assert "peak" not in got          # CPU: no allocator peak


def test_compare_peak_on_cuda():
    r = result()
    r.ranks[0].memory = [PhaseMemory(phase="forward", allocated=1, peak=30 * N, reserved=2),
                         PhaseMemory(phase="step", allocated=1, peak=25 * N, reserved=2)]
    rows = compare(r, est(params=2 * N, activations=18 * N))
    peak, = [x for x in rows if x.item == "peak"]
    assert (peak.predicted, peak.measured, peak.ratio) == (20 * N, 30 * N, 1.5)


def diag(code, case, cap=None):
    data = {"case": case} if case else {}
    if cap:
        data["capacity_bytes"] = cap
    return Diagnostic(code=code, message="m", path="train.py", line=3, data=data)


def test_findings_confirmed_or_refuted_by_measured_bytes():
    r = result()                      # states 16N + 40, activations + copies 4N
    v = mark_findings([diag("PF101", "A", cap=15 * N), diag("PF102", "A", cap=17 * N),
                       diag("PF103", "B", cap=19 * N), diag("PF104", "B", cap=21 * N),
                       diag("PF105", None)], r)
    assert [x.verdict for x in v] == ["confirmed", "refuted", "confirmed", "refuted",
                                      "untested"]


def test_oom_confirms_matching_case_only():
    r = result(status="oom", phase="backward")
    assert r.oom_case == "B"
    v = mark_findings([diag("PF110", "B"), diag("PF111", "A")], r)
    assert [x.verdict for x in v] == ["confirmed", "refuted"]
    assert "points at the activations" in v[0].reason and "case" not in v[0].reason
    assert result(status="oom", phase="load").oom_case == "A"
    assert result(status="oom", phase="step").oom_case == "A"


def test_text_and_json():
    r = result()
    text = format_text(r, est(params=2 * N, activations=5 * N))
    assert "one optimizer step completed" in text
    assert "1.9 MiB" in text and "0.800" in text          # 2,000,000 B; ratio 4N / 5N
    j = r.to_json()
    assert j["ranks"][0]["optimizer"] == 8 * N + 40 and j["oom_case"] is None
    fake = DryrunResult(script="t.py", device="fake", estimate=True, ranks=[RankLedger()])
    assert "an estimate" in format_text(fake)


def test_report_json_section_for_check():
    from preflight.dryrun import report_json
    j = report_json(result(), est(params=2 * N), [diag("PF101", "A")])
    assert j["compare"][0] == {"item": "params", "predicted": 2 * N, "measured": 2 * N,
                               "ratio": 1.0, "rank": 0}
    # capacity from the estimate (80 GB): 16 MB of states fit → case A refuted
    assert j["findings"][0]["verdict"] == "refuted"


def test_case_from_the_rules_mapping():
    d = Diagnostic(code="PF101", message="m", path="t.py", line=1,
                   data={"states_bytes": 20 * N, "capacity_bytes": 15 * N})
    v, = mark_findings([d], result(), cases={"PF101": "A"})
    assert v.verdict == "confirmed"       # measured states 16N + 40 > 15N
    v, = mark_findings([d], result())
    assert v.verdict == "untested"


def test_a_failure_shows_where_and_the_output_tail_not_a_table_of_zeros():
    r = RankLedger(status="error", phase="forward", error="RuntimeError: shapes differ",
                   traceback=["train.py:12 in train_step: return model(x).sum()"])
    res = DryrunResult(script="train.py", device="cpu", ranks=[r], status="error",
                       message="rank 0: RuntimeError: shapes differ",
                       stderr_tail="".join(f"line {i}\n" for i in range(40)))
    text = format_text(res, est(params=2 * N, activations=5 * N))
    assert "  error: rank 0: RuntimeError: shapes differ" in text
    assert "    train.py:12 in train_step: return model(x).sum()" in text
    assert "nothing was measured before the failure" in text
    assert "predicted" not in text and "ratio" not in text and " 0 B" not in text
    tail = text.split("last 15 lines of the script's output:\n")[1].splitlines()
    assert tail[:15] == [f"  | line {i}" for i in range(25, 40)]


def test_a_failure_after_some_measurements_lists_only_those():
    r = RankLedger(status="error", phase="step", params=4000, grads=4000, error="boom")
    res = DryrunResult(script="t.py", device="cpu", ranks=[r], status="error")
    text = format_text(res)
    assert "measured before the failure" in text
    assert "params                      3.9 KiB" in text
    assert "optimizer" not in text.split("measured before the failure")[1]
