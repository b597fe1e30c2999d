"""The one-step dry run: the only part of preflight that runs user code.

Importing this package does not import torch; the child process does (`child`,
`instrument`, `fake`, `calibrate`).

    from preflight.dryrun import run_dryrun, compare, mark_findings
    result = run_dryrun("train.py", ["--bs", "4"], device="cpu", nproc_per_node=1, timeout=600)
    rows = compare(result, estimate)          # [CompareRow(item, predicted, measured, ratio)]
    verdicts = mark_findings(diagnostics, result, capacity_bytes)
    report_json(result, estimate, diagnostics)   # the `dryrun` section of check's JSON
"""

from preflight.dryrun.report import (CompareRow, Verdict, compare, format_text, mark_findings,
                                     report_json)
from preflight.dryrun.result import DryrunResult, PhaseMemory, RankLedger
from preflight.dryrun.runner import INSTALL_HINT, TorchMissing, run_dryrun, torch_available

__all__ = ["run_dryrun", "compare", "mark_findings", "report_json", "format_text", "DryrunResult",
           "RankLedger", "PhaseMemory", "CompareRow", "Verdict", "TorchMissing",
           "INSTALL_HINT", "torch_available"]
