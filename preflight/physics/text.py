"""The ledger and walls as a plain-text table (`preflight estimate`, `check --show-ledger`).

Bytes are always shown in both GB (10^9) and GiB (2^30); each line is followed by its
formula with the numbers substituted; notes become numbered footnotes.
"""

from __future__ import annotations

from typing import Optional

from preflight.physics.result import Estimate, LedgerLine
from preflight.units import GB, GiB, MiB, fmt_bytes, fmt_seconds

_W = 58     # width of the label column


def _num(n: Optional[int]) -> str:
    if n is None:
        return f"{'unknown':>10}  {'':>11}"
    return f"{n / GB:>7,.2f} GB  {n / GiB:>7,.2f} GiB"


def _row(key: str, label: str, n: Optional[int], mark: str = "") -> str:
    lab = label + mark
    if len(lab) > _W:
        return f"  {key:<12}{lab}\n  {'':<12}{'':<{_W}}{_num(n)}"
    return f"  {key:<12}{lab:<{_W}}{_num(n)}"


def render(est: Estimate, title: str = "") -> str:
    led, w = est.ledger, est.walls
    out: list[str] = []
    notes: list[str] = []

    def mark(ln: LedgerLine) -> str:
        if not ln.note:
            return ""
        if ln.note not in notes:
            notes.append(ln.note)
        return f" [{notes.index(ln.note) + 1}]"

    cap = led.capacity_bytes
    head = "per-GPU memory ledger"
    if led.gpu:
        head += f" — {led.gpu}"
    if title:
        head = f"{title}: {head}"
    out.append(head)
    if cap is not None:
        mib = f"{cap // MiB:,} MiB = " if cap % MiB == 0 else ""
        out.append(f"capacity: {mib}{fmt_bytes(cap)} usable")
    out.append("")
    out.append(f"  {'item':<12}{'what':<{_W}}{'GB':>10}  {'GiB':>11}")
    for ln in led.lines:
        out.append(_row(ln.key, ln.label, ln.bytes, mark(ln)))
        if ln.formula:
            out.append(f"  {'':<12}  = {ln.formula}")
    out.append("  " + "─" * (12 + _W + 23))
    states = led.states_bytes
    out.append(_row("states", "model states (params + grads + optimizer + master)", states))
    if led.phases:
        out.append("")
        out.append("  phases of a step (the lines alive together; the largest sets the peak):")
        top = led.peak_phase
        for ph in led.phases:
            out.append(_row("phase", f"{ph.name}{'  ← peak' if ph.name == top else ''}",
                            ph.bytes))
            out.append(f"  {'':<12}  = {ph.formula}")
        for b in led.behaviour:
            out.append(f"  {'':<12}assumed: {b}")
        out.append("")
    if led.stages:
        out.append(f"  pipeline stages (1F1B; the ledger above is stage {led.busiest_stage}'s, "
                   "the busiest):")
        for st in led.stages:
            mark_ = "  ← busiest" if st.index == led.busiest_stage else ""
            at_ = f" at {st.peak_phase}" if st.peak_phase else ""
            out.append(_row("stage", f"{st.index}: {st.layers} layers × {st.in_flight} "
                                     f"in flight, tensors peak{at_}{mark_}", st.tensors_peak))
            params = "" if st.params is None else f"{st.params:,} parameters, "
            out.append(f"  {'':<12}  {params}states {fmt_bytes(st.states_bytes)}; "
                       f"holds {st.holds}")
        out.append("")
    peak = led.peak
    at = f" at {led.peak_phase}" if led.peak_phase else ""
    out.append(_row("tensors", f"tier 1: tensors peak{at} (max_memory_allocated)",
                    led.tensors_peak))
    out.append(_row("reserved", "tier 2: + allocator slack (max_memory_reserved)",
                    led.reserved_peak))
    out.append(_row("peak", "tier 3: + CUDA context and NCCL (the process; judged)", peak))
    out.append(_row("total", "total with the headroom margin", led.total))
    if cap is not None:
        out.append(_row("capacity", f"{led.gpu or 'GPU'} usable memory", cap))
    out.append("")
    v = led.verdict()
    if v == "fits":
        out.append(f"verdict: fits — {fmt_bytes(led.total)} of {fmt_bytes(cap)} with "
                   f"{led.headroom:.0%} headroom")
    elif v == "tight":
        out.append(f"verdict: tight — the predicted peak {fmt_bytes(peak)} fits in "
                   f"{fmt_bytes(cap)} only by using the {led.headroom:.0%} headroom margin")
    elif v == "does not fit":
        need = led.total if led.total is not None else led.known_bytes
        more = "" if led.total is not None else " at least (some lines are unknown)"
        out.append(f"verdict: does not fit — needs {fmt_bytes(need)}{more}, "
                   f"{fmt_bytes(cap)} usable")
    else:
        out.append("verdict: unknown — " + (
            "no GPU given (--gpu or --gpu-memory)" if cap is None
            else f"the known lines total {fmt_bytes(led.known_bytes)} of {fmt_bytes(cap)}; "
                 "the rest is unknown"))
    if led.unknown:
        out.append("unknown inputs: " + ", ".join(led.unknown))
    if led.largest:
        out.append("")
        out.append("largest single tensors (each must fit one GPU on its own):")
        for ln in led.largest[:3]:
            out.append(f"  {ln.label:<{_W + 12}}{_num(ln.bytes)}")
            out.append(f"  {'':<12}  = {ln.formula}")
    out.append("")
    out.append("walls (one optimizer step):")
    for ln in w.lines:
        out.append(f"  {ln.key:<12}{ln.label}{mark(ln)}")
        if ln.formula:
            out.append(f"  {'':<12}  = {ln.formula}")
    out.append(f"  compute {fmt_seconds(w.compute_s)}, communication {fmt_seconds(w.comm_s)}, "
               f"step {fmt_seconds(w.step_s)}, predicted efficiency "
               f"{'unknown' if w.efficiency is None else f'{w.efficiency:.3f}'}")
    if w.measured_efficiency is not None:
        out.append(f"  measured efficiency {w.measured_efficiency:.6g}"
                   + (f"  ({w.measured})" if w.measured else ""))
    if notes or led.assumptions or w.notes:
        out.append("")
        out.append("notes:")
        for i, n in enumerate(notes, 1):
            out.append(f"  [{i}] {n}")
        for a in led.assumptions:
            if not any(a in n for n in notes):      # already a footnote of some line
                out.append(f"  assumed: {a}")
        for n in w.notes:
            out.append(f"  walls: {n}")
    return "\n".join(ln.rstrip() for ln in "\n".join(out).split("\n")) + "\n"


__all__ = ["render"]
