"""The alternatives as a table for a terminal (`estimate --fit`, `check --suggest`) and
as Markdown (the PR comment)."""

from __future__ import annotations

from typing import Optional

from preflight.plan_fit.search import FitPlan, Sized

GIB = 2 ** 30
HEADER = ("", "change", "peak", "% cap", "step", "efficiency")

_LIMIT_TITLES = {"largest_micro_batch": "largest micro-batch that fits",
                 "fewest_gpus": "fewest GPUs that fit",
                 "longest_seq_len": "longest sequence that fits"}


def _gib(n: Optional[int]) -> str:
    return "?" if n is None else f"{n / GIB:.1f} GiB"


def _pct(s: Sized) -> str:
    return "?" if s.fraction is None else f"{s.fraction * 100:.0f} %"


def _step(t: Optional[float]) -> str:
    if t is None:
        return "?"
    return f"{t * 1000:.0f} ms" if t < 1 else f"{t:.2f} s"


def _eff(e: Optional[float]) -> str:
    return "?" if e is None else f"{e:.2f}"


def rows(fit: FitPlan) -> list[tuple[str, ...]]:
    b = fit.baseline
    out = [("", "as written", _gib(b.peak), _pct(b), _step(b.step_s), _eff(b.efficiency))]
    for i, a in enumerate(fit.alternatives):
        s = a.sized
        out.append(("→" if i == 0 else str(i + 1), a.label, _gib(s.peak), _pct(s),
                    _step(s.step_s), _eff(s.efficiency)))
    return out


def limit_lines(fit: FitPlan) -> list[str]:
    out = []
    for lim in fit.limits:
        title = _LIMIT_TITLES.get(lim.name, lim.name)
        if lim.value is None:
            out.append(f"{title}: none ({lim.note})")
        else:
            out.append(f"{title}: {lim.value:,} ({_gib(lim.peak)} peak; {lim.note})")
    return out


def render_text(fit: FitPlan, title: str = "") -> str:
    lines = [f"what would fit{' — ' + title if title else ''}"
             + (f" on {fit.gpu}" if fit.gpu else "") + f": as written {fit.baseline.verdict}"
             + (f" ({', '.join(fit.baseline.guards)})" if fit.baseline.guards else "")]
    table = [HEADER] + rows(fit)
    widths = [max(len(r[i]) for r in table) for i in range(len(HEADER))]
    for r in table:
        cells = [r[0].ljust(widths[0]), r[1].ljust(widths[1])] + \
                [r[i].rjust(widths[i]) for i in range(2, len(r))]
        lines.append("  " + "  ".join(cells).rstrip())
    for i, a in enumerate(fit.alternatives):
        lines.append(f"  {'→' if i == 0 else i + 1} {a.reason}")
    for n in fit.notes:
        lines.append(f"  note: {n}")
    lines += ["  " + ln for ln in limit_lines(fit)]
    return "\n".join(lines)


def render_markdown(fit: FitPlan) -> str:
    lines = ["| | change | peak | % capacity | step | efficiency | why here |",
             "|---|---|---:|---:|---:|---:|---|"]
    why = [""] + [a.reason for a in fit.alternatives]
    for r, w in zip(rows(fit), why):
        mark = "**→**" if r[0] == "→" else r[0]
        lines.append(f"| {mark} | {r[1]} | {r[2]} | {r[3]} | {r[4]} | {r[5]} | {w} |")
    out = "\n".join(lines)
    extra = [f"- {ln}" for ln in limit_lines(fit)] + [f"- {n}" for n in fit.notes]
    return out + ("\n\n" + "\n".join(extra) if extra else "")
