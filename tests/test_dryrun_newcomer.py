"""The newcomer's job, checked and then run for one step: a model loaded in bf16, trained by
the HF Trainer with `bf16=True` and `adamw_torch`. No fp32 master copy exists, AdamW keeps
m and v in bf16: 8 B/param of states. The static ledger says so and PF201 fires; one real
step on CPU (`check --dry-run`) measures the same states, ratio 1.00."""

import json

import pytest

from tests.conftest import run_cli

torch = pytest.importorskip("torch", reason="torch==2.13.0 (the dryrun extra) is not installed")
transformers = pytest.importorskip("transformers")

SCRIPT = '''\
import torch
from transformers import AutoModelForCausalLM, Trainer, TrainingArguments

model = AutoModelForCausalLM.from_pretrained("./tiny", torch_dtype=torch.bfloat16)
data = [{"input_ids": [i % 64 for i in range(k, k + 16)],
         "labels": [i % 64 for i in range(k, k + 16)]} for k in range(8)]
args = TrainingArguments(output_dir="out", bf16=True, optim="adamw_torch",
                         per_device_train_batch_size=2, max_steps=1, report_to=[],
                         save_strategy="no", use_cpu=True)
trainer = Trainer(model=model, args=args, train_dataset=data)
trainer.train()
'''


def test_newcomer_dry_run_agrees_on_the_states(tmp_path):
    cfg = transformers.GPT2Config(n_layer=2, n_embd=64, n_head=2, vocab_size=64, n_positions=32)
    transformers.GPT2LMHeadModel(cfg).save_pretrained(tmp_path / "tiny")
    (tmp_path / "train.py").write_text(SCRIPT)
    r = run_cli("check", "--dry-run", "--device", "cpu", "--timeout", "300", "--gpu", "H100",
                "--format", "json", "train.py", cwd=str(tmp_path))
    (job,) = json.loads(r.stdout)["jobs"]
    n = job["facts"]["params"]["value"]
    b = job["ledger"]["per_gpu_bytes"]
    # the static half: bf16 weights and gradients, AdamW's m and v in bf16, no master
    assert (b["params"], b["grads"], b["master"]) == (2 * n, 2 * n, 0)
    assert "PF201" in {d["code"] for d in job["diagnostics"]}
    # the dry half: one real step measures the same states
    dry = job["dryrun"]
    assert dry["status"] == "ok", dry
    rank = dry["ranks"][0]
    assert rank["master"] == 0
    assert (rank["params"], rank["grads"]) == (2 * n, 2 * n)
    states = [row for row in dry["compare"] if row["item"] == "states"]
    (row,) = states
    assert f"{row['ratio']:.2f}" == "1.00", dry["compare"]
    # the whole difference: torch's AdamW keeps a 4 B `step` count per parameter tensor
    # (28 here: wte, wpe, ln_f's two and 12 per block), which the static path does not
    # count for a model outside the catalogue
    assert row["measured"] - row["predicted"] == 4 * 28
