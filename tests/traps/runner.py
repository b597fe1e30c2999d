"""Runs the trap jobs of cases.json through the real CLI and judges what it reports.

Each case's folder is copied to a fresh directory (so no project around it is found) and
checked there with `preflight check --format json --exit-zero --no-cache --gpu H100`, the
launch given after `--` (`command`) or as files (`files`). The job of the case's
`train.py` is judged fact by fact against the table: `matches` (value, origin and source as
the table says; a dict value is compared on the keys the table lists) and a verdict on the
value alone — right, unknown, wrong, or confident-wrong (wrong with origin literal / cli /
config, the one outcome a trap must never produce).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from typing import Any, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
CONFIDENT = {"literal", "cli", "config"}


def load() -> dict[str, dict]:
    with open(os.path.join(HERE, "cases.json"), encoding="utf-8") as f:
        return json.load(f)["cases"]


@dataclass
class Outcome:
    case: str
    fact: str
    want: dict
    got: dict
    matches: bool
    verdict: str          # right | unknown | wrong | confident-wrong
    detail: str


def run_case(name: str, case: dict, workdir: Optional[str] = None) -> dict:
    """The JSON job (facts, ledger) of the case's train.py, checked in a copy of its folder."""
    own = workdir is None
    root = workdir or tempfile.mkdtemp(prefix=f"trap-{name}-")
    try:
        dst = os.path.join(root, name)
        shutil.copytree(os.path.join(HERE, name), dst)
        launch = ["--", *case["command"]] if "command" in case else list(case["files"])
        env = dict(os.environ, NO_COLOR="1")
        env.pop("PREFLIGHT_DEBUG", None)
        out = subprocess.run([sys.executable, "-m", "preflight", "check", "--format", "json",
                              "--exit-zero", "--no-cache", "--gpu", "H100", *launch],
                             cwd=dst, capture_output=True, text=True, env=env, timeout=120)
        if out.returncode != 0:
            raise RuntimeError(f"{name}: preflight exited {out.returncode}: {out.stderr[-2000:]}")
        jobs = json.loads(out.stdout)["jobs"]
        job = next((j for j in jobs if os.path.basename(j["entry"]) == "train.py"), None)
        if job is None:
            raise RuntimeError(f"{name}: no job for train.py in {[j['entry'] for j in jobs]}")
        return job
    finally:
        if own:
            shutil.rmtree(root, ignore_errors=True)


def _same(want: Any, got: Any) -> bool:
    if isinstance(want, dict) and isinstance(got, dict):
        return all(k in got and _same(v, got[k]) for k, v in want.items())
    return want == got and type(want) is type(got)


def judge(name: str, case: dict, job: dict) -> list[Outcome]:
    out = []
    for fact, want in case["facts"].items():
        got = job["facts"].get(fact) or {"value": None, "origin": "unknown"}
        source = got.get("source") or ""
        where = want.get("source")
        matches = _same(want["value"], got.get("value")) and want["origin"] == got.get("origin") \
            and (where is None or source == where or source.startswith(where + ":"))
        truth = want.get("truth", want["value"])
        if got.get("origin") == "unknown" or (got.get("value") is None and truth is not None
                                             and fact != "fsdp"):
            verdict = "unknown"
        elif truth is not None and _same(truth, got.get("value")):
            verdict = "right"
        else:
            verdict = "confident-wrong" if got.get("origin") in CONFIDENT else "wrong"
        detail = (f"got {json.dumps(got.get('value'))} ({got.get('origin')}, {source or '-'}), "
                  f"want {json.dumps(want['value'])} ({want['origin']}, {where or '-'})")
        out.append(Outcome(name, fact, want, got, matches, verdict, detail))
    return out


def ledger_problems(case: dict, job: dict) -> list[str]:
    """What the case's `ledger` expectations find wrong in the job's ledger."""
    want = case.get("ledger")
    if not want:
        return []
    lines = [ln for ln in (job.get("ledger") or {}).get("lines", []) if ln.get("key") == "optimizer"]
    problems = []
    if "optimizer_bytes" in want and not any(ln.get("bytes") == want["optimizer_bytes"] for ln in lines):
        problems.append(f"optimizer bytes {[ln.get('bytes') for ln in lines]}, want "
                        f"{want['optimizer_bytes']}")
    if "optimizer_label" in want and not any(want["optimizer_label"] in (ln.get("label") or "")
                                             for ln in lines):
        problems.append(f"optimizer labels {[ln.get('label') for ln in lines]}, want one with "
                        f"{want['optimizer_label']!r}")
    return problems
