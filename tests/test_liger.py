"""Liger-Kernel (`--loss-kernel liger`, physics.liger): the fused loss's chunking against
Liger's formula, the llama table's Liger variant against what autograd saves for
Functions that save what Liger's save (Liger needs Triton and CUDA; these CPU fixtures
reproduce only the `save_for_backward` of its Functions, in the project's words), the
ledger's lines through the CLI, and the switches read as the fact."""

from __future__ import annotations

import json

import pytest

from preflight.physics.activations import (Shape, Variant, embedding_and_head_bytes,
                                            layer_activation_bytes)
from preflight.physics.dense import layer_of
from preflight.physics.liger import liger_run
from preflight.physics.loss import (liger_chunk_bytes, liger_chunks, liger_largest,
                                    liger_loss_lines)
from tests.conftest import run_cli

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from tests.test_estimate_calibration import _is_weight_copy, _saved  # noqa: E402  (torch)

# ------------------------------------------------------------------ (a) the chunking

#: (B·T, V, H) → (rows per chunk, chunks), worked by hand from Liger-Kernel's
#: src/liger_kernel/ops/fused_linear_cross_entropy.py@03fd6032 lines 47-51 (ead96b61 lines
#: 68-70): factor = ⌈V / H⌉, chunk = next power of two ≥ ⌈BT / factor⌉, chunks = ⌈BT / chunk⌉
CHUNKS = {
    (16384, 32000, 4096): (2048, 8),      # the file's own comment, line 42: factor 8
    (16352, 152064, 3584): (512, 32),     # factor 43, ⌈16352 / 43⌉ = 381 → 512
    (4096, 151936, 896): (32, 128),       # factor 170, ⌈4096 / 170⌉ = 25 → 32
    (1000, 50257, 768): (16, 63),         # factor 66, ⌈1000 / 66⌉ = 16 → 16, ⌈1000/16⌉ = 63
    (8192, 128256, 4096): (256, 32),      # factor 32 (31.3 rounded up), 8192 / 32 = 256
    (3000, 4096, 4096): (4096, 1),        # factor 1: one chunk of the next power of two
    (1, 32000, 4096): (1, 1),
}


@pytest.mark.parametrize("shape,want", CHUNKS.items(), ids=[str(k) for k in CHUNKS])
def test_chunks_follow_liger_formula(shape, want):
    assert liger_chunks(*shape) == want


def test_chunk_working_set_per_release():
    """One chunk of 512 rows of Qwen2-7B's head (V 152,064, h 3,584), bf16 logits: the
    fp32 copy of v0.1–0.4, the scaled copy of v0.5.0–0.5.2, the in-place chunk of
    v0.5.3–0.6.1, and from v0.6.2 the V × h product of grad_weight's accumulation (its
    bf16 product and fp32 copy, 6·V·h), which v0.8.1 drops for an fp32 grad_weight."""
    c, V, h = 512, 152064, 3584
    assert liger_chunk_bytes(c, V, h, 2, 4, (0, 1, 1))[0] == 6 * c * V
    assert liger_chunk_bytes(c, V, h, 4, 4, (0, 4, 2))[0] == 8 * c * V
    assert liger_chunk_bytes(c, V, h, 2, 2, (0, 5, 2))[0] == 4 * c * V + 2 * c * h
    assert liger_chunk_bytes(c, V, h, 2, 2, (0, 6, 1))[0] == 2 * c * V + 2 * c * h
    assert liger_chunk_bytes(c, V, h, 2, 2, (0, 8, 2))[0] == 2 * c * V + 6 * V * h
    assert liger_chunk_bytes(c, V, h, 2, 4, (0, 8, 0))[0] == 2 * c * V + 6 * V * h
    assert liger_chunk_bytes(c, V, h, 2, 4, (0, 8, 2))[0] == 2 * c * V + 2 * c * h
    assert liger_chunk_bytes(c, V, h, 2, 0, (0, 8, 2))[0] == 2 * c * V + 2 * c * h
    assert liger_largest(c, V, h, 2, 2, (0, 8, 2))[0] == 4 * V * h
    assert liger_largest(c, V, h, 2, 4, (0, 1, 1))[0] == 4 * c * V


def test_what_liger_patches_follows_the_model_type():
    assert liger_run("qwen2", "llama", None, True).layers == {"rms_norm", "glu"}
    assert liger_run("qwen2", "llama", {"layers": ["rope"]}, True).layers == frozenset()
    gpt2 = liger_run("gpt2", "gpt2", None, True)
    assert not gpt2.loss and "Liger patches no gpt2 model" in gpt2.note
    granite = liger_run("granite", "llama", None, True)
    assert not granite.loss and granite.layers == {"rms_norm", "glu"}
    # the instance patch leaves Qwen3's q/k norms eager, replaces Gemma 3's
    assert liger_run("qwen3", "llama", None, True).layers == {"rms_norm", "glu"}
    assert liger_run("gemma3_text", "llama", None, True).layers == {"rms_norm", "qk_norm",
                                                                     "glu"}
    olmo2 = liger_run("olmo2", "llama", None, True)
    assert olmo2.loss and olmo2.layers == frozenset() and "not modelled" in olmo2.note
    assert liger_run("mixtral", "llama", None, False).layers == frozenset()
    assert liger_run("llama", "llama", {"release": "v0.5.2"}, True).release == (0, 5, 2)


# ------------------------------------------------------------------ (b) the saved tensors
# Functions that save for backward exactly what Liger's save; their arithmetic is the
# textbook one, in torch (grad mode is off inside a Function's forward: nothing else is
# saved).


class RMSNormSaves(torch.autograd.Function):
    """LigerRMSNormFunction (src/liger_kernel/ops/rms_norm.py@ead96b61): the input, made
    contiguous, viewed as rows, its output in the input's dtype, rstd per row in fp32 (lines 445-453); it
    saves (X, W, RSTD) (line 657)."""

    @staticmethod
    def forward(ctx, x, w, eps, offset):
        # offset 1.0: Gemma's (1 + weight), taken in fp32 (its "gemma" casting mode); the
        # forward is @ensure_contiguous (line 635): a transposed input (Gemma 3's q and k)
        # is copied, and the copy saved
        x = x.contiguous()
        rows = x.view(-1, x.shape[-1])
        rstd = torch.rsqrt(rows.float().pow(2).mean(-1) + eps)
        normed = rows.float() * rstd[:, None]
        ctx.offset = offset
        ctx.save_for_backward(rows, w, rstd)
        y = normed * (offset + w.float()) if offset else normed.to(x.dtype) * w
        return y.to(x.dtype).view_as(x)

    @staticmethod
    def backward(ctx, dy):
        rows, w, rstd = ctx.saved_tensors
        n = rows.float() * rstd[:, None]
        g = dy.reshape(rows.shape).float()
        dn = g * (ctx.offset + w.float())
        dx = rstd[:, None] * (dn - n * (dn * n).mean(-1, keepdim=True))
        return dx.to(rows.dtype).view_as(dy), (g * n).sum(0).to(w.dtype), None, None


class ActMulSaves(torch.autograd.Function):
    """LigerSiLUMulFunction (src/liger_kernel/ops/swiglu.py@ead96b61) and
    LigerGELUMulFunction (ops/geglu.py@ead96b61, Gemma's): c = act(a)·b in a's dtype; each
    saves (a, b) (swiglu.py line 262, geglu.py line 138) and recomputes act in its
    backward."""

    @staticmethod
    def forward(ctx, a, b, gelu):
        a, b = a.contiguous(), b.contiguous()       # @ensure_contiguous (swiglu.py line 231)
        ctx.gelu = gelu
        ctx.save_for_backward(a, b)
        return (_act(a.float(), gelu) * b.float()).to(a.dtype)

    @staticmethod
    def backward(ctx, dc):
        a, b = ctx.saved_tensors
        with torch.enable_grad():
            x = a.float().detach().requires_grad_()
            act = _act(x, ctx.gelu)
            (dact,) = torch.autograd.grad(act, x, dc.float() * b.float())
        return dact.to(a.dtype), (dc.float() * act.detach()).to(b.dtype), None


def _act(x, gelu: bool):
    return (torch.nn.functional.gelu(x, approximate="tanh") if gelu
            else torch.nn.functional.silu(x))


class RopeSaves(torch.autograd.Function):
    """LigerRopeFunction (src/liger_kernel/ops/rope.py@ead96b61): it saves (cos, sin)
    (line 226). Liger rotates q and k in place in q_proj's and k_proj's outputs; here the
    rotation makes new tensors of the same size, which changes no saved storage's bytes."""

    @staticmethod
    def forward(ctx, q, k, cos, sin):
        ctx.save_for_backward(cos, sin)
        c, s = cos.unsqueeze(1), sin.unsqueeze(1)
        return q * c + _half(q) * s, k * c + _half(k) * s

    @staticmethod
    def backward(ctx, dq, dk):
        cos, sin = ctx.saved_tensors
        c, s = cos.unsqueeze(1), sin.unsqueeze(1)
        return dq * c - _half(dq * s), dk * c - _half(dk * s), None, None


def _half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


class FusedLossSaves(torch.autograd.Function):
    """LigerFusedLinearCrossEntropyFunction (src/liger_kernel/ops/fused_linear_cross_
    entropy.py@ead96b61): grad_input zeros_like(_input) and grad_weight zeros_like(weight)
    (lines 72-77), filled chunk by chunk in the forward; it saves (grad_input, grad_weight,
    grad_bias) (lines 431-435; @03fd6032 line 125), and its backward only rescales them."""

    @staticmethod
    def forward(ctx, x, w, target):
        grad_input, grad_weight = torch.zeros_like(x), torch.zeros_like(w)
        keep = target != -100
        n = keep.sum()
        loss = torch.zeros((), dtype=torch.float32)
        for i in range(0, x.shape[0], 64):
            logits = (x[i:i + 64] @ w.t()).float()
            t, m = target[i:i + 64].clamp(min=0), keep[i:i + 64]
            lse = logits.logsumexp(-1)
            loss += ((lse - logits.gather(1, t[:, None])[:, 0]) * m).sum()
            g = logits.softmax(-1)
            g[torch.arange(len(t)), t] -= 1
            g = (g * m[:, None] / n).to(logits.dtype)
            grad_input[i:i + 64] = (g @ w.float()).to(x.dtype)
            grad_weight += (g.t() @ x[i:i + 64].float()).to(w.dtype)
        ctx.save_for_backward(grad_input, grad_weight)
        return loss / n

    @staticmethod
    def backward(ctx, go):
        gi, gw = ctx.saved_tensors
        return gi * go.to(gi.dtype), gw * go.to(gw.dtype), None


S, B, H, A, K, F, V, HD = 48, 2, 128, 4, 2, 344, 96, 24
TINY = dict(hidden_size=H, num_attention_heads=A, num_key_value_heads=K, intermediate_size=F,
            vocab_size=V, pad_token_id=0, head_dim=HD)
#: a decoder layer's norms, as Liger's instance patch replaces them (the sandwich norms of
#: Gemma 2 and 3 where the layer has them; q/k norms only with "qk_norm")
_NORMS = ("input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
          "post_feedforward_layernorm")


def _patch(model, kernels: frozenset, final_norm: bool = True) -> None:
    """Liger's `_patch_rms_norm_module` / `_patch_swiglu_module` / `_patch_geglu_module` on
    an instance, with the fixtures above (the final norm too unless `final_norm` is False);
    Gemma's norms with offset 1.0, its MLP with the tanh GELU."""
    base = model.model if hasattr(model, "model") else model
    gemma = model.config.model_type.startswith("gemma")
    names = _NORMS if "rms_norm" in kernels else ()
    norms = [getattr(layer, n) for layer in base.layers for n in names if hasattr(layer, n)]
    if "qk_norm" in kernels:
        norms += [m for layer in base.layers for m in (layer.self_attn.q_norm,
                                                        layer.self_attn.k_norm)]
    if final_norm and "rms_norm" in kernels:
        norms.append(base.norm)
    for m in norms:
        eps = getattr(m, "variance_epsilon", None) or m.eps
        m.forward = (lambda x, m=m, eps=eps: RMSNormSaves.apply(x, m.weight, eps,
                                                                1.0 if gemma else 0.0))
    for layer in base.layers if "glu" in kernels else []:
        mlp = layer.mlp
        mlp.forward = (lambda x, mlp=mlp: mlp.down_proj(
            ActMulSaves.apply(mlp.gate_proj(x), mlp.up_proj(x), gemma)))


def _model(arch: str, n: int, attn: str, dtype: str, kernels: frozenset, head: bool = False,
           final_norm: bool = True):
    torch.manual_seed(0)
    cfg = transformers.AutoConfig.for_model(arch, num_hidden_layers=n, attn_implementation=attn,
                                            **TINY)
    cls = transformers.AutoModelForCausalLM if head else transformers.AutoModel
    model = cls.from_config(cfg).to(getattr(torch, dtype)).train()
    _patch(model, kernels, final_norm)
    return model


def _ids():
    return torch.randint(1, V, (B, S), generator=torch.Generator().manual_seed(0))


@pytest.fixture
def liger_rope(monkeypatch):
    """Liger's `apply_rotary_pos_emb` replacement in the llama-style modules (the list of
    calls made tells that the layers ran it)."""
    import importlib  # here: the modules are patched for one test at a time

    calls: list[int] = []

    def rope(q, k, cos, sin, unsqueeze_dim=1):
        calls.append(1)
        return RopeSaves.apply(q, k, cos, sin)
    for arch in {a.removesuffix("_text") for a in _ARCHS}:
        mod = importlib.import_module(f"transformers.models.{arch}.modeling_{arch}")
        monkeypatch.setattr(mod, "apply_rotary_pos_emb", rope)
    return calls


#: the model_types whose layer the table holds with Liger's kernels (physics.liger), with
#: the kernels its instance patch applies; transformers 5.24's Gemma 2 has no sdpa path
_ARCHS = {"llama": {"rms_norm", "glu"}, "mistral": {"rms_norm", "glu"},
          "qwen2": {"rms_norm", "glu"}, "qwen3": {"rms_norm", "glu"},
          "gemma": {"rms_norm", "glu"}, "gemma2": {"rms_norm", "glu"},
          "gemma3_text": {"rms_norm", "qk_norm", "glu"}}
_CASES = [(arch, attn) for arch in _ARCHS for attn in ("sdpa", "eager")
          if not (arch == "gemma2" and attn == "sdpa")]
_DTYPES = [("bfloat16", 2, False), ("float32", 4, False), ("float32", 2, True)]


def _shape(d: int, autocast: bool) -> Shape:
    return Shape(s=S, b=B, h=H, a=A, f=F, k=K, d=d, hd=HD, autocast=autocast,
                 cpu_autocast=autocast)


@pytest.mark.parametrize("arch,attn", _CASES, ids=[f"{a}-{b}" for a, b in _CASES])
@pytest.mark.parametrize("dtype,d,autocast", _DTYPES, ids=["bf16", "fp32", "autocast"])
def test_liger_layer_table_equals_autograd(arch, attn, dtype, d, autocast, liger_rope):
    """One layer (2 layers − 1) with Liger's RMSNorm, gated MLP and RoPE as its instance
    patch applies them: the table's Liger variant to the byte, and less than eager's."""
    kernels = frozenset(_ARCHS[arch])
    got = [_saved(_model(arch, n, attn, dtype, kernels), _ids(), autocast) for n in (2, 1)]
    want = layer_activation_bytes("llama", _shape(d, autocast), attn, variant=Variant(
        dropout=False, layer=layer_of(arch), fused=kernels))
    eager = layer_activation_bytes("llama", _shape(d, autocast), attn,
                                   variant=Variant(dropout=False, layer=layer_of(arch)))
    assert liger_rope and got[0] - got[1] == want.total
    # the gated MLP keeps no activation output; each norm less than eager's
    assert eager.total - want.total > d * S * B * F


def test_liger_layer_table_llama_in_numbers():
    """Llama's layer in bf16: each RMSNorm keeps its input as it is where eager keeps an
    fp32 copy and the normalised tensor (4·h less), the SwiGLU no SiLU output (d·f)."""
    want, eager = (layer_activation_bytes("llama", _shape(2, False), "sdpa", variant=Variant(
        dropout=False, fused=f)).total for f in (frozenset({"rms_norm", "glu"}), frozenset()))
    assert eager - want == S * B * (2 * 4 * H + 2 * F)


@pytest.mark.parametrize("dtype,d,autocast", _DTYPES, ids=["bf16", "fp32", "autocast"])
def test_liger_rope_alone_saves_what_eager_saves(dtype, d, autocast, liger_rope):
    got = [_saved(_model("llama", n, "sdpa", dtype, frozenset()), _ids(), autocast)
           for n in (2, 1)]
    shape = _shape(d, autocast)
    assert liger_rope and got[0] - got[1] == layer_activation_bytes("llama", shape, "sdpa",
                                                     variant=Variant(dropout=False)).total


@pytest.mark.parametrize("dtype,d,autocast", _DTYPES, ids=["bf16", "fp32", "autocast"])
def test_final_norm_with_liger_rms_norm(dtype, d, autocast):
    """The final norm, Liger's against eager (the rest of the model the same): the head
    part of `embedding_and_head_bytes` with and without `rms_norm`."""
    kernels = frozenset({"rms_norm", "glu"})
    fused = _saved(_model("llama", 1, "sdpa", dtype, kernels), _ids(), autocast)
    eager = _saved(_model("llama", 1, "sdpa", dtype, kernels, final_norm=False), _ids(),
                   autocast)
    shape = _shape(d, autocast)
    head = [embedding_and_head_bytes("llama", shape, False, part="head", liger=lg)[0]
            for lg in (frozenset({"flce"}), frozenset({"flce", "rms_norm"}))]
    assert eager - fused == head[0] - head[1]


@pytest.mark.parametrize("dtype,d,autocast", _DTYPES, ids=["bf16", "fp32", "autocast"])
def test_fused_loss_keeps_its_gradients_and_no_lm_head_input(dtype, d, autocast):
    """The model with the fused loss on its hidden states (as Liger's lce_forward, labels
    padded) − the model without a head: exactly the two gradients the loss's forward made
    (`liger_loss_lines`), and no lm_head input."""
    model = _model("llama", 1, "sdpa", dtype, frozenset({"rms_norm", "glu"}), head=True)
    ids = _ids()
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}

    def counted(with_loss: bool) -> int:
        seen: dict[int, int] = {}
        loss = None

        def pack(t):
            st = t.untyped_storage()
            if st.data_ptr() not in params and not _is_weight_copy(t):
                seen[st.data_ptr()] = st.nbytes()
            return t
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
                hidden = model.model(input_ids=ids).last_hidden_state
                if with_loss:
                    labels = torch.nn.functional.pad(ids, (0, 1), value=-100)[:, 1:]
                    loss = FusedLossSaves.apply(hidden.reshape(-1, H), model.lm_head.weight,
                                                labels.reshape(-1))
        if loss is not None:
            loss.backward()         # the fixtures' backward runs (outside the counter)
        return sum(seen.values())

    delta = counted(True) - counted(False)
    lines = liger_loss_lines(B, S, V, H, d, 4 if autocast else d, 4 if autocast else d,
                             (0, 8, 2))
    held = [ln.bytes for ln in lines if ln.lifetime == "logits"]
    assert delta == sum(held) == (4 if autocast else d) * (B * S * H + V * H)
    assert model.lm_head.weight.grad is not None


# ------------------------------------------------------------------ (c) the ledger via the CLI


def _lines(*flags: str) -> dict[str, int]:
    r = run_cli("estimate", "--family", "llama", "--layers", "2", "--hidden", "512",
                "--heads", "8", "--kv-heads", "8", "--ffn-hidden", "1408", "--vocab", "32000",
                "--micro-batch", "2", "--seq-len", "1024", "--params", "100000000",
                "--precision", "bf16", "--optimizer", "adamw", "--attention", "sdpa",
                "--format", "json", *flags)
    assert r.returncode in (0, 1), r.stderr
    led = json.loads(r.stdout)["jobs"][0]["ledger"]
    return {ln["label"]: ln["bytes"] for ln in led["lines"]}, \
        led["phases"]


def test_cli_ledger_of_the_fused_loss():
    """b 2 × s 1,024, h 512, V 32,000, pure bf16, release 0.6.1 (no V × h product):
    chunk = next power of two ≥ ⌈2,048 / ⌈32,000 / 512⌉⌉ = ⌈2,048 / 63⌉ = 33 → 64."""
    lines, phases = _lines("--loss-kernel", "liger", "--liger-release", "0.6.1")
    assert lines["hidden-state gradient made in the loss's forward (2-byte, kept to the "
                 "final norm's backward)"] == 2 * 2048 * 512 == 2_097_152
    assert lines["lm_head weight gradient made in the loss's forward (2-byte, kept to the "
                 "lm_head's backward)"] == 2 * 32000 * 512 == 32_768_000
    assert lines["one chunk of the fused loss's forward (32 chunks of 64 tokens; transient) "
                 "and the per-token fp32 loss"] == 2 * 64 * 32000 + 2 * 64 * 512 + 4 * 2048
    # Liger's RMSNorm as the final norm, no lm_head input: (2 + 0)·h + 4 per token
    assert lines["embedding output, final norm and lm_head input"] == 2048 * (2 * 512 + 4)
    assert not any("logits" in k for k in lines)
    std, std_phases = _lines()
    assert lines["2 layers' saved activations (llama block, Liger RMSNorm + gated MLP, sdpa, "
                 "checkpointing none)"] == std["2 layers' saved activations (llama block, "
                                               "sdpa, checkpointing none)"] \
        - 2 * 2048 * (2 * 4 * 512 + 2 * 1408)
    assert phases["forward"] < std_phases["forward"]


def test_cli_liger_on_a_model_it_does_not_patch():
    r = run_cli("estimate", "--model", "gpt2", "--micro-batch", "2", "--seq-len", "512",
                "--loss-kernel", "liger")
    assert r.returncode in (0, 1), r.stderr
    assert "Liger patches no gpt2 model" in r.stdout
    assert "logits kept for the loss (fp32)" in r.stdout


def test_cli_rejects_an_unknown_layer_kernel():
    r = run_cli("estimate", "--family", "llama", "--loss-kernel", "liger",
                "--liger-layers", "rms_norm,layer_norm")
    assert r.returncode == 2 and "--liger-layers" in r.stderr and "layer_norm" in r.stderr


# ------------------------------------------------------------------ (d) the switches


_PATCH = """\
from liger_kernel.transformers import apply_liger_kernel_to_qwen2
from transformers import AutoModelForCausalLM

apply_liger_kernel_to_qwen2(rms_norm=False, swiglu=False)
model = AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-0.5B")
"""
_RECIPE = """\
model_name_or_path: Qwen/Qwen2.5-0.5B
stage: sft
do_train: true
finetuning_type: full
enable_liger_kernel: true
per_device_train_batch_size: 2
cutoff_len: 2048
"""


@pytest.mark.parametrize("files,command,facts", [
    ({"train.py": _PATCH}, "python train.py",
     {"loss_kernel": ("liger", "train.py:4"), "liger": ({"layers": ["rope"]}, "train.py:4")}),
    ({"sft.yaml": _RECIPE}, "llamafactory-cli train sft.yaml",
     {"loss_kernel": ("liger", "sft.yaml:5")}),
], ids=["apply_liger_kernel_to_qwen2", "llamafactory"])
def test_switch_gives_the_fact_at_its_line(files, command, facts, tmp_path, monkeypatch):
    from preflight.frameworks import Example
    from tests.test_frameworks import mismatches, outcome, run_example

    ex = Example(files=files, command=command, facts=facts)
    report = run_example(ex, tmp_path, monkeypatch)
    assert report.jobs and mismatches(ex, outcome(report, ex)) == []
