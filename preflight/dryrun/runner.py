"""The parent side of a dry run: launch the instrumented child (or torchrun with one child
per rank) in its own session, end the whole process tree on timeout (`procs.end_tree`),
keep the tail of its output (`procs.TailBuffer`), read one ledger per rank.

Does not import torch: it only checks that torch is installed.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from typing import Optional, Sequence

from preflight.version import DISTRIBUTION
from preflight.dryrun import procs
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
    if not (isinstance(timeout, (int, float)) and 0 < timeout < float("inf")):
        raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
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
        token = uuid.uuid4().hex
        e[procs.TOKEN_VAR] = token
        t0 = time.time()
        # the script's own output (both streams): its tail is kept, in bounded memory
        out = procs.TailBuffer()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=e,
                                stdin=subprocess.DEVNULL,
                                cwd=os.path.dirname(os.path.abspath(script)) or None,
                                start_new_session=True)
        reader = procs.drain(proc.stdout, out)   # type: ignore[arg-type]
        timed_out = False
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:
            survivors = procs.end_tree(proc, token)
            reader.join(timeout=5.0)
            if proc.stdout is not None:
                proc.stdout.close()
        result.wall_s = round(time.time() - t0, 3)
        result.returncode = proc.returncode
        result.stderr_tail = out.getvalue()[-4000:].decode("utf-8", "replace")
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
    killed = _signal_of(result.returncode, result.stderr_tail) if not timed_out else None
    if timed_out and not ranks:
        result.status = "timeout"
        result.message = f"no result within {timeout:g} s; the job was ended"
    elif not ranks and killed:
        result.status = "killed"
        result.message = killed
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
            result.status = "killed" if killed else "error"
            result.message = f"only {len(ranks)} of {nproc_per_node} ranks reported" + \
                (f"; {killed}" if killed else "")
    if survivors:
        result.message += ("; " if result.message else "") + \
            f"{len(survivors)} process(es) of the job could not be ended: pid " + \
            ", ".join(map(str, survivors[:8]))
    return result


def _signal_of(returncode: Optional[int], output: str) -> Optional[str]:
    """How a job ended by a signal it was not sent by us, in words: the launcher's own
    return code (-9), or a worker's as torchrun prints it (`exitcode : -9`)."""
    sig = None
    if returncode is not None and returncode < 0:
        sig = -returncode
    else:
        m = re.search(r"exitcode\s*:\s*-(\d+)", output)
        if m:
            sig = int(m.group(1))
    if sig is None:
        return None
    try:
        name = signal.Signals(sig).name
    except ValueError:
        name = f"signal {sig}"
    if sig == signal.SIGKILL:
        return (f"ended by {name} before it reported; the kernel's out-of-memory killer is "
                "the usual sender (see `dmesg`)")
    return f"ended by {name} before it reported"
