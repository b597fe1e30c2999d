"""Activations: what one transformer layer saves for backward, per architecture family.

Notation: s sequence length, b micro-batch, h hidden, a heads, f MLP width, k key/value
heads (GQA), d bytes per activation element (2 under 16-bit compute, 4 in fp32), t tensor
parallel degree, L layers. All counts are per layer per micro-batch.

Reference model — Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large
Transformer Models"), a GPT block with 16-bit activations and 1-byte dropout masks:

    attention   QKV input 2sbh, Q and K 4sbh, softmax output 2as²b, its dropout mask
                as²b, dropout output 2as²b, V 2sbh, output-projection input 2sbh,
                dropout mask sbh                                → 11sbh + 5as²b
    MLP         first-linear input 2sbh, GELU input 8sbh, GELU output 8sbh, dropout
                mask sbh                                         → 19sbh
    LayerNorms  two inputs                                       → 4sbh
    total       sbh(34 + 5as/h)

With tensor parallel t the tensors inside the parallel regions (Q, K, V, scores, output-
projection input, GELU in/out: 24sbh + 5as²b) are split t ways: sbh(10 + 24/t + 5as/(ht));
sequence parallel splits the rest too: sbh/t·(34 + 5as/h). Selective recomputation drops
the 5as/h term; full recomputation keeps only each layer's input, 2sbh.

Families (each saved tensor is listed in `saved_tensors`, so the coefficients below are
derived by summing the table, not typed in):

gpt2 — the Korthikanti block generalised to MLP width f (GPT-2, nanoGPT, OPT, GPT-NeoX):
    10sbh (sequence-region: 2 LayerNorm inputs, 2 first-linear inputs at d, 2 dropout
    masks at 1 byte) + Q, K, V, out 4·d·sbh + MLP 2·d·sbf, and eager attention's
    softmax out + mask + dropout out = (2d + 1)·as²b; plus LayerNorm's fp32 mean and rstd,
    16 B per token (left out by the paper; `norm_stats=False` reproduces it exactly).
    transformers' GPT-2 / GPT-Neo / GPT-J use `gelu_new`, written in Python ops, which
    saves three more f-wide tensors (tanh output, 0.5·x, 1 + tanh): `gelu="tanh-unfused"`.
    Under autocast softmax runs in fp32: softmax out 4as²b, mask as²b, bf16 copy for the V
    matmul 2as²b. With sdpa/flash the s² tensors are not kept: the kernel saves its
    log-sum-exp, 4·a·sb bytes (fp32).

llama — RMSNorm, SwiGLU, rotary embeddings, GQA, no dropout (Llama, Mistral, Qwen…), as
    in the transformers implementation:
    each RMSNorm upcasts its input to fp32 and saves it (4sbh), saves the normalised
    16-bit tensor (d·sbh) and the fp32 rstd (4sb); the two projection inputs d·sbh each;
    rotary saves only cos/sin (shared, not per token); Q d·sbh; K, V d·sb·hk each (hk =
    k·h/a), repeated to d·sbh each by repeat_kv in eager attention; SwiGLU saves the gate
    output, SiLU output, up output and their product, 4·d·sbf; eager attention saves the
    fp32 softmax output 4as²b and its 16-bit copy d·as²b (no dropout) and o_proj saves the
    re-laid-out output d·sbh; sdpa / flash save their output d·sbh (already in the layout
    o_proj reads, so no copy) and the log-sum-exp 4·a·sb.
    For Llama-2-7B (h 4096, f 11008, bf16, sdpa) that is 45.5·sbh + 4a·sb + 8sb bytes.

Autocast (fp32 weights under torch.autocast, e.g. HF Trainer --bf16): the residual stream
is fp32, so norms save fp32 inputs (LayerNorm runs in fp32; RMSNorm's normalised tensor
stays fp32), and every linear casts its input to 16 bits on its own — llama's q/k/v
projections keep three copies of the norm output and gate/up two (autocast caches only
weight casts; those weight copies are a ledger line of their own). Under CUDA autocast
`pow` runs in fp32, so gelu_new's x³ saves an fp32 copy of the GELU input (not the input
itself) and its tanh and 1 + tanh are fp32 (CPU autocast keeps all three in 16 bits: the
`autocast_device` fact, `estimate --autocast-device cpu`). Full checkpointing keeps the
fp32 layer input.

Checked against measurement (torch 2.13 CPU, transformers 5.24, saved tensors counted by
storage through `saved_tensors_hooks`, autocast weight copies excluded, one layer = the
difference between a 2-layer and a 1-layer model; tests/test_estimate_calibration.py):
the llama table matches to the byte for eager and sdpa in bf16, fp32 and bf16 autocast;
the gpt2 table with `gelu="tanh-unfused"` matches transformers' GPT2Model to the byte in
fp32, bf16 (less the CPU LayerNorm's 16-bit mean and rstd) and CPU autocast, eager and sdpa,
and under CUDA's fp32 policy for `pow` reproduced on the CPU (no dropout). On CPU, dropout masks are stored in the
input dtype (CUDA: 1 byte), CPU autocast keeps `pow` in bf16, and the CPU flash kernel
copies non-contiguous Q/V: the tables follow the CUDA behaviour.

Architectures within a family: each transformers `model_type` whose layer saves other
tensors than the family's reference layer has its traits — `dense.Layer` for the llama
table (Qwen3's and Gemma 3's q/k norms, OLMo's weightless LayerNorm, OLMo 2's post-norms,
Gemma's (1 + weight) norms, GLM's rotary copies, Phi-3's fused projections) and
`decoders.Decoder` for the gpt2 table (OPT's ReLU, the fp32 eager softmax of OPT, BLOOM,
GPT-NeoX and Phi, the parallel blocks of GPT-NeoX and Phi, ModernBERT's GeGLU encoder
layer) — passed in `Variant`; Q, K and V are head_dim wide (`Shape.hd`). Each is checked to
the byte against autograd on CPU (tests/test_families_dense_saved.py,
tests/test_families_decoders_saved.py).

Frozen base (LoRA / QLoRA, `lora.FrozenBase`): autograd saves a linear's input only for the
weight's gradient, so a frozen linear keeps nothing of its own; each tensor in the tables
says whose weight alone needs it (`weight_of`), and a frozen layer drops those, keeping
each adapter's input and its r-wide lora_A output instead. Checked against the storages
peft's GPT-2 and llama models save (bench/peak_accuracy.py, configurations 6 and 13).
With lora_dropout > 0 (`FrozenBase.dropout`) each adapter keeps its own dropped copy of
its input and its mask in place of the shared input (tests/test_lora_dropout_saved.py).
With fp32 adapters over 16-bit compute (`FrozenBase.adapter_f32`, peft's default
`autocast_adapter_dtype`) each adapter keeps its own fp32 copy of its input and an fp32
lora_A output; under autocast `saved_tensors` drops that (lora_A casts back to 16 bits)
(tests/test_lora_adapter_dtype.py).
Mixture of experts (Mixtral, Qwen-MoE): the dense MLP's entries are replaced by the MoE
table of `preflight.physics.moe` (router, dispatch, k experts per token).

Liger-Kernel (`Variant.fused`, `physics.liger`): its RMSNorm ("rms_norm"; "qk_norm" for
q/k norms too) saves its input as it is and an fp32 rstd per row (no fp32 copy, no
normalised tensor), its gated MLP ("glu": SwiGLU, GeGLU) the gate and up outputs (the
activation is recomputed in the backward), its RoPE only cos and sin as eager does; its
fused linear cross-entropy keeps no lm_head input (`embedding_and_head_bytes`). Checked
against the storages autograd saves for Functions that save what Liger's do
(tests/test_liger.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Optional, Union

from preflight.physics import mla as _mla
from preflight.physics import sac
from preflight.physics.decoders import GPT2, Decoder
from preflight.physics.dense import LLAMA, Layer, norm_saved, qk_norm_saved
from preflight.physics.litgpt_block import Layer as LitgptLayer
from preflight.physics.litgpt_block import litgpt_saved, lora_freeze
from preflight.physics.lora import ROLE_STAGE, FrozenBase, freeze
from preflight.physics.mla import MLA, mla_attention_saved
from preflight.physics.moe import SYMBOLS as MOE_SYMBOLS
from preflight.physics.moe import MoE, moe_mlp_saved, symbol_value
from preflight.physics.saved import Saved, kind_bytes

# ------------------------------------------------------------------ the textbook formulas


def activation_bytes_34(s: int, b: int, h: int, layers: int) -> int:
    """Megatron's rule of thumb: 34 bytes per token per hidden element per layer, attention
    matrix not included (docs/ledger.md, worked examples: 34 × 8192 × 4096 × 32 = 36,507,222,016)."""
    return 34 * s * b * h * layers


def attention_scores_bytes(b: int, heads: int, s: int, nbytes: int = 2) -> int:
    """One materialised attention matrix: b × heads × s² × bytes (per layer).
    4 × 32 × 2048² × 2 = 1,073,741,824."""
    return b * heads * s * s * nbytes


def korthikanti_layer_bytes(s: int, b: int, h: int, a: int, t: int = 1, sp: bool = False,
                            recompute: str = "none") -> int:
    """Per-layer activation bytes of Korthikanti et al. 2022 (16-bit, 1-byte masks).

    none:      sbh(34 + 5as/h)            (t = 1)
               sbh(10 + 24/t + 5as/(ht))  (tensor parallel, no sequence parallel)
               sbh/t·(34 + 5as/h)         (tensor + sequence parallel)
    selective: the same without the 5as/h term
    full:      2sbh (÷ t with sequence parallel)
    """
    sbh = Fraction(s * b * h)
    if recompute == "full":
        return math.ceil(2 * sbh / (t if sp else 1))
    attn = Fraction(5 * a * s, h) if recompute != "selective" else Fraction(0)
    if t == 1 or sp:
        return math.ceil(sbh / t * (34 + attn))
    return math.ceil(sbh * (10 + Fraction(24, t) + attn / t))


# ------------------------------------------------------------------ per-family tables


@dataclass(frozen=True)
class Shape:
    s: int
    b: int
    h: int
    a: int
    f: int
    k: int              # key/value heads
    d: int = 2          # bytes per activation element
    autocast: bool = False
    r: int = 0          # LoRA rank (the adapters' r-wide tensors)
    cpu_autocast: bool = False   # CPU autocast: `pow` stays in 16 bits (CUDA: fp32)
    moe: Optional[MoE] = None   # a mixture-of-experts MLP in place of the dense one
    mla: Optional[MLA] = None   # multi-head latent attention in place of llama's
    hd: int = 0         # head_dim (0: h / a)
    rot: int = 0        # rotated dimensions per head (0: all of head_dim)
    #: Llama 4: "l2" for its RoPE layers (complex rotary in fp32, then q and k
    #: L2-normalised), "temperature" for its NoPE layers (q scaled by per-position
    #: attention scales); "" for llama's attention
    llama4: str = ""
    #: gpt-oss: a learned sink logit per head joins the softmax (eager attention), and its
    #: RMSNorm multiplies the weight into the fp32 normalised tensor (kept fp32)
    sinks: bool = False
    #: GLM-4 MoE: Q leaves the partial rotary's concatenation in (b, heads, s, dim) layout,
    #: so sdpa's output is copied into the layout o_proj reads
    out_copy: bool = False

    @property
    def head_dim(self) -> int:
        return self.hd or self.h // self.a

    @property
    def hk(self) -> int:
        """Key/value width: k · head_dim (k · h / a unless head_dim says otherwise)."""
        return self.k * self.head_dim

    def value(self, sym: str) -> Union[int, Fraction]:
        if sym in MOE_SYMBOLS and self.moe is not None:
            return symbol_value(self.moe, self.s, self.b, self.h, sym)
        if sym in _mla.SYMBOLS and self.mla is not None:
            return _mla.symbol_value(self.mla, self.a, sym)
        if sym in ("h/sb", "hd/sb"):        # a tensor per layer, whatever the tokens
            return Fraction(self.h if sym == "h/sb" else self.head_dim, self.s * self.b)
        if sym in ("q/sb", "hk/sb"):        # litgpt's LoRA qkv index, one per layer
            return Fraction(self.a * self.head_dim if sym == "q/sb" else self.hk,
                            self.s * self.b)
        if sym == "rot/b":                  # a tensor per sequence position
            return Fraction(self.rot or self.head_dim, self.b)
        return {"h": self.h, "f": self.f, "hk": self.hk, "a·s": self.a * self.s,
                "a": self.a, "r": self.r, "1": 1, "q": self.a * self.head_dim,
                "kvh": self.k, "rot": self.rot or self.head_dim, "kv": self.k,
                "1/b": Fraction(1, self.b)}[sym]


def _gpt2(sh: Shape, attention: str, dropout: bool = True, gelu: str = "fused",
          norm_stats: bool = True, kv_cache: bool = False, dec: Decoder = GPT2) -> list[Saved]:
    # under autocast the residual stream is fp32 (fp32 weights and embeddings): LayerNorm
    # (an fp32 op) saves its fp32 input, and the first linear its own 16-bit copy of the
    # normalised output. `dec`: the decoder's traits (`physics.decoders`).
    ln = "f32" if sh.autocast else "act"
    gelu = "tanh-unfused" if dec.act == "gelu_new" else gelu
    # under autocast each linear reading the norm's fp32 output casts its own copy
    copies = dec.qkv_linears + (dec.parallel == 1) if sh.autocast else 1
    # transformers' gelu_new under CUDA autocast: `pow` is on CUDA's fp32 list, so it saves
    # the fp32 cast of the GELU input, and nothing keeps the 16-bit input itself (0.5·x and
    # x + 0.044715·x³ save no input); CPU autocast runs pow in 16 bits on the input itself
    cuda_pow = gelu == "tanh-unfused" and sh.autocast and not sh.cpu_autocast
    # Q's width is heads · head_dim; K's and V's k · head_dim under sdpa / flash (grouped
    # KV heads), all heads' in eager attention, whose repeat_kv copies are what the
    # matmuls keep. Written "h" where they are h wide (every GPT-style layer but
    # StarCoder 2's grouped or resized heads)
    q = "h" if sh.a * sh.head_dim == sh.h else "q"
    kv = q if attention == "eager" or sh.k == sh.a else "hk"
    t = [
        Saved("LayerNorm 1 input" + (" (the layer input, both norms')" if dec.parallel
                                     else ""), "h", kind=ln, tp=False, stage=0),
        Saved("QKV input" + (" (and MLP input)" if dec.parallel == 1 else "")
              + (" (a 16-bit copy per projection)" if copies > 1 else ""), "h", tp=False,
              mult=copies, weight_of=("qkv", "fc") if dec.parallel == 1 else ("qkv",),
              per_role=copies > 1, stage=1)]
    if kv == q:
        t += [Saved("Q, K", q, mult=2, stage=2), Saved("V", q, stage=2)]
    else:
        t += [Saved("Q", q, stage=2),
              Saved("K, V (grouped KV heads)", kv, mult=2, stage=2)]
    # sdpa / flash save their own output, which the out-projection reads as a view; only
    # eager attention's output is kept for the out-projection's weight alone
    t.append(Saved("attention output (out-projection input)", q,
                   weight_of=("out",) if attention == "eager" else (), stage=3))
    if dec.rotary_cat and attention != "eager":
        t.append(Saved("out-projection input (a re-laid-out copy of the kernel output)", q,
                       weight_of=("out",), stage=3))
    if not dec.parallel:
        t.append(Saved("LayerNorm 2 input", "h", kind=ln, tp=False, stage=4))
    if dec.parallel != 1:
        t.append(Saved("MLP input", "h", tp=False, weight_of=("fc",), stage=5))
    if dec.fused_v and attention != "eager":
        t.append(Saved("the rest of the fused qkv output, kept by V (a view of it)", "h",
                       mult=2, stage=2))
    if dec.act == "relu":
        t.append(Saved("ReLU output (its backward's and fc2's input)", "f", stage=7))
    elif dec.act == "geglu":
        t += [Saved("Wi output (GELU input and gate)", "f", mult=2, stage=6),
              Saved("GELU output", "f", stage=6),
              Saved("GeGLU product (Wo input)", "f", weight_of=("proj",), stage=7)]
    else:
        t += [Saved("GELU input" + (" (its fp32 copy, which pow saves)" if cuda_pow else ""),
                    "f", kind="f32" if cuda_pow else "act", stage=6),
              Saved("GELU output", "f", weight_of=("proj",), stage=7)]
    if gelu == "tanh-unfused":
        # transformers' gelu_new: 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))) in Python ops
        # saves tanh's output, 0.5·x and (1 + tanh) besides x. Under CUDA autocast pow runs
        # in fp32, so tanh and 1 + tanh are fp32 (and the product is cast back for fc2);
        # CPU autocast keeps pow in 16 bits, and with it the whole gelu.
        wide = "f32" if cuda_pow else "act"
        t += [Saved("GELU tanh output", "f", kind=wide, stage=6),
              Saved("GELU 0.5·x", "f", stage=6),
              Saved("GELU 1 + tanh", "f", kind=wide, stage=6)]
    if kv_cache:
        # transformers' GPT-2 concatenates K and V into its cache (use_cache, on by default
        # even in training); attention saves those copies while Q, a view of the fused QKV
        # output, keeps the original alive
        t.append(Saved("K, V copies in the transformers cache (use_cache)", "h", mult=2,
                       stage=2))
    if norm_stats:
        # LayerNorm keeps mean and rstd per token in fp32 (the paper leaves them out)
        t.append(Saved("LayerNorm 1 mean and rstd (fp32)", "1", mult=2, kind="f32", tp=False,
                       stage=0))
        if dec.parallel != 1:
            t.append(Saved("LayerNorm 2 mean and rstd (fp32)", "1", mult=2, kind="f32",
                           tp=False, stage=4))
    if dropout:
        t += [Saved("attention dropout mask", "h", kind="mask", tp=False, stage=3),
              Saved("MLP dropout mask", "h", kind="mask", tp=False, stage=7)]
    if attention == "eager":
        if sh.autocast or dec.softmax_f32:
            t.append(Saved("softmax output (fp32)", "a·s",
                           kind="f32", core=True, stage=2))
            t.append(Saved("16-bit attention probabilities for the V matmul",
                           "a·s", kind="half", core=True, stage=2))
        else:
            t.append(Saved("softmax output", "a·s", core=True, stage=2))
        if dropout:
            t.append(Saved("attention-probability dropout mask", "a·s",
                           kind="mask", core=True, stage=2))
            if not (sh.autocast or dec.softmax_f32):
                t.append(Saved("attention-probability dropout output", "a·s",
                               core=True, stage=2))
            elif dec.softmax_f32 and not sh.autocast:
                # in 16-bit compute the 16-bit probabilities above are the dropout's output
                # (the cast's own output is saved by nothing); in fp32 compute the cast is
                # the softmax output itself and the dropout's output is one more tensor
                t.append(Saved("attention-probability dropout output (fp32 compute)", "a·s",
                               kind="f32only", core=True, stage=2))
    else:
        t.append(Saved("attention log-sum-exp (fp32)", "a", kind="f32", stage=2))
    return t


def _bert(sh: Shape, attention: str, dropout: bool = True) -> list[Saved]:
    """transformers' BertLayer (RoBERTa's is the same), post-LN, in forward order: the layer
    input (the previous layer's output LayerNorm output) feeds query, key and value; the
    attention output dense is followed by dropout, the residual add and a LayerNorm; the
    intermediate dense and GELU (nn.functional.gelu, one saved input); the output dense,
    dropout, residual add and LayerNorm. The output LayerNorm's output is the next layer's
    input (saved there, or by the MLM head's transform after the last layer).

    Under autocast the residual stream and the LayerNorms are fp32 and query, key and value
    each cast the layer input to 16 bits on their own (three copies, like llama's q/k/v)."""
    ln = "f32" if sh.autocast else "act"
    t = [
        Saved("query/key/value input (the layer input)"
              + (" (a 16-bit copy per projection)" if sh.autocast else ""), "h",
              mult=3 if sh.autocast else 1, tp=False, weight_of=("qkv",),
              per_role=sh.autocast, stage=1),
        Saved("Q, K", "h", mult=2, stage=2),
        Saved("V", "h", stage=2),
        # sdpa's output is the attention output dense's input (a view); eager's context is
        # kept for the dense weight alone
        Saved("attention context (attention output dense input)", "h",
              weight_of=("out",) if attention == "eager" else (), stage=3),
        Saved("attention LayerNorm input (dense output + residual)", "h", kind=ln, tp=False,
              stage=4),
        Saved("attention LayerNorm mean and rstd (fp32)", "1", mult=2, kind="f32", tp=False,
              stage=4),
        Saved("intermediate dense input (attention LayerNorm output)", "h", tp=False,
              weight_of=("fc",), stage=5),
        Saved("GELU input", "f", stage=6),
        Saved("GELU output (output dense input)", "f", weight_of=("proj",), stage=7),
        Saved("output LayerNorm input (dense output + residual)", "h", kind=ln, tp=False,
              stage=8),
        Saved("output LayerNorm mean and rstd (fp32)", "1", mult=2, kind="f32", tp=False,
              stage=8),
    ]
    if dropout:
        t += [Saved("attention output dropout mask", "h", kind="mask", tp=False, stage=3),
              Saved("output dropout mask", "h", kind="mask", tp=False, stage=7)]
    if attention == "eager":
        # CUDA autocast runs softmax in fp32 (the matmul then casts the probabilities back);
        # CPU autocast keeps it in 16 bits
        if sh.autocast and not sh.cpu_autocast:
            t += [Saved("softmax output (fp32 under autocast)", "a·s", kind="f32", core=True,
                        stage=2),
                  Saved("16-bit attention probabilities for the V matmul", "a·s",
                        kind="half", core=True, stage=2)]
        else:
            t.append(Saved("softmax output", "a·s", core=True, stage=2))
        if dropout:
            t.append(Saved("attention-probability dropout mask", "a·s", kind="mask",
                           core=True, stage=2))
            if not sh.autocast:
                t.append(Saved("attention-probability dropout output", "a·s", core=True,
                               stage=2))
    else:
        t.append(Saved("attention log-sum-exp (fp32)", "a", kind="f32", stage=2))
    return t


def _llama(sh: Shape, attention: str, layer: Layer = LLAMA,
           fused: frozenset = frozenset()) -> list[Saved]:
    # Under autocast (fp32 weights) the normalised tensor stays fp32, and each projection
    # casts the norm output to 16 bits on its own: three copies for q/k/v, two for gate/up
    # (autocast caches only the weight casts). `layer`: the architecture's traits
    # (`physics.dense`: norm kind, q/k norms, post-norms…); `fused`: Liger's layer
    # kernels in place of the eager ones ("rms_norm": the block's norms, "qk_norm": the
    # q/k norms too, "glu": the gated MLP's activation and product; physics.liger).
    def norm(i: int, stage: int) -> list[Saved]:
        # a pre-norm reads the residual stream (fp32 under autocast), a post-norm the
        # 16-bit output of o_proj / down_proj; gpt-oss's RMSNorm keeps its
        # normalised tensor in fp32 (the weight multiplies it there)
        return norm_saved(layer, f"RMSNorm {i}", "h", stage,
                          (sh.autocast or sh.sinks) and i < 3, liger="rms_norm" in fused)

    t: list[Saved] = (norm(1, 0) + norm(2, 4)) if layer.pre_norms else []
    # autocast casts a linear's input once per linear: gate and up fused are one
    ups = 1 if layer.fused_gate_up else 2
    # DeepSeek's latent attention (physics.mla) in place of llama's q/k/v projections
    attn = (mla_attention_saved(sh.mla, attention) if sh.mla is not None else
            _llama_attention(sh, attention, layer, "qk_norm" in fused))
    t += attn[:1] + [
        Saved("MLP input" + (" (a 16-bit copy per projection)" if sh.autocast else ""), "h",
              mult=ups if sh.autocast else 1, tp=False, weight_of=("gate", "up"),
              per_role=sh.autocast and ups > 1, stage=5)] + attn[1:]
    if layer.post_norms:
        t += norm(3, 4) + norm(4, 8)
    if sh.moe is not None:
        # the MoE table's tensors carry no weight tags: under a frozen base they are all
        # kept (an upper bound)
        return t + moe_mlp_saved(sh.moe)
    if "glu" in fused:
        # LigerSiLUMulFunction.forward saves the gate and up outputs and recomputes SiLU in
        # its backward (src/liger_kernel/ops/swiglu.py@ead96b61 line 262; @03fd6032 line 87);
        # LigerGELUMulFunction (Gemma's GeGLU) the same (ops/geglu.py@ead96b61 line 138)
        return t + [Saved("gate output (Liger's gated MLP)", "f", stage=6),
                    Saved("up output (Liger's gated MLP)", "f", stage=6),
                    Saved("SwiGLU product (down_proj input)", "f", weight_of=("down",),
                          stage=7)]
    t += [Saved("gate output (SiLU input)", "f", stage=6),
          Saved("SiLU output", "f", stage=6),
          Saved("up output", "f", stage=6),
          Saved("SwiGLU product (down_proj input)", "f", weight_of=("down",), stage=7)]
    return t


def _llama_attention(sh: Shape, attention: str, layer: Layer = LLAMA,
                     liger_qk: bool = False) -> list[Saved]:
    """llama's attention after its norm: the shared q/k/v input first, then Q, K, V and
    the kernel's tensors. Q and the attention output are a·head_dim wide ('q'), K and V
    k·head_dim ('hk'). `liger_qk`: Liger's RMSNorm as the q/k norms."""
    n = 1 if layer.fused_qkv else 3          # autocast: a 16-bit copy per linear
    t = [Saved("QKV input" + (" (a 16-bit copy per projection)" if sh.autocast else ""), "h",
                mult=n if sh.autocast else 1, tp=False, weight_of=("q", "k", "v"),
                per_role=sh.autocast and n > 1, stage=1)]
    t += qk_norm_saved(layer, liger_qk) + [Saved("Q (after rotary)", "q", stage=2)]
    if layer.rotary_copies:
        # in the residual stream's dtype (fp32 under autocast)
        t.append(Saved("cos and sin re-laid out for the layer's rotation", "rot/b", mult=2,
                       kind="f32" if sh.autocast else "act", tp=False, stage=2))
    if sh.llama4:
        return t[:1] + llama4_attention(sh.llama4, attention)
    if sh.sinks:
        return t + sinks_attention()
    if attention == "eager":
        # repeat_kv materialises K and V at full width for the matmuls
        t += [Saved("K, V repeated to all heads", "q", mult=2, stage=2),
              Saved("softmax output (fp32)", "a·s", kind="f32", core=True, stage=2),
              Saved("16-bit attention probabilities", "a·s", kind="half",
                    core=True, stage=2),
              Saved("attention output (o_proj input)", "q", weight_of=("o",), stage=3)]
        if layer.softcap:
            t.append(Saved("soft-capped scores (tanh output)", "a·s", core=True, stage=2))
    else:
        # the kernels allocate their output in (b, s, heads, dim) layout, so o_proj's
        # input is a view of it, not a copy (measured)
        t += [Saved("K, V (GQA width)", "hk", mult=2, stage=2),
              Saved("attention log-sum-exp (fp32)", "a", kind="f32", stage=2),
              Saved("attention output (kernel output = o_proj input)", "q", stage=3)]
        if layer.rotary_cat or sh.out_copy or liger_qk:
            # Q left in (b, heads, s, dim) by the rotation's concatenation (GLM's partial
            # rotary), or by Liger's q norm, which makes its transposed input contiguous:
            # sdpa's output is copied into the layout o_proj reads
            t.append(Saved("o_proj input (a re-laid-out copy of the kernel output)", "q",
                           weight_of=("o",), stage=3))
    return t


def sinks_attention() -> list[Saved]:
    """gpt-oss's eager attention after Q (its only CPU kernel: transformers has no sdpa path
    for sinks): K and V repeated to every head, the index of each row's largest logit (the
    max subtracted before the softmax, int64), the softmax over the keys and the sink in the
    compute dtype, and the output o_proj reads."""
    return [Saved("K, V repeated to all heads", "h", mult=2, stage=2),
            Saved("max-logit index per row (int64)", "a", kind="i64", stage=2),
            Saved("softmax output over the keys", "a·s", core=True, stage=2),
            Saved("softmax output: the sink column", "a", stage=2),
            Saved("attention output (o_proj input)", "h", weight_of=("o",), stage=3)]


def llama4_attention(kind: str, attention: str) -> list[Saved]:
    """Llama 4's attention after its q/k/v input. RoPE layers ("l2"): the rotary is a
    complex product in fp32, which keeps the fp32 Q and K; the L2 norm keeps an fp32 rstd
    per head and position, and passes on the normalised Q and K. NoPE layers
    ("temperature"): Q scaled by per-position scales (fp32, s values per layer, shared by
    the batch). The kernel: sdpa / flash keep Q, K, V, the log-sum-exp and the output;
    eager keeps Q, K and V repeated to every head, the softmax output in the compute dtype
    (Llama 4's eager softmax does not upcast) and the output o_proj reads."""
    if kind == "l2":
        t = [Saved("Q after the complex rotary (fp32)", "h", kind="f32", stage=2),
             Saved("Q L2-norm rstd (fp32)", "a", kind="f32", stage=2),
             Saved("K after the complex rotary (fp32)", "hk", kind="f32", stage=2),
             Saved("K L2-norm rstd (fp32)", "kv", kind="f32", stage=2),
             Saved("Q, L2-normalised", "h", stage=2)]
    else:
        t = [Saved("attention temperature scales (fp32, s per layer)", "1/b", kind="f32",
                   tp=False, stage=2),
             Saved("Q scaled by the temperature", "h", stage=2)]
    if attention == "eager":
        return t + [Saved("K, V repeated to all heads", "h", mult=2, stage=2),
                    Saved("softmax output", "a·s", core=True, stage=2),
                    Saved("attention output (o_proj input)", "h", weight_of=("o",), stage=3)]
    return t + [Saved("K" + (", L2-normalised" if kind == "l2" else ""), "hk", stage=2),
                Saved("V", "hk", stage=2),
                Saved("attention log-sum-exp (fp32)", "a", kind="f32", stage=2),
                Saved("attention output (kernel output = o_proj input)", "h", stage=3)]


@dataclass(frozen=True)
class Variant:
    """What sets one model's layer apart from another of its family and shape, for the
    tables: `dropout` (gpt2 and bert; None: on), and gpt2 only `gelu` "fused" (nn.GELU,
    Megatron, nanoGPT) or "tanh-unfused" (transformers' gelu_new), `norm_stats`
    (LayerNorm's fp32 mean/rstd; off reproduces the paper exactly), `kv_cache` (the K, V
    copies of transformers' GPT-2 cache); `frozen`: a frozen base with LoRA adapters
    (`lora.FrozenBase`); llama only, `layer`: the architecture's layer traits
    (`dense.Layer`: norm kind, q/k norms, post-norms…; Llama's by default); gpt2 only,
    `decoder`: the decoder's traits (`decoders.Decoder`: activation, fp32 softmax,
    parallel block…; GPT-2's by default); `litgpt`: the layer is litgpt's own model's
    (`litgpt_block.Layer`), whose table replaces the family's."""

    dropout: Optional[bool] = None
    gelu: str = "fused"
    norm_stats: bool = True
    kv_cache: bool = False
    frozen: Optional[FrozenBase] = None
    layer: Layer = LLAMA
    decoder: Decoder = GPT2
    #: llama only: Liger-Kernel's layer kernels in place of the eager ones ("rms_norm",
    #: "qk_norm", "glu"; `physics.liger`)
    fused: frozenset = frozenset()
    #: litgpt's own model's layer (`physics.litgpt_block`) in place of transformers'
    litgpt: Optional[LitgptLayer] = None


#: the layer as its family's table has it: dropout on, fused GELU, LayerNorm stats, no
#: cache copies, every weight trained
PLAIN = Variant()


def saved_tensors(family: str, shape: Shape, attention: str = "sdpa",
                  variant: Variant = PLAIN) -> list[Saved]:
    """The table of tensors one layer of `family` saves for backward (`variant`: see
    `Variant`)."""
    v = variant
    if v.litgpt is not None:
        t = litgpt_saved(shape, v.litgpt)
        return t if v.frozen is None else lora_freeze(t, v.frozen, v.litgpt)
    dropout = True if v.dropout is None else v.dropout
    if family == "llama":
        t = _llama(shape, attention, v.layer, v.fused)
    elif family == "bert":
        t = _bert(shape, attention, dropout)
    else:
        t = _gpt2(shape, attention, dropout, v.gelu, v.norm_stats, v.kv_cache, v.decoder)
    if v.frozen is None:
        return t
    fz = v.frozen
    if fz.adapter_f32 and (shape.autocast or shape.d >= 4):
        # under autocast lora_A casts its fp32 input copy back to 16 bits; in fp32 compute
        # the adapters share the base's dtype
        fz = replace(fz, adapter_f32=False)
    return freeze(t, fz, autocast=shape.autocast)


@dataclass(frozen=True)
class LayerActivations:
    """One layer's saved bytes per micro-batch, split the way rules need them."""

    total: int             # everything the layer keeps (after recompute policy)
    scores: int            # the part that is eager attention's s² working set
    full: int              # the layer's complete working set (no recomputation)
    coefficient: str       # bytes per token as a formula in h, f, a, s
    terms: str             # the same with numbers
    terms_rest: str = ""   # the terms without the s² part (numbers in)
    terms_scores: str = "" # the s² part alone (numbers in)
    terms_full: str = ""   # the complete working set's terms (numbers in)
    #: a frozen base: what layer 0 saves less (nothing before its first adapter requires
    #: grad, the embeddings being frozen), and those tensors' names
    first_less: int = 0
    first_less_names: tuple[str, ...] = ()
    #: the layer's input (d·sbh; fp32 under autocast): the checkpoint of full recomputation,
    #: and the first tensor of the working set
    layer_input: int = 0


def layer_activation_bytes(family: str, shape: Shape, attention: str = "sdpa",
                           checkpointing: str = "none", t: int = 1, sp: bool = False,
                           variant: Variant = PLAIN) -> LayerActivations:
    """Bytes one layer keeps for backward for one micro-batch of shape (s, b).

    checkpointing: none | selective (s² tensors recomputed) | full (only the layer input,
    d·sbh, kept; `full` still gives the whole working set, needed once during recompute) |
    selective_op (the block input and the outputs of the ops `physics.sac`'s policy saves).
    variant: dropout, GELU, norm statistics, cache copies and a frozen base with LoRA
    adapters (`Variant`).
    """
    table = saved_tensors(family, shape, attention, variant)
    frozen = variant.frozen
    tokens = shape.s * shape.b
    total = scores = first = Fraction(0)
    first_names: list[str] = []
    front = min((ROLE_STAGE[r] for r in frozen.adapted), default=0) if frozen else 0
    coef: dict[tuple[str, int], int] = {}      # (symbol, divisor) → bytes per element-of-sym
    for e in table:
        nb = kind_bytes(e.kind, shape.d)
        if nb == 0:
            continue
        split = t if (e.tp or sp) else 1
        val = Fraction(e.elems(shape) * nb * tokens, split)
        total += val
        if e.core:
            scores += val
        if e.stage < front:
            first += val
            first_names.append(e.name)
        coef[(e.sym, split)] = coef.get((e.sym, split), 0) + nb * e.mult
    full = total
    full_terms = " + ".join(_term(c, sym, div, shape) for (sym, div), c in
                            sorted(coef.items(), key=lambda kv: (_ORDER.index(kv[0][0]),
                                                                 kv[0][1])))
    split_in = t if sp else 1
    layer_input = Fraction((4 if shape.autocast else shape.d) * tokens * shape.h, split_in)
    if checkpointing == "selective":
        total -= scores
        scores = Fraction(0)
        coef = {k: v for k, v in coef.items() if k[0] != "a·s"}
    elif checkpointing == sac.MODE:
        # the block input and the outputs of the ops the policy saves (physics.sac)
        kept = [e for e, _ in sac.kept_tensors(shape.d, shape.autocast)]
        total = sum((Fraction(e.elems(shape) * kind_bytes(e.kind, shape.d) * tokens,
                              t if (e.tp or sp) else 1) for e in kept), Fraction(0))
        scores = first = Fraction(0)
        first_names = []
        coef = {}
        for e in kept:
            k = (e.sym, t if (e.tp or sp) else 1)
            coef[k] = coef.get(k, 0) + kind_bytes(e.kind, shape.d) * e.mult
    elif checkpointing == "full":
        # the layer input is the residual stream: fp32 under autocast
        total = layer_input
        scores = first = Fraction(0)
        first_names = []
        coef = {("h", split_in): 4 if shape.autocast else shape.d}
    items = sorted(coef.items(), key=lambda kv: (_ORDER.index(kv[0][0]), kv[0][1]))
    text = " + ".join(_term(c, sym, div) for (sym, div), c in items)
    num = " + ".join(_term(c, sym, div, shape) for (sym, div), c in items)
    rest = " + ".join(_term(c, sym, div, shape) for (sym, div), c in items if sym != "a·s")
    core = " + ".join(_term(c, sym, div, shape) for (sym, div), c in items if sym == "a·s")
    return LayerActivations(total=math.ceil(total), scores=math.ceil(scores),
                            full=math.ceil(full), coefficient=text, terms=num,
                            terms_rest=rest, terms_scores=core, first_less=math.ceil(first),
                            first_less_names=tuple(first_names),
                            layer_input=math.ceil(layer_input), terms_full=full_terms)


#: the order of the symbols in a coefficient's text
_ORDER = ("h", "q", "hk", "rot", "f", "r", "a·s", "a", "kv", "1", "1/b", "k·h", "k·fe",
          "E·h", "E·fe", "fs", "E", "k", "E/sb", "Eh/sb", "ql", "kl", "dr", "a·qk", "a·kv",
          "a·dv", "kvh", "h/sb", "hd/sb", "rot/b", "q/sb", "hk/sb")


def _term(c: int, sym: str, div: int, shape: Optional[Shape] = None) -> str:
    """(34, 'h', 1) → '34·h', or with a shape '34×4,096'; a divisor shows as '/t'."""
    if shape is None:
        body = f"{c}" if sym == "1" else f"{c}·{sym}"
        return body + (f"/{div}" if div > 1 else "")
    if sym == "1":
        body = f"{c}"
    elif sym == "E/sb":
        body = f"{c}×{shape.moe.experts if shape.moe else 0}/({shape.s:,}×{shape.b})"
    elif sym == "Eh/sb":
        body = (f"{c}×{shape.moe.experts if shape.moe else 0}×{shape.h:,}/"
                f"({shape.s:,}×{shape.b})")
    elif sym == "a·s":
        body = f"{c}×{shape.a:,}×{shape.s:,}"
    elif sym in ("h/sb", "hd/sb"):
        body = f"{c}×{shape.h if sym == 'h/sb' else shape.head_dim:,}/({shape.s:,}×{shape.b})"
    elif sym in ("q/sb", "hk/sb"):
        body = f"{c}×{shape.value(sym[:-3]):,}/({shape.s:,}×{shape.b})"
    elif sym == "rot/b":
        body = f"{c}×{shape.rot or shape.head_dim:,}/{shape.b}"
    elif sym == "1/b":
        body = f"{c}/{shape.b}"
    else:
        body = f"{c}×{shape.value(sym):,}"
    return body + (f"/{div}" if div > 1 else "")


# ------------------------------------------------------------------ beyond the layers


def logits_bytes(b: int, s: int, vocab: int, t: int = 1) -> int:
    """The logits the loss keeps: b·s·vocab in fp32 (the loss upcasts; log-softmax saves its
    fp32 output for backward). Vocab-parallel under tensor parallelism. Often the largest
    single tensor of a step."""
    return math.ceil(Fraction(4 * b * s * vocab, t))


def logits_in_flight_bytes(b: int, s: int, vocab: int, d: int, t: int = 1) -> int:
    """The logits themselves while the loss is computed: the lm_head output in the compute
    dtype (d bytes), plus its fp32 copy when d < 4 (the loss upcasts). Both die with the
    forward when the caller keeps only the loss."""
    return math.ceil(Fraction((d + (4 if d < 4 else 0)) * b * s * vocab, t))


def logits_grad_bytes(b: int, s: int, vocab: int, t: int = 1) -> int:
    """At the start of backward the fp32 gradient of the log-probabilities and the fp32
    gradient of the logits are alive together (cross-entropy = log-softmax + NLL): 8·b·s·V.
    Transient, but it sits on top of every layer's saved activations."""
    return math.ceil(Fraction(8 * b * s * vocab, t))


def embedding_and_head_bytes(family: str, shape: Shape, dropout: bool = True, t: int = 1,
                             sp: bool = False, part: str = "both",
                             frozen: Optional[FrozenBase] = None,
                             liger: frozenset = frozenset()) -> tuple[int, str]:
    """Outside the layers: the embedding dropout mask (gpt2), the final norm's saved input
    (llama: its fp32 input, normalised tensor and rstd) and the lm_head input. Returns
    (bytes, coefficient per token).

    `part`: "embedding" (what the first pipeline stage keeps: the dropout mask after the
    embedding; the lookup itself saves only the token ids), "head" (the last stage's final
    norm and lm_head input) or "both". A frozen base (`FrozenBase`): the embedding output
    requires no grad (no dropout mask is kept), the final norm's weight and a frozen
    lm_head need no input for a weight gradient. `liger`: Liger-Kernel's kernels here
    (physics.liger): "flce", its fused loss, keeps no lm_head input (the head's gradients
    are made in the loss's forward); "rms_norm", its RMSNorm, keeps the final norm's input
    as it is and rstd."""
    tokens = shape.s * shape.b
    split = t if sp else 1
    norm = 4 if shape.autocast else shape.d      # fp32 residual stream under autocast
    head = shape.d if (frozen is None or frozen.head_trained) and "flce" not in liger else 0
    mask = 1 if dropout and frozen is None else 0
    if family == "llama" and "rms_norm" in liger:
        emb, emb_text = 0, ""
        head_per, head_text = norm * shape.h + 4 + head * shape.h, f"({norm} + {head})·h + 4"
    elif family == "llama":
        # gpt-oss's final norm keeps its normalised tensor fp32 as well
        normed = (4 if shape.sinks else norm) if frozen is None else 0
        emb, emb_text = 0, ""
        head_per, head_text = 4 * shape.h + normed * shape.h + 4 + head * shape.h, \
            f"(4 + {normed} + {head})·h + 4"
    elif family == "bert":
        # BERT / RoBERTa: the embeddings' sum goes through a LayerNorm (its input and fp32
        # mean and rstd saved) and dropout; the MLM head's transform keeps its dense input
        # (the last layer's output), GELU's input, the LayerNorm's input (GELU's output)
        # with its mean and rstd, and the decoder's input (the LayerNorm output)
        el = norm if frozen is None else 0
        emb, emb_text = el * shape.h + 8 + mask * shape.h, f"({el} + {mask})·h + 8"
        # under autocast the dense and the decoder read 16-bit copies, GELU runs in 16 bits
        # and the LayerNorm upcasts its input to fp32
        head_per = (head + shape.d + norm + head) * shape.h + 8
        head_text = f"({head} + {shape.d} + {norm} + {head})·h + 8"
    else:
        emb, emb_text = mask * shape.h, f"{mask}·h"
        head_per, head_text = norm * shape.h + head * shape.h + 8, f"({norm} + {head})·h + 8"
    if part == "embedding":
        per, text = emb, emb_text or "0"
    elif part == "head" or family == "llama":
        per, text = head_per, head_text
    elif family == "bert":
        per, text = emb + head_per, f"{emb_text} + {head_text}"
    else:
        per = emb + head_per
        text = f"({mask} + {norm} + {head})·h + 8"
    return math.ceil(Fraction(per * tokens, split)), text
