"""DeepSeek-V2 / V3: exact parameter counts (multi-head latent attention, dense first
layers, shared and routed experts) against transformers, the latent-attention and router
tables against autograd, and `estimate --model` on the catalogue's DeepSeek models."""

import json

import pytest

from preflight.models import catalog, formulas
from preflight.physics.activations import Shape, layer_activation_bytes
from preflight.physics.mla import MLA
from preflight.physics.moe import MoE
from tests.conftest import causal_lm_script, run_cli

TINY = dict(num_hidden_layers=3, hidden_size=128, num_attention_heads=4, intermediate_size=192,
            vocab_size=1000, kv_lora_rank=32, q_lora_rank=40, qk_nope_head_dim=16,
            qk_rope_head_dim=8, v_head_dim=24, moe_intermediate_size=96, n_routed_experts=8,
            num_experts_per_tok=2, first_k_dense_replace=1, n_group=2, topk_group=1)


@pytest.mark.parametrize("name,params,active", [
    ("deepseek-ai/DeepSeek-V2-Lite", 15_706_484_224, 2_661_150_208),
    ("deepseek-ai/DeepSeek-V2", 235_741_434_880, 21_375_800_320),
    ("deepseek-ai/DeepSeek-V3", 671_026_404_352, 37_552_282_624),
])
def test_catalogue_deepseek_models(name, params, active):
    arch, cfg = catalog.lookup(name)
    shape = formulas.count(arch, cfg)
    assert (shape.params, shape.active_params) == (params, active)


def test_deepseek_shape_facts():
    arch, cfg = catalog.lookup("deepseek-ai/DeepSeek-V3")
    s = formulas.count(arch, cfg)
    # 3 dense layers, 58 MoE layers of 256 routed experts (8 per token) and one shared
    # expert; the multi-token-prediction layer is not built by transformers
    assert (s.moe_layers, s.experts, s.experts_per_token, s.expert_ffn, s.shared_expert_ffn) \
        == (58, 256, 8, 2048, 2048)
    assert s.expert_params == 58 * 256 * 3 * 7168 * 2048
    assert s.latent_attention == {"kv_lora_rank": 512, "q_lora_rank": 1536,
                                  "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
                                  "v_head_dim": 128}
    assert (s.router_upcast, s.group_mask, s.norm_topk) == (True, False, True)
    lite = formulas.count(*catalog.lookup("DeepSeek-V2-Lite"))
    assert (lite.latent_attention["q_lora_rank"], lite.group_mask, lite.norm_topk) == \
        (0, False, False)
    # DeepSeek-V2 routes group-limited: a mask over its 160 experts is kept
    assert formulas.count(*catalog.lookup("deepseek-ai/DeepSeek-V2")).group_mask


def _job(*args: str) -> dict:
    r = run_cli("estimate", *args, "--format", "json")
    assert r.returncode in (0, 1), r.stderr       # 1: sized, and it does not fit
    return json.loads(r.stdout)["jobs"][0]


def test_estimate_sizes_deepseek_v2_lite():
    """`estimate --model` on a catalogue DeepSeek: total parameters in the states, the
    active ones in compute, latent attention and the MoE table in the layers' line."""
    args = ("--model", "deepseek-ai/DeepSeek-V2-Lite", "--precision", "bf16", "--optimizer",
            "adamw", "--micro-batch", "1", "--seq-len", "2048", "--gpu", "H100")
    job = _job(*args)
    assert job["facts"]["params"]["value"] == 15_706_484_224
    b = job["ledger"]["per_gpu_bytes"]
    # pure bf16 with torch's AdamW: 2 B weights, 2 B gradients, 2 × 2 B moments
    assert (b["params"], b["grads"], b["optimizer"]) == \
        (2 * 15_706_484_224, 2 * 15_706_484_224, 4 * 15_706_484_224)
    layers = [ln for ln in job["ledger"]["lines"] if ln["label"].startswith("27 layers' saved")]
    assert len(layers) == 1 and layers[0]["bytes"] > 0
    assert "latent attention (kv latent 512)" in layers[0]["label"]
    assert "MoE: 6 of 64 experts per token, shared experts 2,816 wide in 26 of 27 layers" in \
        layers[0]["label"]
    assert job["ledger"]["verdict"] == "does not fit"
    assert ("mixture of experts: compute counts the 2,661,150,208 parameters a token uses "
            "(6 of 64 experts), not all 15,706,484,224") in job["walls"]["notes"]
    text = run_cli("estimate", *args).stdout
    assert "2,661,150,208 parameters a token uses (6 of 64 experts), not all 15,706,484,224" \
        in text


def _tables(common: dict, moe: MoE, *, sparse: int, dense: int) -> int:
    """The saved activations of `sparse` MoE and `dense` dense latent-attention layers, by
    the tables (sdpa)."""
    return (sparse * layer_activation_bytes("llama", Shape(**common, moe=moe), "sdpa").total
            + dense * layer_activation_bytes("llama", Shape(**common), "sdpa").total)


def _layer_lines(job: dict, n: int) -> list[int]:
    return [ln["bytes"] for ln in job["ledger"]["lines"]
            if ln["label"].startswith(f"{n} layers' saved")]


def test_layers_line_is_the_tables_for_the_catalogue_shape():
    """The 27 layers of DeepSeek-V2-Lite: 1 dense and 26 MoE layers, each with the latent
    attention, bf16, sdpa."""
    job = _job("--model", "deepseek-ai/DeepSeek-V2-Lite", "--precision", "bf16",
               "--optimizer", "adamw", "--micro-batch", "2", "--seq-len", "1024")
    mla = MLA(kv_rank=512, q_rank=0, nope=128, rope=64, v=128)
    moe = MoE(64, 6, 1408, 2816, norm_topk=False, weights_f32=True, router_upcast=True,
              shared_gate=False)
    common = dict(s=1024, b=2, h=2048, a=16, f=10944, k=16, d=2, mla=mla)
    assert _layer_lines(job, 27) == [_tables(common, moe, sparse=26, dense=1)]


def test_zero3_with_expert_parallelism_gathers_the_local_experts():
    """Mixtral 8x7B on 8 ranks, ZeRO-3 and ep 8: a rank gathers its one expert of each
    block, not all eight."""
    job = _job("--model", "mistralai/Mixtral-8x7B-v0.1", "--precision", "bf16-mixed",
               "--optimizer", "adamw", "--micro-batch", "1", "--seq-len", "4096",
               "--world-size", "8", "--zero", "3", "--ep", "8")
    by = {ln["label"]: ln for ln in job["ledger"]["lines"]}
    # a block with all 8 experts is 1,451,270,144 parameters; an expert is 3 × 4,096 × 14,336
    unit = 1_451_270_144 - 7 * 3 * 4_096 * 14_336
    assert unit == 218_144_768
    gathered = by["gathered parameters (unit in use and prefetched)"]
    assert gathered["bytes"] == 2 * (unit + 50_000_000)
    assert "one MoE block, 1 of 8 experts (ep 8)" in gathered["formula"]
    assert by["unsharded gradient of one unit (before reduce-scatter)"]["bytes"] == 2 * unit
    a2a = by["expert-parallel all-to-all buffers (dispatch send + receive, one MoE layer at "
             "a time)"]
    assert (a2a["bytes"], a2a["formula"]) == \
        (2 * 2 * 1 * 4096 * 2 * 4096, "2 × 2 B × 1 × 4,096 × 2 (top-k) × 4,096")


def test_deepseek_v3_gathered_unit_is_one_moe_block_exactly():
    """DeepSeek-V3 under ZeRO-3: the unit is one MoE decoder layer, latent attention and
    shared expert included; 58 of them plus 3 dense layers, the embedding, the head and the
    final norm make the model's count."""
    job = _job("--model", "deepseek-ai/DeepSeek-V3", "--precision", "bf16-mixed",
               "--optimizer", "adamw", "--micro-batch", "1", "--seq-len", "4096",
               "--world-size", "64", "--zero", "3")
    g = next(ln for ln in job["ledger"]["lines"]
             if ln["label"] == "unsharded gradient of one unit (before reduce-scatter)")
    h, V = 7168, 129280
    attn = (h * 1536 + 1536 + 1536 * 128 * 192 + h * 576 + 512 + 512 * 128 * 256
            + 128 * 128 * h)
    dense = attn + 3 * h * 18432 + 2 * h
    moe_layer = (671_026_404_352 - 2 * V * h - h - 3 * dense) // 58
    assert moe_layer * 58 == 671_026_404_352 - 2 * V * h - h - 3 * dense
    assert g["bytes"] == 2 * moe_layer


def test_check_path_reads_a_deepseek_config(tmp_path):
    """A script building `DeepseekV3ForCausalLM(DeepseekV3Config(...))`: the count (a plain
    q_proj for q_lora_rank=None) and the layers' tables."""
    (tmp_path / "train.py").write_text(causal_lm_script(
        "DeepseekV3Config", "DeepseekV3ForCausalLM",
        "num_hidden_layers=3, hidden_size=128, num_attention_heads=4, "
        "intermediate_size=192, vocab_size=1000, kv_lora_rank=32, q_lora_rank=None, "
        "qk_nope_head_dim=16, qk_rope_head_dim=8, v_head_dim=24, moe_intermediate_size=96, "
        "n_routed_experts=8, num_experts_per_tok=2, first_k_dense_replace=1, n_group=2, "
        "topk_group=1, attn_implementation='sdpa'", cast=".to(torch.bfloat16)"))
    job = _job(str(tmp_path / "train.py"))
    assert job["facts"]["params"]["value"] == formulas.count(
        "deepseek_v3", {**TINY, "q_lora_rank": None}).params == 1_100_768
    mla = MLA(kv_rank=32, q_rank=0, nope=16, rope=8, v=24)
    moe = MoE(8, 2, 96, 96, norm_topk=True, weights_f32=True, router_upcast=True,
              shared_gate=False)
    common = dict(s=128, b=4, h=128, a=4, f=192, k=4, d=2, mla=mla)
    assert _layer_lines(job, 3) == [_tables(common, moe, sparse=2, dense=1)]


def test_latent_attention_under_autocast_is_unknown():
    """Autocast over fp32 weights casts each projection's input on its own; the latent
    attention's table was not measured so: its layers are said unknown, not guessed."""
    job = _job("--model", "deepseek-ai/DeepSeek-V2-Lite", "--precision", "bf16-autocast",
               "--optimizer", "adamw", "--micro-batch", "1", "--seq-len", "2048")
    layers = [ln for ln in job["ledger"]["lines"]
              if ln["label"] == "transformer layers (saved activations)"]
    assert [ln["bytes"] for ln in layers] == [None]
    assert "not under autocast" in layers[0]["note"]
    assert job["ledger"]["peak_bytes"] is None


# ------------------------------------------------------------------ against transformers

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from tests.saved_storage import saved_bytes_alive as _saved  # noqa: E402


def _meta_count(arch: str, cfg: dict) -> int:
    import logging
    logging.getLogger("transformers").setLevel(logging.ERROR)
    config = transformers.AutoConfig.for_model(arch, **cfg)
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(config)
    return sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("arch", ["deepseek_v2", "deepseek_v3"])
@pytest.mark.parametrize("extra", [
    {}, {"q_lora_rank": None}, {"attention_bias": True}, {"first_k_dense_replace": 0},
    {"tie_word_embeddings": True}, {"n_shared_experts": 3}, {"first_k_dense_replace": 3},
])
def test_deepseek_counts_match_transformers(arch, extra):
    cfg = {**TINY, **extra}
    assert formulas.count(arch, cfg).params == _meta_count(arch, cfg)


def test_deepseek_v2_mlp_bias_matches_transformers():
    cfg = {**TINY, "mlp_bias": True}
    assert formulas.count("deepseek_v2", cfg).params == _meta_count("deepseek_v2", cfg)


S, B, H, A = 48, 2, 128, 4
LAYER = dict(hidden_size=H, num_attention_heads=A, num_key_value_heads=A, intermediate_size=192,
             vocab_size=64, kv_lora_rank=32, qk_nope_head_dim=16, qk_rope_head_dim=8,
             v_head_dim=24, moe_intermediate_size=96, n_routed_experts=4, num_experts_per_tok=2,
             n_shared_experts=1)


@pytest.mark.parametrize("arch,routing", [
    ("v3", {}), ("v3", {"norm_topk_prob": False, "n_group": 2}),
    ("v2", {}), ("v2", {"topk_method": "group_limited_greedy", "n_group": 2, "topk_group": 1}),
])
@pytest.mark.parametrize("dtype,d", [("float32", 4), ("bfloat16", 2)])
@pytest.mark.parametrize("attention", ["sdpa", "eager"])
@pytest.mark.parametrize("q_rank", [0, 40])
@pytest.mark.parametrize("moe", [False, True])
def test_deepseek_layer_matches_autograd(arch, routing, dtype, d, attention, q_rank, moe):
    """One layer = a 2-layer model's saved bytes − a 1-layer model's: the latent attention
    (physics.mla) and, in an MoE layer, the DeepSeek router and experts (physics.moe)."""
    v3 = arch == "v3"
    routing = {**({"n_group": 1, "topk_group": 1} if v3 else {}), **routing}

    def build(n):
        torch.manual_seed(0)
        cls = transformers.DeepseekV3Config if v3 else transformers.DeepseekV2Config
        cfg = cls(num_hidden_layers=n, q_lora_rank=q_rank or None,
                  first_k_dense_replace=0 if moe else n, attn_implementation=attention,
                  **LAYER, **routing)
        model_cls = transformers.DeepseekV3Model if v3 else transformers.DeepseekV2Model
        return model_cls(cfg).to(getattr(torch, dtype)).train()

    ids = torch.randint(0, 64, (B, S), generator=torch.Generator().manual_seed(0))
    got = _saved(build(2), ids) - _saved(build(1), ids)
    m = MoE(4, 2, 96, 96, norm_topk=v3 and routing.get("norm_topk_prob", True),
            weights_f32=True, router_upcast=True, shared_gate=False,
            group_mask=routing.get("topk_method") == "group_limited_greedy")
    shape = Shape(s=S, b=B, h=H, a=A, f=192, k=A, d=d, moe=m if moe else None,
                  mla=MLA(kv_rank=32, q_rank=q_rank, nope=16, rope=8, v=24))
    assert got == layer_activation_bytes("llama", shape, attention).total


