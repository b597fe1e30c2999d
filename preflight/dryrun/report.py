"""Measured vs predicted: rows with ratios, verdicts on static findings, text output.

No torch here: works on a `DryrunResult` (or its JSON) and an `Estimate`.
"""

from __future__ import annotations

from typing import Any, Iterable, Optional

from pydantic import BaseModel

from preflight.dryrun.result import DryrunResult, RankLedger

#: (row item, estimator ledger key, how the measured value is taken from a RankLedger)
_ITEMS = (
    ("params", "params", lambda r: r.params),
    ("grads", "grads", lambda r: r.grads),
    ("optimizer", "optimizer", lambda r: r.optimizer),
    ("master", "master", lambda r: r.master),
    # the estimator's activation lines include the logits the loss keeps and the autocast
    # weight copies
    ("activations", "activations",
     lambda r: r.activations + r.loss_activations + r.autocast_copies),
)


class CompareRow(BaseModel):
    item: str
    predicted: Optional[int] = None
    measured: Optional[int] = None
    ratio: Optional[float] = None       # measured / predicted
    rank: int = 0

    def as_tuple(self) -> tuple[str, Optional[int], Optional[int], Optional[float]]:
        return (self.item, self.predicted, self.measured, self.ratio)


def _ratio(pred: Optional[int], meas: Optional[int]) -> Optional[float]:
    if pred is None or meas is None:
        return None
    if pred == 0:
        return 1.0 if meas == 0 else None
    return round(meas / pred, 4)


def _ledger_of(estimate: Any):
    return getattr(estimate, "ledger", estimate)


def compare(result: DryrunResult, estimate: Any, rank: Optional[int] = None) -> list[CompareRow]:
    """Item by item, predicted (per GPU, from `estimate.ledger`) against measured (each rank,
    or only `rank`). Rows: params, grads, optimizer, master, activations, states, and on
    CUDA peak (measured peak allocated against the predicted total) and, where the
    process's device memory was read, process (against the predicted process tier)."""
    ledger = _ledger_of(estimate)
    rows: list[CompareRow] = []
    for r in result.ranks:
        if rank is not None and r.rank != rank:
            continue
        for item, key, get in _ITEMS:
            pred = ledger.bytes_of(key) if ledger is not None else None
            meas = get(r)
            rows.append(CompareRow(item=item, predicted=pred, measured=meas,
                                   ratio=_ratio(pred, meas), rank=r.rank))
        pred_states = ledger.states_bytes if ledger is not None else None
        meas_states = r.params + r.grads + r.optimizer + r.master
        rows.append(CompareRow(item="states", predicted=pred_states, measured=meas_states,
                               ratio=_ratio(pred_states, meas_states), rank=r.rank))
        if r.peak is not None:
            # the measured peak is allocated memory: the ledger's tensors tier
            pred_total = getattr(ledger, "tensors_peak", None) if ledger is not None else None
            rows.append(CompareRow(item="peak", predicted=pred_total, measured=r.peak,
                                   ratio=_ratio(pred_total, r.peak), rank=r.rank))
        if r.process_peak is not None:
            # what the process held on the device (nvidia-smi): the ledger's process tier
            pred_proc = getattr(ledger, "process_peak", None) if ledger is not None else None
            rows.append(CompareRow(item="process", predicted=pred_proc, measured=r.process_peak,
                                   ratio=_ratio(pred_proc, r.process_peak), rank=r.rank))
    return rows


# ---------------------------------------------------------------- findings

class Verdict(BaseModel):
    code: str
    path: Optional[str] = None
    line: int = 0
    verdict: str            # confirmed | refuted | untested
    reason: str


def _case_of(diag: Any, cases: Optional[dict] = None) -> Optional[str]:
    data = getattr(diag, "data", None) or {}
    case = data.get("case") or (cases or {}).get(getattr(diag, "code", None))
    return str(case).upper() if case else None


def mark_findings(diagnostics: Iterable[Any], result: DryrunResult,
                  capacity_bytes: Optional[int] = None,
                  cases: Optional[dict] = None) -> list[Verdict]:
    """Mark each static finding that predicts a memory outcome confirmed or refuted.

    A finding predicts an outcome when its rule belongs to a diagnosis case — "A" model
    states do not fit, "B" activations do not fit, "C" one layer does not fit — given by
    `cases` ({code: case}, e.g. from the rules' `case` attribute) or by the diagnostic's
    `data["case"]`. Evidence, strongest first:
    - an OOM in the run: the predicted case is confirmed if it matches the phase of the OOM
      (load / step → A, forward / backward → B), refuted if it names the other case;
    - measured bytes against the capacity (the diagnostic's `data["capacity_bytes"]` or the
      argument): states > capacity confirms A, states + activations > capacity confirms B,
      and a measurement that fits refutes the case; these are exact on any device;
    - on CUDA, a completed step whose peak stayed under the capacity refutes A and B.
    Findings without a `case` are `untested` (the run says nothing about them).
    """
    oom = result.oom_case
    out: list[Verdict] = []
    ranks = result.ranks
    for d in diagnostics:
        case = _case_of(d, cases)
        code = getattr(d, "code", "?")
        base = dict(code=code, path=getattr(d, "path", None), line=getattr(d, "line", 0) or 0)
        if case is None:
            out.append(Verdict(**base, verdict="untested",
                               reason="the finding predicts no memory outcome"))
            continue
        if oom:
            ok = oom == case
            out.append(Verdict(**base, verdict="confirmed" if ok else "refuted",
                               reason=f"the run ran out of memory ({_oom_where(ranks)}), "
                                      f"which points at {_CASE_WORDS[oom]}"))
            continue
        cap = (getattr(d, "data", None) or {}).get("capacity_bytes") or capacity_bytes
        if not ranks:
            out.append(Verdict(**base, verdict="untested", reason="the run measured nothing"))
            continue
        r = max(ranks, key=lambda x: x.params + x.grads + x.optimizer + x.master)
        states = r.params + r.grads + r.optimizer + r.master
        need = states + r.activations + r.loss_activations + r.autocast_copies
        if cap:
            if case == "A":
                v = states > cap
                why = f"measured model states {_h(states)} vs capacity {_h(cap)}"
            elif case == "B":
                v = need > cap
                why = (f"measured states + activations {_h(need)} vs capacity {_h(cap)}")
            else:
                out.append(Verdict(**base, verdict="untested",
                                   reason="a single layer or tensor is not measured by the "
                                          "dry run"))
                continue
            out.append(Verdict(**base, verdict="confirmed" if v else "refuted", reason=why))
            continue
        if result.device == "cuda" and result.status == "ok" and case in ("A", "B"):
            out.append(Verdict(**base, verdict="refuted",
                               reason=f"one step completed with peak {_h(r.peak or 0)}"))
            continue
        out.append(Verdict(**base, verdict="untested", reason="no capacity to compare with"))
    return out


#: what each diagnosis case says, in words (the letters stay in the rules' documentation)
_CASE_WORDS = {"A": "the model states", "B": "the activations", "C": "a single layer or tensor"}


def _oom_where(ranks: list[RankLedger]) -> str:
    for r in ranks:
        if r.status == "oom":
            return f"rank {r.rank}, in {r.phase}"
    return "?"


def report_json(result: DryrunResult, estimate: Any = None, diagnostics: Iterable[Any] = (),
                capacity_bytes: Optional[int] = None, cases: Optional[dict] = None) -> dict:
    """The `dryrun` section for the JSON of `check`: the measurement, the rows against the
    prediction, and a verdict per static finding."""
    out = result.to_json()
    if capacity_bytes is None and estimate is not None:
        capacity_bytes = getattr(_ledger_of(estimate), "capacity_bytes", None)
    out["compare"] = [r.model_dump() for r in compare(result, estimate)] \
        if estimate is not None else []
    out["findings"] = [v.model_dump() for v in mark_findings(diagnostics, result,
                                                             capacity_bytes, cases)]
    return out


# ---------------------------------------------------------------- text

def _h(n: Optional[int]) -> str:
    """Bytes for a reader (GiB / MiB / KiB / B)."""
    # here: the instrumented child imports this package and never writes text (a lazy()
    # module would be loaded there anyway, when torch's import walks sys.modules)
    from preflight.units import gib
    return "?" if n is None else gib(n)


_STATUS = {
    "ok": "one optimizer step completed",
    "no_step": "the script ended without an optimizer step",
    "error": "the script failed before its first optimizer step",
    "oom": "out of memory before the first optimizer step completed",
    "timeout": "no optimizer step before the timeout; the job was ended",
    "launch_error": "the job could not be started",
    "killed": "the job was ended by a signal before its first optimizer step",
}

#: the measured items, in report order, with what each is
_MEASURED = (("params", "weights"), ("grads", "gradients"), ("optimizer", "optimizer state"),
             ("master", "master weights"), ("activations", "saved activations"),
             ("loss_activations", "saved by the loss"),
             ("autocast_copies", "autocast weight copies"))
#: lines of the script's output shown after a failure
TAIL_LINES = 15


def _measured_anything(r: RankLedger) -> bool:
    return any(getattr(r, k) for k, _ in _MEASURED)


def _phase_table(r: RankLedger, width: int) -> list[str]:
    """Allocator counters per phase, and the process's device memory where it was read."""
    proc = any(m.process is not None for m in r.memory)
    head = f"  {'phase':<{width}} {'allocated':>12} {'peak':>12} {'reserved':>12}"
    out = [head + (f" {'process':>12} {'process peak':>12}" if proc else "")]
    for m in r.memory:
        row = f"  {m.phase:<{width}} {_h(m.allocated):>12} {_h(m.peak):>12} {_h(m.reserved):>12}"
        if proc:
            row += f" {_h(m.process):>12} {_h(m.process_peak):>12}"
        out.append(row)
    return out


def _process_lines(r: RankLedger) -> list[str]:
    """What the process held on the device (nvidia-smi's figure), how it was read; on a
    CUDA run without a reading, why."""
    if r.process_peak is not None:
        line = (f"  device memory of the process (nvidia-smi): peak {_h(r.process_peak)} "
                f"({r.process_peak:,} B), read by {r.process_source}")
        if r.process_baseline is not None:
            line += f" (device used before CUDA was initialised: {r.process_baseline:,} B)"
        return [line]
    if r.device == "cuda":
        return [f"  device memory of the process: not measured — {r.process_unavailable}"]
    return []


def format_text(result: DryrunResult, estimate: Any = None,
                diagnostics: Iterable[Any] = (), cases: Optional[dict] = None) -> str:
    """The dry run for a terminal. After a step that completed: predicted against measured,
    item by item, in human units. After a failure: what went wrong, where in the script
    (its traceback), the tail of its output, and only what was measured before it."""
    lines = []
    head = f"dry run of {result.script}"
    if result.args:
        head += " " + " ".join(result.args)
    lines.append(head)
    label = result.device + (" (fake tensors: an estimate, not a measurement)"
                             if result.estimate else "")
    wall = f"; wall: {result.wall_s:.1f} s" if result.wall_s is not None else ""
    lines.append(f"  device: {label}; processes: {result.nproc_per_node}{wall}")
    lines.append(f"  result: {_STATUS.get(result.status, result.status)}")
    if result.message:
        lines.append(f"  error: {result.message}")
    if result.oom_case:
        lines.append(f"  out of memory in {_oom_where(result.ranks).split(', in ')[-1]}: "
                     f"{_CASE_WORDS[result.oom_case]} do not fit")
    failed = result.status != "ok"
    rows = compare(result, estimate) if estimate is not None and not failed else None
    for r in result.ranks:
        lines.append("")
        lines.append(f"rank {r.rank}/{r.world_size}  ({', '.join(r.optimizers) or 'no optimizer'};"
                     f" {r.param_count:,} parameters, {r.trainable_params:,} trainable;"
                     f" {r.forwards} forward(s) before the step)")
        if r.traceback:
            lines.append("  where it failed (innermost last):")
            lines += [f"    {t}" for t in r.traceback]
        width = 18
        if failed and not _measured_anything(r):
            lines.append("  nothing was measured before the failure")
        elif failed or rows is None:
            what = "measured before the failure" if failed else "measured"
            lines.append(f"  {'item':<{width}} {what:>16}")
            for key, _ in _MEASURED:
                v = getattr(r, key)
                if failed and not v:
                    continue
                lines.append(f"  {key:<{width}} {_h(v):>16}  ({v:,} B)")
        else:
            lines.append(f"  {'item':<{width}} {'predicted':>12} {'measured':>12} {'ratio':>7}")
            for row in rows:
                if row.rank != r.rank:
                    continue
                ratio = "?" if row.ratio is None else f"{row.ratio:.3f}"
                lines.append(f"  {row.item:<{width}} {_h(row.predicted):>12} "
                             f"{_h(row.measured):>12} {ratio:>7}")
            lines.append(f"  (activations measured = saved in the forward {_h(r.activations)}"
                         f" + by the loss {_h(r.loss_activations)}"
                         f" + autocast weight copies {_h(r.autocast_copies)})")
        if r.memory and any(m.allocated is not None for m in r.memory):
            lines += _phase_table(r, width)
        lines += _process_lines(r)
        if r.max_rss:
            lines.append(f"  largest resident memory of the process: {_h(r.max_rss)}")
        for n in r.notes:
            lines.append(f"  note: {n}")
    if failed and result.stderr_tail.strip():
        tail = result.stderr_tail.rstrip().splitlines()[-TAIL_LINES:]
        lines.append("")
        lines.append(f"last {len(tail)} lines of the script's output:")
        lines += [f"  | {t}" for t in tail]
    cap = getattr(_ledger_of(estimate), "capacity_bytes", None) if estimate is not None else None
    verdicts = [v for v in mark_findings(diagnostics, result, cap, cases)
                if v.verdict != "untested"]
    if verdicts:
        lines.append("")
        lines.append("static findings:")
        for v in verdicts:
            lines.append(f"  {v.path}:{v.line}: {v.code} {v.verdict} — {v.reason}")
    return "\n".join(lines)
