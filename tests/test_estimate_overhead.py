"""The tiers above the tensors (preflight.physics.overhead): the caching allocator's
rounding and segments, cuBLAS's workspaces, NCCL's buffers, exact to the byte, and the
ledger lines the CLI prints from them."""

import json

import pytest

from preflight.physics.overhead import (block_bytes, cublas_config, cublas_workspace_bytes,
                                        fresh_segment_bytes, nccl_communicator_bytes,
                                        nccl_groups, segment_bytes)
from tests.conftest import run_cli

MiB = 2**20


def test_requests_round_to_512_bytes():
    assert block_bytes(1) == 512
    assert block_bytes(512) == 512
    assert block_bytes(513) == 1024


def test_segment_sizes_follow_the_allocator_pools():
    assert segment_bytes(1) == 2 * MiB                   # small pool: 2 MiB segments
    assert segment_bytes(1 * MiB) == 2 * MiB
    assert segment_bytes(1 * MiB + 1) == 20 * MiB        # 1–10 MiB: a 20 MiB segment
    assert segment_bytes(10 * MiB - 1) == 20 * MiB
    assert segment_bytes(10 * MiB) == 10 * MiB           # ≥ 10 MiB: its own, to 2 MiB
    assert segment_bytes(10 * MiB + 1) == 12 * MiB
    assert segment_bytes(1_048_576_000) == 1_048_576_000  # 1000 MiB is whole 2 MiB pages


def test_expandable_segments_leave_only_the_page_rounding():
    assert fresh_segment_bytes(10 * MiB + 1, expandable=False) == 12 * MiB
    assert fresh_segment_bytes(10 * MiB + 1, expandable=True) == 2 * MiB - 1
    assert fresh_segment_bytes(1_048_576_000, expandable=True) == 0


def test_cublas_workspace_per_config_and_gpu():
    assert cublas_workspace_bytes(":4096:2:16:8") == 2 * 4096 * 1024 + 8 * 16 * 1024 == 8_519_680
    assert cublas_workspace_bytes(":4096:8") == 32 * MiB
    with pytest.raises(ValueError):
        cublas_workspace_bytes(":4096")
    assert cublas_config("H100-SXM5-80GB")[0] == ":4096:8"
    assert cublas_config("A100-SXM4-40GB")[0] == ":4096:2:16:8"
    assert cublas_config(None)[0] == ":4096:8"            # unknown card: the larger


def test_nccl_buffers_per_communicator_and_groups():
    # 16 channels × 3 peers × (4 MiB Simple + 4,915,200 LL128 + 524,288 LL)
    assert nccl_communicator_bytes() == 48 * (4_194_304 + 4_915_200 + 524_288) == 462_422_016
    assert nccl_communicator_bytes(channels=2, peers=1) == 2 * 9_633_792
    assert nccl_groups(1, 1, 1, 1, 1) == []
    assert nccl_groups(8, 8, 1, 1, 1) == ["world"]
    assert nccl_groups(16, 2, 8, 1, 1) == ["world", "data-parallel", "tensor-parallel"]
    assert nccl_groups(8, 4, 1, 2, 1) == ["world", "data-parallel", "pipeline send/receive"]
    assert nccl_groups(16, 4, 1, 4, 2) == ["world", "data-parallel", "expert-parallel",
                                           "pipeline send", "pipeline receive"]


def _ledger(*flags):
    r = run_cli("estimate", "--model", "gpt2", "--optimizer", "adamw", "--precision", "fp32",
                "--micro-batch", "4", "--seq-len", "512", *flags, "--format", "json")
    assert r.returncode == 0, r.stderr
    led = json.loads(r.stdout)["jobs"][0]["ledger"]
    return led, {ln["label"].split(" (")[0]: ln for ln in led["lines"]}


def test_the_tiers_are_the_tensors_plus_each_line():
    led, lines = _ledger("--gpu", "H100")
    logits = 4 * 4 * 512 * 50257                              # the fp32 logits: 411,705,344 B
    slack = lines["allocator segment slack"]
    assert slack["bytes"] == segment_bytes(logits) == 413_138_944   # 197 pages of 2 MiB
    assert slack["lifetime"] == "reserved"
    cublas = lines["cuBLAS workspaces"]
    assert cublas["bytes"] == 2 * 32 * MiB
    ctx = lines["CUDA context"]
    assert ctx["bytes"] == 512 * MiB and ctx["lifetime"] == "process"
    t = led["tiers"]
    assert t["reserved"] == t["tensors"] + 413_138_944 + 64 * MiB
    assert t["process"] == t["reserved"] + 512 * MiB
    assert "NCCL communicator buffers" not in lines           # one GPU: no communicator


def test_expandable_segments_and_a_pre_hopper_card_change_the_reserved_tier():
    led, lines = _ledger("--gpu", "A100-40GB", "--expandable-segments")
    logits = 4 * 4 * 512 * 50257
    assert lines["allocator segment slack"]["bytes"] == 413_138_944 - logits == 1_433_600
    assert lines["cuBLAS workspaces"]["bytes"] == 2 * 8_519_680
    t = led["tiers"]
    assert t["reserved"] == t["tensors"] + 1_433_600 + 2 * 8_519_680


def test_distributed_jobs_hold_one_communicator_per_group():
    led, lines = _ledger("--world-size", "16", "--tp", "2", "--gpu", "H100")
    nccl = next(ln for k, ln in lines.items() if k.startswith("NCCL communicator buffers"))
    assert nccl["bytes"] == 3 * 462_422_016                    # world, data-, tensor-parallel
    assert "world, data-parallel, tensor-parallel" in nccl["label"]
    t = led["tiers"]
    assert t["process"] == t["reserved"] + 512 * MiB + 3 * 462_422_016


def test_eager_module_loading_takes_the_measured_larger_context():
    led, lines = _ledger("--gpu", "V100", "--cuda-module-loading", "eager")
    ctx = lines["CUDA context"]
    assert ctx["bytes"] == 1_343_000_000 and ctx["formula"] == "1,343 MB"
    assert led["tiers"]["process"] == led["tiers"]["reserved"] + 1_343_000_000
    r = run_cli("estimate", "--model", "gpt2", "--cuda-module-loading", "sometimes")
    assert r.returncode == 2 and "--cuda-module-loading" in r.stderr


def test_a_chunked_loss_keeps_16_bit_logits_and_one_chunk_of_gradients():
    led, lines = _ledger("--loss-kernel", "chunked", "--gpu", "H100")
    bsv = 4 * 512 * 50257                                     # fp32 run: d = 4 bytes
    assert lines["logits, lm_head output in 128-position chunks"]["bytes"] == 4 * bsv
    assert lines["log-softmax outputs of the chunks"]["bytes"] == 4 * bsv
    one = "one chunk's NLL and log-softmax gradients at the start of backward"
    assert lines[one]["bytes"] == 2 * 4 * 4 * 128 * 50257
    assert "logits kept for the loss" not in lines
    assert "logit gradients at the start of backward" not in lines
    # the largest transient is one chunk of logits: its own segment, to 2 MiB
    assert lines["allocator segment slack"]["bytes"] == segment_bytes(4 * 4 * 128 * 50257)
    std, _ = _ledger("--gpu", "H100")
    assert led["tiers"]["tensors"] < std["tiers"]["tensors"]
