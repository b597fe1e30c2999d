"""Test helpers: plans whose facts sit on known lines, and hand-made ledgers that follow
LEDGER.md §1/§3 (so rule tests do not depend on the estimator's internals)."""

from __future__ import annotations

from typing import Any, Optional

from preflight.engine import RuleContext
from preflight.estimate.result import Estimate, Ledger, LedgerLine, Walls
from preflight.plan import Fact, Origin, Source, TrainingPlan

H100 = 81559 * 2**20          # nvidia-smi total of an H100-80GB: 79.6 GiB


def plan(values: dict[str, Any], path: str = "train.py") -> TrainingPlan:
    """Each fact on its own line: the i-th fact (1-based, in dict order) on line i."""
    return TrainingPlan(facts={k: Fact(value=v, origin=Origin.LITERAL,
                                       source=Source(path=path, line=i, col=1))
                               for i, (k, v) in enumerate(values.items(), 1) if v is not None})


def line(p: TrainingPlan, name: str) -> int:
    return p.source(name).line


def ledger(n: int, *, param_b: int = 2, grad_b: int = 2, opt_b: int = 8, master_b: int = 4,
           stage: int = 0, dp: int = 1, act: int = 0, other: int = 0,
           cap: Optional[int] = H100, headroom: float = 0.2) -> Ledger:
    sh = {"params": stage >= 3, "grads": stage >= 2, "optimizer": stage >= 1, "master": stage >= 1}
    per = {"params": param_b, "grads": grad_b, "optimizer": opt_b, "master": master_b}
    lines = [LedgerLine(key=k, label=k, bytes=int(n * per[k] / (dp if sh[k] else 1)))
             for k in ("params", "grads", "optimizer", "master")]
    lines.append(LedgerLine(key="activations", label="activations", bytes=act))
    lines.append(LedgerLine(key="overhead", label="CUDA context", bytes=other))
    return Ledger(lines=lines, capacity_bytes=cap, headroom=headroom)


def ctx(p: TrainingPlan, led: Optional[Ledger] = None, walls: Optional[Walls] = None,
        gpu: str = "H100-80GB", headroom: float = 0.2) -> RuleContext:
    est = Estimate(ledger=led or Ledger(), walls=walls or Walls())
    return RuleContext(plan=p, estimate=est, gpu_name=gpu, headroom=headroom)


def run(rule_cls, c: RuleContext):
    return list(rule_cls().check(c))
