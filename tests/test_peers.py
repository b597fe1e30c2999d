"""The peer columns of the published-accuracy table: what each peer estimator is given
for a row (pure mapping, no peer installed) and how its printed output is read (outputs
captured from real runs, tests/fixtures/peers/README.md says how)."""

from __future__ import annotations

import importlib.util
import json
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIX = os.path.join(ROOT, "tests", "fixtures", "peers")


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"bench_{name}",
                                                  os.path.join(ROOT, "bench", f"{name}.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


peers = _load("peers")
pin = peers.pin


def _fixture(name: str) -> str:
    with open(os.path.join(FIX, name), encoding="utf-8") as f:
        return f.read()


def _row(**config) -> dict:
    base = {"model": "meta-llama/Llama-2-7b-hf", "method": "full", "precision": "bf16-mixed",
            "optimizer": "adamw", "micro_batch": 2, "seq_len": 512, "grad_ckpt": False,
            "attention": "sdpa", "world_size": 1}
    base.update(config)
    return {"id": "test-row", "gpu": config.pop("gpu", "A100-80GB"), "value": 20.0,
            "unit": "GiB", "measured": "allocated",
            "config": {k: {"value": v, "how": "stated"} for k, v in base.items()}}


# ---- row → peer input --------------------------------------------------------------------

def test_fsdp_full_shard_on_8_gpus_goes_to_zero3_and_sharded_peers_only():
    f = pin.facts(_row(world_size=8, fsdp="full_shard"))
    assert (f.stage, f.shard_group) == (3, 8)
    ds = pin.plan_deepspeed(f)
    assert ds.args == {"stage": 3, "num_gpus_per_node": 8, "num_nodes": 1,
                       "offload_optimizer": False, "offload_params": False}
    assert "model states only" in ds.claims and "ZeRO-3 over 8 GPU(s)" in ds.claims
    la = pin.plan_llm_analysis(f)
    assert (la.args["ds_zero"], la.args["dp_size"], la.args["tp_size"]) == (3, 8, 1)
    assert "master_weights_dtype_bytes" not in la.args       # bf16-mixed: its fp32 default
    tp = pin.plan_torch_preflight(f).args["argv"]
    assert tp[tp.index("--sharding") + 1] == "zero-3" and tp[tp.index("--world-size") + 1] == "8"
    assert "sharding" in pin.plan_accelerate(f).reason
    assert "one GPU" in pin.plan_fitcheck(f).reason


def test_128_gpus_are_16_nodes_of_8_and_a_stated_dp_shard_is_the_group():
    f = pin.facts(_row(world_size=128, fsdp="full_shard"))
    assert pin.plan_deepspeed(f).args["num_nodes"] == 16
    f = pin.facts(_row(world_size=64, fsdp="hybrid_shard", dp_shard=8))
    assert (f.stage, f.shard_group) == (3, 8)
    assert pin.plan_deepspeed(f).args["num_gpus_per_node"] == 8


def test_zero2_on_16_ranks_and_tensor_parallel_rows():
    f = pin.facts(_row(world_size=16, zero_stage=2, precision="fp16-mixed"))
    assert pin.plan_deepspeed(f).args == {"stage": 2, "num_gpus_per_node": 8, "num_nodes": 2,
                                          "offload_optimizer": False, "offload_params": False}
    f = pin.facts(_row(world_size=256, fsdp="full_shard", tp=8, dp_shard=32))
    assert "tensor- or pipeline-parallel" in pin.plan_deepspeed(f).reason
    assert pin.plan_llm_analysis(f).args["tp_size"] == 8


def test_single_gpu_fp32_uses_the_stage2_formula_on_one_gpu_and_accelerate_float32():
    f = pin.facts(_row(precision="fp32"))
    assert (f.stage, f.shard_group) == (0, 1)
    ds = pin.plan_deepspeed(f)
    assert ds.args["stage"] == 2 and ds.args["num_gpus_per_node"] == 1
    assert "no stage-0 estimator" in ds.claims
    assert pin.plan_accelerate(f).args == {"dtype": "float32"}
    assert "fp32" in pin.plan_llm_analysis(f).reason
    assert pin.plan_fitcheck(f).args["argv"][:2] == ["--precision", "fp32"]


def test_bf16_true_has_no_master_copy_for_llm_analysis_and_16bit_for_accelerate():
    f = pin.facts(_row(precision="bf16-true", grad_ckpt=True))
    la = pin.plan_llm_analysis(f).args
    assert (la["master_weights_dtype_bytes"], la["other_op_bytes"]) == (0, 4)
    assert la["activation_recomputation"] == 2
    assert pin.plan_accelerate(f).args == {"dtype": "float16"}
    argv = pin.plan_fitcheck(f).args["argv"]
    assert "--optimizer-dtype" in argv and "--grad-checkpoint" in argv and "--no-lora" in argv


def test_ddp_is_replicated_and_sized_by_single_gpu_peers():
    f = pin.facts(_row(world_size=2, fsdp={"sharding": "NO_SHARD (--sharding_strategy ddp)"}))
    assert (f.stage, f.shard_group) == (0, 2)
    assert pin.plan_deepspeed(f).args["num_gpus_per_node"] == 1
    assert isinstance(pin.plan_fitcheck(f), pin.Plan)
    assert isinstance(pin.plan_accelerate(f), pin.Plan)


def test_lora_and_qlora_rows_go_to_fitcheck_only():
    f = pin.facts(_row(method="lora", lora_r=8, lora_targets=["q_proj", "v_proj"],
                       precision="bf16-true", gpu="A10G-24GB"))
    for plan in (pin.plan_accelerate, pin.plan_deepspeed, pin.plan_llm_analysis,
                 pin.plan_torch_preflight):
        assert isinstance(plan(f), pin.Skip)
    argv = pin.plan_fitcheck(f).args["argv"]
    assert argv[argv.index("--lora-r") + 1] == "8"
    assert argv[argv.index("--lora-targets") + 1] == "q_proj,v_proj"
    assert argv[-2:] == ["--gpu", "a10"]
    q = pin.facts(_row(method="qlora", lora_r=64, lora_targets="all-linear",
                       quantization={"type": "nf4", "double_quant": True},
                       optimizer="paged_adamw_8bit", gpu="RTX-3090-24GB"))
    argv = pin.plan_fitcheck(q).args["argv"]
    assert argv[argv.index("--quant") + 1] == "nf4" and "--double-quant" in argv
    assert argv[argv.index("--lora-targets") + 1] == "full"
    assert argv[argv.index("--optimizer") + 1] == "adam8bit"
    fused = pin.facts(_row(method="lora", lora_r=8, lora_targets=["query_key_value"]))
    assert "query_key_value" in pin.plan_fitcheck(fused).reason


def test_fsdp_cpu_offload_reaches_deepspeed_options():
    f = pin.facts(_row(world_size=2, fsdp={"sharding": "FULL_SHARD", "cpu_offload": True}))
    assert (f.offload_optimizer, f.offload_params) == (True, True)
    assert pin.plan_deepspeed(f).args["offload_params"] is True
    assert "offload" in pin.plan_llm_analysis(f).reason


def test_gpu_names_map_to_each_peers_table():
    assert pin.fitcheck_gpu("A100-SXM4-40GB") == ["--gpu", "a100-40"]
    assert pin.fitcheck_gpu("H100-96GB") == ["--vram-mib", str(96 * 1024)]
    assert pin.fitcheck_gpu("not stated") == []
    f = pin.facts(_row(precision="bf16-true", gpu="T4-16GB"))
    assert pin.plan_llm_analysis(f).args["gpu_name"] == "mi250x-128gb"


def test_llm_analysis_model_config_counts_a_gated_mlp_as_three_matrices():
    name, cfg = peers.model_config("meta-llama/Llama-2-7b-hf")
    mc = peers.llm_analysis_model(name, cfg)
    assert mc["ffn_embed_dim"] == 16512 and mc["hidden_dim"] == 4096
    # its two MLP matrices of width 1.5·I hold the model's three of width I
    assert 2 * mc["hidden_dim"] * mc["ffn_embed_dim"] == 3 * 4096 * 11008


def test_ftuneai_plan_names_its_target_presets_and_sharding():
    f = pin.facts(_row(method="lora", lora_r=8, lora_targets=["q_proj", "v_proj"],
                       precision="bf16-true"))
    kw = pin.plan_ftuneai(f).args
    assert (kw["method"], kw["lora_target"], kw["lora_rank"], kw["quantization"]) == \
        ("lora", "attention", 8, "none")
    q = pin.facts(_row(method="qlora", lora_r=16, lora_targets="all-linear", quantization="nf4",
                       world_size=2, fsdp="full_shard"))
    kw = pin.plan_ftuneai(q).args
    assert (kw["method"], kw["lora_target"], kw["quantization"]) == ("qlora", "all_linear", "4bit")
    assert (kw["sharding"], kw["num_gpus"]) == ("fsdp", 2)
    assert "precision" in pin.plan_ftuneai(pin.facts(_row(precision="fp32"))).reason


# ---- parsing captured outputs ------------------------------------------------------------

def test_parse_accelerate_training_cell():
    b, line = peers.parse_accelerate(_fixture("accelerate_llama-2-7b_float32.txt"), "float32")
    assert b == round(98.46 * 2 ** 30)
    assert "98.46 GB" in line
    with pytest.raises(ValueError):
        peers.parse_accelerate(_fixture("accelerate_llama-2-7b_float32.txt"), "float16")


def test_parse_deepspeed_per_gpu_column_by_offload_option():
    text = _fixture("deepspeed_zero3_llama-2-7b_8gpu.txt")
    assert peers.parse_deepspeed(text, False, False)[0] == round(14.61 * 2 ** 30)
    assert peers.parse_deepspeed(text, False, True)[0] == round(2.06 * 2 ** 30)
    assert peers.parse_deepspeed(text, True, True)[0] == round(0.49 * 2 ** 30)
    text = _fixture("deepspeed_zero2_llama-2-7b_1gpu.txt")
    assert peers.parse_deepspeed(text, False, False)[0] == round(125.51 * 2 ** 30)
    assert peers.parse_deepspeed(text, False, True)[0] == round(12.55 * 2 ** 30)


def test_parse_json_peers():
    b, _ = peers.parse_llm_analysis(_fixture("llm-analysis_llama-2-7b_zero3_8gpu.json"))
    assert b == 20476929024
    b, line = peers.parse_llm_analysis(_fixture("llm-analysis_refuses.json"))
    assert b is None and "must be <= max_batch_size_per_gpu" in line
    b, line = peers.parse_fitcheck(_fixture("fitcheck_llama-2-7b_lora_r8.json"))
    assert b == round(24104.59 * 2 ** 20) and "activations" in line
    b, line = peers.parse_torch_preflight(_fixture("torch-preflight_llama-2-7b.json"))
    assert b == 94745808650 and "CERTAIN_OOM" in line
    b, line = peers.parse_torch_preflight(_fixture("torch-preflight_unresolved.json"))
    assert b is None and "not in the bundled architecture snapshot" in line
    b, line = peers.parse_ftuneai(_fixture("ftuneai_llama-3.1-8b_lora_r8.json"))
    assert b == round(19.494 * 2 ** 30)
    b, line = peers.parse_ftuneai(_fixture("ftuneai_unknown.json"))
    assert b is None and "not in ftuneai's model database" in line


# ---- peer_columns without the peers' environments ----------------------------------------

def test_unknown_model_and_cached_rows_need_no_peer(tmp_path, monkeypatch):
    def no_venv(peer):
        raise AssertionError(f"{peer} would have been run")
    monkeypatch.setattr(peers, "venv_python", no_venv)
    cols = peers.peer_columns(_row(model="nobody/unheard-of-9b"), use_cache=False)
    assert list(cols) == peers.PEERS
    assert cols["accelerate"] == (None, "no model config: nobody/unheard-of-9b is not in "
                                        "preflight's catalogue")
    assert peers.OWN_MODELS == {"torch-preflight", "ftuneai"}
    row = _row(world_size=8, fsdp="full_shard")
    f = pin.facts(row)
    name, cfg = peers.model_config(f.model)
    cache = {}
    for peer in peers.PEERS:
        plan = pin.PLANS[peer](f)
        if isinstance(plan, pin.Plan):
            own = {} if peer in peers.OWN_MODELS else cfg
            cache.setdefault(peer, {})[peers.cache_key(row["id"], peer, plan, own)] = {
                "bytes": 123, "output": "captured"}
    path = tmp_path / "cache.json"
    path.write_text(json.dumps(cache))
    monkeypatch.setattr(peers, "CACHE", str(path))
    cols = peers.peer_columns(row)
    assert cols["deepspeed"][0] == 123 and "model states only" in cols["deepspeed"][1]
    assert cols["fitcheck-llm"][0] is None


def test_measured_units_to_bytes():
    assert peers.measured_bytes({"value": 19.24, "unit": "GB"}) == 19.24e9
    assert peers.measured_bytes({"value": 2, "unit": "MiB"}) == 2 * 2 ** 20
