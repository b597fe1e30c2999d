"""Calibration: measure the activation bytes one transformer block saves for backward and
derive its per-layer coefficients, to check the estimator's formulas.

CPU kernels save different tensors than CUDA ones (CPU dropout keeps its mask in the input
dtype, CUDA in 1 byte; CPU SDPA with dropout falls back to the math path in fp32; CPU
autocast casts different ops). So the blocks here are written with a CUDA-layout
emulation (`Policy`):

- `cast(x, "low")` / `cast(x, "fp32")` apply CUDA autocast's op lists by hand: matmuls and
  linears run in bf16 (each call casts its own input, as autocast does — only weight casts
  are cached), layer_norm / softmax / pow / rsqrt in fp32; elementwise ops promote.
- dropout keeps a 1-byte bool mask (CUDA `native_dropout`);
- SDPA is flash-style: saves q, k, v, the output and an fp32 logsumexp (b·a·s), never the
  s² matrix, dropout or not.

Per-layer bytes follow Korthikanti et al. (2022): bytes = s·b·h·(c1 + c2·a·s/h). Measuring
at two sequence lengths solves for c1 and c2. Blocks are measured one at a time with an
input that is itself an activation (the output of the previous block).

Importing this module imports torch; it runs only for `bench/calibrate.py` and the tests.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import torch
import torch.nn.functional as F
from torch import nn

from preflight.dryrun.instrument import SavedCounter, patch_checkpoint

BF16 = torch.bfloat16


# ---------------------------------------------------------------- CUDA-layout emulation

@dataclass
class Policy:
    """precision: fp32 | bf16-mixed (CUDA autocast emulated; fp32 params and residual) |
    bf16 (pure: params and activations bf16)."""

    precision: str = "bf16-mixed"
    #: native=True: no emulation — real F.dropout / F.scaled_dot_product_attention and no
    #: hand casts (on a GPU, under the real torch.autocast)
    native: bool = False

    @property
    def act_dtype(self) -> torch.dtype:
        return torch.float32 if self.precision in ("fp32", "bf16-mixed") else BF16

    @property
    def param_dtype(self) -> torch.dtype:
        return BF16 if self.precision == "bf16" else torch.float32

    def cast(self, x: torch.Tensor, kind: str) -> torch.Tensor:
        if self.native or self.precision != "bf16-mixed":
            return x
        want = BF16 if kind == "low" else torch.float32
        return x if x.dtype == want else x.to(want)

    def linear(self, x, lin: nn.Linear):
        w = self.cast(lin.weight, "low")
        b = self.cast(lin.bias, "low") if lin.bias is not None else None
        return F.linear(self.cast(x, "low"), w, b)

    def matmul(self, a, b):
        return torch.matmul(self.cast(a, "low"), self.cast(b, "low"))


class _Dropout(torch.autograd.Function):
    """CUDA native_dropout layout: the mask is saved as bool (1 byte per element)."""

    @staticmethod
    def forward(ctx, x, p):
        mask = torch.rand_like(x, dtype=torch.float32) >= p
        ctx.save_for_backward(mask)
        ctx.scale = 1.0 / (1.0 - p)
        return x * mask * ctx.scale

    @staticmethod
    def backward(ctx, g):
        (mask,) = ctx.saved_tensors
        return g * mask * ctx.scale, None


def dropout(x, p: float, training: bool = True, native: bool = False):
    if native:
        return F.dropout(x, p, training)
    return _Dropout.apply(x, p) if (training and p > 0) else x


class _FlashAttention(torch.autograd.Function):
    """Flash / memory-efficient attention layout: saves q, k, v, out and logsumexp (fp32,
    b·a·s); the s×s matrix and any dropout mask are recomputed in backward."""

    @staticmethod
    def forward(ctx, q, k, v, causal):
        out = F.scaled_dot_product_attention(q, k, v, is_causal=causal,
                                             enable_gqa=k.shape[1] != q.shape[1])
        lse = torch.empty(q.shape[:-1], dtype=torch.float32, device=q.device)
        ctx.causal = causal
        ctx.save_for_backward(q, k, v, out, lse)
        return out

    @staticmethod
    def backward(ctx, g):
        q, k, v, _, _ = ctx.saved_tensors
        with torch.enable_grad():
            qq, kk, vv = (t.detach().requires_grad_() for t in (q, k, v))
            o = F.scaled_dot_product_attention(qq, kk, vv, is_causal=ctx.causal,
                                               enable_gqa=kk.shape[1] != qq.shape[1])
            return (*torch.autograd.grad(o, (qq, kk, vv), g), None)


def flash_attention(q, k, v, causal=True, native: bool = False, p: float = 0.0):
    if native:
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal, dropout_p=p,
                                              enable_gqa=k.shape[1] != q.shape[1])
    return _FlashAttention.apply(q, k, v, causal)


class LayerNorm(nn.Module):
    def __init__(self, h, pol: Policy):
        super().__init__()
        self.ln = nn.LayerNorm(h)
        self.pol = pol

    def forward(self, x):
        w, b = self.pol.cast(self.ln.weight, "fp32"), self.pol.cast(self.ln.bias, "fp32")
        return F.layer_norm(self.pol.cast(x, "fp32"), self.ln.normalized_shape, w, b, 1e-5)


class RMSNorm(nn.Module):
    """Llama-style: computed in fp32, cast back to the input dtype, then scaled."""

    def __init__(self, h):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(h))

    def forward(self, x):
        dt = x.dtype
        x32 = x.to(torch.float32)
        x32 = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + 1e-6)
        return self.weight * x32.to(dt)


# ---------------------------------------------------------------- blocks

class GPT2Block(nn.Module):
    """Pre-LN GPT-2 block: fused qkv projection, attention dropout, residual dropout,
    4h GELU MLP."""

    def __init__(self, h, heads, pol: Policy, attention="eager", p=0.1):
        super().__init__()
        self.h, self.a, self.pol, self.attention, self.p = h, heads, pol, attention, p
        self.ln1, self.ln2 = LayerNorm(h, pol), LayerNorm(h, pol)
        self.c_attn, self.c_proj = nn.Linear(h, 3 * h), nn.Linear(h, h)
        self.fc, self.proj = nn.Linear(h, 4 * h), nn.Linear(4 * h, h)
        self.register_buffer("mask", torch.ones(1, 1, 1, 1, dtype=torch.bool), persistent=False)

    def forward(self, x):
        b, s, h = x.shape
        P = self.pol
        q, k, v = P.linear(self.ln1(x), self.c_attn).split(h, dim=2)
        q, k, v = (t.view(b, s, self.a, h // self.a).transpose(1, 2) for t in (q, k, v))
        if self.attention == "eager":
            if self.mask.shape[-1] != s:
                self.mask = torch.tril(torch.ones(s, s, dtype=torch.bool,
                                                  device=x.device)).view(1, 1, s, s)
            att = P.matmul(q, k.transpose(-2, -1)) * (1.0 / math.sqrt(h // self.a))
            att = att.masked_fill(~self.mask, float("-inf"))
            att = F.softmax(P.cast(att, "fp32"), dim=-1)
            att = dropout(att, self.p, native=P.native)
            y = P.matmul(att, v)
        else:
            y = flash_attention(q, k, v, native=P.native, p=self.p)
        y = y.transpose(1, 2).contiguous().view(b, s, h)
        x = x + dropout(P.linear(y, self.c_proj), self.p, native=P.native)
        m = F.gelu(P.linear(self.ln2(x), self.fc))
        return x + dropout(P.linear(m, self.proj), self.p, native=P.native)


def _rotate(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class LlamaBlock(nn.Module):
    """Llama-style block: RMSNorm, separate q/k/v/o projections without bias, rotary
    embeddings, grouped-query attention (k, v repeated to all heads), SwiGLU MLP, no
    dropout; eager attention takes its softmax in fp32 and casts back."""

    def __init__(self, h, heads, kv_heads, ffn, pol: Policy, attention="eager"):
        super().__init__()
        self.h, self.a, self.kv, self.pol, self.attention = h, heads, kv_heads, pol, attention
        d = h // heads
        self.n1, self.n2 = RMSNorm(h), RMSNorm(h)
        self.q = nn.Linear(h, h, bias=False)
        self.k = nn.Linear(h, kv_heads * d, bias=False)
        self.v = nn.Linear(h, kv_heads * d, bias=False)
        self.o = nn.Linear(h, h, bias=False)
        self.gate = nn.Linear(h, ffn, bias=False)
        self.up = nn.Linear(h, ffn, bias=False)
        self.down = nn.Linear(ffn, h, bias=False)
        self.register_buffer("cos", torch.zeros(0), persistent=False)
        self.register_buffer("sin", torch.zeros(0), persistent=False)

    def forward(self, x):
        b, s, h = x.shape
        P, d = self.pol, h // self.a
        z = self.n1(x)
        q = P.linear(z, self.q).view(b, s, self.a, d).transpose(1, 2)
        k = P.linear(z, self.k).view(b, s, self.kv, d).transpose(1, 2)
        v = P.linear(z, self.v).view(b, s, self.kv, d).transpose(1, 2)
        # rotary tables: computed once per model forward and shared by all layers in real
        # models, so kept here as (non-persistent) buffers, not per-layer activations
        if self.cos.shape[0] != s or self.cos.dtype != q.dtype:
            inv = 1.0 / (10000 ** (torch.arange(0, d, 2, dtype=torch.float32) / d))
            ang = torch.outer(torch.arange(s, dtype=torch.float32), inv)
            self.cos = torch.cat((ang, ang), -1).cos().to(q.device, q.dtype)
            self.sin = torch.cat((ang, ang), -1).sin().to(q.device, q.dtype)
        cos, sin = self.cos, self.sin
        q = q * cos + _rotate(q) * sin
        k = k * cos + _rotate(k) * sin
        rep = self.a // self.kv
        if rep > 1 and self.attention == "eager":
            # eager attention repeats K and V to every head (repeat_kv); sdpa / flash take
            # them at GQA width (enable_gqa)
            k = k[:, :, None].expand(b, self.kv, rep, s, d).reshape(b, self.a, s, d)
            v = v[:, :, None].expand(b, self.kv, rep, s, d).reshape(b, self.a, s, d)
        if self.attention == "eager":
            att = P.matmul(q, k.transpose(-2, -1)) * (1.0 / math.sqrt(d))
            causal = torch.full((s, s), float("-inf"), device=att.device).triu(1)
            att = att + causal
            att = F.softmax(att, dim=-1, dtype=torch.float32).to(q.dtype)
            y = P.matmul(att, v)
        else:
            y = flash_attention(q, k, v, native=P.native)
        y = y.transpose(1, 2).reshape(b, s, h)
        x = x + P.linear(y, self.o)
        z = self.n2(x)
        return x + P.linear(F.silu(P.linear(z, self.gate)) * P.linear(z, self.up), self.down)


# ---------------------------------------------------------------- measuring

@dataclass
class BlockSpec:
    kind: str = "gpt2"              # gpt2 | llama
    hidden: int = 256
    heads: int = 4
    kv_heads: Optional[int] = None
    ffn: Optional[int] = None
    attention: str = "eager"        # eager | sdpa
    checkpointing: str = "none"     # none | full
    precision: str = "bf16-mixed"   # fp32 | bf16-mixed | bf16
    dropout: float = 0.1            # gpt2 only

    def build(self) -> nn.Module:
        pol = Policy(self.precision)
        if self.kind == "gpt2":
            m = GPT2Block(self.hidden, self.heads, pol, self.attention, self.dropout)
        else:
            m = LlamaBlock(self.hidden, self.heads, self.kv_heads or self.heads,
                           self.ffn or _llama_ffn(self.hidden), pol, self.attention)
        return m.to(pol.param_dtype)


def _llama_ffn(h: int) -> int:
    f = int(2 * 4 * h / 3)
    return 256 * ((f + 255) // 256)


@dataclass
class BlockMeasure:
    saved: int          # bytes saved for backward by the block (activations)
    copies: int         # autocast weight copies (bf16-mixed)
    b: int
    s: int


def measure_block(spec: BlockSpec, b: int, s: int, seed: int = 0) -> BlockMeasure:
    """Bytes one block saves for backward, its input coming from a previous block."""
    torch.manual_seed(seed)
    patch_checkpoint()
    block = spec.build()
    dt = Policy(spec.precision).act_dtype
    with torch.no_grad():                # builds the causal-mask buffer, as model init does
        block(torch.zeros(1, s, spec.hidden, dtype=dt))
    prev = torch.randn(b, s, spec.hidden, dtype=dt, requires_grad=True)
    x = prev * 1.0                       # an activation, as the previous block's output is
    counter = SavedCounter()
    counter.start(block)
    try:
        if spec.checkpointing == "full":
            import torch.utils.checkpoint as cp
            y = cp.checkpoint(block, x, use_reentrant=False)
        else:
            y = block(x)
    finally:
        counter.stop()
    y.float().sum().backward()           # the recorded graph must be a working one
    return BlockMeasure(saved=counter.saved_bytes, copies=counter.copy_bytes, b=b, s=s)


def coefficients(spec: BlockSpec, b: int = 2, s1: int = 64, s2: int = 128):
    """(c1, c2) with bytes per layer = s·b·h·(c1 + c2·a·s/h), from two sequence lengths.
    Autocast weight copies are left out (they do not scale with tokens)."""
    m1, m2 = measure_block(spec, b, s1), measure_block(spec, b, s2)
    h, a = spec.hidden, spec.heads
    y1, y2 = m1.saved / (s1 * b * h), m2.saved / (s2 * b * h)
    x1, x2 = a * s1 / h, a * s2 / h
    c2 = (y2 - y1) / (x2 - x1)
    c1 = y1 - c2 * x1
    return c1, c2, m1, m2


#: Korthikanti et al. for a GPT block with 16-bit activations and 1-byte dropout masks
#: (docs/ledger.md): eager s·b·h·(34 + 5·a·s/h); without the s² matrix (flash / sdpa) 34;
#: full recomputation keeps the layer input, 2·s·b·h.
def reference_bytes(spec: BlockSpec, b: int, s: int) -> int:
    h, a = spec.hidden, spec.heads
    if spec.checkpointing == "full":
        return 2 * s * b * h
    if spec.attention == "eager":
        return s * b * h * 34 + 5 * a * s * s * b
    return s * b * h * 34
