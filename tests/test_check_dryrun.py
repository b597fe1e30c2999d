"""`preflight check --dry-run`: the static findings and one real step, in one report."""

import json

import pytest

from tests.conftest import run_cli

pytest.importorskip("torch", reason="torch==2.13.0 (the dryrun extra) is not installed")

SCRIPT = '''import torch

model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 64))
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
loader = torch.utils.data.DataLoader(torch.randn(64, 64), batch_size=8)
for x in loader:
    loss = model(x).pow(2).mean()
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
'''


def test_check_dry_run_adds_the_measurement_to_each_job(tmp_path):
    (tmp_path / "train.py").write_text(SCRIPT)
    r = run_cli("check", "--dry-run", "--device", "cpu", "--timeout", "120", "--format", "json",
                "train.py", cwd=str(tmp_path))
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    (job,) = json.loads(r.stdout)["jobs"]
    dry = job["dryrun"]
    assert dry["status"] == "ok"
    n = 64 * 256 + 256 + 256 * 64 + 64
    rank = dry["ranks"][0]
    # fp32 AdamW: parameters 4 B, gradients 4 B, m and v 8 B per parameter, plus a scalar
    # fp32 `step` per parameter tensor (4 tensors)
    assert (rank["params"], rank["grads"], rank["optimizer"]) == (4 * n, 4 * n, 8 * n + 4 * 4)
    # the only static finding: the job was not sized (no GPU given, no sequence length) —
    # nothing a dry run confirms or refutes
    assert [(f["code"], f["verdict"]) for f in dry["findings"]] == [("PF007", "untested")]


def test_check_dry_run_text(tmp_path):
    (tmp_path / "train.py").write_text(SCRIPT)
    r = run_cli("check", "--dry-run", "--device", "cpu", "--timeout", "120", "train.py",
                cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr[-2000:]
    assert "dry run of train.py" in r.stdout


MODULE_SCRIPT = '''import torch


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(64, 256)
        self.fc2 = torch.nn.Linear(256, 64)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


model = MLP()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
loader = torch.utils.data.DataLoader(torch.randn(64, 64), batch_size=8)
for x in loader:
    loss = model(x).pow(2).mean()
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
'''


def test_dry_run_confirms_a_case_a_finding(tmp_path):
    # 33,088 fp32 AdamW parameters hold 529,408 B of states: over a 200 KB card (case A)
    (tmp_path / "train.py").write_text(MODULE_SCRIPT)
    r = run_cli("check", "--gpu-memory", "200KB", "--dry-run", "--device", "cpu",
                "--timeout", "120", "--format", "json", "train.py", cwd=str(tmp_path))
    assert r.returncode == 1, r.stderr[-2000:]
    (job,) = json.loads(r.stdout)["jobs"]
    assert [(d["code"], d["line"]) for d in job["diagnostics"]] == [("PF102", 14), ("PF101", 15)]
    verdicts = {(v["code"], v["verdict"]) for v in job["dryrun"]["findings"]}
    assert verdicts == {("PF101", "confirmed"), ("PF102", "confirmed")}
