"""Mixture of experts: exact parameter counts of the MoE architectures, the MoE MLP's saved
tensors against autograd, and the facts, flags and ledger lines that carry them."""

import json

import pytest

from preflight.models import formulas
from preflight.physics.activations import Shape, layer_activation_bytes
from preflight.physics.moe import MoE
from tests.conftest import causal_lm_script, run_cli

S, B, H, A, F, KV = 48, 2, 128, 4, 192, 2

MIXTRAL_TINY = dict(num_hidden_layers=2, hidden_size=128, num_attention_heads=4,
                    num_key_value_heads=2, intermediate_size=192, vocab_size=1000,
                    num_local_experts=4, num_experts_per_tok=2)
FLAGS = ("estimate", "--model", "mistralai/Mixtral-8x7B-v0.1", "--layers", "2", "--hidden", "128",
         "--heads", "4", "--kv-heads", "2", "--ffn-hidden", "192", "--vocab", "1000",
         "--experts", "4", "--top-k", "2", "--precision", "fp32", "--optimizer", "adamw",
         "--micro-batch", "4", "--seq-len", "128", "--attention", "sdpa", "--format", "json")

# one tiny Mixtral layer, fp32, per token: the llama block's attention and norms (7,704 B
# less its dense SwiGLU 4·4·192) + router 4·E + 4 + 4·k + dispatch 8·k·4 + experts
# 4·k·(2h + 4·fe); plus the int32 group offsets, 4·E per layer
PER_TOKEN = 7704 - 4 * 4 * 192 + 4 * 4 + 4 + 40 * 2 + 4 * 2 * (2 * 128 + 4 * 192)
MIXTRAL_LAYERS_BYTES = 2 * (4 * 128 * PER_TOKEN + 4 * 4)


def test_counts_of_the_moe_architectures():
    m = formulas.count("mixtral", MIXTRAL_TINY)
    assert (m.params, m.active_params, m.experts, m.experts_per_token, m.expert_ffn) == \
        (945_792, 650_880, 4, 2, 192)
    # Qwen-MoE with a dense layer among the sparse ones (`mlp_only_layers`)
    q = formulas.count("qwen2_moe", dict(
        num_hidden_layers=3, hidden_size=128, num_attention_heads=4, num_key_value_heads=2,
        intermediate_size=192, moe_intermediate_size=96, shared_expert_intermediate_size=160,
        vocab_size=1000, num_experts=4, num_experts_per_tok=2, mlp_only_layers=[1]))
    assert (q.params, q.active_params, q.moe_layers, q.shared_expert_ffn) == \
        (897_920, 750_464, 2, 160)


@pytest.mark.parametrize("name,params,active", [
    ("Qwen/Qwen1.5-MoE-A2.7B", 14_315_784_192, 2_689_173_504),
    ("Qwen/Qwen2-57B-A14B", 57_408_658_944, 14_249_270_784),
    ("Qwen/Qwen3-30B-A3B", 30_532_122_624, 3_353_032_704),
])
def test_catalogue_moe_models(name, params, active):
    from preflight.models.catalog import lookup

    arch, cfg = lookup(name)
    shape = formulas.count(arch, cfg)
    assert (shape.params, shape.active_params) == (params, active)


def test_moe_table_bytes():
    la = layer_activation_bytes("llama", Shape(s=128, b=4, h=128, a=4, f=192, k=2, d=4,
                                               moe=MoE(4, 2, 192)), "sdpa")
    assert la.total == MIXTRAL_LAYERS_BYTES // 2
    assert la.terms.endswith("+ 4×4 + 40×2 + 4×4/(128×4)")
    # the experts' share follows k, not E: doubling the experts adds only the router's
    la8 = layer_activation_bytes("llama", Shape(s=128, b=4, h=128, a=4, f=192, k=2, d=4,
                                                moe=MoE(8, 2, 192)), "sdpa")
    assert la8.total - la.total == 4 * 4 * 512 + 4 * 4


#: the rotary embedding's inv_freq and original_inv_freq, fp32, head_dim / 2 = 16 values each
ROTARY = 2 * 16 * 4


def test_estimate_flags_size_a_tiny_mixtral():
    r = run_cli(*FLAGS)
    assert r.returncode == 0, r.stderr
    job = json.loads(r.stdout)["jobs"][0]
    b = job["ledger"]["per_gpu_bytes"]
    # params: the weights and the rotary embedding's two fp32 buffers (16 values each)
    assert (b["params"], b["grads"], b["optimizer"]) == (4 * 945_792 + ROTARY, 4 * 945_792,
                                                         8 * 945_792)
    layers = [ln for ln in job["ledger"]["lines"] if ln["label"].startswith("2 layers' saved")]
    assert [ln["bytes"] for ln in layers] == [MIXTRAL_LAYERS_BYTES]
    assert "MoE: 2 of 4 experts per token" in layers[0]["label"]


def test_estimate_flags_without_top_k_leave_the_layers_unknown():
    r = run_cli("estimate", "--params", "1e6", "--family", "llama", "--layers", "2",
                "--hidden", "128", "--heads", "4", "--ffn-hidden", "192", "--vocab", "1000",
                "--experts", "4", "--micro-batch", "4", "--seq-len", "128", "--format", "json")
    assert r.returncode == 0, r.stderr
    led = json.loads(r.stdout)["jobs"][0]["ledger"]
    assert "experts_per_token" in led["unknown"]
    assert led["tiers"]["tensors"] is None


def test_check_path_reads_the_experts_from_the_config(tmp_path):
    args = ", ".join(f"{k}={v!r}" for k, v in MIXTRAL_TINY.items())
    (tmp_path / "train.py").write_text(causal_lm_script(
        "MixtralConfig", "MixtralForCausalLM", f"{args}, attn_implementation='sdpa'"))
    r = run_cli("estimate", str(tmp_path / "train.py"), "--format", "json")
    job = json.loads(r.stdout)["jobs"][0]
    facts = job["facts"]
    assert facts["params"]["value"] == 945_792
    layers = [ln for ln in job["ledger"]["lines"] if ln["label"].startswith("2 layers' saved")]
    assert [ln["bytes"] for ln in layers] == [MIXTRAL_LAYERS_BYTES]


def test_qwen_moe_with_a_dense_layer(tmp_path):
    """Qwen-MoE's `mlp_only_layers`: two MoE layers (shared expert, plain router) and one
    dense layer, each with its own table."""
    (tmp_path / "train.py").write_text(causal_lm_script(
        "Qwen2MoeConfig", "Qwen2MoeForCausalLM",
        "num_hidden_layers=3, hidden_size=128, num_attention_heads=4, "
        "num_key_value_heads=2, intermediate_size=192, moe_intermediate_size=96, "
        "shared_expert_intermediate_size=160, vocab_size=1000, num_experts=4, "
        "num_experts_per_tok=2, mlp_only_layers=[1], attn_implementation='sdpa'",
        cast=".to(torch.bfloat16)"))
    r = run_cli("estimate", str(tmp_path / "train.py"), "--format", "json")
    job = json.loads(r.stdout)["jobs"][0]
    assert job["facts"]["params"]["value"] == 897_920
    shape = dict(s=128, b=4, h=128, a=4, f=192, k=2, d=2)
    moe = layer_activation_bytes("llama", Shape(**shape, moe=MoE(4, 2, 96, 160, norm_topk=False,
                                                                weights_f32=False)), "sdpa")
    dense = layer_activation_bytes("llama", Shape(**shape), "sdpa")
    layers = [ln for ln in job["ledger"]["lines"] if ln["label"].startswith("3 layers' saved")]
    assert [ln["bytes"] for ln in layers] == [2 * moe.total + dense.total]
    assert "in 2 of 3 layers" in layers[0]["label"]


def test_compute_counts_the_active_parameters():
    r = run_cli("estimate", "--model", "mistralai/Mixtral-8x7B-v0.1", "--precision", "bf16",
                "--optimizer", "adamw", "--micro-batch", "1", "--seq-len", "4096", "--gpu",
                "H100", "--format", "json")
    walls = json.loads(r.stdout)["jobs"][0]["walls"]
    compute = [ln["formula"] for ln in walls["lines"] if ln["key"] == "compute"]
    assert compute == ["6 × 12,879,925,248 × 4,096 tokens (1×4,096×1) / (989.4 TFLOP/s bf16 × "
                       "MFU 0.4) = 0.7998 s"]
    assert ("mixture of experts: compute counts the 12,879,925,248 parameters a token uses "
            "(2 of 8 experts), not all 46,702,792,704") in walls["notes"]


# ------------------------------------------------------------------ against autograd

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from tests.saved_storage import saved_bytes as _saved  # noqa: E402


@pytest.mark.parametrize("arch", ["mixtral", "qwen2_moe"])
@pytest.mark.parametrize("dtype,d", [("float32", 4), ("bfloat16", 2)])
@pytest.mark.parametrize("experts,top_k", [(4, 2), (8, 2), (4, 1)])
def test_moe_layer_matches_autograd(arch, dtype, d, experts, top_k):
    """One layer = a 2-layer model's saved bytes − a 1-layer model's (transformers' default
    grouped_mm experts)."""
    def build(n):
        torch.manual_seed(0)
        common = dict(hidden_size=H, num_attention_heads=A, num_key_value_heads=KV,
                      intermediate_size=F, num_hidden_layers=n, vocab_size=64,
                      num_experts_per_tok=top_k, attn_implementation="sdpa")
        if arch == "mixtral":
            cfg = transformers.MixtralConfig(num_local_experts=experts, **common)
            return transformers.MixtralModel(cfg).to(getattr(torch, dtype)).train()
        cfg = transformers.Qwen2MoeConfig(num_experts=experts, moe_intermediate_size=96,
                                          shared_expert_intermediate_size=160, **common)
        return transformers.Qwen2MoeModel(cfg).to(getattr(torch, dtype)).train()

    moe = (MoE(experts, top_k, F) if arch == "mixtral" else
           MoE(experts, top_k, 96, 160, norm_topk=False, weights_f32=False))
    ids = torch.randint(0, 64, (B, S), generator=torch.Generator().manual_seed(0))
    got = _saved(build(2), ids) - _saved(build(1), ids)
    want = layer_activation_bytes("llama", Shape(s=S, b=B, h=H, a=A, f=F, k=KV, d=d, moe=moe),
                                  "sdpa")
    assert got == want.total


@pytest.mark.parametrize("dtype,d", [("float32", 4), ("bfloat16", 2)])
@pytest.mark.parametrize("attn", ["sdpa", "eager"])
@pytest.mark.parametrize("experts,top_k,norm_topk", [(4, 2, False), (8, 2, True), (4, 1, False)])
def test_olmoe_layer_matches_autograd(dtype, d, attn, experts, top_k, norm_topk):
    """OLMoE: llama's attention with q/k norms over all of Q and K (the `full` trait), and
    the MoE MLP of Qwen-MoE's router without a shared expert, every expert
    `intermediate_size` wide. One layer = 2 layers − 1 (grouped_mm experts)."""
    from preflight.physics.activations import Variant
    from preflight.physics.dense import layer_of

    def build(n):
        torch.manual_seed(0)
        cfg = transformers.OlmoeConfig(
            hidden_size=H, num_attention_heads=A, num_key_value_heads=KV, intermediate_size=F,
            num_hidden_layers=n, vocab_size=64, num_experts=experts, num_experts_per_tok=top_k,
            norm_topk_prob=norm_topk, pad_token_id=0, attn_implementation=attn)
        return transformers.OlmoeModel(cfg).to(getattr(torch, dtype)).train()

    shape = formulas.count("olmoe", dict(hidden_size=H, num_attention_heads=A,
                                         num_key_value_heads=KV, intermediate_size=F,
                                         num_experts=experts, num_experts_per_tok=top_k,
                                         norm_topk_prob=norm_topk))
    moe = MoE(shape.experts, shape.experts_per_token, shape.expert_ffn,
              norm_topk=shape.norm_topk, weights_f32=shape.weights_f32)
    ids = torch.randint(0, 64, (B, S), generator=torch.Generator().manual_seed(0))
    got = _saved(build(2), ids) - _saved(build(1), ids)
    want = layer_activation_bytes("llama", Shape(s=S, b=B, h=H, a=A, f=F, k=KV, d=d, moe=moe),
                                  attn, variant=Variant(dropout=False, layer=layer_of("olmoe")))
    assert got == want.total


@pytest.mark.parametrize("dtype,d", [("float32", 4), ("bfloat16", 2)])
def test_olmoe_with_clipped_qkv_has_no_layer_table(dtype, d):
    """`clip_qkv` clamps Q, K and V in place, and autograd keeps (Q + 2·K widths)·d bytes
    more per token (measured on CPU): OLMoE's layer table is then unknown, not llama's."""
    assert formulas.activation_family("olmoe", {}) == "llama"
    assert formulas.activation_family("olmoe", {"clip_qkv": None}) == "llama"
    assert formulas.activation_family("olmoe", {"clip_qkv": 8.0}) is None
    ids = torch.randint(0, 64, (B, S), generator=torch.Generator().manual_seed(0))
    per_layer = []
    for clip in (None, 8.0):
        got = []
        for n in (2, 1):
            torch.manual_seed(0)
            cfg = transformers.OlmoeConfig(
                hidden_size=H, num_attention_heads=A, num_key_value_heads=KV,
                intermediate_size=F, num_hidden_layers=n, vocab_size=64, num_experts=4,
                num_experts_per_tok=2, pad_token_id=0, attn_implementation="sdpa",
                clip_qkv=clip)
            got.append(_saved(transformers.OlmoeModel(cfg).to(getattr(torch, dtype)).train(),
                              ids))
        per_layer.append(got[0] - got[1])
    assert per_layer[1] - per_layer[0] == B * S * (H + 2 * KV * H // A) * d


@pytest.mark.parametrize("arch,cls,model_cls,extra", [
    ("mixtral", "MixtralConfig", "MixtralForCausalLM", dict(num_local_experts=4)),
    ("qwen2_moe", "Qwen2MoeConfig", "Qwen2MoeForCausalLM",
     dict(num_experts=4, moe_intermediate_size=96, shared_expert_intermediate_size=160,
          num_hidden_layers=4, decoder_sparse_step=2)),
    ("qwen3_moe", "Qwen3MoeConfig", "Qwen3MoeForCausalLM",
     dict(num_experts=4, moe_intermediate_size=96, mlp_only_layers=[0])),
    ("olmoe", "OlmoeConfig", "OlmoeForCausalLM", dict(num_experts=4)),
    ("olmoe", "OlmoeConfig", "OlmoeForCausalLM",
     dict(num_experts=8, num_key_value_heads=4, attention_bias=True, tie_word_embeddings=True,
          norm_topk_prob=True, clip_qkv=8.0)),
])
def test_moe_counts_match_transformers(arch, cls, model_cls, extra):
    kw = dict(num_hidden_layers=2, hidden_size=128, num_attention_heads=4,
              num_key_value_heads=2, intermediate_size=192, vocab_size=1000,
              num_experts_per_tok=2)
    kw.update(extra)
    with torch.device("meta"):
        m = getattr(transformers, model_cls)(getattr(transformers, cls)(**kw))
    assert formulas.count(arch, kw).params == sum(p.numel() for p in m.parameters())


def test_zero3_gathers_the_whole_moe_block():
    r = run_cli("estimate", "--model", "mistralai/Mixtral-8x7B-v0.1", "--precision", "bf16-mixed",
                "--optimizer", "adamw", "--micro-batch", "1", "--seq-len", "4096",
                "--world-size", "8", "--zero", "3", "--format", "json")
    lines = json.loads(r.stdout)["jobs"][0]["ledger"]["lines"]
    gathered = [ln for ln in lines if ln["label"].startswith("gathered parameters")]
    # one decoder layer of Mixtral 8x7B with all 8 experts: (46,702,792,704 − 2 × 32,000 ×
    # 4,096 embedding and head − 4,096 final norm) / 32 layers
    assert (46_702_792_704 - 2 * 32_000 * 4_096 - 4_096) // 32 == 1_451_270_144
    # DeepSpeed gathers the unit in use and prefetches up to stage3_max_live_parameters
    # (1e9 by default): a unit larger than that is gathered alone, whole
    assert [ln["bytes"] for ln in gathered] == [2 * 1_451_270_144]


# expert parallelism: the tiny Mixtral's routed experts are 2 layers × 4 experts × 3
# projections × h·fe = 2 × 4 × 3 × 128 × 192 parameters; the rest (attention, norms,
# router, embedding and head) stays whole on every rank
EXPERT_PARAMS = 2 * 4 * 3 * 128 * 192
ALL_PARAMS = 945_792


def test_expert_params_of_a_tiny_mixtral():
    assert EXPERT_PARAMS == 589_824
    assert formulas.count("mixtral", MIXTRAL_TINY).expert_params == EXPERT_PARAMS


def _ledger(*extra: str) -> dict:
    r = run_cli(*FLAGS, *extra)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)["jobs"][0]["ledger"]


def test_expert_parallel_divides_the_experts_states():
    ledger = _ledger("--world-size", "2", "--ep", "2")
    local = ALL_PARAMS - EXPERT_PARAMS + EXPERT_PARAMS // 2       # 650,880
    b = ledger["per_gpu_bytes"]
    assert (b["params"], b["grads"]) == (4 * local + ROTARY, 4 * local)
    opt = [ln for ln in ledger["lines"] if ln["label"] == "AdamW m, v (fp32)"]
    assert [ln["bytes"] for ln in opt] == [8 * local]
    assert opt[0]["formula"] == "8 B × (355,968 + 589,824 experts / 2 (ep))"
    # DDP's buckets hold the rank's own gradients
    buckets = [ln for ln in ledger["lines"] if ln["label"].startswith("DDP gradient buckets")]
    assert [ln["bytes"] for ln in buckets] == [4 * local]


def test_expert_parallel_leaves_zero_sharded_states_as_they_were():
    # ZeRO-1 over 4 ranks: the optimizer state and master weights of the experts are sharded
    # over the 2 ranks holding the same experts, Ne / (2 · 2) = Ne / 4, as the dense part
    ledger = _ledger("--world-size", "4", "--ep", "2", "--zero", "1",
                     "--precision", "bf16-mixed")
    local = ALL_PARAMS - EXPERT_PARAMS + EXPERT_PARAMS // 2
    b = ledger["per_gpu_bytes"]
    assert (b["params"], b["grads"]) == (2 * local + ROTARY, 2 * local)
    by_label = {ln["label"]: ln for ln in ledger["lines"]}
    assert by_label["AdamW m, v (fp32)"]["bytes"] == 8 * ALL_PARAMS // 4
    assert by_label["master weights (fp32)"]["bytes"] == 4 * ALL_PARAMS // 4


def test_expert_parallel_that_does_not_divide_the_experts_is_an_error():
    r = run_cli(*FLAGS, "--world-size", "3", "--expert-parallel", "3")
    assert r.returncode == 2
    assert r.stderr.strip().splitlines()[-1] == \
        "Error: --ep: expert parallelism 3 does not divide the 4 experts"


def test_expert_parallel_beyond_the_data_parallel_ranks_is_unknown():
    ledger = _ledger("--world-size", "2", "--tp", "2", "--ep", "2")
    states = [ln for ln in ledger["lines"] if ln["key"] in ("params", "grads")]
    assert [ln["bytes"] for ln in states] == [None, None]
    assert states[0]["note"] == ("unknown: expert parallelism 2 does not divide the "
                                 "data-parallel degree 1 (world 2 / tp·pp 2)")


def test_megatron_expert_model_parallel_size_splits_the_experts(tmp_path):
    (tmp_path / "pretrain_gpt.py").write_text("import megatron\n")
    (tmp_path / "run.sh").write_text(
        "torchrun --nproc_per_node 8 pretrain_gpt.py \\\n"
        "    --num-layers 4 --hidden-size 512 --num-attention-heads 8 --ffn-hidden-size 1024 \\\n"
        "    --seq-length 1024 --micro-batch-size 2 --vocab-size 32000 --swiglu \\\n"
        "    --num-experts 8 --moe-router-topk 2 --expert-model-parallel-size 4 --bf16\n")
    r = run_cli("estimate", str(tmp_path / "run.sh"), "--format", "json")
    assert r.returncode == 0, r.stderr
    job = json.loads(r.stdout)["jobs"][0]
    # Megatron's experts keep their biases: 4 layers × 8 experts × (fc1 512 × 2·1024 + 2·1024,
    # fc2 1024 × 512 + 512)
    experts = 4 * 8 * (512 * 2048 + 2048 + 1024 * 512 + 512)
    params = job["facts"]["params"]["value"]
    weights = [ln for ln in job["ledger"]["lines"] if ln["key"] == "params"]
    assert [ln["bytes"] for ln in weights] == [2 * (params - experts + experts // 4)]
    assert weights[0]["formula"] == \
        f"2 B × ({params - experts:,} + {experts:,} experts / 4 (ep))"
