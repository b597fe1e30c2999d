"""The estimator never raises on a plan, whatever the extractors hand it."""

import itertools
import random

from preflight.physics import estimate
from preflight.physics.text import render
from preflight.hardware import lookup
from preflight.plan import Fact, Origin, TrainingPlan

VALUES = {
    "params": [None, 124_439_808, 7e9, "7000000000", "auto", -5, 0, True],
    "trainable_params": [None, 4_194_304, "x"],
    "param_dtype": [None, "fp32", "bf16", "fp16", "int4", "int8", "float64"],
    "mixed_precision": [None, "bf16", "fp16", "fp8", "none", "yes"],
    "optimizer": [None, "adamw", "sgd", "adafactor", "other", "adamw_8bit", "mystery"],
    "micro_batch": [None, 1, 8, "auto", 0],
    "seq_len": [None, 512, 8192],
    "grad_accum": [None, 1, 16, "auto"],
    "layers": [None, 12, 80],
    "hidden": [None, 768, 8192, 0],
    "heads": [None, 12, 64],
    "kv_heads": [None, 8],
    "ffn_hidden": [None, 3072, 28672],
    "vocab": [None, 50257, 128256],
    "world_size": [None, 1, 8, 64, 0, "$WORLD_SIZE"],
    "nodes": [None, 1, 8],
    "gpus_per_node": [None, 8, 4],
    "zero_stage": [None, 0, 1, 2, 3, 4, "3"],
    "fsdp": [None, "full_shard", "shard_grad_op", "hybrid_shard", "no_shard", "weird"],
    "offload": [None, "none", "optimizer", "optimizer+params", "cpu"],
    "tp": [None, 1, 2, 8, 16],
    "pp": [None, 1, 4],
    "sp": [None, True, False],
    "activation_checkpointing": [None, "none", "full", "selective", "sometimes"],
    "attention": [None, "eager", "sdpa", "flash", "xformers"],
    "lora": [None, {"r": 8, "base_bits": 4}, {"r": 8, "base_bits": "four"}, "yes"],
    "model": [None, "meta-llama/Llama-3.1-8B", "gpt2", 42],
}


def test_random_plans_never_raise():
    rng = random.Random(20241129)
    gpus = [None, lookup("H100"), lookup("4090"), lookup("MI250X"), lookup("V100")]
    for _ in range(400):
        facts = {}
        for name, vals in VALUES.items():
            v = rng.choice(vals)
            if v is not None:
                facts[name] = Fact(value=v, origin=Origin.LITERAL)
        plan = TrainingPlan(facts=facts)
        est = estimate(plan, rng.choice(gpus), rng.choice([0.0, 0.2, 0.3]))
        led = est.ledger
        assert led.verdict() in ("fits", "tight", "does not fit", "unknown")
        for ln in led.lines:
            assert ln.bytes is None or (isinstance(ln.bytes, int) and ln.bytes >= 0)
            assert ln.bytes is not None or ln.note        # an unknown line says why
        render(est)
        est.to_json()


def test_every_ledger_key_combination_of_sharding():
    for zero, fsdp, off in itertools.product([0, 1, 2, 3], [None, "full_shard", "hybrid_shard"],
                                             ["none", "optimizer", "optimizer+params"]):
        vals = dict(params=10**9, optimizer="adamw", param_dtype="bf16", mixed_precision="bf16",
                    world_size=16, nodes=2, zero_stage=zero, offload=off, micro_batch=2,
                    seq_len=1024, layers=24, hidden=2048, heads=16, vocab=32000)
        if fsdp:
            vals["fsdp"] = fsdp
        est = estimate(TrainingPlan.from_values(vals), lookup("A100-80GB"))
        assert est.ledger.total is not None
