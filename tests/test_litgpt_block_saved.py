"""litgpt's own model (`litgpt.model.GPT`, `litgpt.lora.GPT`) against the litgpt tables
(`preflight.physics.litgpt_block`), with real litgpt on CPU.

Full fine-tune and LoRA (with and without lora_dropout), fp32, bf16 and fp32 weights under
bf16 autocast, GQA and MHA. One layer = the saved bytes of a 3-layer model − those of a
2-layer one, counted by storage (the counter of tests/saved_storage.py, litgpt's forward taking the ids
positionally), the parameters left out. litgpt is not a dependency of the project (its
pinned huggingface-hub < 1.4 conflicts with the test extra's); these tests run where
`litgpt` imports (`pip install --no-deps litgpt==0.5.13` beside the test extra).

The tables follow CUDA, where a dropout mask is a 1-byte bool and LayerNorm keeps its mean
and rstd in fp32; on the CPU a mask is kept in the dtype of the dropout's input and a 16-bit
LayerNorm's mean and rstd in 16 bits: the test adds those differences (`_cpu`).
"""

import pytest

from preflight.physics.activations import Shape, Variant, layer_activation_bytes, saved_tensors
from preflight.physics.litgpt_block import LITGPT, Layer
from preflight.physics.lora import frozen_base

torch = pytest.importorskip("torch")
import litgpt.lora as litgpt_lora  # noqa: E402  (installed by `make install-test`, no deps)
import litgpt.model as litgpt_model  # noqa: E402

from tests.test_estimate_calibration import _is_weight_copy  # noqa: E402

S, B, H, A, R = 32, 2, 128, 4, 8
DTYPES = [("float32", 4), ("bfloat16", 2)]
#: litgpt config name → (model_type, its shape overrides)
ARCHS = {
    "llama": ("Llama-2-7b-hf", dict(intermediate_size=344)),
    "phi": ("phi-2", dict(intermediate_size=512, rotary_percentage=0.5)),
    "gpt_neox": ("pythia-160m", dict(intermediate_size=512)),
    "gemma": ("Gemma-2b", dict(intermediate_size=344, head_size=32)),
}


def _saved(model, ids, autocast: bool = False) -> int:
    """Distinct saved storages, less the parameters and (under autocast) autocast's 16-bit
    casts of the weights (a ledger line of their own)."""
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    frozen = {tuple(q.shape) for q in model.parameters() if not q.requires_grad}
    frozen |= {s[::-1] for s in frozen}
    seen: dict[int, int] = {}

    def cast(t) -> bool:
        # a cast of a trainable weight (fed by its AccumulateGrad, maybe through views:
        # LoRAQKVLinear casts lora_B.unsqueeze(-1), split under GQA), or of a frozen one (no history, a
        # frozen weight's 2-D shape or its transpose: b·s is none of the weights' dimensions)
        fn = t.grad_fn
        if fn is not None and type(fn).__name__ == "ToCopyBackward0":
            fn = fn.next_functions[0][0]
            while fn is not None and type(fn).__name__ in (
                    "UnsqueezeBackward0", "SplitWithSizesBackward0", "SplitBackward0",
                    "TBackward0", "TransposeBackward0", "ViewBackward0"):
                fn = fn.next_functions[0][0]
            if type(fn).__name__ == "AccumulateGrad":
                return True
        return _is_weight_copy(t) or (t.grad_fn is None and not t.requires_grad
                                      and t.dim() == 2 and t.dtype == torch.bfloat16
                                      and tuple(t.shape) in frozen)

    def pack(t):
        st = t.untyped_storage()
        if st.data_ptr() not in params and not (autocast and cast(t)):
            seen[st.data_ptr()] = st.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            model(ids)
    return sum(seen.values())


def _config(mod, name: str, n: int, k: int, **kw):
    over = ARCHS[name][1]
    return mod.Config.from_name(ARCHS[name][0], n_layer=n, n_embd=H, n_head=A,
                                n_query_groups=k, padded_vocab_size=64, vocab_size=64,
                                **over, **kw)


def _measured(name: str, k: int, dtype: str, lora: dict | None = None,
              autocast: bool = False) -> int:
    ids = torch.randint(0, 64, (B, S), generator=torch.Generator().manual_seed(0))
    got = []
    for n in (3, 2):
        torch.manual_seed(0)
        if lora is None:
            model = litgpt_model.GPT(_config(litgpt_model, name, n, k))
        else:
            model = litgpt_lora.GPT(_config(litgpt_lora, name, n, k, lora_r=R, lora_alpha=16,
                                            **lora))
            litgpt_lora.mark_only_lora_as_trainable(model)
        model = model.to(getattr(torch, dtype)).train()
        model.max_seq_length = S
        got.append(_saved(model, ids, autocast))
    return got[0] - got[1]


def _shape(name: str, k: int, d: int, r: int = 0) -> Shape:
    return Shape(s=S, b=B, h=H, a=A, f=ARCHS[name][1]["intermediate_size"], k=k, d=d, r=r)


def _layer(name: str, qkv=(False, False, False)) -> Layer:
    return Layer(block=LITGPT[name], llama_roles=name in ("llama", "gemma"), lora_qkv=qkv)


@pytest.mark.parametrize("dtype,d", DTYPES)
@pytest.mark.parametrize("k", [2, 4])          # GQA (k and v repeated), MHA (v a view)
@pytest.mark.parametrize("name", list(ARCHS))
def test_litgpt_layer_equals_autograd(name, k, dtype, d):
    """Every weight trained: the table's bytes are what autograd keeps, to the byte."""
    family = "llama" if name in ("llama", "gemma") else "gpt2"
    variant = Variant(litgpt=_layer(name))
    want = layer_activation_bytes(family, _shape(name, k, d), "sdpa", variant=variant).total
    assert _measured(name, k, dtype) == want + _cpu(family, _shape(name, k, d), variant, d)


@pytest.mark.parametrize("k", [2, 4])
@pytest.mark.parametrize("name", list(ARCHS))
def test_litgpt_layer_under_autocast_equals_autograd(name, k):
    """fp32 weights under bf16 autocast (`precision: bf16-mixed`): fp32 norms (no weight
    copy), one 16-bit cast of the norm output for the fused qkv, one per MLP linear."""
    family = "llama" if name in ("llama", "gemma") else "gpt2"
    variant = Variant(litgpt=_layer(name))
    sh = Shape(s=S, b=B, h=H, a=A, f=ARCHS[name][1]["intermediate_size"], k=k, d=2,
               autocast=True, cpu_autocast=True)
    want = layer_activation_bytes(family, sh, "sdpa", variant=variant).total
    assert _measured(name, k, "float32", autocast=True) == want


def test_llama_layer_figures():
    """The figures the tables were built from (h 128, 4 heads, 2 kv heads, f 344, 2 × 32
    tokens): 714,240 B in fp32 and 424,448 B in bf16 (the transformers llama table says
    648,704 and 357,888), 558,592 B for the phi-2-like block in fp32."""
    lit = Variant(litgpt=_layer("llama"))
    assert layer_activation_bytes("llama", _shape("llama", 2, 4), variant=lit).total == 714_240
    assert layer_activation_bytes("llama", _shape("llama", 2, 2), variant=lit).total == 424_448
    assert layer_activation_bytes("llama", _shape("llama", 2, 4)).total == 648_704
    assert layer_activation_bytes("gpt2", _shape("phi", 4, 4),
                                  variant=Variant(litgpt=_layer("phi"))).total == 558_592


#: litgpt's lora_* switches and the Hugging Face names the adapter maps them to
LORAS = {
    "qv": (dict(lora_query=True, lora_value=True), ["q_proj", "v_proj"]),
    "all": (dict(lora_query=True, lora_key=True, lora_value=True, lora_projection=True,
                 lora_mlp=True), ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj",
                                  "up_proj", "down_proj"]),
    "kv": (dict(lora_key=True, lora_value=True, lora_mlp=True),
           ["k_proj", "v_proj", "gate_proj", "up_proj", "down_proj"]),
}


def _cpu(family: str, shape: Shape, variant: Variant, d: int) -> int:
    """What the CPU keeps over CUDA: each mask in its input's dtype, not 1 byte (under
    autocast fp32 for the adapters reading a norm's fp32 output: qkv's and the MLP's
    input); a 16-bit LayerNorm's mean and rstd in 16 bits, not fp32 (autocast runs
    LayerNorm in fp32)."""
    t = saved_tensors(family, shape, "sdpa", variant)

    def dtype_of(e) -> int:
        return 4 if shape.autocast and e.stage in (0, 1, 4, 5) else d

    masks = sum((dtype_of(e) - 1) * e.elems(shape) for e in t if e.kind == "mask")
    stats = 0 if shape.autocast else sum((4 - d) * e.elems(shape) for e in t
                                         if "mean and rstd" in e.name)
    return (masks - stats) * S * B


@pytest.mark.parametrize("p", [0.0, 0.05])
@pytest.mark.parametrize("dtype,d", DTYPES)
@pytest.mark.parametrize("k", [2, 4])
@pytest.mark.parametrize("which", list(LORAS))
@pytest.mark.parametrize("name", ["llama", "phi"])
def test_litgpt_lora_layer_equals_autograd(name, which, k, dtype, d, p):
    """A frozen base with litgpt's adapters: one dropout and one lora_A for the fused qkv,
    its zero-padding index when not all of q, k, v are adapted, peft's adapter elsewhere."""
    switches, targets = LORAS[which]
    family = "llama" if name == "llama" else "gpt2"
    qkv = tuple(bool(switches.get(f"lora_{w}")) for w in ("query", "key", "value"))
    fz = frozen_base(family, targets, dropout=p > 0)
    variant = Variant(litgpt=_layer(name, qkv), frozen=fz)
    shape = _shape(name, k, d, R)
    want = layer_activation_bytes(family, shape, "sdpa", variant=variant).total
    got = _measured(name, k, dtype, dict(switches, lora_dropout=p))
    assert got == want + _cpu(family, shape, variant, d)


@pytest.mark.parametrize("p", [0.0, 0.05])
@pytest.mark.parametrize("k", [2, 4])
@pytest.mark.parametrize("which", list(LORAS))
@pytest.mark.parametrize("name", ["llama", "phi"])
def test_litgpt_lora_layer_under_autocast_equals_autograd(name, which, k, p):
    """fp32 weights and adapters under bf16 autocast: lora_A keeps autocast's 16-bit cast of
    its (dropped) input; autocast's casts of the weights and adapters are left out."""
    switches, targets = LORAS[which]
    family = "llama" if name == "llama" else "gpt2"
    qkv = tuple(bool(switches.get(f"lora_{w}")) for w in ("query", "key", "value"))
    variant = Variant(litgpt=_layer(name, qkv), frozen=frozen_base(family, targets,
                                                                    dropout=p > 0))
    shape = Shape(s=S, b=B, h=H, a=A, f=ARCHS[name][1]["intermediate_size"], k=k, d=2,
                  r=R, autocast=True, cpu_autocast=True)
    want = layer_activation_bytes(family, shape, "sdpa", variant=variant).total
    got = _measured(name, k, "float32", dict(switches, lora_dropout=p), autocast=True)
    assert got == want + _cpu(family, shape, variant, 2)
