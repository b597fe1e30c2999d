"""Op-level selective activation checkpointing (`selective_op`, physics.sac) against real
torch on the CPU: a llama-style block checkpointed with `create_selective_checkpoint_contexts`
and torchtitan's policy (the outputs of every other `aten.mm` and of the attention kernel
saved; on the CPU `aten._scaled_dot_product_flash_attention_for_cpu` stands in for the CUDA
flash / efficient kernels torchtitan lists). What the forward leaves alive is counted with
the independent live-storage tracker (`bench/live_storage.py`); transformers' Llama with the
same policy on every decoder layer is measured through `bench/peak_accuracy.py`'s harness."""

import gc
import importlib.util
import os
import sys

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from torch import nn  # noqa: E402
from torch.nn import functional as F  # noqa: E402
from torch.utils.checkpoint import checkpoint  # noqa: E402

from preflight.physics.activations import Shape, layer_activation_bytes  # noqa: E402
from tests.conftest import ROOT  # noqa: E402


def _bench():
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    spec = importlib.util.spec_from_file_location(
        "peak_accuracy", os.path.join(ROOT, "bench", "peak_accuracy.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class RMSNorm(nn.Module):
    def __init__(self, h):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(h))

    def forward(self, x):
        dt = x.dtype
        x = x.float()
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)).to(dt)


def _rotate(x):
    a, b = x.chunk(2, -1)
    return torch.cat((-b, a), -1)


class Block(nn.Module):
    """RMSNorm, q/k/v/o without bias, rotary, sdpa (GQA), SwiGLU: the linears in llama's
    order q, k, v, o, gate, up, down."""

    def __init__(self, h, a, k, f):
        super().__init__()
        self.a, self.k, self.hd = a, k, h // a
        self.norm1, self.norm2 = RMSNorm(h), RMSNorm(h)
        self.q = nn.Linear(h, a * self.hd, bias=False)
        self.k_proj = nn.Linear(h, k * self.hd, bias=False)
        self.v = nn.Linear(h, k * self.hd, bias=False)
        self.o = nn.Linear(a * self.hd, h, bias=False)
        self.gate = nn.Linear(h, f, bias=False)
        self.up = nn.Linear(h, f, bias=False)
        self.down = nn.Linear(f, h, bias=False)

    def forward(self, x, cos, sin):
        b, s, _ = x.shape
        y = self.norm1(x)
        q = self.q(y).view(b, s, self.a, self.hd).transpose(1, 2)
        k = self.k_proj(y).view(b, s, self.k, self.hd).transpose(1, 2)
        v = self.v(y).view(b, s, self.k, self.hd).transpose(1, 2)
        q, k = q * cos + _rotate(q) * sin, k * cos + _rotate(k) * sin
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        x = x + self.o(o.transpose(1, 2).reshape(b, s, -1))
        z = self.norm2(x)
        return x + self.down(F.silu(self.gate(z)) * self.up(z))


B, S, H, A, K, FF = 2, 64, 128, 4, 2, 352


def _kept(precision: str, ckpt: str) -> int:
    """Bytes the block's forward leaves alive (its output aside), its input included: the
    input is an activation only the checkpoint references once the forward is over."""
    pa = _bench()
    autocast = precision == "autocast"
    dt = torch.float32 if precision in ("fp32", "autocast") else torch.bfloat16
    torch.manual_seed(0)
    with pa.LiveStorages() as t:
        blk = Block(H, A, K, FF).to(dt)
        inv = 1.0 / (10000 ** (torch.arange(0, H // A, 2).float() / (H // A)))
        ang = torch.outer(torch.arange(S).float(), inv)
        ang = torch.cat((ang, ang), -1)
        cos, sin = ang.cos().to(dt), ang.sin().to(dt)
        prev = torch.randn(B, S, H, dtype=dt, requires_grad=True)
        gc.collect()
        base = t.current
        x = prev * 1.0
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            extra = {"context_fn": pa.op_sac_context} if ckpt == "op" else {}
            y = checkpoint(blk, x, cos, sin, use_reentrant=False, preserve_rng_state=False,
                           **extra)
        del x
        gc.collect()
        kept = t.current - base - y.untyped_storage().nbytes()
        y.float().sum().backward()           # the recorded graph is a working one
    return kept


def _table(precision: str, checkpointing: str) -> int:
    d = 4 if precision == "fp32" else 2
    sh = Shape(s=S, b=B, h=H, a=A, f=FF, k=K, d=d, autocast=precision == "autocast")
    return layer_activation_bytes("llama", sh, "sdpa", checkpointing).total


@pytest.mark.parametrize("precision", ["fp32", "bf16", "autocast"])
def test_the_table_is_what_the_op_level_policy_keeps(precision):
    kept = _kept(precision, "op")
    assert kept == _table(precision, "selective_op")
    d = 4 if precision == "fp32" else 2
    x = 2 if precision == "bf16" else 4         # the block input: fp32 under autocast
    # the input, q_proj's, v_proj's, gate_proj's and down_proj's outputs (mm 1, 3, 5, 7),
    # the kernel's output and its fp32 log-sum-exp
    assert kept == B * S * (x * H + d * (H + K * H // A + FF + H) + d * H + 4 * A)
    assert kept == {"fp32": 477_184, "bf16": 239_616, "autocast": 272_384}[precision]
    # full checkpointing, measured the same way, keeps the input alone
    assert _kept(precision, "full") == _table(precision, "full") == B * S * H * x


# transformers' Llama with the policy on every decoder layer: h 768, f 2,048, vocabulary
# 1,000, 4 × 256 tokens (the recompute of a layer is the step's peak there)
WIDE_LLAMA = ("LlamaConfig", "LlamaForCausalLM",
              dict(num_hidden_layers=2, hidden_size=768, num_attention_heads=12,
                   num_key_value_heads=4, intermediate_size=2048, vocab_size=1000,
                   max_position_embeddings=256),
              ["--model", "meta-llama/Llama-2-7b-hf", "--layers", "2", "--hidden", "768",
               "--heads", "12", "--kv-heads", "4", "--ffn-hidden", "2048", "--vocab", "1000"])


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_a_recomputed_layer_is_the_peak_of_a_wide_llama(precision):
    pa = _bench()
    miss = {}
    for ck in ("op", True):
        cfg = ("wide", WIDE_LLAMA, precision, "adamw", "sdpa", ck, None, 1, 4, 256)
        meas = pa.measure(cfg)
        args = pa.estimate_args(cfg, meas)
        led = pa._cli(args)["jobs"][0]["ledger"]
        assert meas["peak_phase"] == "backward" and led["peak_phase"] == "recompute"
        # within 0.1 % of the tracker's peak (a few KiB of unmodelled small tensors)
        assert abs(led["tiers"]["tensors"] / meas["peak"] - 1) < 0.001, (led, meas["peak"])
        miss[args[args.index("--checkpointing") + 1]] = meas["peak"] - led["tiers"]["tensors"]
    # what the recompute of a layer under the policy adds to full checkpointing's (the kept
    # tensors it saves again, q_proj's output it frees, down_proj's it keeps) is exact: the
    # two miss the tracker's peak by the same bytes
    assert set(miss) == {"selective_op", "full"}
    assert miss["selective_op"] == miss["full"] == {"fp32": 144_392, "bf16": 77_320}[precision]


def test_what_the_policy_keeps_beyond_full_checkpointing_in_transformers_llama():
    """The forward's peak of transformers' Llama under the op-level policy less that under
    full checkpointing, measured, is the ledger's difference to the byte (2 layers of the
    bench's small llama: h 128, f 344, 4 × 128 tokens, fp32)."""
    pa = _bench()
    got = {}
    for ck in ("op", True):
        cfg = ("llama-ckpt", pa.LLAMA, "fp32", "adamw", "sdpa", ck, None, 1, 4, 128)
        meas = pa.measure(cfg)
        led = pa._cli(pa.estimate_args(cfg, meas))["jobs"][0]["ledger"]
        got[ck] = (meas["phases"]["forward"], led["phases"]["forward"])
    measured = got["op"][0] - got[True][0]
    predicted = got["op"][1] - got[True][1]
    sh = Shape(s=128, b=4, h=128, a=4, f=344, k=2, d=4)
    per_layer = (layer_activation_bytes("llama", sh, "sdpa", "selective_op").total
                 - layer_activation_bytes("llama", sh, "sdpa", "full").total)
    assert measured == predicted == 2 * per_layer == 3_260_416


@pytest.mark.parametrize("change,why", [
    ({"model_type": "qwen2"}, "not qwen2"),
    ({"attention": "eager"}, "not eager"),
    ({"tp": 2}, "under tensor parallelism"),
    ({"family": "gpt2", "model_type": "gpt2"}, "llama-style blocks only"),
])
def test_where_the_policy_is_not_modelled_the_layers_are_unknown_with_the_reason(change, why):
    from preflight.physics.inputs import Inputs
    from preflight.physics.ledger import build_ledger
    from preflight.plan import TrainingPlan
    facts = dict(params=1_000_000, micro_batch=2, seq_len=64, layers=2, hidden=128, heads=4,
                 kv_heads=2, ffn_hidden=352, vocab=1000, family="llama", model_type="llama",
                 attention="sdpa", activation_checkpointing="selective",
                 selective_policy="op", param_dtype="bf16",
                 mixed_precision="none", optimizer="adamw")
    led = build_ledger(Inputs.from_plan(TrainingPlan.from_values({**facts, **change})), None, 0.2)
    layers = [ln for ln in led.lines if ln.label == "transformer layers (saved activations)"]
    assert len(layers) == 1 and layers[0].bytes is None
    assert "op-level selective checkpointing" in layers[0].note and why in layers[0].note
    assert "activation_checkpointing" in led.unknown
    # and where it is modelled, the line says what it keeps
    ok = build_ledger(Inputs.from_plan(TrainingPlan.from_values(facts)), None, 0.2)
    kept = [ln for ln in ok.lines if ln.label.startswith("2 layers' tensors kept by op-level")]
    assert kept[0].bytes == 2 * 239_616
    # 4·h + 4·q + 2·hk + 2·f + 4·a with numbers
    assert kept[0].formula == "2 layers × 2 × 64 × (4×128 + 4×128 + 2×64 + 2×352 + 4×4) B"


TOML = """[model]
name = "llama3"
flavor = "8B"

[training]
local_batch_size = 2
seq_len = 8192
mixed_precision_param = "bfloat16"

[parallelism]
data_parallel_shard_degree = -1

[activation_checkpoint]
mode = "selective"
"""


@pytest.mark.parametrize("option", ['selective_ac_option = "op"\n', 'selective_ac_option = "2"\n',
                                    ""])
def test_a_torchtitan_job_says_which_selective_checkpointing_it_runs(tmp_path, option):
    import json

    from tests.conftest import run_cli
    (tmp_path / "job.toml").write_text(TOML + option)
    r = run_cli("estimate", "job.toml", "--world-size", "8", "--optimizer", "adamw",
                "--format", "json", cwd=str(tmp_path))
    job = json.loads(r.stdout)["jobs"][0]
    labels = [ln["label"] for ln in job["ledger"]["lines"]]
    fact = job["facts"]["activation_checkpointing"]
    if option.endswith('"op"\n'):
        # the contract's mode, at its line; the op-level policy is its own (internal) fact
        assert (fact["value"], fact["source"]) == ("selective", "job.toml:14:1")
        assert "32 layers' tensors kept by op-level selective checkpointing (llama block, " \
               "sdpa)" in labels
        return
    # layer-level (torchtitan's default option "2"): unknown, and the estimate says what it
    # assumed instead and why
    assert (fact["value"], fact["origin"]) == (None, "unknown")
    assert fact["source"] == ("job.toml:15:1" if option else "job.toml:14:1")
    assert "one block in 2 fully checkpointed" in fact["reason"]
    assert "(torchtitan's default)" in fact["reason"] or option
    said = [a for a in job["ledger"]["assumptions"] if "checkpointing" in a]
    assert said == [f"activation checkpointing unknown ({fact['reason']}): none assumed"]
    assert "32 layers' saved activations (llama block, sdpa, checkpointing none)" in labels


def test_the_step_time_counts_the_recomputed_matmuls():
    """k_proj, o_proj and up_proj (mm 2, 4, 6) run again in the backward: 2 FLOPs per
    weight and token over 6·N (Llama 3.1 8B: 32 × (4,096·1,024 + 4,096² + 4,096·14,336))."""
    import json

    from tests.conftest import run_cli
    flags = ["--model", "meta-llama/Llama-3.1-8B", "--precision", "bf16-mixed", "--optimizer",
             "adamw", "--micro-batch", "2", "--seq-len", "8192", "--fsdp", "full_shard",
             "--world-size", "8", "--gpu", "H100-SXM5-80GB", "--format", "json"]

    def walls(mode):
        return json.loads(run_cli("estimate", *flags, "--checkpointing", mode).stdout)[
            "jobs"][0]["walls"]
    op, none = walls("selective-op"), walls("none")
    line = next(ln for ln in op["lines"] if ln["key"] == "compute")
    assert line["formula"].startswith("(6 × 8,030,261,248 + 2 × 32 × (4,096×1,024 + "
                                      "4,096×4,096 + 4,096×14,336)) × 16,384 tokens")
    again = 32 * (4096 * 1024 + 4096 * 4096 + 4096 * 14336)
    assert op["compute_s"] / none["compute_s"] == pytest.approx(
        (6 * 8_030_261_248 + 2 * again) / (6 * 8_030_261_248), rel=1e-12)
