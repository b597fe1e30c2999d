"""Pipeline-parallel stages: what each rank of a 1F1B pipeline holds (docs/ledger.md).

Under the 1F1B schedule (Megatron-LM, DeepSpeed's PipelineModule, torch's
`Schedule1F1B`) stage i of p (0-based) runs p − i forward micro-batches before its first
backward, so it holds the saved activations of

    in_flight(i) = min(p − i, m)          m = micro-batches per step (gradient accumulation)

micro-batches at once: the first stage p, the last one. Layers are split as evenly as
possible, the first L mod p stages taking one more. The first stage also holds the
token embedding table and its output; the last the final norm, the output head (a tied
model keeps a copy of the embedding there, kept in sync by an all-reduce), the logits and
the loss. So the busiest rank is the first stage for deep models with short sequences
and the last one when the logits dominate; each stage is sized and the largest judged.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from preflight.physics.inputs import Inputs
from preflight.units import fmt_int


@dataclass(frozen=True)
class Stage:
    """One pipeline stage: its layers, its micro-batches in flight and its parameters."""

    index: int                       # 0-based
    of: int                          # the pipeline-parallel degree p
    layers: Optional[int]            # transformer layers it holds (None: layers unknown)
    in_flight: int                   # micro-batches whose activations it holds at once
    params: Optional[int] = None     # parameters it holds (None: the even split n / p)
    params_formula: str = ""

    @property
    def first(self) -> bool:
        return self.index == 0

    @property
    def last(self) -> bool:
        return self.index == self.of - 1

    @property
    def holds(self) -> str:
        """What sets this stage apart, in words: 'embeddings', 'output head, logits, loss'."""
        parts = (["embeddings"] if self.first else []) + (
            ["final norm, output head, logits and loss"] if self.last else [])
        return ", ".join(parts) or "transformer layers only"


def stage_layers(layers: int, p: int, i: int) -> int:
    """Layers of stage i when L layers are split over p stages as evenly as possible."""
    return layers // p + (1 if i < layers % p else 0)


def in_flight(p: int, i: int, micro_batches: Optional[int]) -> int:
    """Micro-batches whose activations stage i holds under 1F1B: min(p − i, m); p − i when
    m is not known (the most the schedule can keep)."""
    return p - i if micro_batches is None else max(1, min(p - i, micro_batches))


def _params_per_stage(x: Inputs, i: int, layers_i: int) -> tuple[Optional[int], str]:
    """Parameters on stage i: its share of the blocks, plus the V·h embedding table on the
    first stage and a V·h output head on the last.

    The blocks are n − V·h (the model with one V·h table): exact for a tied model, whose
    last stage keeps a copy of the embedding as its head, and an upper bound by V·h / p for
    an untied one (n − 2·V·h) — never below the true share. Only a full fine-tune of a
    model with known shapes is placed; LoRA and quantised bases keep the even split."""
    n, V, h, L = x.params, x.vocab, x.hidden, x.layers
    if None in (n, V, h, L) or not L or x.lora is not None or x.trainable != n \
            or x.param_dtype in ("int8", "int4"):
        return None, ""
    table = V * h
    blocks = n - table
    if blocks <= 0:
        return None, ""
    share = -(-blocks * layers_i // L)
    extra = [f"{fmt_int(V)} × {fmt_int(h)} embedding"] if i == 0 else []
    extra += [f"{fmt_int(V)} × {fmt_int(h)} output head"] if i == x.pp - 1 else []
    total = share + table * len(extra)
    formula = f"⌈({fmt_int(n)} − {fmt_int(V)} × {fmt_int(h)}) × {layers_i}/{L}⌉ blocks" + "".join(
        f" + {e}" for e in extra)
    return total, formula


def stages(x: Inputs) -> list[Stage]:
    """The pipeline's stages (one, the whole model, without pipeline parallelism)."""
    p = max(1, x.pp)
    m = None if "grad_accum" in x.assumed else x.grad_accum
    out = []
    for i in range(p):
        li = stage_layers(x.layers, p, i) if x.layers else None
        params, formula = _params_per_stage(x, i, li) if p > 1 and li is not None else (None, "")
        out.append(Stage(index=i, of=p, layers=li, in_flight=in_flight(p, i, m) if p > 1 else 1,
                         params=params, params_formula=formula))
    return out


def schedule_note(x: Inputs, st: Stage) -> str:
    """How many micro-batches the stage holds and why, for the activation lines' note."""
    if "grad_accum" in x.assumed:
        why = (f"micro-batches per step not given: the {st.of} − {st.index} = {st.in_flight} "
               "the 1F1B schedule can keep in flight assumed")
    else:
        why = f"min({st.of} − {st.index}, {x.grad_accum} micro-batches per step) = {st.in_flight}"
    return (f"1F1B pipeline stage {st.index} of 0–{st.of - 1}: {st.layers} layers, "
            f"activations of {why} micro-batch(es) in flight")
