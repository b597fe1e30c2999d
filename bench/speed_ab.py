"""The speed benchmark of two checkouts side by side: `bench/speed.py` run alternately on
each (so the machine's load hits both alike), its key figures per round, the median per
side and the ratio. For a change that must keep speed: compare the code before it with
the code after it in one run.

    git worktree add /tmp/before <rev>
    python bench/speed_ab.py /tmp/before .            # 5 rounds per side
    python bench/speed_ab.py /tmp/before . --rounds 9

Each side runs with its own checkout first on PYTHONPATH (the `preflight` processes the
benchmark starts inherit it), in this interpreter, whose site-packages give both the
dependencies.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys

#: the figures read from bench/speed.py's report: name → pattern of its value
FIGURES = {
    "check ÷ parse, wall": r"check / bare parse: ([\d.]+)x wall",
    "check ÷ parse, cpu": r"check / bare parse: [\d.]+x wall, ([\d.]+)x cpu",
    "one process ÷ parse": r"preflight check \(subprocess, 1 run\)\s+[\d.]+\s+[\d.]+\s+([\d.]+)",
    "one script, cold s": r"one script, cold process .*?: ([\d.]+) s wall",
    "repo cold s": r"cold \(no cache folder\)\s+([\d.]+)",
    "repo cold ÷ parse": r"median of the pairs ([\d.]+)",
    "repo warm s": r"warm \(stored result\)\s+([\d.]+)",
    "max RSS MB": r"cold \(no cache folder\)\s+[\d.]+\s+[\d.]+\s+(\d+)",
    "jobs": r"jobs reported: (\d+)",
}


def run_side(root: str) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": os.path.abspath(root)}
    out = subprocess.run([sys.executable, os.path.join(root, "bench", "speed.py"), "--repeat", "1"],
                         cwd=root, env=env, capture_output=True, text=True).stdout
    got = {}
    for name, pattern in FIGURES.items():
        m = re.search(pattern, out, re.S)
        if m:
            got[name] = float(m.group(1))
    return got


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("before", help="the checkout to compare against")
    ap.add_argument("after", help="the checkout under test")
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args(argv)
    sides = {"before": a.before, "after": a.after}
    values: dict[str, dict[str, list[float]]] = {s: {f: [] for f in FIGURES} for s in sides}
    for r in range(a.rounds):
        order = list(sides) if r % 2 == 0 else list(reversed(sides))
        for side in order:
            for name, v in run_side(sides[side]).items():
                values[side][name].append(v)
    print(f"{a.rounds} alternating rounds per side of bench/speed.py --repeat 1; medians")
    print(f"{'figure':24s}{'before':>10s}{'after':>10s}{'after ÷ before':>16s}")
    for name in FIGURES:
        b, f = values["before"][name], values["after"][name]
        if not b or not f:
            print(f"{name:24s}{'—':>10s}{'—':>10s}")
            continue
        mb, ma = statistics.median(b), statistics.median(f)
        print(f"{name:24s}{mb:10.3f}{ma:10.3f}{(ma / mb if mb else float('nan')):16.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
