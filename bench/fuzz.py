"""Fuzz campaign: many generated job files, each checked in a guarded worker process.

    python bench/fuzz.py                      # 2,000 inputs per generator, 2 workers
    python bench/fuzz.py -n 400 --workers 1   # smaller
    python bench/fuzz.py --cli-every 25       # also every 25th input through the real CLI
    python bench/fuzz.py --keep DIR           # keep the inputs that failed, for a test

Inputs come from the Hypothesis strategies of the CI suite (`tests/fuzz_strategies.py`:
Python, shell, JSON, YAML, TOML; generated, then mutated). Each is written to a fresh
project folder and checked by `preflight.pipeline.run` inside a worker process that the
campaign watches from outside:

- a worker killed by a signal (SIGSEGV, SIGKILL, …) is counted against its input and
  replaced;
- an input still running after --hang seconds (default 10) is a hang: its worker is
  killed and replaced;
- an exception escaping the pipeline is an internal error (what `preflight check` would
  print as "internal error", exit 2);
- the worker's peak resident memory (ru_maxrss) is recorded after each input; workers are
  replaced every --recycle inputs so that one input's peak is not hidden by another's.

With --cli-every N, every Nth input is also checked by `preflight check` in a subprocess
(exit status, "internal error", signals). Prints one table: inputs per generator,
signals, hangs, internal errors, max RSS, and inputs/s.

    python bench/fuzz.py --shapes                         # the time of the worst shapes
    python bench/fuzz.py --shapes --out bench/results/fuzz.txt

With --shapes, the campaign is instead one input per language and shape of
`tests/fuzz_shapes.py` (thousands of blank or repeated lines, continuation lines, many
keys and list items, deep nesting, long lines), each at 16 KB and 64 KB, checked by the
real CLI (`--no-cache`) twice: the file named, and its folder through `preflight check .`
(the directory walk's text tests, then the reader). Prints per input the seconds (wall
clock, and the CPU time of the check's processes, steadier on a loaded machine), the
growth from 16 KB to 64 KB (about 4 when linear; start-up makes it less), and the slowest
input per language. Exit 1 when any input took over --limit CPU seconds (2): CPU, not
wall clock, so that a machine shared with other work does not fail a linear reader.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)


# --------------------------------------------------------------------------- generation

def _kinds() -> list[str]:
    """Every generator of the fuzz strategies (each language's inputs)."""
    from tests.fuzz_strategies import KINDS
    return list(KINDS)


def generate(kind: str, n: int, seed: int) -> list[tuple[str, str]]:
    """`n` (file name, text) inputs of one generator, reproducible from `seed`."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import seed as hypothesis_seed

    from tests.fuzz_strategies import KINDS

    out: list[tuple[str, str]] = []

    @hypothesis_seed(seed)                              # a reproducible campaign
    @settings(max_examples=n, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(KINDS[kind])
    def collect(x):
        out.append(x)

    collect()
    return out[:n]


def write_project(d: str, name: str, text: str) -> str:
    from tests.fuzz_strategies import COMPANION
    os.makedirs(os.path.join(d, ".git"), exist_ok=True)
    with open(os.path.join(d, "train.py"), "w", encoding="utf-8") as f:
        f.write(COMPANION)
    p = os.path.join(d, name)
    with open(p, "w", encoding="utf-8", errors="surrogatepass") as f:
        f.write(text)
    return p


# --------------------------------------------------------------------------- worker

def worker(jobs: "mp.Queue", results: "mp.Queue") -> None:
    """Check inputs until told to stop; report (index, outcome, seconds, maxrss KiB)."""
    import resource
    import traceback

    from preflight import pipeline
    from preflight.options import CheckOptions

    while True:
        item = jobs.get()
        if item is None:
            return
        idx, path = item
        results.put(("start", idx, time.monotonic()))
        t = time.perf_counter()
        outcome = "ok"
        try:
            os.chdir(os.path.dirname(path))
            pipeline.run([path], CheckOptions(fixes=False)).to_json()
        except BaseException as e:  # noqa: BLE001 - what escapes is the finding
            outcome = "internal: " + "".join(
                traceback.format_exception_only(type(e), e)).strip()[:300]
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        results.put(("done", idx, outcome, time.perf_counter() - t, rss))


class Pool:
    """Workers watched from outside: a signal or a hang costs the worker, not the campaign."""

    def __init__(self, n: int, hang_s: float, recycle: int) -> None:
        self.ctx = mp.get_context("fork")
        self.n, self.hang_s, self.recycle = n, hang_s, recycle
        self.slots: list[dict] = [self._spawn() for _ in range(n)]

    def _spawn(self) -> dict:
        jobs, results = self.ctx.Queue(), self.ctx.Queue()
        p = self.ctx.Process(target=worker, args=(jobs, results), daemon=True)
        p.start()
        return {"p": p, "jobs": jobs, "results": results, "busy": None, "t0": 0.0, "done": 0}

    def _replace(self, i: int) -> None:
        s = self.slots[i]
        if s["p"].is_alive():
            s["p"].kill()
        s["p"].join(5)
        self.slots[i] = self._spawn()

    def run(self, items: list[tuple[int, str]], on_result) -> None:
        todo = list(reversed(items))
        while todo or any(s["busy"] is not None for s in self.slots):
            for i, s in enumerate(self.slots):
                if s["busy"] is None and todo:
                    if s["done"] >= self.recycle:
                        s["jobs"].put(None)
                        self._replace(i)
                        s = self.slots[i]
                    idx, path = todo.pop()
                    s["busy"], s["t0"] = idx, time.monotonic()
                    s["jobs"].put((idx, path))
            for i, s in enumerate(self.slots):
                if s["busy"] is None:
                    continue
                try:
                    while True:
                        msg = s["results"].get_nowait()
                        if msg[0] == "done":
                            _, idx, outcome, secs, rss = msg
                            on_result(idx, outcome, secs, rss)
                            s["busy"] = None
                            s["done"] += 1
                            break
                except queue.Empty:
                    pass
                if s["busy"] is None:
                    continue
                if not s["p"].is_alive():
                    code = s["p"].exitcode
                    name = signal.Signals(-code).name if code and code < 0 else f"exit {code}"
                    on_result(s["busy"], f"signal: {name}", time.monotonic() - s["t0"], 0)
                    self._replace(i)
                elif time.monotonic() - s["t0"] > self.hang_s:
                    on_result(s["busy"], f"hang: over {self.hang_s:g} s",
                              time.monotonic() - s["t0"], 0)
                    self._replace(i)
            time.sleep(0.002)
        for s in self.slots:
            s["jobs"].put(None)
            s["p"].join(5)
            if s["p"].is_alive():
                s["p"].kill()


# --------------------------------------------------------------------------- the CLI

def cli_check(path: str, hang_s: float) -> str:
    env = {**os.environ, "PYTHONPATH": ROOT, "NO_COLOR": "1"}
    env.pop("PREFLIGHT_DEBUG", None)
    try:
        r = subprocess.run([sys.executable, "-m", "preflight", "check", "--format", "json",
                            os.path.basename(path)], cwd=os.path.dirname(path), env=env,
                           capture_output=True, text=True, timeout=hang_s * 3)
    except subprocess.TimeoutExpired:
        return "hang"
    if r.returncode < 0:
        return f"signal: {signal.Signals(-r.returncode).name}"
    if "internal error" in r.stderr or "Traceback" in r.stderr or r.returncode not in (0, 1):
        return "internal: " + r.stderr.strip()[-300:]
    return "ok"


# --------------------------------------------------------------------------- shapes

def _timed_cli(args: list[str], cwd: str, timeout: float) -> tuple[float, float, str]:
    """(wall seconds, CPU seconds of the check and its children, outcome) of one check."""
    env = {**os.environ, "PYTHONPATH": ROOT, "NO_COLOR": "1"}
    env.pop("PREFLIGHT_DEBUG", None)
    before = os.times()
    t = time.perf_counter()
    try:
        r = subprocess.run([sys.executable, "-m", "preflight", "check", "--no-cache",
                            "--format", "json", *args], cwd=cwd, env=env,
                           capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return timeout, timeout, "hang"
    wall = time.perf_counter() - t
    after = os.times()
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    if r.returncode < 0:
        return wall, cpu, f"signal: {signal.Signals(-r.returncode).name}"
    if "internal error" in r.stderr or "Traceback" in r.stderr or r.returncode not in (0, 1):
        return wall, cpu, "internal: " + r.stderr.strip()[-300:]
    return wall, cpu, "ok"


def shapes_main(ns) -> int:
    from tests.fuzz_shapes import COMPANION as SHAPE_COMPANION, MAX_SIZE, shapes

    sizes = (MAX_SIZE // 4, MAX_SIZE)
    langs = set(ns.languages.split(",")) if ns.languages else None
    base = tempfile.mkdtemp(prefix="preflight-shapes-")
    rows: list[dict] = []
    lines: list[str] = []

    def say(line: str = "") -> None:
        print(line, flush=True)
        lines.append(line)

    head = (f"{'language':<9} {'shape':<28} {'bytes':>6} {'named s':>8} {'cpu s':>6} "
            f"{'dir s':>6} {'cpu s':>6} {'growth':>7}  outcome")
    say(head)
    say("-" * len(head))
    for lang, shape, gen in shapes():
        if langs is not None and lang not in langs or ns.match and ns.match not in shape:
            continue
        got: dict[int, dict] = {}
        for size in sizes:
            name, text = gen(size)
            d = os.path.join(base, f"{len(rows):04d}")
            os.makedirs(os.path.join(d, ".git"))
            if name != "train.py":
                with open(os.path.join(d, "train.py"), "w", encoding="utf-8") as f:
                    f.write(SHAPE_COMPANION)
            with open(os.path.join(d, name), "w", encoding="utf-8") as f:
                f.write(text)
            named = _timed_cli([name], d, ns.hang * 3)
            walked = _timed_cli(["."], d, ns.hang * 3)
            row = {"language": lang, "shape": shape, "bytes": len(text.encode()),
                   "named_s": named[0], "named_cpu_s": named[1], "dir_s": walked[0],
                   "dir_cpu_s": walked[1],
                   "outcome": "ok" if named[2] == walked[2] == "ok" else
                   f"named {named[2]}; dir {walked[2]}"}
            got[size] = row
            rows.append(row)
        small, big = got[sizes[0]], got[sizes[1]]
        big["growth"] = (max(big["named_cpu_s"], big["dir_cpu_s"]) /
                         max(1e-3, max(small["named_cpu_s"], small["dir_cpu_s"])))
        for r in (small, big):
            g = f"{r['growth']:>6.1f}x" if "growth" in r else ""
            say(f"{lang:<9} {shape:<28} {r['bytes']:>6} {r['named_s']:>8.2f} {r['named_cpu_s']:>6.2f} "
                f"{r['dir_s']:>6.2f} {r['dir_cpu_s']:>6.2f} {g:>7}  {r['outcome']}")
    shutil.rmtree(base, ignore_errors=True)

    def cpu(r: dict) -> float:
        return max(r["named_cpu_s"], r["dir_cpu_s"])

    say()
    say("slowest input per language (CPU seconds, the larger of named and `check .`; "
        "wall clock beside):")
    worst_all = 0.0
    for lang in dict.fromkeys(r["language"] for r in rows):
        w = max((r for r in rows if r["language"] == lang), key=cpu)
        worst_all = max(worst_all, cpu(w))
        say(f"  {lang:<9} {cpu(w):5.2f} s  {w['shape']} ({w['bytes']} bytes; named "
            f"{w['named_cpu_s']:.2f} s CPU / {w['named_s']:.2f} s wall, check . "
            f"{w['dir_cpu_s']:.2f} s CPU / {w['dir_s']:.2f} s wall)")
    bad = [r for r in rows if r["outcome"] != "ok"]
    slow = [r for r in rows if cpu(r) > ns.limit]
    say(f"\n{len(rows)} checks of {len(rows) // 2} shapes; {len(bad)} failed, "
        f"{len(slow)} over {ns.limit:g} CPU seconds; slowest {worst_all:.2f} s; "
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    if ns.out:
        with open(ns.out, "w", encoding="utf-8") as f:
            if ns.out.endswith(".json"):
                json.dump(rows, f, indent=1)
            else:
                f.write("\n".join(lines) + "\n")
    return 1 if bad or slow else 0


# --------------------------------------------------------------------------- main

def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=2000, help="inputs per generator")
    ap.add_argument("--kinds", default=",".join(_kinds()))
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--hang", type=float, default=10.0, help="seconds that make a hang")
    ap.add_argument("--recycle", type=int, default=200, help="inputs per worker process")
    ap.add_argument("--cli-every", type=int, default=0, help="also run every Nth input "
                                                             "through the real CLI")
    ap.add_argument("--seed", type=int, default=17)
    ap.add_argument("--keep", help="copy failing inputs into this folder")
    ap.add_argument("--shapes", action="store_true",
                    help="time the real CLI on the worst shapes of each language instead")
    ap.add_argument("--languages", help="with --shapes: only these (python,shell,yaml,...)")
    ap.add_argument("--match", help="with --shapes: only the shapes whose name holds this")
    ap.add_argument("--limit", type=float, default=2.0,
                    help="with --shapes: CPU seconds an input may take")
    ap.add_argument("--out", help="with --shapes: also write the table here (.txt or .json)")
    ns = ap.parse_args(argv)
    if ns.shapes:
        return shapes_main(ns)

    kinds = ns.kinds.split(",")
    base = tempfile.mkdtemp(prefix="preflight-fuzz-")
    items: list[tuple[int, str]] = []
    kind_of: dict[int, str] = {}
    t0 = time.time()
    for k in kinds:
        for name, text in generate(k, ns.n, ns.seed):
            idx = len(items)
            items.append((idx, write_project(os.path.join(base, f"{idx:06d}"), name, text)))
            kind_of[idx] = k
    gen_s = time.time() - t0
    print(f"generated {len(items)} inputs in {gen_s:.0f} s under {base}", flush=True)

    stats = {k: {"inputs": 0, "signals": 0, "hangs": 0, "internal": 0, "max_rss": 0,
                 "slowest": 0.0, "cli": 0, "cli_bad": 0} for k in kinds}
    failures: list[tuple[int, str]] = []

    def on_result(idx: int, outcome: str, secs: float, rss: int) -> None:
        s = stats[kind_of[idx]]
        s["inputs"] += 1
        s["max_rss"] = max(s["max_rss"], rss)
        s["slowest"] = max(s["slowest"], secs)
        if outcome.startswith("signal"):
            s["signals"] += 1
        elif outcome.startswith("hang"):
            s["hangs"] += 1
        elif outcome.startswith("internal"):
            s["internal"] += 1
        if outcome != "ok":
            failures.append((idx, outcome))
        done = sum(x["inputs"] for x in stats.values())
        if done % 500 == 0:
            print(f"  {done}/{len(items)} checked, {len(failures)} failures "
                  f"({time.time() - t1:.0f} s)", flush=True)

    t1 = time.time()
    Pool(ns.workers, ns.hang, ns.recycle).run(items, on_result)
    run_s = time.time() - t1

    if ns.cli_every:
        for idx, path in items[::ns.cli_every]:
            s = stats[kind_of[idx]]
            s["cli"] += 1
            outcome = cli_check(path, ns.hang)
            if outcome != "ok":
                s["cli_bad"] += 1
                failures.append((idx, "cli " + outcome))

    print()
    head = (f"{'generator':<9} {'inputs':>7} {'signals':>8} {'hangs>' + format(ns.hang, 'g') + 's':>10}"
            f" {'internal':>9} {'max RSS':>9} {'slowest':>8} {'CLI runs':>9} {'CLI bad':>8}")
    print(head)
    print("-" * len(head))
    tot = {"inputs": 0, "signals": 0, "hangs": 0, "internal": 0, "max_rss": 0, "cli": 0,
           "cli_bad": 0, "slowest": 0.0}
    for k in kinds:
        s = stats[k]
        for key in tot:
            tot[key] = max(tot[key], s[key]) if key in ("max_rss", "slowest") else tot[key] + s[key]
        print(f"{k:<9} {s['inputs']:>7} {s['signals']:>8} {s['hangs']:>10} {s['internal']:>9} "
              f"{s['max_rss'] / 1024:>6.0f} MB {s['slowest']:>6.1f} s {s['cli']:>9} {s['cli_bad']:>8}")
    print("-" * len(head))
    print(f"{'all':<9} {tot['inputs']:>7} {tot['signals']:>8} {tot['hangs']:>10} "
          f"{tot['internal']:>9} {tot['max_rss'] / 1024:>6.0f} MB {tot['slowest']:>6.1f} s "
          f"{tot['cli']:>9} {tot['cli_bad']:>8}")
    print(f"\n{tot['inputs'] / max(run_s, 1e-9):.1f} inputs/s with {ns.workers} worker(s); "
          f"generation {gen_s:.0f} s, checking {run_s:.0f} s")
    for idx, outcome in failures[:30]:
        print(f"  {items[idx][1]}: {outcome}")
    if ns.keep and failures:
        os.makedirs(ns.keep, exist_ok=True)
        for idx, _ in failures:
            shutil.copytree(os.path.dirname(items[idx][1]),
                            os.path.join(ns.keep, f"{idx:06d}"), dirs_exist_ok=True)
    shutil.rmtree(base, ignore_errors=True)
    bad = tot["signals"] + tot["hangs"] + tot["internal"] + tot["cli_bad"]
    return 1 if bad or tot["max_rss"] > 1024 * 1024 else 0


if __name__ == "__main__":
    sys.exit(main())
