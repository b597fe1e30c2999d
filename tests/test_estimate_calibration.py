"""The activation tables against what autograd really saves (transformers models on CPU).

One layer's saved bytes = saved bytes of a 2-layer model − those of a 1-layer model (the
embedding, final norm and rotary tables cancel). Tensors are counted once per storage,
parameters excluded. Only configurations where CPU kernels save what CUDA kernels save
are compared (no dropout: CPU stores dropout masks in the input dtype, CUDA in 1 byte).
"""

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from preflight.physics.activations import Shape, Variant, layer_activation_bytes  # noqa: E402

S, B, H, A = 48, 2, 128, 4   # b·s ≠ h, so a weight-shaped tensor cannot pass for an activation


def _is_weight_copy(t) -> bool:
    """An autocast cast of a parameter (a ledger item of its own): ToCopyBackward0 fed by
    AccumulateGrad, possibly behind a view such as .t()."""
    fn = t.grad_fn
    for _ in range(3):
        if fn is None:
            return False
        if type(fn).__name__ == "ToCopyBackward0":
            nxt = fn.next_functions[0][0] if fn.next_functions else None
            return type(nxt).__name__ == "AccumulateGrad"
        if type(fn).__name__ not in _VIEWS:
            # an op's output (a linear's, whose first input may be a cast bias) is an
            # activation, not a weight copy
            return False
        fn = fn.next_functions[0][0] if fn.next_functions else None
    return False


_VIEWS = ("TBackward0", "TransposeBackward0", "PermuteBackward0", "ViewBackward0",
          "UnsafeViewBackward0", "ExpandBackward0")


def _saved(model, ids, autocast: bool = False) -> int:
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    seen: dict[int, int] = {}

    def pack(t):
        st = t.untyped_storage()
        if st.data_ptr() not in params and not _is_weight_copy(t):
            seen[st.data_ptr()] = st.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            model(input_ids=ids)
    return sum(seen.values())


def _per_layer(build, autocast: bool = False) -> int:
    ids = torch.randint(0, 64, (B, S), generator=torch.Generator().manual_seed(0))
    return _saved(build(2), ids, autocast) - _saved(build(1), ids, autocast)


@pytest.mark.parametrize("attn", ["eager", "sdpa"])
@pytest.mark.parametrize("dtype,d,autocast", [("bfloat16", 2, False), ("float32", 4, False),
                                              ("float32", 2, True)])
def test_llama_block_matches_autograd(attn, dtype, d, autocast):
    F, K = 344, 2

    def build(n):
        torch.manual_seed(0)
        cfg = transformers.LlamaConfig(hidden_size=H, num_attention_heads=A,
                                       num_key_value_heads=K, intermediate_size=F,
                                       num_hidden_layers=n, vocab_size=64,
                                       attn_implementation=attn)
        return transformers.LlamaModel(cfg).to(getattr(torch, dtype)).train()

    want = layer_activation_bytes("llama", Shape(s=S, b=B, h=H, a=A, f=F, k=K, d=d,
                                                 autocast=autocast), attn)
    assert _per_layer(build, autocast) == want.total


def test_gpt2_block_matches_autograd_fp32_eager():
    def build(n):
        torch.manual_seed(0)
        cfg = transformers.GPT2Config(n_embd=H, n_head=A, n_layer=n, vocab_size=64,
                                      n_positions=S, attn_implementation="eager",
                                      resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
        return transformers.GPT2Model(cfg).float().train()

    want = layer_activation_bytes("gpt2", Shape(s=S, b=B, h=H, a=A, f=4 * H, k=A, d=4),
                                  "eager", variant=Variant(dropout=False, gelu="tanh-unfused"))
    assert _per_layer(build) == want.total


def _gpt2_builder(attn: str, dtype: str):
    def build(n):
        torch.manual_seed(0)
        cfg = transformers.GPT2Config(n_embd=H, n_head=A, n_layer=n, vocab_size=64,
                                      n_positions=S, attn_implementation=attn,
                                      resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
        return transformers.GPT2Model(cfg).to(getattr(torch, dtype)).train()
    return build


def _gpt2_table(attn: str, d: int, autocast: bool, cpu_autocast: bool) -> int:
    # transformers' GPT-2 keeps its K, V cache copies (use_cache) where sdpa saves them;
    # eager attention's matmuls save those same copies as its K and V
    return layer_activation_bytes(
        "gpt2", Shape(s=S, b=B, h=H, a=A, f=4 * H, k=A, d=d, autocast=autocast,
                      cpu_autocast=cpu_autocast), attn,
        variant=Variant(dropout=False, gelu="tanh-unfused", kv_cache=attn == "sdpa")).total


@pytest.mark.parametrize("attn", ["eager", "sdpa"])
@pytest.mark.parametrize("dtype,d,autocast", [("bfloat16", 2, False), ("float32", 4, False),
                                              ("float32", 2, True)])
def test_gpt2_block_matches_autograd(attn, dtype, d, autocast):
    """transformers' GPT2Block (gelu_new in Python ops) in bf16, fp32 and CPU bf16 autocast
    over fp32 weights, eager and sdpa: the table equals what autograd saves."""
    # the CPU's layer_norm keeps mean and rstd in bf16 where CUDA keeps fp32 (the table
    # follows CUDA): 2 LayerNorms × 2 × 2 B per token less
    cpu_ln = 2 * 2 * (4 - d) * S * B if dtype == "bfloat16" else 0
    assert _per_layer(_gpt2_builder(attn, dtype), autocast) == \
        _gpt2_table(attn, d, autocast, cpu_autocast=autocast) - cpu_ln


@pytest.mark.parametrize("attn", ["eager", "sdpa"])
def test_gpt2_cuda_autocast_table_matches_autograd_under_cudas_pow_policy(attn, monkeypatch):
    """CUDA autocast lists `pow` among the ops it runs in fp32 (CPU autocast does not):
    gelu_new's x³ then saves an fp32 copy of the GELU input instead of the input itself, and
    its tanh and 1 + tanh are fp32. Reproduced on the CPU by giving pow that policy: the
    CUDA table equals what autograd saves, and differs from the CPU table by exactly those
    three f-wide tensors at 2 B more per element."""
    pow16 = torch.pow

    def pow_fp32(x, e, *a, **k):
        if torch.is_autocast_enabled("cpu") and isinstance(x, torch.Tensor) \
                and x.dtype in (torch.bfloat16, torch.float16):
            x = x.float()
        return pow16(x, e, *a, **k)

    monkeypatch.setattr(torch, "pow", pow_fp32)
    cuda = _gpt2_table(attn, 2, True, cpu_autocast=False)
    assert _per_layer(_gpt2_builder(attn, "float32"), True) == cuda
    assert cuda - _gpt2_table(attn, 2, True, cpu_autocast=True) == 3 * 2 * S * B * 4 * H


@pytest.mark.parametrize("attn", ["eager", "sdpa"])
@pytest.mark.parametrize("dtype,d,autocast", [("bfloat16", 2, False), ("float32", 4, False),
                                              ("float32", 2, True)])
def test_bert_layer_matches_autograd(attn, dtype, d, autocast):
    """transformers' BertLayer (post-LN, separate query/key/value, GELU), dropout 0."""
    F = 512

    def build(n):
        torch.manual_seed(0)
        cfg = transformers.BertConfig(hidden_size=H, num_attention_heads=A,
                                      intermediate_size=F, num_hidden_layers=n,
                                      vocab_size=64, hidden_dropout_prob=0.0,
                                      attention_probs_dropout_prob=0.0,
                                      attn_implementation=attn)
        return transformers.BertModel(cfg, add_pooling_layer=False).to(
            getattr(torch, dtype)).train()

    want = layer_activation_bytes("bert", Shape(s=S, b=B, h=H, a=A, f=F, k=A, d=d,
                                                autocast=autocast, cpu_autocast=autocast),
                                  attn, variant=Variant(dropout=False))
    # the table follows CUDA, whose layer_norm keeps mean and rstd in fp32 for 16-bit
    # inputs; the CPU kernel keeps them in the input dtype: 2 LayerNorms × 2 × 2 B less
    cpu = 2 * 2 * (4 - d) * S * B if dtype == "bfloat16" else 0
    assert _per_layer(build, autocast) == want.total - cpu
