"""The trap score: every job of the trap corpus (tests/traps/cases.json) through the real
CLI, each trap fact judged right / unknown / wrong / confident-wrong on its value, and
whether it is exactly what the table says (value, origin, source).

    python bench/trap_score.py            # one line per trap fact, then the totals
    python bench/trap_score.py -q         # the totals only

The preflight that runs is the one of the Python that runs this script
(`python -m preflight`): another checkout's interpreter scores that checkout.
Exit status 1 when a fact is wrong with confidence.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tests.traps import runner  # noqa: E402 - the repository root is put on the path first


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-q", "--quiet", action="store_true", help="print the totals only")
    opts = ap.parse_args()
    counts: Counter = Counter()
    exact = total = 0
    for name, case in sorted(runner.load().items()):
        try:
            job = runner.run_case(name, case)
        except RuntimeError as e:
            print(f"{name}: {e}")
            counts["failed"] += len(case["facts"])
            total += len(case["facts"])
            continue
        for o in runner.judge(name, case, job):
            counts[o.verdict] += 1
            total += 1
            exact += o.matches
            if not opts.quiet:
                mark = "=" if o.matches else "≠"
                print(f"{o.verdict:15s} {mark} {name}.{o.fact}: {o.detail}")
    print(f"trap score: {counts['right']}/{total} right, {counts['unknown']} unknown, "
          f"{counts['wrong']} wrong ({counts['confident-wrong']} confident-wrong)"
          + (f", {counts['failed']} not run" if counts["failed"] else "")
          + f"; {exact}/{total} exactly as the table says")
    return 1 if counts["confident-wrong"] else 0


if __name__ == "__main__":
    sys.exit(main())
