"""Exact parameter counts and shapes from Hugging Face `config.json` fields.

One function per architecture family. Each walks the module tree the transformers
implementation builds (embeddings, every linear with its bias, every norm, the head) and
adds up the parameters, so the result is exact, not a 12·L·h² approximation. Defaults are
the config classes' own defaults, so a partial config (`LlamaConfig(num_hidden_layers=2)`)
counts as transformers would build it.

Nothing here imports torch or transformers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional

#: Which head the count includes. Decoders default to `causal_lm`, encoders to `masked_lm`,
#: T5 to `seq2seq_lm`.
HEADS = ("causal_lm", "masked_lm", "seq2seq_lm", "base", "seq_cls", "token_cls")


@dataclass(frozen=True)
class Linear:
    """One kind of linear layer: its leaf name (what LoRA `target_modules` match), shape and
    how many there are in the model. `in_block` is true for the layers inside the repeated
    blocks (what bitsandbytes quantises); `expert` marks MoE expert weights."""

    name: str
    in_features: int
    out_features: int
    count: int = 1
    bias: bool = False
    in_block: bool = True
    expert: bool = False

    @property
    def weight_params(self) -> int:
        return self.in_features * self.out_features * self.count


@dataclass
class ModelShape:
    """What the rest of preflight needs to know about a model."""

    params: int
    active_params: int
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    ffn_hidden: int
    vocab: int
    family: str
    arch: str = ""
    head_dim: int = 0
    tied: bool = False
    head: str = "causal_lm"
    experts: int = 0
    experts_per_token: int = 0
    #: mixture of experts: one routed expert's MLP width, the shared experts' width (0:
    #: none), the layers whose MLP is the MoE one (the others are dense), whether the top-k
    #: probabilities are renormalised and the routing weights stay fp32 (the router's saved
    #: tensors, `physics.moe`)
    expert_ffn: int = 0
    shared_expert_ffn: int = 0
    moe_layers: int = 0
    norm_topk: bool = True
    weights_f32: bool = True
    linears: list[Linear] = field(default_factory=list)
    #: every parameter tensor as (shape, how many), in the layout transformers builds (None:
    #: a part of the model is counted without its shapes); what torch.optim keeps per tensor
    #: (a `step` count, Adafactor's row and column variances) follows from it
    param_shapes: Optional[list[tuple[tuple[int, ...], int]]] = None
    #: the registered buffers the model's modules create, as (name, shape, dtype): "int64",
    #: or "float" (created fp32; a `.to(dtype)` cast of the model casts them). None: not
    #: modelled for this architecture
    buffers: Optional[list[tuple[str, tuple[int, ...], str]]] = None
    #: DeepSeek: the latent attention's config fields (`physics.mla`; empty: none) and the
    #: router's fp32 upcast and V2's group-limited score mask (`physics.moe`)
    latent_attention: dict[str, int] = field(default_factory=dict)
    router_upcast: bool = False
    group_mask: bool = False

    @property
    def expert_params(self) -> int:
        """Parameters of the routed experts, weights and biases (what expert parallelism
        splits; the router and the shared experts stay on every rank)."""
        return sum(ln.weight_params + (ln.out_features * ln.count if ln.bias else 0)
                   for ln in self.linears if ln.expert)

    def facts(self) -> dict[str, int]:
        return {"params": self.params, "layers": self.layers, "hidden": self.hidden,
                "heads": self.heads, "kv_heads": self.kv_heads,
                "ffn_hidden": self.ffn_hidden, "vocab": self.vocab}


class UnsupportedArchitecture(ValueError):
    pass


# --------------------------------------------------------------------------- helpers

class _Count:
    """Accumulates parameters and the linear layers that hold them."""

    def __init__(self) -> None:
        self.total = 0
        self.inactive = 0          # MoE expert parameters not used by one token
        self.linears: list[Linear] = []
        self.shapes: list[tuple[tuple[int, ...], int]] = []
        self.unshaped = 0          # parameters added without their tensors' shapes
        self.buffers: Optional[list[tuple[str, tuple[int, ...], str]]] = None

    def add(self, n: int) -> None:
        self.total += int(n)
        self.unshaped += int(n)

    def tensor(self, *dims: int, count: int = 1) -> None:
        """`count` parameter tensors of shape `dims` (an embedding, a norm's weight…)."""
        n = 1
        for d in dims:
            n *= d
        self.total += count * n
        self.shapes.append((tuple(dims), count))

    def fused_experts(self, shapes: list[tuple[int, ...]], layers: int) -> None:
        """The experts counted by `experts()` held as `layers` × these fused tensors
        (transformers ≥ 5: one gate_up_proj and one down_proj per MoE layer)."""
        for dims in shapes:
            n = 1
            for d in dims:
                n *= d
            self.unshaped -= layers * n
            self.shapes.append((tuple(dims), layers))

    def linear(self, name: str, i: int, o: int, *, count: int = 1, bias: bool = False,
               in_block: bool = True, conv1d: bool = False) -> None:
        """`conv1d`: transformers' Conv1D (GPT-2), whose weight is stored (in, out)."""
        self.total += count * (i * o + (o if bias else 0))
        self.linears.append(Linear(name, i, o, count, bias, in_block))
        self.shapes.append(((i, o) if conv1d else (o, i), count))
        if bias:
            self.shapes.append(((o,), count))

    def experts(self, name: str, i: int, o: int, *, layers: int, experts: int, active: int,
                bias: bool = False) -> None:
        per = i * o + (o if bias else 0)
        self.total += layers * experts * per
        self.unshaped += layers * experts * per
        self.inactive += layers * (experts - active) * per
        self.linears.append(Linear(name, i, o, layers * experts, bias, True, expert=True))


def _get(cfg: dict, *names: str, default: Any = None) -> Any:
    """The first of `names` present with a non-None value."""
    for n in names:
        v = cfg.get(n)
        if v is not None:
            return v
    return default


def _int(cfg: dict, *names: str, default: Any = None) -> int:
    v = _get(cfg, *names, default=default)
    if v is None:
        raise KeyError(f"config lacks {names[0]}")
    return int(v)


def _bool(cfg: dict, name: str, default: bool) -> bool:
    v = cfg.get(name)
    return default if v is None else bool(v)


def _num_labels(cfg: dict, num_labels: Optional[int]) -> int:
    if num_labels is not None:
        return int(num_labels)
    if cfg.get("num_labels") is not None:
        return int(cfg["num_labels"])
    if isinstance(cfg.get("id2label"), dict):
        return len(cfg["id2label"])
    return 2


def _finish(c: _Count, **kw: Any) -> ModelShape:
    return ModelShape(params=c.total, active_params=c.total - c.inactive, linears=c.linears,
                      param_shapes=None if c.unshaped else c.shapes, buffers=c.buffers, **kw)


# --------------------------------------------------------------------------- llama family

#: Config-class defaults of the llama-like decoders (RMSNorm, gated MLP, RoPE).
_LLAMA_DEFAULTS: dict[str, dict[str, Any]] = {
    "llama": dict(vocab_size=32000, hidden_size=4096, intermediate_size=11008,
                  num_hidden_layers=32, num_attention_heads=32, tie_word_embeddings=False),
    "mistral": dict(vocab_size=32000, hidden_size=4096, intermediate_size=14336,
                    num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=8,
                    tie_word_embeddings=False),
    "mixtral": dict(vocab_size=32000, hidden_size=4096, intermediate_size=14336,
                    num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=8,
                    num_local_experts=8, num_experts_per_tok=2, tie_word_embeddings=False),
    "qwen2": dict(vocab_size=151936, hidden_size=4096, intermediate_size=22016,
                  num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=32,
                  tie_word_embeddings=False),
    "qwen3": dict(vocab_size=151936, hidden_size=4096, intermediate_size=22016,
                  num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=32,
                  head_dim=128, tie_word_embeddings=False),
    "gemma": dict(vocab_size=256000, hidden_size=3072, intermediate_size=24576,
                  num_hidden_layers=28, num_attention_heads=16, num_key_value_heads=16,
                  head_dim=256, tie_word_embeddings=True),
    "gemma2": dict(vocab_size=256000, hidden_size=2304, intermediate_size=9216,
                   num_hidden_layers=26, num_attention_heads=8, num_key_value_heads=4,
                   head_dim=256, tie_word_embeddings=True),
    "gemma3_text": dict(vocab_size=262208, hidden_size=2304, intermediate_size=9216,
                        num_hidden_layers=26, num_attention_heads=8, num_key_value_heads=4,
                        head_dim=256, tie_word_embeddings=True),
    "olmo2": dict(vocab_size=50304, hidden_size=4096, intermediate_size=11008,
                  num_hidden_layers=32, num_attention_heads=32, tie_word_embeddings=False),
    "phi3": dict(vocab_size=32064, hidden_size=3072, intermediate_size=8192,
                 num_hidden_layers=32, num_attention_heads=32, tie_word_embeddings=False),
    "qwen2_moe": dict(vocab_size=151936, hidden_size=2048, intermediate_size=5632,
                      num_hidden_layers=24, num_attention_heads=16, num_key_value_heads=16,
                      num_experts=60, num_experts_per_tok=4, moe_intermediate_size=1408,
                      shared_expert_intermediate_size=5632, decoder_sparse_step=1,
                      norm_topk_prob=False, tie_word_embeddings=False),
    "qwen3_moe": dict(vocab_size=151936, hidden_size=2048, intermediate_size=6144,
                      num_hidden_layers=24, num_attention_heads=32, num_key_value_heads=4,
                      num_experts=128, num_experts_per_tok=8,
                      moe_intermediate_size=768, decoder_sparse_step=1,
                      norm_topk_prob=False, tie_word_embeddings=False),
}

#: the mixture-of-experts architectures among the llama-like decoders
_MOE_ARCHS = ("mixtral", "qwen2_moe", "qwen3_moe")


def _moe_layer_count(d: dict, L: int) -> int:
    """Layers with a sparse MoE MLP (Qwen-MoE: every `decoder_sparse_step`-th layer not in
    `mlp_only_layers`; Mixtral: all)."""
    step = _int(d, "decoder_sparse_step", default=1)
    only = d.get("mlp_only_layers") or []
    if not isinstance(only, list):
        only = []
    return sum(1 for i in range(L) if i not in only and step > 0 and (i + 1) % step == 0)


def _llama_like(arch: str, cfg: dict, head: str, num_labels: Optional[int]) -> ModelShape:
    d = {**_LLAMA_DEFAULTS[arch], **{k: v for k, v in cfg.items() if v is not None}}
    V, h = _int(d, "vocab_size"), _int(d, "hidden_size")
    L, nh = _int(d, "num_hidden_layers"), _int(d, "num_attention_heads")
    nkv = _int(d, "num_key_value_heads", default=nh)
    hd = _int(d, "head_dim", default=h // nh)
    inter = _int(d, "intermediate_size")
    tied = _bool(d, "tie_word_embeddings", False)
    qkv_bias = arch in ("qwen2", "qwen2_moe") or _bool(d, "attention_bias", False)
    o_bias = arch not in ("qwen2", "qwen2_moe") and _bool(d, "attention_bias", False)
    mlp_bias = _bool(d, "mlp_bias", False) if arch == "llama" else False

    c = _Count()
    c.tensor(V, h)                                           # embed_tokens
    if arch == "phi3":                                       # fused qkv and gate_up
        c.linear("qkv_proj", h, (nh + 2 * nkv) * hd, count=L)
        c.linear("o_proj", nh * hd, h, count=L)
    else:
        c.linear("q_proj", h, nh * hd, count=L, bias=qkv_bias)
        c.linear("k_proj", h, nkv * hd, count=L, bias=qkv_bias)
        c.linear("v_proj", h, nkv * hd, count=L, bias=qkv_bias)
        c.linear("o_proj", nh * hd, h, count=L, bias=o_bias)
    if arch in ("qwen3", "qwen3_moe", "gemma3_text"):
        c.tensor(hd, count=2 * L)                            # q_norm, k_norm
    elif arch == "olmo2":
        c.tensor(nh * hd, count=L)                           # q_norm over all heads
        c.tensor(nkv * hd, count=L)                          # k_norm
    experts = active = fe = fs = moe_layers = 0
    if arch in _MOE_ARCHS:
        experts = _int(d, "num_local_experts", "num_experts")
        active = _int(d, "num_experts_per_tok")
        fe = _int(d, "moe_intermediate_size", default=inter)
        fs = _int(d, "shared_expert_intermediate_size", default=0) if arch == "qwen2_moe" \
            else 0
        moe_layers = _moe_layer_count(d, L) if arch != "mixtral" else L
        Lm = moe_layers
        c.tensor(experts, h, count=Lm)                       # router (a plain Parameter)
        # transformers >= 5 fuses each layer's experts into gate_up_proj and down_proj
        # tensors; the leaf names are those of the separate linears of earlier versions
        gate, up, down = (("w1", "w3", "w2") if arch == "mixtral" else
                          ("gate_proj", "up_proj", "down_proj"))
        c.experts(gate, h, fe, layers=Lm, experts=experts, active=active)
        c.experts(up, h, fe, layers=Lm, experts=experts, active=active)
        c.experts(down, fe, h, layers=Lm, experts=experts, active=active)
        c.fused_experts([(experts, 2 * fe, h), (experts, h, fe)], Lm)
        if fs:                                               # shared expert and its gate
            c.linear("gate_proj", h, fs, count=Lm)
            c.linear("up_proj", h, fs, count=Lm)
            c.linear("down_proj", fs, h, count=Lm)
            c.linear("shared_expert_gate", h, 1, count=Lm)
        if L > Lm:                                           # dense layers
            c.linear("gate_proj", h, inter, count=L - Lm)
            c.linear("up_proj", h, inter, count=L - Lm)
            c.linear("down_proj", inter, h, count=L - Lm)
    elif arch == "phi3":
        c.linear("gate_up_proj", h, 2 * inter, count=L)
        c.linear("down_proj", inter, h, count=L)
    else:
        c.linear("gate_proj", h, inter, count=L, bias=mlp_bias)
        c.linear("up_proj", h, inter, count=L, bias=mlp_bias)
        c.linear("down_proj", inter, h, count=L, bias=mlp_bias)
    norms = 4 if arch in ("gemma2", "gemma3_text") else 2
    c.tensor(h, count=L * norms + 1)                         # per-layer norms, final norm
    # the rotary embedding registers inv_freq and original_inv_freq (the rotated
    # dimensions / 2 each), computed in fp32
    # (gemma3's text model has one for its full and one for its sliding-window layers);
    # gemma's models also register embed_scale, a 0-dim fp32 tensor
    rot = int(hd * float(d.get("partial_rotary_factor") or 1.0)) // 2
    kinds = ("full_attention_", "sliding_attention_") if arch == "gemma3_text" else ("",)
    c.buffers = [(f"rotary_emb.{k}{n}", (rot,), "float") for k in kinds
                 for n in ("inv_freq", "original_inv_freq")]
    if arch in ("gemma", "gemma2", "gemma3_text"):
        c.buffers.append(("embed_scale", (), "float"))
    _decoder_head(c, head, V, h, tied, num_labels, d, bias=False)
    return _finish(c, layers=L, hidden=h, heads=nh, kv_heads=nkv, ffn_hidden=inter, vocab=V,
                   family="llama", arch=arch, head_dim=hd, tied=tied, head=head,
                   experts=experts, experts_per_token=active, expert_ffn=fe,
                   shared_expert_ffn=fs, moe_layers=moe_layers,
                   norm_topk=arch == "mixtral" or _bool(d, "norm_topk_prob", False),
                   weights_f32=arch == "mixtral")


def _decoder_head(c: _Count, head: str, V: int, h: int, tied: bool,
                  num_labels: Optional[int], cfg: dict, *, bias: bool,
                  name: str = "lm_head") -> None:
    if head == "causal_lm":
        if not tied:
            c.linear(name, h, V, bias=bias, in_block=False)
        elif bias:
            c.add(V)
    elif head == "seq_cls":
        c.linear("score", h, _num_labels(cfg, num_labels), in_block=False)
    elif head == "token_cls":
        n = _num_labels(cfg, num_labels)
        c.linear("score", h, n, bias=True, in_block=False)
    elif head != "base":
        raise UnsupportedArchitecture(f"head {head!r} not modelled for this architecture")


# --------------------------------------------------------------------------- gemma 3 (vision)

#: SiglipVisionConfig's own defaults (a Gemma 3 config without `vision_config` builds these).
_SIGLIP_DEFAULTS = dict(hidden_size=768, intermediate_size=3072, num_hidden_layers=12,
                        num_attention_heads=12, num_channels=3, image_size=224, patch_size=16,
                        vision_use_head=True)


def _siglip_vision(c: _Count, cfg: dict) -> int:
    """Adds a SigLIP vision tower (patch and position embeddings, pre-norm encoder blocks
    with biased linears, the post-LayerNorm and, with `vision_use_head`, the attention
    pooling head); returns its hidden size."""
    d = {**_SIGLIP_DEFAULTS, **{k: v for k, v in cfg.items() if v is not None}}
    h, inter = _int(d, "hidden_size"), _int(d, "intermediate_size")
    L, ch = _int(d, "num_hidden_layers"), _int(d, "num_channels")
    patch, image = _int(d, "patch_size"), _int(d, "image_size")
    c.add(ch * patch * patch * h + h)                        # patch_embedding (a Conv2d)
    c.add((image // patch) ** 2 * h)                         # position_embedding
    for name in ("q_proj", "k_proj", "v_proj", "out_proj"):
        c.linear(name, h, h, count=L, bias=True)
    c.linear("fc1", h, inter, count=L, bias=True)
    c.linear("fc2", inter, h, count=L, bias=True)
    c.add(L * 2 * 2 * h + 2 * h)                             # layer_norm1/2 per block, post
    if _bool(d, "vision_use_head", True):                    # attention pooling head
        c.add(h + 3 * h * h + 3 * h + 2 * h)                 # probe, in_proj, its bias, LN
        c.linear("out_proj", h, h, bias=True, in_block=False)
        c.linear("fc1", h, inter, bias=True, in_block=False)
        c.linear("fc2", inter, h, bias=True, in_block=False)
    return h


def _gemma3(cfg: dict, head: str, num_labels: Optional[int]) -> ModelShape:
    """Gemma 3 as released at 4B and above: the `gemma3_text` decoder (`text_config`), a
    SigLIP vision tower (`vision_config`) and the projector between them (one weight matrix
    and an RMSNorm). The causal-LM class is the image-text one (`…ForConditionalGeneration`)."""
    text = _llama_like("gemma3_text", dict(cfg.get("text_config") or {}), "base", None)
    c = _Count()
    c.total, c.linears = text.params, list(text.linears)
    vh = _siglip_vision(c, dict(cfg.get("vision_config") or {}))
    c.add(vh * text.hidden + vh)                             # mm_input_projection, soft_emb_norm
    tied = _bool(cfg.get("text_config") or {}, "tie_word_embeddings", True)
    if head in ("causal_lm", "seq2seq_lm"):
        head = "causal_lm"
    _decoder_head(c, head, text.vocab, text.hidden, tied, num_labels, cfg, bias=False)
    return _finish(c, layers=text.layers, hidden=text.hidden, heads=text.heads,
                   kv_heads=text.kv_heads, ffn_hidden=text.ffn_hidden, vocab=text.vocab,
                   family="llama", arch="gemma3", head_dim=text.head_dim, tied=tied, head=head)


# --------------------------------------------------------------------------- phi (1, 1.5, 2)

def _phi(cfg: dict, head: str, num_labels: Optional[int]) -> ModelShape:
    V = _int(cfg, "vocab_size", default=51200)
    h = _int(cfg, "hidden_size", default=2048)
    inter = _int(cfg, "intermediate_size", default=8192)
    L = _int(cfg, "num_hidden_layers", default=24)
    nh = _int(cfg, "num_attention_heads", default=32)
    nkv = _int(cfg, "num_key_value_heads", default=nh)
    hd = h // nh
    tied = _bool(cfg, "tie_word_embeddings", False)
    c = _Count()
    c.add(V * h)
    c.linear("q_proj", h, nh * hd, count=L, bias=True)
    c.linear("k_proj", h, nkv * hd, count=L, bias=True)
    c.linear("v_proj", h, nkv * hd, count=L, bias=True)
    c.linear("dense", nh * hd, h, count=L, bias=True)
    if _bool(cfg, "qk_layernorm", False):
        c.add(L * 2 * 2 * hd)
    c.linear("fc1", h, inter, count=L, bias=True)
    c.linear("fc2", inter, h, count=L, bias=True)
    c.add(L * 2 * h + 2 * h)                       # input_layernorm per layer, final_layernorm
    if head == "causal_lm":
        if not tied:
            c.linear("lm_head", h, V, bias=True, in_block=False)
        else:
            c.add(V)
    else:
        _decoder_head(c, head, V, h, tied, num_labels, cfg, bias=False)
    return _finish(c, layers=L, hidden=h, heads=nh, kv_heads=nkv, ffn_hidden=inter, vocab=V,
                   family="phi", arch="phi", head_dim=hd, tied=tied, head=head)


# --------------------------------------------------------------------------- gpt2

def _gpt2(cfg: dict, head: str, num_labels: Optional[int]) -> ModelShape:
    V = _int(cfg, "vocab_size", default=50257)
    P = _int(cfg, "n_positions", "max_position_embeddings", default=1024)
    h = _int(cfg, "n_embd", "hidden_size", default=768)
    L = _int(cfg, "n_layer", "num_hidden_layers", default=12)
    nh = _int(cfg, "n_head", "num_attention_heads", default=12)
    inter = _int(cfg, "n_inner", default=4 * h)
    tied = _bool(cfg, "tie_word_embeddings", True)
    c = _Count()
    c.tensor(V, h)                                           # wte
    c.tensor(P, h)                                           # wpe
    c.linear("c_attn", h, 3 * h, count=L, bias=True, conv1d=True)
    c.linear("c_proj", h, h, count=L, bias=True, conv1d=True)         # attn.c_proj
    c.linear("c_fc", h, inter, count=L, bias=True, conv1d=True)
    c.linear("c_proj", inter, h, count=L, bias=True, conv1d=True)     # mlp.c_proj
    c.tensor(h, count=L * 4 + 2)                             # ln_1, ln_2, ln_f
    c.buffers = []                                           # transformers ≥ 5: no causal-mask buffer
    _decoder_head(c, head, V, h, tied, num_labels, cfg, bias=False)
    return _finish(c, layers=L, hidden=h, heads=nh, kv_heads=nh, ffn_hidden=inter, vocab=V,
                   family="gpt2", arch="gpt2", head_dim=h // nh, tied=tied, head=head)


# --------------------------------------------------------------------------- gpt-neox

def _gpt_neox(cfg: dict, head: str, num_labels: Optional[int]) -> ModelShape:
    V = _int(cfg, "vocab_size", default=50432)
    h = _int(cfg, "hidden_size", default=6144)
    L = _int(cfg, "num_hidden_layers", default=44)
    nh = _int(cfg, "num_attention_heads", default=64)
    inter = _int(cfg, "intermediate_size", default=24576)
    bias = _bool(cfg, "attention_bias", True)
    tied = _bool(cfg, "tie_word_embeddings", False)
    c = _Count()
    c.add(V * h)                                             # embed_in
    c.linear("query_key_value", h, 3 * h, count=L, bias=bias)
    c.linear("dense", h, h, count=L, bias=bias)
    c.linear("dense_h_to_4h", h, inter, count=L, bias=True)
    c.linear("dense_4h_to_h", inter, h, count=L, bias=True)
    c.add(L * 4 * h + 2 * h)                                 # two LayerNorms per layer, final
    _decoder_head(c, head, V, h, tied, num_labels, cfg, bias=False, name="embed_out")
    return _finish(c, layers=L, hidden=h, heads=nh, kv_heads=nh, ffn_hidden=inter, vocab=V,
                   family="gpt_neox", arch="gpt_neox", head_dim=h // nh, tied=tied, head=head)


# --------------------------------------------------------------------------- opt

def _opt(cfg: dict, head: str, num_labels: Optional[int]) -> ModelShape:
    V = _int(cfg, "vocab_size", default=50272)
    h = _int(cfg, "hidden_size", default=768)
    L = _int(cfg, "num_hidden_layers", default=12)
    nh = _int(cfg, "num_attention_heads", default=12)
    F = _int(cfg, "ffn_dim", default=3072)
    P = _int(cfg, "max_position_embeddings", default=2048)
    wp = _int(cfg, "word_embed_proj_dim", default=h)
    bias = _bool(cfg, "enable_bias", True)
    affine = _bool(cfg, "layer_norm_elementwise_affine", True)
    before = _bool(cfg, "do_layer_norm_before", True)
    final_ln = before and not _bool(cfg, "_remove_final_layer_norm", False)
    tied = _bool(cfg, "tie_word_embeddings", True)
    ln = 2 * h if affine else 0
    c = _Count()
    c.add(V * wp + (P + 2) * h)                              # tokens, learned positions (+2)
    if wp != h:
        c.linear("project_in", wp, h, in_block=False)
        c.linear("project_out", h, wp, in_block=False)
    for name in ("k_proj", "v_proj", "q_proj", "out_proj"):
        c.linear(name, h, h, count=L, bias=bias)
    c.linear("fc1", h, F, count=L, bias=bias)
    c.linear("fc2", F, h, count=L, bias=bias)
    c.add(L * 2 * ln + (ln if final_ln else 0))
    _decoder_head(c, head, V, wp, tied, num_labels, cfg, bias=False)
    return _finish(c, layers=L, hidden=h, heads=nh, kv_heads=nh, ffn_hidden=F, vocab=V,
                   family="opt", arch="opt", head_dim=h // nh, tied=tied, head=head)


# --------------------------------------------------------------------------- falcon

def _falcon(cfg: dict, head: str, num_labels: Optional[int]) -> ModelShape:
    V = _int(cfg, "vocab_size", default=65024)
    h = _int(cfg, "hidden_size", "n_embed", default=4544)
    L = _int(cfg, "num_hidden_layers", "n_layer", default=32)
    nh = _int(cfg, "num_attention_heads", "n_head", default=71)
    new = _bool(cfg, "new_decoder_architecture", False)
    mq = _bool(cfg, "multi_query", True)
    nkv_cfg = _int(cfg, "num_kv_heads", "n_head_kv", default=nh)
    parallel = _bool(cfg, "parallel_attn", True)
    bias = _bool(cfg, "bias", False)
    F = _int(cfg, "ffn_hidden_size", default=4 * h)
    n_ln = cfg.get("num_ln_in_parallel_attn")
    if n_ln is None and new:
        n_ln = 2
    tied = _bool(cfg, "tie_word_embeddings", True)
    hd = h // nh
    if new:
        qkv, nkv = (2 * nkv_cfg + nh) * hd, nkv_cfg
    elif mq:
        qkv, nkv = h + 2 * hd, 1
    else:
        qkv, nkv = 3 * h, nh
    c = _Count()
    c.add(V * h)
    c.linear("query_key_value", h, qkv, count=L, bias=bias)
    c.linear("dense", h, h, count=L, bias=bias)
    c.linear("dense_h_to_4h", h, F, count=L, bias=bias)
    c.linear("dense_4h_to_h", F, h, count=L, bias=bias)
    norms = 2 if (not parallel or n_ln == 2) else 1
    c.add(L * norms * 2 * h + 2 * h)
    _decoder_head(c, head, V, h, tied, num_labels, cfg, bias=False)
    return _finish(c, layers=L, hidden=h, heads=nh, kv_heads=nkv, ffn_hidden=F, vocab=V,
                   family="falcon", arch="falcon", head_dim=hd, tied=tied, head=head)


# --------------------------------------------------------------------------- bloom

def _bloom(cfg: dict, head: str, num_labels: Optional[int]) -> ModelShape:
    V = _int(cfg, "vocab_size", default=250880)
    h = _int(cfg, "hidden_size", "n_embed", default=64)
    L = _int(cfg, "n_layer", "num_hidden_layers", default=2)
    nh = _int(cfg, "n_head", "num_attention_heads", default=8)
    tied = _bool(cfg, "tie_word_embeddings", True)
    c = _Count()
    c.add(V * h + 2 * h)                                     # embeddings + their LayerNorm
    c.linear("query_key_value", h, 3 * h, count=L, bias=True)
    c.linear("dense", h, h, count=L, bias=True)
    c.linear("dense_h_to_4h", h, 4 * h, count=L, bias=True)
    c.linear("dense_4h_to_h", 4 * h, h, count=L, bias=True)
    c.add(L * 4 * h + 2 * h)
    _decoder_head(c, head, V, h, tied, num_labels, cfg, bias=False)
    return _finish(c, layers=L, hidden=h, heads=nh, kv_heads=nh, ffn_hidden=4 * h, vocab=V,
                   family="bloom", arch="bloom", head_dim=h // nh, tied=tied, head=head)


# --------------------------------------------------------------------------- bert / roberta

def _bert(arch: str, cfg: dict, head: str, num_labels: Optional[int]) -> ModelShape:
    V = _int(cfg, "vocab_size", default=50265 if arch == "roberta" else 30522)
    h = _int(cfg, "hidden_size", default=768)
    L = _int(cfg, "num_hidden_layers", default=12)
    nh = _int(cfg, "num_attention_heads", default=12)
    inter = _int(cfg, "intermediate_size", default=3072)
    P = _int(cfg, "max_position_embeddings", default=512)
    T = _int(cfg, "type_vocab_size", default=2)
    c = _Count()
    c.tensor(V, h)                                           # word_embeddings
    c.tensor(P, h)                                           # position_embeddings
    c.tensor(T, h)                                           # token_type_embeddings
    c.tensor(h, count=2)                                     # embeddings.LayerNorm
    # the embeddings register position_ids and token_type_ids, int64, (1, max positions)
    c.buffers = [("position_ids", (1, P), "int64"), ("token_type_ids", (1, P), "int64")]
    for name in ("query", "key", "value"):
        c.linear(name, h, h, count=L, bias=True)
    c.linear("dense", h, h, count=L, bias=True)              # attention.output.dense
    c.linear("dense", h, inter, count=L, bias=True)          # intermediate.dense
    c.linear("dense", inter, h, count=L, bias=True)          # output.dense
    c.tensor(h, count=L * 4)                                 # two LayerNorms per layer
    if head in ("base", "seq_cls") and arch == "bert":
        c.linear("dense", h, h, bias=True, in_block=False)   # pooler
    if head == "base" and arch == "roberta":
        c.linear("dense", h, h, bias=True, in_block=False)   # pooler (add_pooling_layer)
    if head == "masked_lm":
        c.linear("dense", h, h, bias=True, in_block=False)   # transform / lm_head.dense
        c.tensor(h, count=2)                                 # transform.LayerNorm
        c.tensor(V)                                          # decoder bias (tied weight)
        if not _bool(cfg, "tie_word_embeddings", True):
            c.linear("decoder", h, V, in_block=False)
    elif head == "seq_cls":
        n = _num_labels(cfg, num_labels)
        if arch == "roberta":                                # classifier.dense + out_proj
            c.linear("dense", h, h, bias=True, in_block=False)
            c.linear("out_proj", h, n, bias=True, in_block=False)
        else:
            c.linear("classifier", h, n, bias=True, in_block=False)
    elif head == "token_cls":
        c.linear("classifier", h, _num_labels(cfg, num_labels), bias=True, in_block=False)
    elif head != "base":
        raise UnsupportedArchitecture(f"head {head!r} not modelled for {arch}")
    return _finish(c, layers=L, hidden=h, heads=nh, kv_heads=nh, ffn_hidden=inter, vocab=V,
                   family="bert", arch=arch, head_dim=h // nh, tied=True, head=head)


# --------------------------------------------------------------------------- t5

def _t5(cfg: dict, head: str, num_labels: Optional[int]) -> ModelShape:
    V = _int(cfg, "vocab_size", default=32128)
    d = _int(cfg, "d_model", default=512)
    dkv = _int(cfg, "d_kv", default=64)
    dff = _int(cfg, "d_ff", default=2048)
    Le = _int(cfg, "num_layers", default=6)
    Ld = _int(cfg, "num_decoder_layers", default=Le)
    nh = _int(cfg, "num_heads", default=8)
    buckets = _int(cfg, "relative_attention_num_buckets", default=32)
    gated = str(cfg.get("feed_forward_proj") or "relu").startswith("gated-")
    # transformers >= 5 always ties T5's lm_head to the shared embedding (T5Config forces
    # tie_word_embeddings=True; a False in config.json only switches off output scaling).
    # Under transformers 4, T5 v1.1 / Flan-T5 checkpoints carried an untied head (+V·d).
    tied = True
    inner = nh * dkv
    c = _Count()
    c.add(V * d)                                             # shared embedding
    for stack, L, attn in (("encoder", Le, 1), ("decoder", Ld, 2)):
        for name in ("q", "k", "v"):
            c.linear(name, d, inner, count=L * attn)
        c.linear("o", inner, d, count=L * attn)
        c.add(buckets * nh)                                  # relative bias, first block
        if gated:
            c.linear("wi_0", d, dff, count=L)
            c.linear("wi_1", d, dff, count=L)
        else:
            c.linear("wi", d, dff, count=L)
        c.linear("wo", dff, d, count=L)
        c.add(L * (attn + 1) * d + d)                        # RMS-style norms, final norm
    if head in ("seq2seq_lm", "causal_lm"):
        if not tied:
            c.linear("lm_head", d, V, in_block=False)
        head = "seq2seq_lm"
    elif head != "base":
        raise UnsupportedArchitecture(f"head {head!r} not modelled for t5")
    return _finish(c, layers=Le + Ld, hidden=d, heads=nh, kv_heads=nh, ffn_hidden=dff,
                   vocab=V, family="t5", arch="t5", head_dim=dkv, tied=tied, head=head)


# --------------------------------------------------------------------------- megatron

def _megatron(cfg: dict, head: str, num_labels: Optional[int]) -> ModelShape:
    """Megatron-LM GPT models from its command-line arguments (underscored names:
    num_layers, hidden_size, num_attention_heads, ffn_hidden_size, num_query_groups,
    group_query_attention, swiglu, normalization, disable_bias_linear, add_qkv_bias,
    position_embedding_type, max_position_embeddings, seq_length,
    untie_embeddings_and_output_weights, num_experts, moe_router_topk, vocab_size or
    padded_vocab_size, make_vocab_size_divisible_by, tensor_model_parallel_size)."""
    L = _int(cfg, "num_layers", "num_hidden_layers")
    h = _int(cfg, "hidden_size")
    nh = _int(cfg, "num_attention_heads")
    hd = _int(cfg, "kv_channels", default=h // nh)
    gqa = _bool(cfg, "group_query_attention", False)
    ng = _int(cfg, "num_query_groups", default=nh) if gqa else nh
    swiglu = _bool(cfg, "swiglu", False)
    F = cfg.get("ffn_hidden_size")
    if F is None:
        F = int((4 * h * 2 / 3) / 64) * 64 if swiglu else 4 * h
    F = int(F)
    rms = str(cfg.get("normalization") or "LayerNorm").lower() == "rmsnorm"
    bias = not _bool(cfg, "disable_bias_linear", False)
    qkv_bias = bias or _bool(cfg, "add_qkv_bias", False)
    pos = str(cfg.get("position_embedding_type") or "learned_absolute")
    P = _int(cfg, "max_position_embeddings", "seq_length", default=0)
    untied = _bool(cfg, "untie_embeddings_and_output_weights", False)
    V = cfg.get("padded_vocab_size")
    if V is None:
        raw = _int(cfg, "vocab_size")
        mult = _int(cfg, "make_vocab_size_divisible_by", default=128) * \
            _int(cfg, "tensor_model_parallel_size", default=1)
        V = -(-raw // mult) * mult
    V = int(V)
    E = _int(cfg, "num_experts", default=0)
    topk = _int(cfg, "moe_router_topk", default=2) if E else 0
    norm = (1 if rms else 2) * h
    c = _Count()
    c.add(V * h)
    if pos == "learned_absolute":
        c.add(P * h)
    c.linear("linear_qkv", h, (nh + 2 * ng) * hd, count=L, bias=qkv_bias)
    c.linear("linear_proj", nh * hd, h, count=L, bias=bias)
    up = 2 * F if swiglu else F
    if E:
        c.add(L * h * E)                                     # router
        c.experts("linear_fc1", h, up, layers=L, experts=E, active=topk, bias=bias)
        c.experts("linear_fc2", F, h, layers=L, experts=E, active=topk, bias=bias)
    else:
        c.linear("linear_fc1", h, up, count=L, bias=bias)
        c.linear("linear_fc2", F, h, count=L, bias=bias)
    c.add(L * 2 * norm + norm)
    if untied:
        c.linear("output_layer", h, V, in_block=False)
    return _finish(c, layers=L, hidden=h, heads=nh, kv_heads=ng, ffn_hidden=F, vocab=V,
                   family="llama" if swiglu else "gpt2", arch="megatron", head_dim=hd,
                   tied=not untied, head="causal_lm", experts=E, experts_per_token=topk,
                   expert_ffn=F if E else 0, moe_layers=L if E else 0)


# --------------------------------------------------------------------------- deepseek

#: DeepseekV2Config / DeepseekV3Config defaults (transformers 5)
_DEEPSEEK_DEFAULTS: dict[str, dict[str, Any]] = {
    "deepseek_v2": dict(vocab_size=102400, hidden_size=4096, intermediate_size=11008,
                        num_hidden_layers=32, num_attention_heads=32, first_k_dense_replace=0,
                        kv_lora_rank=512, q_lora_rank=1536, n_routed_experts=64,
                        n_shared_experts=2, qk_nope_head_dim=128, qk_rope_head_dim=64,
                        v_head_dim=128, moe_intermediate_size=1407, topk_method="greedy",
                        tie_word_embeddings=False),
    "deepseek_v3": dict(vocab_size=129280, hidden_size=7168, intermediate_size=18432,
                        num_hidden_layers=61, num_attention_heads=128,
                        first_k_dense_replace=3, kv_lora_rank=512, q_lora_rank=1536,
                        n_routed_experts=256, n_shared_experts=1, qk_nope_head_dim=128,
                        qk_rope_head_dim=64, v_head_dim=128, moe_intermediate_size=2048,
                        num_experts_per_tok=8, n_group=8, topk_group=4, norm_topk_prob=True,
                        tie_word_embeddings=False),
}


def _deepseek(arch: str, cfg: dict, head: str, num_labels: Optional[int]) -> ModelShape:
    """DeepSeek-V2 / V3 as transformers builds them: multi-head latent attention
    (`physics.mla`), dense SwiGLU MLPs in the first `first_k_dense_replace` layers, then a
    router (fp32 weight E·h), E routed experts fused as gate_up (E·2fe·h) and down (E·h·fe)
    and `n_shared_experts` shared experts as one MLP fs = n_shared·fe wide. V3's
    multi-token-prediction layers (`num_nextn_predict_layers`) are not built: transformers
    drops their weights on load. (`moe_layer_freq` is not read by transformers either.)"""
    d = {**_DEEPSEEK_DEFAULTS[arch], **{k: v for k, v in cfg.items() if v is not None}}
    V, h = _int(d, "vocab_size"), _int(d, "hidden_size")
    L, nh = _int(d, "num_hidden_layers"), _int(d, "num_attention_heads")
    inter = _int(d, "intermediate_size")
    # q_lora_rank: null (DeepSeek-V2-Lite) means a plain q_proj, not the default latent
    ql = 0 if "q_lora_rank" in cfg and cfg["q_lora_rank"] is None else \
        _int(d, "q_lora_rank", default=0)
    kl, dr = _int(d, "kv_lora_rank"), _int(d, "qk_rope_head_dim")
    dn, dv = _int(d, "qk_nope_head_dim"), _int(d, "v_head_dim")
    E = _int(d, "n_routed_experts", "num_experts", "num_local_experts")
    k = _int(d, "num_experts_per_tok", default=0)
    fe = _int(d, "moe_intermediate_size")
    fs = fe * _int(d, "n_shared_experts", default=0)
    dense = min(L, max(0, _int(d, "first_k_dense_replace", default=0)))
    Lm = L - dense
    tied = _bool(d, "tie_word_embeddings", False)
    ab = _bool(d, "attention_bias", False)
    mb = _bool(d, "mlp_bias", False) if arch == "deepseek_v2" else False
    qk = dn + dr
    c = _Count()
    c.add(V * h)                                             # embed_tokens
    if ql:
        c.linear("q_a_proj", h, ql, count=L, bias=ab)
        c.add(L * ql)                                        # q_a_layernorm
        c.linear("q_b_proj", ql, nh * qk, count=L)
    else:
        c.linear("q_proj", h, nh * qk, count=L)
    c.linear("kv_a_proj_with_mqa", h, kl + dr, count=L, bias=ab)
    c.add(L * kl)                                            # kv_a_layernorm
    c.linear("kv_b_proj", kl, nh * (dn + dv), count=L)
    c.linear("o_proj", nh * dv, h, count=L, bias=ab)
    if dense:
        c.linear("gate_proj", h, inter, count=dense, bias=mb)
        c.linear("up_proj", h, inter, count=dense, bias=mb)
        c.linear("down_proj", inter, h, count=dense, bias=mb)
    if Lm:
        c.add(Lm * h * E)                                    # router weight (fp32)
        active = k if k else E
        c.experts("gate_proj", h, fe, layers=Lm, experts=E, active=active)
        c.experts("up_proj", h, fe, layers=Lm, experts=E, active=active)
        c.experts("down_proj", fe, h, layers=Lm, experts=E, active=active)
        if fs:
            c.linear("gate_proj", h, fs, count=Lm, bias=mb)
            c.linear("up_proj", h, fs, count=Lm, bias=mb)
            c.linear("down_proj", fs, h, count=Lm, bias=mb)
    c.add(L * 2 * h + h)                                     # per-layer norms, final norm
    _decoder_head(c, head, V, h, tied, num_labels, d, bias=False)
    group_mask = arch == "deepseek_v2" and d.get("topk_method") == "group_limited_greedy"
    return _finish(c, layers=L, hidden=h, heads=nh, kv_heads=nh, ffn_hidden=inter, vocab=V,
                   family="llama", arch=arch, head_dim=qk, tied=tied, head=head,
                   experts=E if Lm else 0, experts_per_token=k if Lm else 0,
                   expert_ffn=fe if Lm else 0, shared_expert_ffn=fs if Lm else 0,
                   moe_layers=Lm,
                   norm_topk=arch == "deepseek_v3" and _bool(d, "norm_topk_prob", True),
                   weights_f32=True,
                   latent_attention={"kv_lora_rank": kl, "q_lora_rank": ql,
                                     "qk_nope_head_dim": dn, "qk_rope_head_dim": dr,
                                     "v_head_dim": dv},
                   router_upcast=True, group_mask=group_mask and Lm > 0)


# --------------------------------------------------------------------------- resized vocab

def resized_vocab(vocab: int, multiple: int, added: bool) -> Optional[int]:
    """The vocabulary after `resize_token_embeddings(len(tokenizer), pad_to_multiple_of=M)`:
    the tokenizer's length (the model's `vocab` plus the tokens the script added) rounded
    up to a multiple of M. When tokens are added their number is not known statically, but
    any count from 1 to the gap below the next multiple gives the same size, so the size is
    known for M > 1; for M = 1 it is not (None). With no token added: `vocab` rounded up."""
    m = max(int(multiple), 1)
    if not added:
        return -(-vocab // m) * m
    if m == 1:
        return None
    return -(-(vocab + 1) // m) * m


# --------------------------------------------------------------------------- dispatch

_ALIASES = {
    "gpt-neox": "gpt_neox", "gptneox": "gpt_neox", "neox": "gpt_neox",
    "mt5": "t5", "umt5": None, "refinedweb": "falcon", "refinedwebmodel": "falcon",
    "roberta": "roberta", "xlm-roberta": "roberta", "codellama": "llama",
    "qwen2.5": "qwen2", "tinyllama": "llama", "phi-msft": None,
    "qwen2-moe": "qwen2_moe", "qwen3-moe": "qwen3_moe",
    "deepseek-v2": "deepseek_v2", "deepseek-v3": "deepseek_v3", "deepseekv2": "deepseek_v2",
    "deepseekv3": "deepseek_v3",
    "megatron-lm": "megatron", "megatron_gpt": "megatron", "gpt_megatron": "megatron",
}

#: config class name → architecture (for `LlamaConfig(...)` in scripts).
CONFIG_CLASSES = {
    "LlamaConfig": "llama", "MistralConfig": "mistral", "MixtralConfig": "mixtral",
    "Qwen2Config": "qwen2", "Qwen3Config": "qwen3", "GemmaConfig": "gemma",
    "Qwen2MoeConfig": "qwen2_moe", "Qwen3MoeConfig": "qwen3_moe",
    "Gemma2Config": "gemma2", "Gemma3Config": "gemma3", "Gemma3TextConfig": "gemma3_text",
    "Olmo2Config": "olmo2",
    "PhiConfig": "phi", "Phi3Config": "phi3",
    "GPT2Config": "gpt2", "GPTNeoXConfig": "gpt_neox", "OPTConfig": "opt",
    "FalconConfig": "falcon", "BloomConfig": "bloom", "BertConfig": "bert",
    "RobertaConfig": "roberta", "XLMRobertaConfig": "roberta", "T5Config": "t5",
    "DeepseekV2Config": "deepseek_v2", "DeepseekV3Config": "deepseek_v3",
}

_DEFAULT_HEAD = {"bert": "masked_lm", "roberta": "masked_lm", "t5": "seq2seq_lm"}

_FUNCS: dict[str, Callable[..., ModelShape]] = {
    "phi": _phi, "gpt2": _gpt2, "gpt_neox": _gpt_neox, "opt": _opt, "falcon": _falcon,
    "bloom": _bloom, "t5": _t5, "megatron": _megatron, "gemma3": _gemma3,
    "deepseek_v2": lambda cfg, head, n: _deepseek("deepseek_v2", cfg, head, n),
    "deepseek_v3": lambda cfg, head, n: _deepseek("deepseek_v3", cfg, head, n),
}

ARCHITECTURES = tuple(sorted(set(_LLAMA_DEFAULTS) | set(_FUNCS) | {"bert", "roberta"}))


def normalise_arch(arch: str) -> Optional[str]:
    a = (arch or "").strip().lower()
    a = _ALIASES.get(a, a)
    return a if a in ARCHITECTURES else None


def default_head(arch: str) -> str:
    return _DEFAULT_HEAD.get(arch, "causal_lm")


def count(arch: str, cfg: dict, *, head: Optional[str] = None,
          num_labels: Optional[int] = None) -> ModelShape:
    """The exact parameter count and shape of `arch` built from config fields `cfg`.

    `head` picks the task head (`causal_lm` for decoders, `masked_lm` for BERT/RoBERTa,
    `seq2seq_lm` for T5 by default; `base`, `seq_cls`, `token_cls`).
    Raises `UnsupportedArchitecture` for an architecture without a formula and
    `KeyError` / `ValueError` for a config that lacks a needed field.
    """
    a = normalise_arch(arch)
    if a is None:
        raise UnsupportedArchitecture(f"no parameter formula for model_type {arch!r}")
    head = head or default_head(a)
    if head not in HEADS:
        raise UnsupportedArchitecture(f"unknown head {head!r}")
    cfg = dict(cfg or {})
    if a in _LLAMA_DEFAULTS:
        return _llama_like(a, cfg, head, num_labels)
    if a in ("bert", "roberta"):
        return _bert(a, cfg, head, num_labels)
    return _FUNCS[a](cfg, head, num_labels)


def arch_of_config(cfg: dict) -> Optional[str]:
    """The architecture named by a config.json (`model_type`, else `architectures[0]`)."""
    mt = cfg.get("model_type")
    if isinstance(mt, str) and normalise_arch(mt):
        return normalise_arch(mt)
    for a in cfg.get("architectures") or []:
        low = str(a).lower()
        for prefix, arch in (("llama", "llama"), ("mistral", "mistral"),
                             ("mixtral", "mixtral"), ("qwen3moe", "qwen3_moe"),
                             ("deepseekv3", "deepseek_v3"), ("deepseekv2", "deepseek_v2"),
                             ("qwen2moe", "qwen2_moe"), ("qwen3", "qwen3"), ("qwen2", "qwen2"),
                             ("gemma3forcausallm", "gemma3_text"), ("gemma3", "gemma3"),
                             ("olmo2", "olmo2"),
                             ("gemma2", "gemma2"), ("gemma", "gemma"), ("phi3", "phi3"),
                             ("phi", "phi"), ("gpt2", "gpt2"), ("gptneox", "gpt_neox"),
                             ("opt", "opt"), ("falcon", "falcon"), ("bloom", "bloom"),
                             ("roberta", "roberta"), ("bert", "bert"), ("t5", "t5")):
            if low.startswith(prefix):
                return arch
    return None


def head_of_class(name: Optional[str]) -> Optional[str]:
    """`AutoModelForSequenceClassification` → `seq_cls`; None when the class names no head."""
    if not name:
        return None
    n = name.split(".")[-1]
    for suffix, head in (("ForCausalLM", "causal_lm"), ("ForMaskedLM", "masked_lm"),
                         ("ForConditionalGeneration", "seq2seq_lm"),
                         ("ForSeq2SeqLM", "seq2seq_lm"),
                         ("ForSequenceClassification", "seq_cls"),
                         ("ForTokenClassification", "token_cls")):
        if n.endswith(suffix):
            return head
    if n in ("AutoModel",) or (n.endswith("Model") and not n.endswith("PreTrainedModel")):
        return "base"
    return None


#: the block type each architecture's activations follow: "llama" (RMSNorm, gated SiLU MLP,
#: no biases/dropout) or "gpt2" (LayerNorm, GELU MLP with biases)
_BLOCK = {"llama": "llama", "mistral": "llama", "mixtral": "llama", "qwen2": "llama",
          "qwen2_moe": "llama", "qwen3_moe": "llama", "deepseek_v2": "llama",
          "deepseek_v3": "llama",
          "qwen3": "llama", "gemma": "llama", "gemma2": "llama", "gemma3": "llama",
          "gemma3_text": "llama", "olmo2": "llama", "phi3": "llama",
          "gpt2": "gpt2", "gpt_neox": "gpt2", "opt": "gpt2", "falcon": "gpt2", "bloom": "gpt2",
          "phi": "gpt2", "bert": "gpt2", "roberta": "gpt2", "t5": "gpt2"}


def activation_family(arch: str, cfg: Optional[dict] = None) -> Optional[str]:
    """"llama" or "gpt2": the block type the activation model should use for `arch`."""
    a = normalise_arch(arch)
    if a == "megatron":
        return "llama" if (cfg or {}).get("swiglu") else "gpt2"
    return _BLOCK.get(a or "")
