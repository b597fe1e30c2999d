"""LoRA dropout (`lora_dropout` > 0) against what autograd saves, with real peft on CPU.

peft computes an adapted linear as `base(x) + lora_B(lora_A(dropout(x))) * scaling`, one
`nn.Dropout` per adapted module: lora_A saves the dropped copy instead of `x`, and each
adapter keeps its own copy and its own mask, even where q, k and v read the same norm
output. One layer = the saved bytes of a 3-layer model − those of a 2-layer one (layer 0
keeps less), counted by storage (tests/test_estimate_calibration.py's counter).

The tables follow CUDA, where the dropout mask is a 1-byte bool; on the CPU the mask is
kept in the dtype of the dropout's input (the documented difference, as for the model's
own dropout): fp32 under autocast for the linears that read a norm's fp32 output, the
compute dtype otherwise. The test adds that difference to the table and asks for
equality. In bf16 the adapters are kept in bf16 (`autocast_adapter_dtype=False`): the
tables count the adapters in the compute dtype.
"""

import json

import pytest

from preflight.physics.activations import (Shape, Variant, layer_activation_bytes,
                                           saved_tensors)
from preflight.physics.lora import frozen_base
from tests.conftest import causal_lm_script, run_cli

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
peft = pytest.importorskip("peft")

from tests.test_estimate_calibration import _is_weight_copy, _saved  # noqa: E402

S, B, H, A, K, F, R = 48, 2, 128, 4, 2, 344, 8
LLAMA_QKVO = ["q_proj", "k_proj", "v_proj", "o_proj"]
GPT2_ATTN = ["c_attn", "c_proj"]        # c_proj: the attention's and the MLP's output


def _saved_frozen(model, ids, autocast: bool) -> int:
    """`_saved`, less autocast's 16-bit casts of the *frozen* weights (a ledger line of their
    own; `_saved` knows a weight copy by its AccumulateGrad, which a frozen weight lacks):
    a 2-D tensor without history of a frozen weight's shape (b·s ≠ any weight's dims)."""
    if not autocast:
        return _saved(model, ids)
    shapes = {tuple(q.shape) for q in model.parameters() if not q.requires_grad} | \
             {tuple(q.shape)[::-1] for q in model.parameters() if not q.requires_grad}
    params = {q.untyped_storage().data_ptr() for q in model.parameters()}
    seen: dict[int, int] = {}

    def pack(t):
        st = t.untyped_storage()
        cast = t.grad_fn is None and not t.requires_grad and t.dim() == 2 \
            and tuple(t.shape) in shapes and t.dtype == torch.bfloat16
        if st.data_ptr() not in params and not cast and not _is_weight_copy(t):
            seen[st.data_ptr()] = st.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            model(input_ids=ids)
    return sum(seen.values())


def _measured(build, targets, p: float, dtype: str, autocast: bool) -> int:
    ids = torch.randint(0, 64, (B, S), generator=torch.Generator().manual_seed(0))
    got = []
    for n in (3, 2):
        torch.manual_seed(0)
        model = build(n).to(getattr(torch, dtype)).train()
        model = peft.get_peft_model(model, peft.LoraConfig(r=R, lora_dropout=p,
                                                           target_modules=targets),
                                    autocast_adapter_dtype=False)
        got.append(_saved_frozen(model, ids, autocast))
    return got[0] - got[1]


def _cpu_mask_extra(family: str, shape: Shape, attn: str, variant: Variant, d: int) -> int:
    """What the CPU's masks keep over CUDA's 1 byte: each mask is in its dropout input's
    dtype — the compute dtype, or fp32 under autocast (peft casts an adapter's input to
    its fp32 weight's dtype before the dropout)."""
    extra = 0
    for e in saved_tensors(family, shape, attn, variant):
        if e.kind == "mask" and e.name.startswith("LoRA dropout mask"):
            nb = 4 if shape.autocast else d
            extra += (nb - 1) * e.elems(shape) * shape.s * shape.b
    return extra


def _llama(attn):
    def build(n):
        return transformers.LlamaModel(transformers.LlamaConfig(
            hidden_size=H, num_attention_heads=A, num_key_value_heads=K, intermediate_size=F,
            num_hidden_layers=n, vocab_size=64, attn_implementation=attn))
    return build


def _gpt2(attn):
    def build(n):
        return transformers.GPT2Model(transformers.GPT2Config(
            n_embd=H, n_head=A, n_layer=n, vocab_size=64, n_positions=S,
            attn_implementation=attn, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0))
    return build


_PRECISIONS = [("float32", 4, False), ("bfloat16", 2, False), ("float32", 2, True)]


@pytest.mark.parametrize("targets", [LLAMA_QKVO, "all-linear"], ids=["qkvo", "all-linear"])
@pytest.mark.parametrize("attn", ["eager", "sdpa"])
@pytest.mark.parametrize("dtype,d,autocast", _PRECISIONS, ids=["fp32", "bf16", "autocast"])
def test_llama_lora_dropout_equals_autograd(targets, attn, dtype, d, autocast):
    shape = Shape(s=S, b=B, h=H, a=A, f=F, k=K, d=d, r=R, autocast=autocast,
                  cpu_autocast=autocast)
    variant = Variant(dropout=False, frozen=frozen_base("llama", targets, dropout=True))
    want = layer_activation_bytes("llama", shape, attn, variant=variant).total
    got = _measured(_llama(attn), targets, 0.1, dtype, autocast)
    assert got == want + _cpu_mask_extra("llama", shape, attn, variant, d)


def _gpt2_table(targets, attn: str, d: int, p: float) -> int:
    """The gpt2 table of a frozen base, with the CPU's masks, at lora_dropout `p`."""
    shape = Shape(s=S, b=B, h=H, a=A, f=4 * H, k=A, d=d, r=R)
    variant = Variant(dropout=False, gelu="tanh-unfused", kv_cache=True,
                      frozen=frozen_base("gpt2", targets, dropout=p > 0))
    return layer_activation_bytes("gpt2", shape, attn, variant=variant).total + \
        _cpu_mask_extra("gpt2", shape, attn, variant, d)


@pytest.mark.parametrize("targets", [GPT2_ATTN, "all-linear"], ids=["attn", "all-linear"])
@pytest.mark.parametrize("dtype,d", [("float32", 4), ("bfloat16", 2)], ids=["fp32", "bf16"])
def test_gpt2_lora_dropout_equals_autograd_sdpa(targets, dtype, d):
    """sdpa: the table with lora_dropout 0.1 equals autograd's bytes (bf16: less the CPU
    LayerNorm's 16-bit mean and rstd, 2 norms × 2 × 2 bytes per token, documented)."""
    cpu_norm_stats = 2 * 2 * (4 - 2) * S * B if d == 2 else 0
    got = _measured(_gpt2("sdpa"), targets, 0.1, dtype, False)
    assert got == _gpt2_table(targets, "sdpa", d, 0.1) - cpu_norm_stats


@pytest.mark.parametrize("targets", [GPT2_ATTN, "all-linear"], ids=["attn", "all-linear"])
@pytest.mark.parametrize("dtype,d", [("float32", 4), ("bfloat16", 2)], ids=["fp32", "bf16"])
def test_gpt2_lora_dropout_adds_what_autograd_adds_eager(targets, dtype, d):
    """eager: what lora_dropout 0.1 adds over 0 in the table is what autograd adds (the
    dropped copies and masks, less the inputs kept for adapted weights alone)."""
    got = (_measured(_gpt2("eager"), targets, 0.1, dtype, False)
           - _measured(_gpt2("eager"), targets, 0.0, dtype, False))
    assert got == _gpt2_table(targets, "eager", d, 0.1) - _gpt2_table(targets, "eager", d, 0.0)
    assert got > 0


# ------------------------------------------------------------------ the fact, end to end

_LORA_SCRIPT = causal_lm_script(
    "LlamaConfig", "LlamaForCausalLM",
    "num_hidden_layers=3, hidden_size=128, num_attention_heads=4, num_key_value_heads=2, "
    "intermediate_size=344, vocab_size=1000", cast=".to(torch.bfloat16)").replace(
    "optimizer = ", "from peft import LoraConfig, get_peft_model\n"
    "model = get_peft_model(model, LoraConfig(r=8, target_modules=['q_proj', 'k_proj', "
    "'v_proj', 'o_proj']{extra}))\noptimizer = ", 1)


def _layers_line(tmp_path, extra: str = "", *flags: str) -> tuple[int, str]:
    (tmp_path / "train.py").write_text(_LORA_SCRIPT.replace("{extra}", extra))
    # bf16 adapters, as the tables above (peft's default fp32 adapters: test_lora_adapter_dtype)
    r = run_cli("estimate", str(tmp_path / "train.py"), "--format", "json",
                "--lora-adapter-dtype", "bf16", *flags)
    assert r.returncode in (0, 1), r.stderr
    job = json.loads(r.stdout)["jobs"][0]
    [line] = [ln for ln in job["ledger"]["lines"] if ln["label"].startswith("3 layers' saved")]
    return line["bytes"], line.get("note", "")


def test_lora_dropout_flag_changes_the_layers_line_by_the_formula(tmp_path):
    """bf16 (d = 2), 4 × 128 tokens, h = 128, q = a·head_dim = h: per layer each of q, k, v
    keeps (2 + 1)·h, o (2 + 1)·q, and the shared q/k/v input (2·h) goes: 10·h per token;
    layer 0's q/k/v masks are not kept (their input requires no grad): 3·h less."""
    base, note0 = _layers_line(tmp_path)
    drop, note = _layers_line(tmp_path, "", "--lora-dropout", "0.1")
    tokens, h = 4 * 128, 128
    assert drop - base == tokens * h * (3 * 10 - 3)
    assert "lora_dropout 0" in note0 and "lora_dropout 0.1: each adapter keeps" in note
    assert _layers_line(tmp_path, "", "--lora-dropout", "0") == (base, note0)


def test_lora_dropout_read_from_the_lora_config(tmp_path):
    """`LoraConfig(lora_dropout=0.05)`: the same bytes as the flag (any p > 0 keeps the
    copies and masks), and the flag overrides the script."""
    drop, note = _layers_line(tmp_path, "", "--lora-dropout", "0.1")
    assert _layers_line(tmp_path, ", lora_dropout=0.05")[0] == drop
    assert "lora_dropout 0.05" in _layers_line(tmp_path, ", lora_dropout=0.05")[1]
    assert _layers_line(tmp_path, ", lora_dropout=0.05", "--lora-dropout", "0")[0] < drop


@pytest.mark.parametrize("bad", ["1", "-0.1", "x"])
def test_lora_dropout_flag_is_validated(bad):
    r = run_cli("estimate", "--params", "7e9", "--lora-r", "8", "--lora-dropout", bad)
    assert r.returncode == 2, r.stderr
    assert "--lora-dropout" in r.stderr and "Traceback" not in r.stderr
