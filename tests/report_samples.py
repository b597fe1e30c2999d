"""Synthetic reports for the writer tests: real pydantic objects, files on disk."""

from __future__ import annotations

import os

from preflight.physics.result import Estimate, Ledger, LedgerLine, Walls
from preflight.result import JobResult, Report
from preflight.plan import Diagnostic, Job, Source, TrainingPlan

H100 = 81559 * 1024 ** 2          # nvidia-smi total of an H100-80GB, bytes
N7B = 7_000_000_000

TRAIN_PY = """import torch
from transformers import AutoModelForCausalLM

model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf")
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)
"""
DS_JSON = """{
  "train_micro_batch_size_per_gpu": 4,
  "zero_optimization": {"stage": 0},
  "bf16": {"enabled": true}
}
"""
SMALL_PY = """import torch
model = torch.nn.Linear(768, 768)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
"""


def write_files(root: str) -> None:
    os.makedirs(os.path.join(root, "jobs"), exist_ok=True)
    for name, text in (("train.py", TRAIN_PY), ("jobs/ds_config.json", DS_JSON),
                       ("jobs/small.py", SMALL_PY)):
        with open(os.path.join(root, name), "w") as fh:
            fh.write(text)


def ledger_7b() -> Ledger:
    return Ledger(capacity_bytes=H100, headroom=0.2, lines=[
        LedgerLine(key="params", label="parameters (bf16)", bytes=2 * N7B, formula="2 B × 7,000,000,000"),
        LedgerLine(key="grads", label="gradients (bf16)", bytes=2 * N7B, formula="2 B × 7,000,000,000"),
        LedgerLine(key="optimizer", label="optimizer state (AdamW m, v fp32)", bytes=8 * N7B,
                   formula="8 B × 7,000,000,000"),
        LedgerLine(key="master", label="master weights (fp32)", bytes=4 * N7B, formula="4 B × 7,000,000,000"),
        LedgerLine(key="activations", label="activations", bytes=36_507_222_016,
                   formula="34 × 8192 × 4096 × 32"),
        LedgerLine(key="overhead", label="CUDA context", bytes=1 << 30, formula="1 GiB",
                   note="assumed"),
        margin_line(),
    ])


def margin_line() -> LedgerLine:
    """The estimator's reserve: 20 % of capacity, a line of its own (not an allocation)."""
    return LedgerLine(key="overhead", label="fragmentation / headroom margin (20% of capacity)",
                      bytes=H100 // 5, formula=f"0.2 × {H100:,} B", margin=True)


def ledger_small() -> Ledger:
    n = 590_592
    return Ledger(capacity_bytes=H100, headroom=0.2, lines=[
        LedgerLine(key="params", label="parameters (fp32)", bytes=4 * n, formula="4 B × 590,592"),
        LedgerLine(key="grads", label="gradients (fp32)", bytes=4 * n, formula="4 B × 590,592"),
        LedgerLine(key="overhead", label="CUDA context", bytes=1 << 30, formula="1 GiB", note="assumed"),
        margin_line(),
    ])


def plan(gpu: str = "H100-80GB") -> TrainingPlan:
    return TrainingPlan.from_values({"gpu": gpu})


def multi_job_report(root: str, *, message: str | None = None, path_prefix: str = "") -> Report:
    """Two jobs (one over capacity with two findings, one that fits and is clean) and one
    finding outside any job. Paths are relative to `root` unless `path_prefix` says otherwise."""
    p = (lambda rel: os.path.join(path_prefix, rel)) if path_prefix else (lambda rel: rel)
    big = Job(entry=p("train.py"), files=[p("train.py"), p("jobs/ds_config.json")], plan=plan())
    small = Job(entry=p("jobs/small.py"), files=[p("jobs/small.py")], plan=plan())
    d1 = Diagnostic(code="PF101", name="states-over-capacity", severity="error",
                    message=message or "model states need 104.3 GiB per GPU (16 B/param × 7.00B); "
                                       "H100-80GB has 79.6 GiB",
                    path=p("train.py"), line=5, col=13,
                    fix="shard them: ZeRO-3 over 8 GPUs needs 13.0 GiB per GPU",
                    related=[Source(path=p("jobs/ds_config.json"), line=3, col=25)],
                    data={"states_bytes": 16 * N7B})
    d2 = Diagnostic(code="PF401", name="precision-set-twice", severity="warning",
                    message="bf16 is enabled here and by the launcher", path=p("jobs/ds_config.json"),
                    line=4, col=3)
    loose = Diagnostic(code="PF001", name="unreadable-file", severity="error",
                       message="no such file or directory", path=p("missing.py"))
    return Report(jobs=[
        JobResult(job=big, estimate=Estimate(ledger=ledger_7b(), walls=Walls()), diagnostics=[d1, d2]),
        JobResult(job=small, estimate=Estimate(ledger=ledger_small(), walls=Walls()), diagnostics=[]),
    ], diagnostics=[loose])


class FakeRule:
    # Duck-typed rule metadata, as the rule engine's classes carry it (no docstring on
    # purpose: a rule's class docstring counts as its docs).

    def __init__(self, code, name, summary, severity="error", misconception=None, case=None, docs=""):
        self.code, self.name, self.summary, self.severity = code, name, summary, severity
        self.misconception, self.case, self.docs = misconception, case, docs


PF101_DOCS = """## What it does
Flags a job whose model states (parameters, gradients, optimizer state, master weights)
exceed one GPU's memory.

## Why is this bad
Adam with mixed precision holds 16 bytes per parameter: a 7B model needs 112 GB.

## Example
```python
# plain DDP on 8 x H100-80GB
model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf")
```

## Use instead
Shard the states with ZeRO-3 / FSDP full shard.
"""

RULES = [FakeRule("PF101", "states-over-capacity", "Model states exceed GPU memory",
                  misconception=1, case="A", docs=PF101_DOCS),
         FakeRule("PF401", "precision-set-twice", "Precision is configured in two places",
                  severity="warning")]
