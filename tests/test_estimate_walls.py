"""Compute and communication walls, step time and scaling efficiency."""

import pytest

from preflight.physics import estimate
from preflight.physics.comm import allreduce_seconds
from preflight.physics.walls import efficiency_from_measurements, flops_per_token
from preflight.hardware import custom, lookup
from preflight.plan import TrainingPlan

N7 = 7_000_000_000


def test_measured_efficiency_worked_example():
    assert efficiency_from_measurements(2.0, 3.2, 8) == 0.078125
    assert efficiency_from_measurements(1.0, 1.0, 1) == 1.0
    with pytest.raises(ValueError):
        efficiency_from_measurements(0, 1, 8)
    with pytest.raises(ValueError):
        efficiency_from_measurements(1, 1, 0)


def test_flops_per_token():
    assert flops_per_token(N7) == (6 * N7, "6 × 7,000,000,000")
    assert flops_per_token(N7, checkpointing="full")[0] == 8 * N7
    # LoRA: forward and input-gradient through all weights, weight gradients only for adapters
    assert flops_per_token(N7, 10**7)[0] == 4 * N7 + 2 * 10**7


def _plan(**kw):
    base = dict(params=N7, optimizer="adamw", param_dtype="bf16", mixed_precision="bf16",
                micro_batch=4, seq_len=2048, layers=32, hidden=4096, heads=32, vocab=32000)
    base.update(kw)
    return TrainingPlan.from_values(base)


def test_compute_time_is_6NT_over_peak_times_mfu():
    w = estimate(_plan(grad_accum=2), lookup("H100")).walls
    tokens = 4 * 2048 * 2
    assert w.compute_s == pytest.approx(6 * N7 * tokens / (989.4e12 * 0.4))
    assert w.mfu == 0.4 and any("MFU 0.4 assumed" in n for n in w.notes)
    w8 = estimate(_plan(activation_checkpointing="full"), lookup("H100"), mfu=0.5).walls
    assert w8.compute_s == pytest.approx(8 * N7 * 4 * 2048 / (989.4e12 * 0.5))


def test_ddp_allreduce_time_follows_the_bus_bandwidth_rule():
    w = estimate(_plan(world_size=8), lookup("H100")).walls
    grads = 2 * N7
    assert w.comm_s == pytest.approx(grads * 2 * 7 / 8 / 370e9)
    assert w.comm_s == pytest.approx(allreduce_seconds(grads, 8, 370e9))


def test_zero3_moves_1_5x_an_allreduce():
    ddp = estimate(_plan(world_size=8), lookup("H100")).walls.comm_s
    z3 = estimate(_plan(world_size=8, zero_stage=3), lookup("H100")).walls.comm_s
    assert z3 == pytest.approx(1.5 * ddp)


def test_across_nodes_the_slower_link_decides():
    hw = lookup("A100-80GB")
    one = estimate(_plan(world_size=8), hw).walls.comm_s
    two = estimate(_plan(world_size=16, nodes=2, gpus_per_node=8), hw).walls.comm_s
    assert one == pytest.approx(2 * N7 * 2 * 7 / 8 / 230e9)
    assert two == pytest.approx(2 * N7 * 2 * 15 / 16 / 160e9)


def test_efficiency_falls_with_a_tiny_per_gpu_batch():
    big = estimate(_plan(world_size=64, nodes=8, gpus_per_node=8, micro_batch=8, grad_accum=8),
                   lookup("H100")).walls
    tiny = estimate(_plan(params=125_000_000, world_size=64, nodes=8, gpus_per_node=8,
                          micro_batch=1, seq_len=256, layers=12, hidden=768, heads=12),
                    lookup("H100")).walls
    assert big.efficiency > 0.9
    assert tiny.efficiency < 0.5


def test_tensor_parallel_across_nodes_is_on_the_critical_path():
    inside = estimate(_plan(world_size=8, tp=8), lookup("H100")).walls
    across = estimate(_plan(world_size=16, tp=16, nodes=2, gpus_per_node=8), lookup("H100")).walls
    assert inside.step_s > inside.compute_s
    tp_line = [ln for ln in across.lines if "tensor-parallel" in ln.label][0]
    assert "across nodes" in tp_line.note


def test_pipeline_bubble():
    w = estimate(_plan(world_size=4, pp=4, grad_accum=4), lookup("H100")).walls
    bubble = [ln for ln in w.lines if ln.label == "pipeline bubble"][0]
    assert "(4−1)/4" in bubble.formula


def test_without_gpu_or_inputs_walls_are_unknown_and_say_why():
    w = estimate(_plan(), None).walls
    assert w.compute_s is None and "no GPU" in w.lines[0].note
    w = estimate(_plan(micro_batch=None), lookup("H100")).walls
    assert w.compute_s is None and "micro_batch" in w.lines[0].note
    w = estimate(_plan(world_size=8), custom(80 * 10**9)).walls
    assert w.comm_s is None


def test_hybrid_shard_traffic_stays_mostly_inside_the_node():
    hw = lookup("H100")
    w = estimate(_plan(world_size=32, nodes=4, gpus_per_node=8, fsdp="hybrid_shard"), hw).walls
    inside = [ln for ln in w.lines if "within a node" in ln.label][0]
    across = [ln for ln in w.lines if "across nodes" in ln.label][0]
    g = 2 * N7                                       # bf16 gradients = bf16 weights
    assert float(inside.formula.rsplit("= ", 1)[1].split()[0]) == pytest.approx(
        3 * g * 7 / 8 / 370e9, rel=1e-3)
    assert float(across.formula.rsplit("= ", 1)[1].split()[0]) == pytest.approx(
        (g / 8) * 2 * 3 / 4 / 320e9, rel=1e-3)
    assert w.comm_s == pytest.approx(3 * g * 7 / 8 / 370e9 + (g / 8) * 2 * 3 / 4 / 320e9)


def test_cpu_offload_pays_its_pcie_transfers_on_the_critical_path():
    h100 = lookup("H100")
    assert h100.host_link_bytes_per_s == 63e9 and lookup("A100-80GB").host_link_bytes_per_s == 31e9
    kw = dict(world_size=8, micro_batch=1, grad_accum=4, zero_stage=2)
    plain = estimate(_plan(**kw), h100).walls
    opt = estimate(_plan(**kw, offload="optimizer"), h100).walls
    # gradients down every micro-step, updated bf16 weights back once: (4·2 + 2)·N/8 bytes
    nbytes = (4 * 2 + 2) * N7 // 8
    (line,) = [ln for ln in opt.lines if ln.label.startswith("CPU offload over PCIe")]
    assert line.formula == (f"(4 × 2 B + 2 B) × 7,000,000,000 / 8 = {nbytes:,} B / 63 GB/s "
                            f"(PCIe x16, one direction) = {nbytes / 63e9:.4g} s")
    assert opt.step_s == pytest.approx(plain.step_s + nbytes / 63e9)
    # parameters offloaded too: fetched for forward and backward of every micro-step
    both = estimate(_plan(**kw | {"zero_stage": 3}, offload="optimizer+params"), h100).walls
    z3 = estimate(_plan(**kw | {"zero_stage": 3}), h100).walls
    nbytes = 4 * (2 * 2 * N7 + 2 * N7) // 8
    assert both.step_s == pytest.approx(z3.step_s + nbytes / 63e9)
    # a card without a host-link figure: the transfer, and so the step, is unknown
    v100 = estimate(_plan(**kw, offload="optimizer"), lookup("V100-32GB")).walls
    (line,) = [ln for ln in v100.lines if ln.label.startswith("CPU offload over PCIe")]
    assert line.bytes is None and "no host link bandwidth" in line.note
    assert v100.step_s is None
