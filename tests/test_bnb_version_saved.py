"""What a frozen quantised linear keeps for backward, by the bitsandbytes release, against
an independent instrument on CPU, and the release read from the job's pins.

bitsandbytes' matmuls keep their tensors on the autograd context (`ctx.tensors`), where
saved-tensor hooks do not see them; the instrument is the live-storage tracker of
`bench/live_storage.py` (every live storage after the forward), not autograd's hooks.
Each block linear of a tiny llama is a frozen linear whose autograd Function keeps what
bitsandbytes/autograd/_functions.py keeps (this file's own stand-in; bitsandbytes has no
4-bit CPU kernel in the releases that keep the input):

- MatMul4Bit before 0.43.2 (0.42.0 lines 520-525): `ctx.tensors = (A, B)` whenever the input
  or the weight requires grad; from 0.43.2: `(None, B)`.
- MatMul8bitLt: `(CAt, subA, A)` when the input requires grad; before 0.45.0 `CAt`, the
  int8 transposed copy of the input, is always computed (0.44.1 `F.double_quant`), from
  0.45.0 only for a weight that trains (`CAt = None` here). No outliers (`subA` None).

One layer = a 3-layer model − a 2-layer one; the quantised variants are compared with the
same model whose frozen linears are plain `nn.Linear` (which keep no input for a frozen
weight, as the tables already check against autograd), so what is asserted is exactly
what the release adds.
"""

import importlib.util
import json
import os

import pytest

from preflight.physics.activations import Shape, Variant, layer_activation_bytes
from preflight.physics.lora import frozen_base
from tests.conftest import ROOT, run_cli

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
peft = pytest.importorskip("peft")

S, B, H, A, K, F, R = 32, 2, 64, 4, 2, 172, 8
BLOCK_LINEARS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def _tracker():
    spec = importlib.util.spec_from_file_location(
        "live_storage", os.path.join(ROOT, "bench", "live_storage.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.LiveStorages


class _Keeps(torch.autograd.Function):
    """A frozen linear keeping on its context what a bitsandbytes release keeps (`how`)."""

    @staticmethod
    def forward(ctx, x, w, how):
        out = torch.nn.functional.linear(x, w)
        if not any(ctx.needs_input_grad[:2]):
            ctx.tensors = (None, None)
        elif how == "4bit-old":
            ctx.tensors = (x, w)
        elif how == "4bit-new":
            ctx.tensors = (None, w)
        elif how == "8bit-old":
            ctx.tensors = (x.reshape(-1, x.shape[-1]).to(torch.int8).t().contiguous(), None, x)
        else:                                   # 8bit-new
            ctx.tensors = (None, None, x)
        ctx.w = w
        return out

    @staticmethod
    def backward(ctx, g):
        return g @ ctx.w, None, None


class _QuantLinear(torch.nn.Linear):
    how = ""

    def forward(self, x):
        return _Keeps.apply(x, self.weight, self.how)


def _quantise(model, how: str) -> None:
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if name in BLOCK_LINEARS and type(child) is torch.nn.Linear:
                q = _QuantLinear(child.in_features, child.out_features, bias=False)
                q.weight = child.weight
                q.how = how
                setattr(parent, name, q)


def _live_after_forward(n: int, how: str, dtype) -> int:
    torch.manual_seed(0)
    model = transformers.LlamaModel(transformers.LlamaConfig(
        hidden_size=H, num_attention_heads=A, num_key_value_heads=K, intermediate_size=F,
        num_hidden_layers=n, vocab_size=64, attn_implementation="sdpa")).to(dtype).train()
    if how:
        _quantise(model, how)
    model = peft.get_peft_model(model, peft.LoraConfig(r=R, lora_dropout=0.0,
                                                       target_modules=["q_proj", "v_proj"]),
                                autocast_adapter_dtype=False)
    ids = torch.randint(0, 64, (B, S), generator=torch.Generator().manual_seed(0))
    with _tracker()() as t:
        for p in model.parameters():
            t.track(p)
        before = t.current
        out = model(input_ids=ids).last_hidden_state
        after = t.current
    del out
    return after - before


def _added(how: str, dtype) -> int:
    """What one layer keeps with the `how` linears beyond plain frozen nn.Linear."""
    per = [_live_after_forward(n, how, dtype) - _live_after_forward(n, "", dtype)
           for n in (3, 2)]
    return per[0] - per[1]


def _table(bits: int, version, d: int) -> int:
    shape = Shape(s=S, b=B, h=H, a=A, f=F, k=K, d=d, r=R)
    fz = frozen_base("llama", ["q_proj", "v_proj"], bits, bnb_version=version)
    return layer_activation_bytes("llama", shape, "sdpa", variant=Variant(frozen=fz)).total


@pytest.mark.parametrize("dtype,d", [("float32", 4), ("bfloat16", 2)])
@pytest.mark.parametrize("how,bits,version", [
    ("4bit-old", 4, "0.42.0"), ("4bit-new", 4, "0.43.2"), ("4bit-new", 4, None),
    ("8bit-old", 8, "0.44.1"), ("8bit-new", 8, "0.45.0")])
def test_release_adds_what_the_live_storages_add(how, bits, version, dtype, d):
    got = _added(how, getattr(torch, dtype))
    want = _table(bits, version, d) - _table(16, None, d)
    assert got == want
    if how == "4bit-old":
        # the MLP's input and the SwiGLU product (the QKV input the adapters keep already)
        assert want == S * B * d * (H + F)
    if how == "8bit-old":
        # and one int8 copy per linear: q, k, v, gate, up read h, o reads a·head_dim, down f
        assert want - (_table(8, "0.45.0", d) - _table(16, None, d)) == \
            S * B * (6 * H + F)
    if how == "4bit-new":
        assert want == 0


# ---------------------------------------------------------------- the release, from the job

QLORA = (
    "import torch\n"
    "from peft import LoraConfig, get_peft_model\n"
    "from transformers import AutoModelForCausalLM, BitsAndBytesConfig\n"
    "quant = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type='nf4',\n"
    "                           bnb_4bit_compute_dtype=torch.bfloat16)\n"
    "model = AutoModelForCausalLM.from_pretrained('meta-llama/Llama-2-7b-hf',\n"
    "                                             quantization_config=quant,\n"
    "                                             torch_dtype=torch.bfloat16)\n"
    "model = get_peft_model(model, LoraConfig(r=16, lora_alpha=32, lora_dropout=0.0,\n"
    "                                         target_modules=['q_proj', 'v_proj']),\n"
    "                       autocast_adapter_dtype=False)\n"
    "optimizer = torch.optim.AdamW(model.parameters(), lr=2e-4)\n"
)


def _activations(tmp_path, requirements, *flags: str, root: bool = True) -> dict:
    if root:            # the repository's root: the pins are looked for up to it
        (tmp_path / ".git").mkdir(exist_ok=True)
    (tmp_path / "train.py").write_text(QLORA)
    if requirements is not None:
        (tmp_path / "requirements.txt").write_text(requirements)
    r = run_cli("check", str(tmp_path / "train.py"), "--gpu", "A100-80GB", "--set",
                "micro_batch=1", "--set", "seq_len=1024", "--format", "json", *flags,
                cwd=str(tmp_path))
    job = json.loads(r.stdout)["jobs"][0]
    return next(ln for ln in job["ledger"]["lines"] if ln["key"] == "activations")


def test_the_pinned_release_keeps_the_4bit_inputs(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    new = _activations(tmp_path / "a", None)
    old = _activations(tmp_path / "b", "torch\nbitsandbytes==0.42.0  # 4-bit\n")
    # 32 layers × 1,024 tokens × 2 B × (h + f): the MLP input and the SwiGLU product
    assert old["bytes"] - new["bytes"] == 32 * 1024 * 2 * (4096 + 11008)
    assert "bitsandbytes 0.42.0: each 4-bit linear keeps its input" in old["note"]
    assert "bitsandbytes version not known: the current one (≥ 0.43.2) assumed" in new["note"]


@pytest.mark.parametrize("requirement,keeps", [
    ("bitsandbytes>=0.43.0\n", True),           # a lower bound alone: the release named
    ("bitsandbytes~=0.43.3\n", False),
    ("bitsandbytes>=0.41,<0.44\n", False),      # a range names no release: current assumed
    ("bitsandbytes\n", False),
])
def test_which_pins_name_a_release(tmp_path, requirement, keeps):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    base = _activations(tmp_path / "a", None)["bytes"]
    got = _activations(tmp_path / "b", requirement)["bytes"]
    assert (got > base) is keeps


def test_the_nearest_pin_wins(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b" / "job").mkdir(parents=True)
    (tmp_path / "b" / "requirements.txt").write_text("bitsandbytes==0.42.0\n")
    (tmp_path / "b" / ".git").mkdir()
    nearest = _activations(tmp_path / "b" / "job", "bitsandbytes==0.45.0\n", root=False)
    (tmp_path / "b" / "job" / "requirements.txt").unlink()
    above = _activations(tmp_path / "b" / "job", None, root=False)
    plain = _activations(tmp_path / "a", None)
    assert nearest["bytes"] == plain["bytes"] < above["bytes"]
    assert "bitsandbytes 0.45.0: 4-bit linears keep no input" in nearest["note"]
    assert "bitsandbytes 0.42.0: each 4-bit linear keeps its input" in above["note"]


def test_estimate_flag_is_validated_and_applied():
    base = ["estimate", "--model", "meta-llama/Llama-2-7b-hf", "--lora-base-bits", "4",
            "--lora-targets", "q_proj,v_proj", "--lora-r", "16", "--lora-dropout", "0",
            "--precision", "bf16", "--micro-batch", "1", "--seq-len", "1024",
            "--gpu", "A100-80GB", "--format", "json"]
    bad = run_cli(*base, "--bitsandbytes", "latest")
    assert bad.returncode == 2
    assert "--bitsandbytes: 'latest' is not a release number (e.g. 0.42.0)" in bad.stderr
    lines = []
    for v in ("0.42.0", "0.43.2"):
        r = run_cli(*base, "--bitsandbytes", v)
        assert r.returncode == 0, r.stderr
        job = json.loads(r.stdout)["jobs"][0]
        lines.append(next(ln for ln in job["ledger"]["lines"] if ln["key"] == "activations"))
    assert lines[0]["bytes"] - lines[1]["bytes"] == 32 * 1024 * 2 * (4096 + 11008)
