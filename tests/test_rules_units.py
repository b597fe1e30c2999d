"""Each built-in rule on hand-made plans and ledgers: fires with the numbers, at the fact
that causes it; stays silent just across its threshold."""

import pytest

from preflight.physics.result import Walls
from preflight.rules.pf101_state_exceeds_capacity import StateExceedsCapacity
from preflight.rules.pf102_weights_fit_states_do_not import WeightsFitStatesDoNot
from preflight.rules.pf104_small_batch_state_oom import SmallBatchStateOOM
from preflight.rules.pf105_mixed_precision_states import MixedPrecisionStates
from preflight.rules.pf106_sharding_without_state_problem import ShardingWithoutStateProblem
from preflight.rules.pf107_activations_exceed_capacity import ActivationsExceedCapacity
from preflight.rules.pf108_model_parallel_for_states import ModelParallelForStates
from preflight.rules.pf109_single_tensor_exceeds_capacity import SingleTensorExceedsCapacity
from preflight.rules.pf110_materialised_attention import MaterialisedAttention
from preflight.rules.pf111_logits_dominate import LogitsDominate
from preflight.rules.pf112_inside_headroom import InsideHeadroom
from preflight.rules.pf201_half_weights_no_master import HalfWeightsNoMaster
from preflight.rules.pf301_low_scaling_efficiency import LowScalingEfficiency
from preflight.rules.pf302_tp_across_nodes import TensorParallelAcrossNodes
from preflight.rules.pf303_pipeline_bubble import PipelineBubble
from preflight.engine import gib
from preflight.testing import H100, StateBytes, ledger, plan, run
from preflight.testing import context as ctx


def line(p, name: str) -> int:
    return p.source(name).line


N7 = 7_000_000_000


def real(values, headroom=0.2):
    """A rule context over the estimator's own ledger of `values` on an H100-80GB."""
    from preflight import hardware
    from preflight.engine import RuleContext
    from preflight.physics import estimate

    p = plan(values)
    est = estimate(p, hardware.custom(H100), headroom)
    return RuleContext(plan=p, estimate=est, gpu_name="H100-80GB", headroom=headroom)


#: a 1.3B GPT-2-style model trained with mixed-precision AdamW on 8 GPUs
ONE_B3 = {"params": 1_300_000_000, "optimizer": "adamw", "param_dtype": "bf16",
          "mixed_precision": "bf16", "micro_batch": 1, "seq_len": 2048, "layers": 24,
          "hidden": 2048, "heads": 16, "vocab": 50257, "world_size": 8, "gpus_per_node": 8,
          "family": "gpt2", "attention": "sdpa", "activation_checkpointing": "none"}
SEVEN_B_REAL = {**ONE_B3, "params": N7, "layers": 32, "hidden": 4096, "heads": 32,
                "ffn_hidden": 11008, "vocab": 32000, "family": "llama"}
EIGHT_B = {**ONE_B3, "params": 8_000_000_000, "layers": 32, "hidden": 4096, "heads": 32,
           "kv_heads": 8, "ffn_hidden": 14336, "vocab": 128256, "family": "llama"}


def seven_b(**over):
    v = {"model": "llama-7b", "params": N7, "optimizer": "adamw", "mixed_precision": "bf16",
         "param_dtype": "bf16", "micro_batch": 4, "grad_accum": 1, "world_size": 8,
         "gpus_per_node": 8, "zero_stage": 0, "seq_len": 2048}
    v.update(over)
    return plan(v)


def test_pf101_message_carries_the_ledger_numbers():
    p = seven_b()
    (d,) = run(StateExceedsCapacity, ctx(p, ledger(N7, dp=8)))
    assert d.code == "PF101" and d.severity == "error"
    assert d.line == line(p, "optimizer")
    assert d.message == ("model states need 104.3 GiB per GPU (16 B/param × 7.00B) under DDP; "
                         "H100-80GB has 79.6 GiB usable")
    # the cheapest fix in LEDGER.md §4 order: ZeRO-1 already fits (28 + 84/8 = 38.5e9 B)
    assert d.fix == "shard the states: ZeRO-1 over 8 GPUs holds 35.9 GiB per GPU"


def test_pf101_single_gpu_prescribes_8bit_then_more_gpus():
    p = seven_b(world_size=1, model="m", params=3_000_000_000)
    (d,) = run(StateExceedsCapacity, ctx(p, ledger(3_000_000_000, cap=40 * 10**9)))
    # 48e9 B of states on 40e9 B; 8-bit Adam: 48 − 24·3/4 = 30e9 B (27.9 GiB) ≤ 0.8·40e9 B
    assert "8-bit optimizer" in d.fix and "27.9 GiB" in d.fix
    (d,) = run(StateExceedsCapacity, ctx(seven_b(world_size=1), ledger(N7)))
    assert "ZeRO-3 / FSDP FULL_SHARD needs ≥ 2 GPUs" in d.fix


def test_pf101_silent_when_sharded_states_fit():
    assert run(StateExceedsCapacity, ctx(seven_b(zero_stage=3), ledger(N7, stage=3, dp=8))) == []
    # and without a ledger (unknown) it says nothing rather than guess
    assert run(StateExceedsCapacity, ctx(seven_b())) == []


def test_pf102_weights_fit_states_do_not():
    p = seven_b()
    (d,) = run(WeightsFitStatesDoNot, ctx(p, ledger(N7, dp=8)))
    assert d.line == line(p, "model")
    assert "the weights alone are 13.0 GiB per GPU (2 B/param) and fit" in d.message
    assert "params 13.0 GiB + grads 13.0 GiB + optimizer 52.2 GiB + master 26.1 GiB" in d.message
    # a model whose bf16 weights alone overflow is not misconception 1
    big = 50_000_000_000
    assert run(WeightsFitStatesDoNot, ctx(seven_b(params=big), ledger(big, dp=8))) == []


def test_pf104_fires_at_micro_batch_one_or_at_accumulation():
    p = seven_b(micro_batch=1, grad_accum=16)
    (d,) = run(SmallBatchStateOOM, ctx(p, ledger(N7, dp=8, act=2 * 10**9)))
    assert d.line == line(p, "micro_batch")
    assert d.message.startswith("the micro-batch is already 1, but the OOM is model states: "
                                "104.3 GiB per GPU")
    p = seven_b(micro_batch=2, grad_accum=8)
    (d,) = run(SmallBatchStateOOM, ctx(p, ledger(N7, dp=8)))
    assert d.line == line(p, "grad_accum") and "8 accumulation steps of 2" in d.message
    assert run(SmallBatchStateOOM, ctx(seven_b(), ledger(N7, dp=8))) == []


def test_pf105_mixed_precision_only_when_on():
    p = seven_b()
    (d,) = run(MixedPrecisionStates, ctx(p, ledger(N7, dp=8)))
    assert d.line == line(p, "mixed_precision")
    assert "the fp32 master weights (26.1 GiB) take it back" in d.message
    fp32 = ledger(N7, StateBytes(params=4, grads=4, master=0), dp=8)
    assert run(MixedPrecisionStates, ctx(seven_b(mixed_precision="none"), fp32)) == []


def test_pf106_zero3_for_activation_problem():
    n = 1_300_000_000
    p = plan({"params": n, "zero_stage": 3, "world_size": 8, "micro_batch": 4, "seq_len": 16384})
    (d,) = run(ShardingWithoutStateProblem, ctx(p, ledger(n, stage=3, dp=8, act=110 * 10**9)))
    assert d.line == line(p, "zero_stage")
    assert d.message.startswith("ZeRO-3 shards the model states to 2.4 GiB per GPU, but the OOM "
                                "is activations: 102.4 GiB per GPU")
    assert d.data["case"] == "B"        # predicts an OOM in backward: the dry run can check it


def test_pf106_zero3_where_ddp_fits_and_silent_where_needed():
    c = real({**ONE_B3, "zero_stage": 3})
    (d,) = run(ShardingWithoutStateProblem, c)
    ddp = c.what_if("plain DDP", zero_stage=0, fsdp=None).ledger
    assert f"plain DDP would hold {gib(ddp.states_bytes)} of states" in d.message
    assert "19.4 GiB of states" in d.message            # 16 B/param × 1.3B, unsharded
    assert "case" not in d.data         # predicts no OOM
    assert run(ShardingWithoutStateProblem, real({**SEVEN_B_REAL, "zero_stage": 3})) == []
    # FSDP full shard counts as stage 3
    c = real({**ONE_B3, "fsdp": "full_shard"})
    (d,) = run(ShardingWithoutStateProblem, c)
    assert d.line == line(c.plan, "fsdp") and d.message.startswith("FSDP full_shard shards states")


def test_pf107_case_b_prescribes_checkpointing_then_micro_batch():
    c = real({**ONE_B3, "micro_batch": 8, "seq_len": 4096})
    (d,) = run(ActivationsExceedCapacity, c)
    assert d.line == line(c.plan, "micro_batch")
    # the largest micro-batch whose re-estimated peak fits, with accumulation for the rest
    k = c.largest_micro_batch()
    # a divisor of the job's micro-batch, so accumulation keeps the global batch exactly
    assert 1 <= k < 8 and 8 % k == 0 and c.what_if("", micro_batch=k).ledger.fits()
    bigger = min(n for n in range(k + 1, 9) if 8 % n == 0)
    assert not c.what_if("", micro_batch=bigger).ledger.fits()
    # what shrinks the activations comes first when it fits (the planner's order)
    assert c.what_if("", activation_checkpointing="full").fits
    assert d.fix == ("enable full activation checkpointing (gradient_checkpointing=True), which "
                     f"fits; or micro-batch {k} with {-(-8 // k)}× gradient accumulation (the "
                     "same global batch)")
    c = real({**ONE_B3, "micro_batch": 1, "seq_len": 32768})
    (d,) = run(ActivationsExceedCapacity, c)
    assert d.line == line(c.plan, "seq_len")
    assert d.fix == "enable full activation checkpointing (gradient_checkpointing=True), which fits"
    c = real({**ONE_B3, "micro_batch": 1, "seq_len": 131072, "activation_checkpointing": "full"})
    (d,) = run(ActivationsExceedCapacity, c)
    assert "sequence / context parallelism" in d.fix
    # states over capacity is case A, not B
    assert run(ActivationsExceedCapacity, ctx(seven_b(), ledger(N7, act=10**9))) == []


def test_pf108_tp_for_a_state_problem():
    c = real({**EIGHT_B, "tp": 8})
    (d,) = run(ModelParallelForStates, c)
    assert d.line == line(c.plan, "tp")
    assert "ZeRO-3 / FSDP over the same 8 GPUs holds 14.9 GiB of states per GPU" in d.message
    assert run(ModelParallelForStates, real({**EIGHT_B, "tp": 1, "zero_stage": 3})) == []


def test_pf109_logits_case_c():
    gemma = {**ONE_B3, "params": 2_600_000_000, "vocab": 256000, "hidden": 2304, "heads": 8,
             "layers": 26, "ffn_hidden": 9216, "family": "llama", "micro_batch": 16,
             "seq_len": 8192, "activation_checkpointing": "full"}
    c = real(gemma)
    (d,) = run(SingleTensorExceedsCapacity, c)
    assert d.line == line(c.plan, "vocab")
    assert d.message.startswith("logits buffer (fp32) alone is 4 B × 16 × 8,192 × 256,000 "
                                "= 125.0 GiB per GPU")
    assert d.fix.endswith("else tensor parallel over 2 GPUs splits it to 62.5 GiB per GPU")
    assert run(SingleTensorExceedsCapacity, real({**gemma, "micro_batch": 1})) == []

def test_pf110_eager_attention_at_long_sequence():
    p = plan({"attention": "eager", "micro_batch": 4, "seq_len": 2048, "heads": 32,
              "layers": 32, "mixed_precision": "bf16"})
    (d,) = run(MaterialisedAttention, ctx(p, ledger(10**9)))
    # LEDGER.md §2: 1,073,741,824 bytes (1 GiB) per layer, 32 GiB over 32 layers
    assert d.data["per_layer_bytes"] == 1_073_741_824
    assert "1.0 GiB per layer, 32.0 GiB over 32 layer(s)" in d.message
    assert d.line == line(p, "attention")
    p2 = plan({"attention": "sdpa", "micro_batch": 4, "seq_len": 2048, "heads": 32, "layers": 32})
    assert run(MaterialisedAttention, ctx(p2, ledger(10**9))) == []
    p3 = plan({"attention": "eager", "micro_batch": 1, "seq_len": 512, "heads": 12, "layers": 12})
    assert run(MaterialisedAttention, ctx(p3, ledger(10**9))) == []


def test_pf111_logits_share():
    p = plan({"model": "qwen", "vocab": 151936, "micro_batch": 8, "seq_len": 4096})
    (d,) = run(LogitsDominate, ctx(p, ledger(500_000_000, act=40 * 10**9)))
    assert "= 18.5 GiB per GPU (50 % of activations, 23 % of H100-80GB)" in d.message
    p = plan({"model": "qwen", "vocab": 151936, "micro_batch": 1, "seq_len": 1024})
    assert run(LogitsDominate, ctx(p, ledger(500_000_000, act=10 * 10**9))) == []


def test_pf112_inside_headroom_90_percent():
    # the micro-batch that puts the re-estimated peak between 80 % and 95 % of capacity
    base = {**ONE_B3, "seq_len": 2048}
    mb = next(m for m in range(1, 64)
              if 0.80 < real({**base, "micro_batch": m}).peak / H100 < 0.95)
    c = real({**base, "micro_batch": mb})
    (d,) = run(InsideHeadroom, c)
    assert d.line == line(c.plan, "micro_batch")
    assert f"is {c.peak / H100 * 100:.0f} % of H100-80GB's 79.6 GiB, inside the 20 % headroom" \
        in d.message
    assert d.fix.startswith(f"micro-batch {c.largest_micro_batch()} ")
    # with a 5 % margin the same job is fine
    assert run(InsideHeadroom, real({**base, "micro_batch": mb}, headroom=0.05)) == []
    # the headroom margin line of a ledger is not part of the predicted peak
    n = 1_000_000_000
    p = plan({"params": n, "micro_batch": 12, "seq_len": 2048})
    led = ledger(n, act=int(0.5 * H100))
    led.lines.append(type(led.lines[0])(key="overhead", label="headroom margin (20 %)",
                                        bytes=int(0.2 * H100), margin=True))
    assert run(InsideHeadroom, ctx(p, led)) == []


def test_pf112_exact_text_is_in_gib_with_the_gpus_name():
    # 4e9 params × 16 B = 64e9 B of states + 6e9 B of activations: a 70e9 B peak on an
    # H100-80GB (81,559 MiB = 85,520,809,984 B) is 82 % of it; the 80 % limit is
    # 68,416,647,987 B, so 1,583,352,013 B (1.5 GiB) must go
    p = plan({"params": 4_000_000_000, "micro_batch": 12, "seq_len": 2048})
    (d,) = run(InsideHeadroom, ctx(p, ledger(4_000_000_000, act=6_000_000_000)))
    assert d.message == ("predicted peak 65.2 GiB is 82 % of H100-80GB's 79.6 GiB, inside the "
                         "20 % headroom: the ledger is a lower bound (CUDA context, NCCL "
                         "buffers, allocator fragmentation come on top)")
    assert d.fix == ("free ≥ 1.5 GiB (activation checkpointing, smaller micro-batch) and set "
                     "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True")


def test_one_byte_formatter_for_findings_and_the_bar():
    from preflight.report import common
    from preflight import units
    assert gib(112 * 10**9) == common.gib(112 * 10**9) == "104.3 GiB"
    assert gib(1536 * 2**20) == "1.5 GiB" and gib(512 * 2**20) == "512.0 MiB"
    assert gib(3 * 2**10) == "3.0 KiB" and gib(12) == "12 B"
    assert gib(None) == "?" and units.gib(None) == "unknown"
    assert gib(1_234 * 2**30) == "1,234.0 GiB"


def test_pf201_pure_bf16_adam():
    p = plan({"param_dtype": "bf16", "optimizer": "adamw", "mixed_precision": "none"})
    (d,) = run(HalfWeightsNoMaster, ctx(p))
    assert d.line == line(p, "param_dtype") and "0.0039 of a weight" in d.message
    p = plan({"param_dtype": "bf16", "optimizer": "adamw", "mixed_precision": "bf16"})
    assert run(HalfWeightsNoMaster, ctx(p)) == []
    p = plan({"param_dtype": "bf16", "optimizer": "sgd", "mixed_precision": "none"})
    assert run(HalfWeightsNoMaster, ctx(p)) == []


def test_pf301_efficiency_below_half():
    p = plan({"params": 124_000_000, "micro_batch": 1, "seq_len": 1024, "world_size": 64})
    w = Walls(compute_s=0.010, comm_s=0.040, step_s=0.050, efficiency=0.2)
    (d,) = run(LowScalingEfficiency, ctx(p, ledger(124_000_000), walls=w))
    assert d.line == line(p, "micro_batch")
    assert d.message.startswith("predicted scaling efficiency 0.20 on 64 GPUs: communication "
                                "40.0 ms against compute 10.0 ms per step (124.0M params, 1,024 tokens")
    assert "16× the tokens" in d.fix
    w.efficiency = 0.5
    assert run(LowScalingEfficiency, ctx(p, ledger(124_000_000), walls=w)) == []


@pytest.mark.parametrize("tp,gpn,fires", [(16, 8, True), (8, 8, False), (4, 4, False), (8, 4, True)])
def test_pf302_tp_across_nodes(tp, gpn, fires):
    p = plan({"tp": tp, "gpus_per_node": gpn, "nodes": 4})
    got = run(TensorParallelAcrossNodes, ctx(p))
    assert bool(got) is fires
    if fires:
        assert got[0].line == line(p, "tp")


@pytest.mark.parametrize("pp,m,bubble", [(4, 4, "43 %"), (4, 15, "17 %"), (4, 16, None), (1, 1, None)])
def test_pf303_pipeline_bubble(pp, m, bubble):
    p = plan({"pp": pp, "grad_accum": m})
    got = run(PipelineBubble, ctx(p))
    if bubble is None:
        assert got == []
    else:
        assert f"idles {bubble} of every step" in got[0].message
        assert got[0].line == line(p, "grad_accum")


def test_lora_states_are_not_described_per_trainable_parameter():
    n, t = N7, 40_000_000
    p = seven_b(trainable_params=t, lora={"r": 16, "alpha": 32, "targets": ["q_proj"], "base_bits": 16})
    led = ledger(t, dp=8)
    led.lines[0].bytes = 2 * n                      # the frozen bf16 base
    led.capacity_bytes = 10 * 10**9
    (d,) = run(StateExceedsCapacity, ctx(p, led))
    assert "B/param" not in d.message and d.message.startswith("model states need 13.6 GiB per GPU under DDP")
    assert run(WeightsFitStatesDoNot, ctx(p, led)) == []


def test_pf103_syntax_tree_and_text_patterns(tmp_path):
    from preflight.extract import extract_file
    from preflight.plan import Job
    from preflight.rules.pf103_numel_times_four import NumelTimesFour
    src = ("import torch\n"
           "need = (\n"
           "    sum(p.numel() for p in model.parameters())\n"
           "    * 4\n"
           ")\n"
           "ok = p.numel() * p.element_size()\n"
           "also_ok = 4 * 2\n"
           "note = 'numel() * 4'  # a string, not code\n")
    f = tmp_path / "size.py"
    f.write_text(src)
    # the extractor finds the multiplication on its syntax tree; the rule parses nothing
    ext = extract_file(str(f))
    assert ext.extras["numel_times_four"] == [(3, 11)]
    job = Job(entry=str(f), files=[str(f)], extractions=[ext])
    c = ctx(plan({}))
    c.job = job
    assert [(d.line, d.col) for d in run(NumelTimesFour, c)] == [(3, 11)]
    # a file the extractor did not parse: the one-line text pattern (the multi-line form
    # is missed)
    job.extractions[0].extras = {}
    c2 = ctx(plan({}))
    c2.job = job
    assert [(d.line, d.col) for d in run(NumelTimesFour, c2)] == []
    job.extractions[0].text = "n = sum(p.numel() for p in ps) * 4\n"
    c3 = ctx(plan({}))
    c3.job = job
    assert [(d.line, d.col) for d in run(NumelTimesFour, c3)] == [(1, 11)]
