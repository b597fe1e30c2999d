"""fp32 adapters over a 16-bit base (peft's default `autocast_adapter_dtype=True`) against
what autograd saves, with real peft on CPU.

peft keeps the LoRA weights in fp32 over a bf16/fp16 base and casts each adapter's input to
fp32 before lora_A: each adapted linear keeps its own fp32 copy of its input (or, with
lora_dropout, of the dropped copy) and lora_A's fp32 r-wide output. One layer = the saved
bytes of a 3-layer model − those of a 2-layer one, counted by storage as in
tests/test_lora_dropout_saved.py; on the CPU a dropout mask takes its input's dtype (fp32
here: the documented difference from CUDA's 1-byte bool, added to the table).
"""

import json

import pytest

from preflight.integrations.runtime import model_facts
from preflight.physics.activations import Shape, Variant, layer_activation_bytes, saved_tensors
from preflight.physics.lora import frozen_base
from tests.conftest import run_cli

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
peft = pytest.importorskip("peft")

from tests.test_lora_dropout_saved import (  # noqa: E402
    _LORA_SCRIPT, A, B, F, H, K, LLAMA_QKVO, R, S, _llama, _saved_frozen)


def _measured(targets, p: float, attn: str, dtype: str, autocast: bool) -> int:
    ids = torch.randint(0, 64, (B, S), generator=torch.Generator().manual_seed(0))
    got = []
    for n in (3, 2):
        torch.manual_seed(0)
        model = _llama(attn)(n).to(getattr(torch, dtype)).train()
        model = peft.get_peft_model(model, peft.LoraConfig(r=R, lora_dropout=p,
                                                           target_modules=targets),
                                    autocast_adapter_dtype=True)
        assert {q.dtype for q in model.parameters() if q.requires_grad} == {torch.float32}
        got.append(_saved_frozen(model, ids, autocast))
    return got[0] - got[1]


def _table(targets, p: float, attn: str, d: int, autocast: bool) -> int:
    """The table with fp32 adapters, plus the CPU's masks (4 bytes: the fp32 copy's dtype,
    against CUDA's 1)."""
    shape = Shape(s=S, b=B, h=H, a=A, f=F, k=K, d=d, r=R, autocast=autocast,
                  cpu_autocast=autocast)
    variant = Variant(dropout=False, frozen=frozen_base("llama", targets, dropout=p > 0,
                                                        adapter_f32=True))
    extra = sum((4 - 1) * e.elems(shape) * S * B
                for e in saved_tensors("llama", shape, attn, variant)
                if e.name.startswith("LoRA dropout mask"))
    return layer_activation_bytes("llama", shape, attn, variant=variant).total + extra


@pytest.mark.parametrize("p", [0.0, 0.1], ids=["p0", "p0.1"])
@pytest.mark.parametrize("targets", [LLAMA_QKVO, "all-linear"], ids=["qkvo", "all-linear"])
@pytest.mark.parametrize("attn", ["eager", "sdpa"])
def test_fp32_adapters_over_bf16_equal_autograd(targets, attn, p):
    assert _measured(targets, p, attn, "bfloat16", False) == _table(targets, p, attn, 2, False)


def test_the_numbers_of_one_case():
    """sdpa, q/k/v/o (q = a·head_dim = h), lora_dropout 0, 96 tokens: the table of 16-bit
    adapters is 403,200 B; fp32 adapters add an fp32 copy per adapter (3·4h + 4q), drop the
    bf16 norm output that only the q/k/v adapters kept (2h; sdpa keeps o_proj's input for
    itself), and lora_A's four outputs go from 2 to 4 bytes (4·2r): 1,856 B per token,
    581,376 B per layer, what autograd saves."""
    base = layer_activation_bytes("llama", Shape(s=S, b=B, h=H, a=A, f=F, k=K, d=2, r=R),
                                  "sdpa", variant=Variant(dropout=False, frozen=frozen_base(
                                      "llama", LLAMA_QKVO))).total
    assert base == 403_200
    assert _table(LLAMA_QKVO, 0.0, "sdpa", 2, False) == 581_376 == \
        base + S * B * (3 * 4 * H + 4 * H - 2 * H + 4 * 2 * R)


@pytest.mark.parametrize("targets", [LLAMA_QKVO, "all-linear"], ids=["qkvo", "all-linear"])
@pytest.mark.parametrize("attn", ["eager", "sdpa"])
@pytest.mark.parametrize("p", [0.0, 0.1], ids=["p0", "p0.1"])
def test_under_autocast_fp32_adapters_change_nothing(targets, attn, p):
    """fp32 weights (so fp32 adapters) under CPU bf16 autocast: lora_A casts its input to
    bf16 itself, so `adapter_f32` changes nothing there; the table equals autograd, with
    o_proj's adapter under sdpa keeping its own bf16 cast of peft's fp32 copy of sdpa's
    output (which sdpa keeps too): 2q per token."""
    shape = Shape(s=S, b=B, h=H, a=A, f=F, k=K, d=2, r=R, autocast=True, cpu_autocast=True)
    plain = Variant(dropout=False, frozen=frozen_base("llama", targets, dropout=p > 0))
    names = [e.name for e in saved_tensors("llama", shape, attn, plain)]
    assert _table(targets, p, attn, 2, True) == \
        layer_activation_bytes("llama", shape, attn, variant=plain).total + sum(
            3 * e.elems(shape) * S * B for e in saved_tensors("llama", shape, attn, plain)
            if e.name.startswith("LoRA dropout mask"))
    assert any(n.startswith("LoRA A 16-bit input copy (o;") for n in names) is \
        (attn == "sdpa" and p == 0)
    assert _measured(targets, p, attn, "float32", True) == _table(targets, p, attn, 2, True)


# ------------------------------------------------------------------ the setting, end to end

def _job(tmp_path, call: str, *flags: str) -> dict:
    """A bf16 llama (3 layers, h = 128, 4 × 128 tokens) with LoRA r = 8 on q/k/v/o."""
    script = _LORA_SCRIPT.replace("{extra}", "")
    if call:
        script = script.replace("'o_proj']))", "'o_proj']), " + call + ")")
        assert call in script
    (tmp_path / "train.py").write_text(script)
    r = run_cli("estimate", str(tmp_path / "train.py"), "--format", "json", *flags)
    assert r.returncode in (0, 1), r.stderr
    return json.loads(r.stdout)["jobs"][0]


def _line(job: dict, prefix: str) -> dict:
    [line] = [ln for ln in job["ledger"]["lines"] if ln["label"].startswith(prefix)]
    return line


def test_peft_default_fp32_adapters_and_the_flag_change_the_layers_line_by_the_formula(tmp_path):
    """peft's default (fp32 adapters) against `--lora-adapter-dtype bf16` and
    `get_peft_model(..., autocast_adapter_dtype=False)`: per token and layer each of q, k, v
    keeps an fp32 copy of its input (4h) and o one of its (4q), the bf16 norm output the
    q/k/v adapters shared (2h) goes, and lora_A's four outputs take 4 bytes, not 2
    (4·2r): 12h + 4q − 2h + 8r; sdpa keeps o_proj's bf16 input for itself."""
    tokens, h, q, r = 4 * 128, 128, 128, 8
    fp32 = _line(_job(tmp_path, ""), "3 layers' saved")
    bf16 = _line(_job(tmp_path, "", "--lora-adapter-dtype", "bf16"), "3 layers' saved")
    assert fp32["bytes"] - bf16["bytes"] == 3 * tokens * (12 * h + 4 * q - 2 * h + 8 * r)
    assert "fp32 adapters" in fp32["note"] and "fp32 adapters" not in bf16["note"]
    off = _line(_job(tmp_path, "autocast_adapter_dtype=False"), "3 layers' saved")
    assert off["bytes"] == bf16["bytes"]
    on = _job(tmp_path, "autocast_adapter_dtype=False", "--lora-adapter-dtype", "fp32")
    assert _line(on, "3 layers' saved")["bytes"] == fp32["bytes"]


def test_adapter_weights_grads_and_adam_states_follow_the_adapter_dtype(tmp_path):
    """fp32 adapters: 4 B weights, 4 B gradients, 8 B of AdamW state per trainable
    parameter; in the base's bf16 (pure bf16, no master copy): 2, 2 and 2 × 2 B.
    Trainable: 3 layers × r · (h + q + h + hk + h + hk + q + h) = 3 · 8 · 768."""
    n = 3 * 8 * (128 + 128 + 128 + 64 + 128 + 64 + 128 + 128)
    fp32 = _job(tmp_path, "")
    bf16 = _job(tmp_path, "", "--lora-adapter-dtype", "bf16")
    assert _line(fp32, "LoRA adapter weights (fp32)")["bytes"] == 4 * n
    assert _line(fp32, "gradients")["bytes"] == 4 * n
    assert _line(bf16, "weights (bf16)")["bytes"] == 2 * n
    assert _line(bf16, "gradients")["bytes"] == 2 * n
    assert [ln["bytes"] for ln in fp32["ledger"]["lines"] if ln["key"] == "optimizer"][0] \
        == 8 * n


@pytest.mark.parametrize("bad", ["fp8", "x"])
def test_lora_adapter_dtype_flag_is_validated(bad):
    r = run_cli("estimate", "--params", "7e9", "--lora-r", "8", "--lora-adapter-dtype", bad)
    assert r.returncode == 2, r.stderr
    assert "--lora-adapter-dtype" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("precision,more", [("bf16", True), ("bf16-autocast", False),
                                            ("fp32", False)])
def test_flag_only_estimates_keep_the_compute_dtype(precision, more):
    """Without a script the adapters are taken in the compute dtype unless the flag says;
    fp32 adapters add to the tables only over 16-bit compute without autocast."""
    def layers(*flags):
        r = run_cli("estimate", "--model", "gpt2", "--lora-r", "8", "--micro-batch", "1",
                    "--seq-len", "128", "--precision", precision, "--format", "json", *flags)
        assert r.returncode in (0, 1), r.stderr
        return _line(json.loads(r.stdout)["jobs"][0], "12 layers' saved")["bytes"]
    assert layers() == layers("--lora-adapter-dtype", "bf16")
    assert (layers("--lora-adapter-dtype", "fp32") > layers()) is more


@pytest.mark.parametrize("autocast_adapter_dtype,want", [(True, "fp32"), (False, "bf16")])
def test_a_live_peft_model_says_its_adapters_dtype(autocast_adapter_dtype, want):
    model = _llama("sdpa")(1).to(torch.bfloat16)
    model = peft.get_peft_model(model, peft.LoraConfig(r=R, target_modules=LLAMA_QKVO),
                                autocast_adapter_dtype=autocast_adapter_dtype)
    assert model_facts(model)[0]["lora"]["adapter_dtype"] == want
