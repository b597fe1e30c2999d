"""The entry of every activation table: one tensor a layer saves for backward (`Saved`),
and the bytes per element of each kind of entry (`kind_bytes`).

The tables themselves are built by `activations` (the dense families), `mla` (latent
attention), `moe` (mixture-of-experts MLPs) and `lora` (a frozen base's adapters); a
table's entries count elements per token in symbols ('h', 'f', …) that a shape turns
into numbers (`activations.Shape.value`).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Protocol, Union


class Symbols(Protocol):
    """What gives a table's symbols their values (`activations.Shape`)."""

    def value(self, sym: str) -> Union[int, Fraction]: ...


@dataclass(frozen=True)
class Saved:
    """One tensor a layer saves for backward: `mult` × `sym` elements per token (s·b).

    sym: 'h', 'f', 'hk' (key/value width), 'a·s' (one row of every head's score matrix),
    'a', '1', and the mixture-of-experts symbols of `moe.SYMBOLS`. kind: 'act' (d bytes),
    'mask' (1 byte), 'i8' (1 byte, an int8 copy), 'f32' (4 bytes), 'i64' (8 bytes, indices), 'half' (d bytes, and
    only when d < 4: a 16-bit copy of an fp32 tensor). tp: inside a tensor-parallel region
    (split t ways; otherwise split only under sequence parallelism). core: part of eager
    attention's s² working set (dropped by selective recomputation). weight_of: the linear
    layers (roles, see `lora.ROLE_STAGE`) or "norm" whose *weight* gradient alone needs
    the tensor (a frozen layer does not save it); empty when an input gradient needs it.
    per_role: one copy per role (autocast's per-projection casts). stage: the tensor's
    place in the forward order of the block (a frozen layer 0 saves nothing before its
    first adapter).
    """

    name: str
    sym: str
    mult: int = 1
    kind: str = "act"
    tp: bool = True
    core: bool = False
    weight_of: tuple[str, ...] = ()
    per_role: bool = False
    stage: int = 0

    def elems(self, x: Symbols) -> int:
        return self.mult * x.value(self.sym)


def kind_bytes(kind: str, d: int) -> int:
    """Bytes per element of an entry of `kind` when activations are d bytes each."""
    if kind in ("mask", "i8"):
        return 1
    if kind == "f32":
        return 4
    if kind == "i64":
        return 8
    if kind == "half":
        return d if d < 4 else 0      # the 16-bit copy does not exist in fp32 compute
    if kind == "f32only":
        return 4 if d == 4 else 0     # kept only in fp32 compute (a view there, a copy not)
    if kind == "f32copy":
        return 4 if d < 4 else 0      # an fp32 copy of a 16-bit tensor (none in fp32)
    return d
