"""FSDP's mixed-precision policy without autocast (torchtitan's fully_shard): fp32 sharded
weights, gradients and optimizer state, 16-bit compute. The activations are the 16-bit
tables, not autocast's fp32 residual stream, and each unit is all-gathered in 16 bits;
without sharding torchtitan applies the same setting through torch.autocast."""

import json

import pytest

from preflight.physics.inputs import Inputs
from preflight.physics.states import precision_of
from tests.conftest import run_cli

TOML = """\
[model]
name = "llama3"
flavor = "8B"

[training]
local_batch_size = 1
seq_len = 8192
mixed_precision_param = "bfloat16"

[parallelism]
data_parallel_shard_degree = {shard}

[activation_checkpoint]
mode = "full"
"""


def _ledger(tmp_path, shard: int, gpus: int) -> dict:
    (tmp_path / ".git").mkdir()
    (tmp_path / "llama3_8b.toml").write_text(TOML.format(shard=shard))
    (tmp_path / "run.sh").write_text(
        f"torchrun --nproc_per_node {gpus} -m torchtitan.train "
        "--job.config_file llama3_8b.toml\n")
    r = run_cli("check", str(tmp_path / "run.sh"), "--gpu", "H100-80GB", "--format", "json",
                cwd=str(tmp_path))
    return json.loads(r.stdout)["jobs"][0]["ledger"]


def _line(ledger: dict, label: str) -> dict:
    return next(ln for ln in ledger["lines"] if ln["label"].startswith(label))


def test_sharded_job_computes_in_16_bits_over_fp32_shards(tmp_path):
    led = _ledger(tmp_path, -1, 8)
    n = 8_030_261_248
    weights = _line(led, "weights")
    assert (weights["bytes"], weights["label"]) == (4 * n // 8, "weights (fp32)")
    assert _line(led, "gradients")["bytes"] == 4 * n // 8
    # 32 layer inputs of 8,192 tokens in bf16: no fp32 residual stream
    assert _line(led, "layer inputs kept by full checkpointing")["bytes"] == \
        32 * 8192 * 2 * 4096
    # the largest unit (the embedding) all-gathered in bf16, current and prefetched
    assert _line(led, "all-gathered weights")["bytes"] == 2 * 2 * 128_256 * 4096


def test_unsharded_job_runs_under_autocast(tmp_path):
    led = _ledger(tmp_path, 1, 1)
    # torch.autocast over fp32 weights: the residual stream, so each layer input, is fp32
    assert _line(led, "layer inputs kept by full checkpointing")["bytes"] == \
        32 * 8192 * 4 * 4096


@pytest.mark.parametrize("fsdp,autocast", [("full_shard", False), (None, True)])
def test_the_regime_needs_sharding(fsdp, autocast):
    x = Inputs()
    x.param_dtype, x.mixed_precision, x.fsdp, x.fsdp_mp = "fp32", "bf16", fsdp, True
    p = precision_of(x)
    assert (p.weight, p.grad, p.master, p.act, p.autocast) == (4, 4, 0, 2, autocast)
