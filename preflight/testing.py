"""A test kit for rules — preflight's own and third-party packs' alike.

    from preflight.testing import assert_examples
    def test_my_rule():
        assert_examples(MyRule)          # every INVALID fires where it says, every VALID is silent

`check_example` runs one `Example` job through the real pipeline (discovery, extraction,
assembly, model resolution, estimate, every rule) in a directory of its own. The helpers
below it build plans and ledgers by hand for unit tests of a rule's arithmetic.

A job whose facts no longer extract is reported as a failure (`ExampleResult.missing`),
never skipped.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import tempfile
from dataclasses import dataclass, field
from typing import Any, Iterator, Optional

from preflight import pipeline
from preflight.config import ProjectConfig, load_project_config
from preflight.engine import Example, Rule, RuleContext
from preflight.options import CheckOptions
from preflight.physics.result import Estimate, Ledger, LedgerLine, Walls
from preflight.plan import Diagnostic, Fact, Origin, Source, TrainingPlan

#: usable memory of an H100-80GB as nvidia-smi reports it: 81,559 MiB (79.6 GiB)
H100 = 81559 * 2**20


@dataclass
class ExampleResult:
    diagnostics: list[Diagnostic] = field(default_factory=list)
    #: facts the example `needs` that the pipeline did not resolve
    missing: list[str] = field(default_factory=list)


def materialise(ex: Example, root: str) -> None:
    """Write the example's files under `root`."""
    for rel, text in ex.files.items():
        p = os.path.join(str(root), rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w", encoding="utf-8") as fh:
            fh.write(text)


@contextlib.contextmanager
def _inside(root: str) -> Iterator[None]:
    cwd = os.getcwd()
    os.chdir(root)
    try:
        yield
    finally:
        os.chdir(cwd)


def check_example(ex: Example, root: Optional[str] = None) -> ExampleResult:
    """Every finding of the example's job (after noqa and the other filters), checked from
    inside `root` (a new temporary directory when None) as `preflight check` would."""
    if root is None:
        with tempfile.TemporaryDirectory() as d:
            return check_example(ex, d)
    materialise(ex, root)
    with _inside(str(root)):
        paths = ex.paths if ex.paths is not None else ([] if ex.command else sorted(ex.files))
        command = shlex.split(ex.command) if ex.command else None
        config = load_project_config(".") if "pyproject.toml" in ex.files else ProjectConfig()
        report = pipeline.run(paths, CheckOptions(command=command, gpu=ex.gpu,
                                                  headroom=ex.headroom, config=config,
                                                  fixes=False))
    missing = sorted({n for j in report.jobs for n in ex.needs if not j.job.plan.known(n)})
    return ExampleResult(diagnostics=report.all_diagnostics(), missing=missing)


def example_failures(rule: Rule | type[Rule]) -> list[str]:
    """What is wrong with a rule's examples, in words ([] when they all hold)."""
    out: list[str] = []
    for kind, examples in (("INVALID", rule.INVALID), ("VALID", rule.VALID)):
        for i, ex in enumerate(examples):
            res = check_example(ex)
            if res.missing:
                out.append(f"{rule.code} {kind}[{i}]: facts not resolved: {', '.join(res.missing)}")
                continue
            got = {(d.code, d.path, d.line) for d in res.diagnostics if d.code == rule.code}
            want = set(ex.expect) if kind == "INVALID" else set()
            if got != want:
                out.append(f"{rule.code} {kind}[{i}]: expected {sorted(want)}, got {sorted(got)}")
    if not rule.INVALID:
        out.append(f"{rule.code}: no INVALID example")
    return out


def assert_examples(rule: Rule | type[Rule]) -> None:
    """Fail (AssertionError) unless every example of `rule` holds."""
    failures = example_failures(rule)
    assert not failures, "\n".join(failures)


# --------------------------------------------------------------------------- hand-made inputs

def plan(values: dict[str, Any], path: str = "train.py") -> TrainingPlan:
    """A plan with each fact on its own line: the i-th fact (1-based, in dict order) on
    line i of `path`."""
    return TrainingPlan(facts={k: Fact(value=v, origin=Origin.LITERAL,
                                       source=Source(path=path, line=i, col=1))
                               for i, (k, v) in enumerate(values.items(), 1) if v is not None})


@dataclass(frozen=True)
class StateBytes:
    """Bytes per parameter of each model state (docs/ledger.md): by default bf16 weights
    and gradients, Adam's two fp32 moments and an fp32 master copy."""

    params: int = 2
    grads: int = 2
    optimizer: int = 8
    master: int = 4


def ledger(n: int, per: StateBytes = StateBytes(), *, stage: int = 0, dp: int = 1,
           act: int = 0, other: int = 0, cap: Optional[int] = H100,
           headroom: float = 0.2) -> Ledger:
    """A ledger of `n` parameters with `per` bytes per parameter of each state, sharded as
    ZeRO `stage` over `dp` ranks (docs/ledger.md, "Sharding")."""
    sh = {"params": stage >= 3, "grads": stage >= 2, "optimizer": stage >= 1, "master": stage >= 1}
    lines = [LedgerLine(key=k, label=k, bytes=int(n * getattr(per, k) / (dp if sh[k] else 1)))
             for k in ("params", "grads", "optimizer", "master")]
    lines.append(LedgerLine(key="activations", label="activations", bytes=act))
    lines.append(LedgerLine(key="overhead", label="CUDA context", bytes=other))
    return Ledger(lines=lines, capacity_bytes=cap, headroom=headroom)


def context(p: TrainingPlan, led: Optional[Ledger] = None, walls: Optional[Walls] = None,
            gpu: str = "H100-80GB", headroom: float = 0.2) -> RuleContext:
    """A rule context over a hand-made plan and ledger."""
    est = Estimate(ledger=led or Ledger(), walls=walls or Walls())
    return RuleContext(plan=p, estimate=est, gpu_name=gpu, headroom=headroom)


def run(rule_cls: type[Rule], ctx: RuleContext) -> list[Diagnostic]:
    """The findings of one rule over one context."""
    return list(rule_cls().check(ctx))
