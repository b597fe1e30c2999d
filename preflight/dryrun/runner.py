"""The parent side of a dry run: launch the instrumented child (or torchrun with one child
per rank) in its own process group, end it on timeout, read one ledger per rank.

Does not import torch: it only checks that torch is installed.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from typing import Optional, Sequence

from preflight import DISTRIBUTION
from preflight.dryrun.result import DryrunResult, RankLedger

INSTALL_HINT = (f"preflight dryrun needs torch: install {DISTRIBUTION}[dryrun] "
                f"(pip install '{DISTRIBUTION}[dryrun]')")


class TorchMissing(RuntimeError):
    """torch is not installed in this environment."""


def torch_available() -> bool:
    return importlib.util.find_spec("torch") is not None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def child_command(script: str, args: Sequence[str], device: str, out_dir: str,
                  nproc_per_node: int = 1, child_timeout: Optional[float] = None) -> list[str]:
    tail = ["-m", "preflight.dryrun.child", "--out", out_dir, "--device", device]
    if child_timeout:
        tail += ["--timeout", f"{child_timeout:g}",
                 "--deadline", f"{time.time() + child_timeout:.3f}"]
    tail += [script, *args]
    if nproc_per_node <= 1:
        return [sys.executable, *tail]
    return [sys.executable, "-m", "torch.distributed.run", "--nnodes", "1",
            "--nproc-per-node", str(nproc_per_node), "--master-addr", "127.0.0.1",
            "--master-port", str(_free_port()), *tail]


def _kill_group(proc: subprocess.Popen) -> None:
    """End the child and everything it started (its own session / process group)."""
    for sig, wait in ((signal.SIGTERM, 3.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            continue
        # the leader is gone; make sure no straggler in the group survives
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        return


def run_dryrun(script: str, args: Sequence[str] = (), device: str = "auto",
               nproc_per_node: int = 1, timeout: float = 600.0,
               env: Optional[dict] = None) -> DryrunResult:
    """Run `script args` for exactly one optimizer step under instrumentation and return
    the measured ledger of every rank. `device`: auto | cuda | cpu | fake."""
    if not torch_available():
        raise TorchMissing(INSTALL_HINT)
    if device not in ("auto", "cuda", "cpu", "fake"):
        raise ValueError(f"unknown device {device!r} (auto, cuda, cpu or fake)")
    if not os.path.isfile(script):
        raise FileNotFoundError(f"no such script: {script}")
    result = DryrunResult(script=script, args=list(args), device=device,
                          nproc_per_node=nproc_per_node, estimate=device == "fake")
    # the child's watchdog fires first, so that it can still write what it measured
    child_timeout = max(1.0, timeout - min(10.0, max(1.0, timeout * 0.2)))
    with tempfile.TemporaryDirectory(prefix="preflight-dryrun-") as out_dir:
        cmd = child_command(os.path.abspath(script), list(args), device, out_dir,
                            nproc_per_node, child_timeout)
        e = dict(os.environ)
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        e["PYTHONPATH"] = os.pathsep.join(p for p in (root, e.get("PYTHONPATH")) if p)
        e.setdefault("PYTHONUNBUFFERED", "1")
        if env:
            e.update(env)
        t0 = time.time()
        with tempfile.TemporaryFile() as err:
            # the script's own output (both streams) is kept; its tail goes in the result
            proc = subprocess.Popen(cmd, stdout=err, stderr=subprocess.STDOUT, env=e,
                                    cwd=os.path.dirname(os.path.abspath(script)) or None,
                                    start_new_session=True)
            timed_out = False
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                timed_out = True
            finally:
                _kill_group(proc)
            result.wall_s = round(time.time() - t0, 3)
            result.returncode = proc.returncode
            err.seek(0)
            result.stderr_tail = err.read()[-4000:].decode("utf-8", "replace")
        ranks = []
        for name in sorted(os.listdir(out_dir)):
            if name.startswith("rank") and name.endswith(".json"):
                with open(os.path.join(out_dir, name)) as f:
                    ranks.append(RankLedger.model_validate(json.load(f)))
    ranks.sort(key=lambda r: r.rank)
    result.ranks = ranks
    if ranks:
        result.device = ranks[0].device
    statuses = [r.status for r in ranks]
    if timed_out and not ranks:
        result.status = "timeout"
        result.message = f"no result within {timeout:g} s; the job was ended"
    elif not ranks:
        result.status = "launch_error"
        last = result.stderr_tail.strip().splitlines()
        result.message = "the job ended without a result" + (f": {last[-1]}" if last else "")
    else:
        for s in ("oom", "timeout", "error", "no_step"):
            if s in statuses:
                result.status = s
                r = ranks[statuses.index(s)]
                result.message = f"rank {r.rank}: {r.error or s}"
                break
        else:
            result.status = "ok"
        if len(ranks) < nproc_per_node and result.status == "ok":
            result.status = "error"
            result.message = f"only {len(ranks)} of {nproc_per_node} ranks reported"
    return result
