"""Entry point of the instrumented child: `python -m preflight.dryrun.child --out DIR
--device cpu|cuda|fake [--timeout S] SCRIPT [ARGS...]` (also under torchrun, one per rank).

Installs the instrumentation, runs the script as `__main__` with its own argv, and ends
the process after the first optimizer step (see `instrument`). The result is written to
DIR/rank<RANK>.json.
"""

from __future__ import annotations

import argparse
import os
import runpy
import sys

from preflight.dryrun.procs import set_parent_death_signal


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="preflight.dryrun.child")
    ap.add_argument("--out", required=True)
    ap.add_argument("--device", default="cpu", choices=("auto", "cpu", "cuda", "fake"))
    ap.add_argument("--timeout", type=float, default=None)
    ap.add_argument("--deadline", type=float, default=None,
                    help="wall-clock time (epoch seconds) at which the watchdog fires")
    ap.add_argument("script")
    ap.add_argument("args", nargs=argparse.REMAINDER)
    ns = ap.parse_args(argv)
    # a worker outlives no launcher: when torchrun (or the parent) is killed, so is this
    set_parent_death_signal()

    rank = int(os.environ.get("RANK", "0"))
    out = os.path.join(ns.out, f"rank{rank}.json")

    # torch, and the modules that import it, only once the parent-death signal is set: a
    # worker whose launcher is killed in the seconds torch takes to import must not run on.
    # Here, not lazy(): importing torch walks sys.modules (inspect.getmodule), which
    # would load every lazy module, fake mode's too
    import torch

    from preflight.dryrun.instrument import Recorder

    if ns.device == "auto":
        ns.device = "cuda" if torch.cuda.is_available() else "cpu"

    timeout = ns.timeout
    if ns.deadline is not None:
        import time
        timeout = max(0.5, ns.deadline - time.time())
    rec = Recorder(out, ns.device, timeout=timeout)
    rec.ledger.rank = rank
    rec.ledger.world_size = int(os.environ.get("WORLD_SIZE", "1"))
    if ns.device == "cpu":
        os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
    fake = None
    if ns.device == "fake":
        # here: fake mode only for --device fake (and after torch, as above)
        from preflight.dryrun.fake import enter_fake_mode
        fake = enter_fake_mode()
        rec.ledger.notes.append("fake mode: shapes and dtypes are real, memory is computed "
                                "from them; allocator overhead, fragmentation and CUDA "
                                "kernels' workspaces are not included (an estimate)")
    rec.install()
    if ns.device == "cuda" and not torch.cuda.is_available():
        rec.finish("error", "--device cuda but no CUDA device is available "
                            "(use --device cpu or --device fake)")

    script = os.path.abspath(ns.script)
    sys.argv = [script, *ns.args]
    sys.path.insert(0, os.path.dirname(script))
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        if code:
            rec.finish("error", f"the script exited with status {code} before its first "
                                "optimizer step")
    except BaseException as e:  # noqa: BLE001 - every way out is reported
        rec.on_exception(e)
    rec.finish("no_step", "the script ended without calling optimizer.step()")
    del fake


if __name__ == "__main__":
    main()
