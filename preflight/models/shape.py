"""The values every parameter formula produces and the accumulator they share.

`ModelShape` (what the rest of preflight needs to know about a model) and `Linear` (one
kind of linear layer: what LoRA targets and bitsandbytes quantises) are the formulas'
results; `ParamCount` adds up a model's parameters tensor by tensor as a family module walks
the module tree transformers builds, and `add_decoder_head` adds the task head a decoder ends
in. The small config readers (`cfg_int`, `cfg_bool`, …) read `config.json` fields the same way
for every family.

Nothing here imports torch or transformers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional


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
    #: the dimensions of each head the rotary embedding rotates (0: all of head_dim)
    rotary_dim: int = 0
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
    #: Llama 4: its layer kinds' counts and the settings its tables read (`physics.llama4`;
    #: empty: not Llama 4)
    llama4_layers: dict[str, int] = field(default_factory=dict)
    #: gpt-oss: attention sinks, a top-k-softmax router and a clamped SwiGLU (its tables in
    #: `physics.activations` and `physics.moe`)
    attention_sinks: bool = False

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


class ParamCount:
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


def cfg_int(cfg: dict, *names: str, default: Any = None) -> int:
    v = _get(cfg, *names, default=default)
    if v is None:
        raise KeyError(f"config lacks {names[0]}")
    return int(v)


def cfg_bool(cfg: dict, name: str, default: bool) -> bool:
    v = cfg.get(name)
    return default if v is None else bool(v)


def cfg_num_labels(cfg: dict, num_labels: Optional[int]) -> int:
    if num_labels is not None:
        return int(num_labels)
    if cfg.get("num_labels") is not None:
        return int(cfg["num_labels"])
    if isinstance(cfg.get("id2label"), dict):
        return len(cfg["id2label"])
    return 2


def finish_shape(c: ParamCount, **kw: Any) -> ModelShape:
    return ModelShape(params=c.total, active_params=c.total - c.inactive, linears=c.linears,
                      param_shapes=None if c.unshaped else c.shapes, buffers=c.buffers, **kw)


@dataclass(frozen=True)
class Head:
    """The task head a decoder ends in: its kind (one of `HEADS`), the vocabulary and the
    hidden size the LM head maps between, whether that head is tied to the input embedding,
    the label count asked for (None: the config's `num_labels` / `id2label`), the config
    read for it, and the LM head's bias and leaf name."""

    kind: str
    vocab: int
    hidden: int
    tied: bool
    num_labels: Optional[int]
    cfg: dict
    bias: bool = False
    name: str = "lm_head"


def add_decoder_head(c: ParamCount, spec: Head) -> None:
    head, V, h, tied = spec.kind, spec.vocab, spec.hidden, spec.tied
    num_labels, cfg, bias, name = spec.num_labels, spec.cfg, spec.bias, spec.name
    if head == "causal_lm":
        if not tied:
            c.linear(name, h, V, bias=bias, in_block=False)
        elif bias:
            c.add(V)
    elif head == "seq_cls":
        c.linear("score", h, cfg_num_labels(cfg, num_labels), in_block=False)
    elif head == "token_cls":
        n = cfg_num_labels(cfg, num_labels)
        c.linear("score", h, n, bias=True, in_block=False)
    elif head != "base":
        raise UnsupportedArchitecture(f"head {head!r} not modelled for this architecture")
