"""LoRA / QLoRA as the estimator needs it: which block linears LoRA `targets` adapt (peft's
matching), what a frozen-base layer saves for backward (`FrozenBase`, `freeze`), and the
bytes of the frozen base from the numbers of the `lora` fact (`frozen_base_bytes`).

Frozen-base storage (`quantised_base_bytes`):
- 16 bits: 2 bytes per parameter.
- 8 bits (LLM.int8, bitsandbytes `Int8Params`): 1 byte per weight of every quantised
  linear plus one fp32 scale per output row (`SCB`).
- 4 bits (QLoRA NF4/FP4, bitsandbytes `Params4bit`, blocksize 64): 0.5 byte per weight plus
  the quantisation constants: one absmax per 64 weights — fp32 (4 bytes) without double
  quantisation, or 8-bit (1 byte) with double quantisation plus one fp32 per 256 absmax
  blocks (4 bytes per 16,384 weights). So ≈ 0.5625 byte/weight, or ≈ 0.5159 with double
  quant (axolotl, QLoRA paper default).
bitsandbytes quantises the linear layers of the repeated blocks; embeddings, norms,
biases and the output head stay in the compute dtype (2 bytes).

The counting on a model's shape (adapter parameters, `modules_to_save`, the base's bytes
from its linear layers) is `preflight.models.lora`'s, on this arithmetic.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any, Optional, Union

from preflight.physics import bnb
from preflight.physics.saved import Saved

Targets = Union[str, list[str], None]

#: leaf names of the output head (never a target of "all-linear"; trained in full when
#: listed in `modules_to_save`)
OUTPUT_NAMES = frozenset({"lm_head", "embed_out"})


def normalise_targets(targets: Targets) -> Targets:
    """A target list naming "all-linear" is "all-linear" (axolotl's lora_target_linear,
    ["all-linear"] from flags)."""
    if isinstance(targets, (list, tuple)) and any(
            isinstance(t, str) and t.lower() in ("all-linear", "all_linear") for t in targets):
        return "all-linear"
    return targets


def name_matches(name: str, targets: Targets) -> bool:
    """Whether a linear whose leaf name is `name` is one of (normalised) `targets`: a list
    entry names the leaf; "all-linear" is every linear but the output head; a plain string
    is a regex fully matched against the module's dotted name (peft)."""
    if isinstance(targets, str):
        if targets.lower() in ("all-linear", "all_linear"):
            return name not in OUTPUT_NAMES
        # peft: a string is a regex fully matched against the module's dotted name
        try:
            return re.fullmatch(targets, f"model.layers.0.block.{name}") is not None
        except re.error:
            return False
    return any(name == t.rsplit(".", 1)[-1] for t in targets or [])


def matches_target(name: str, targets: Targets) -> bool:
    """Whether a block linear named `name` (its leaf name) is a LoRA target (peft's matching;
    `["all-linear"]` as the string)."""
    return name_matches(name, normalise_targets(targets))


# ------------------------------------------------------------------ the frozen base's bytes


def quantised_base_bytes(params: int, quantised: int, rows: int, base_bits: int, *,
                         double_quant: bool = True, other_bytes: int = 2,
                         blocksize: int = 64) -> tuple[int, str]:
    """Bytes of a frozen base of `params` parameters stored at `base_bits` (4, 8 or 16), with
    the formula: `quantised` weights (the blocks' linear weights, `rows` output rows) are
    quantised below 16 bits, the rest stays at `other_bytes`."""
    total = params
    if base_bits >= 16:
        return total * other_bytes, f"{total:,} params × {other_bytes} B"
    q = quantised
    rest = total - q
    if base_bits == 8:
        b = q + 4 * rows + rest * other_bytes
        return b, (f"{q:,} int8 weights × 1 B + {rows:,} row scales × 4 B + "
                   f"{rest:,} other params × {other_bytes} B")
    if base_bits == 4:
        blocks = -(-q // blocksize)
        if double_quant:
            consts = blocks * 1 + -(-blocks // 256) * 4
            how = f"{blocks:,} absmax × 1 B (double quant) + {-(-blocks // 256):,} × 4 B"
        else:
            consts = blocks * 4
            how = f"{blocks:,} absmax × 4 B"
        b = -(-q // 2) + consts + rest * other_bytes
        return b, (f"{q:,} nf4 weights × 0.5 B + {how} + {rest:,} other params × "
                   f"{other_bytes} B")
    raise ValueError(f"unsupported base_bits {base_bits}")


def frozen_base_bytes(lora: dict, *, double_quant: bool = True, other_bytes: int = 2,
                      blocksize: int = 64) -> Optional[tuple[int, str]]:
    """Bytes of the frozen base from a `lora` fact value (as `resolve` fills it), or None.

    Uses its `base_params`, `quantized_params` and `quantized_rows` keys; the same
    arithmetic as `preflight.models.lora.base_weight_bytes` (`quantised_base_bytes`).
    """
    try:
        total = int(lora["base_params"])
        q = int(lora["quantized_params"])
        rows = int(lora["quantized_rows"])
        bits = int(lora.get("base_bits") or 16)
    except (KeyError, TypeError, ValueError):
        return None
    return quantised_base_bytes(total, q, rows, bits, double_quant=double_quant,
                                other_bytes=other_bytes, blocksize=blocksize)


# ------------------------------------------------------------------ what a frozen layer saves

#: The block's linear layers by role, in forward order, and the stage (place in the block's
#: forward) of each role's input. gpt2: QKV, attention output, MLP in (fc), MLP out (proj);
#: llama: q, k, v, o, gate, up, down.
ROLE_STAGE = {"qkv": 1, "out": 3, "fc": 5, "proj": 7,
              "q": 1, "k": 1, "v": 1, "o": 3, "gate": 5, "up": 5, "down": 7}
#: leaf module names (what LoRA `target_modules` match) → roles, per family. GPT-2's
#: `c_proj` is both the attention output and the MLP output (peft targets both).
#: the width of each role's input (a table symbol): the MLP-out linears read the f-wide
#: activation, llama's o_proj the a·head_dim-wide attention output
ROLE_WIDTH = {"qkv": "h", "out": "h", "fc": "h", "proj": "f",
              "q": "h", "k": "h", "v": "h", "o": "q", "gate": "h", "up": "h", "down": "f"}
#: roles whose input is split under tensor parallelism (row-parallel linears)
ROW_PARALLEL = frozenset({"out", "proj", "o", "down"})
ROLE_NAMES: dict[str, dict[str, tuple[str, ...]]] = {
    "gpt2": {"qkv": ("c_attn", "query_key_value", "qkv_proj", "Wqkv", "q_proj", "k_proj",
                     "v_proj", "query", "key", "value"),
             "out": ("c_proj", "dense", "out_proj", "o_proj"),
             "fc": ("c_fc", "dense_h_to_4h", "fc1", "fc_in", "up_proj"),
             "proj": ("c_proj", "dense_4h_to_h", "fc2", "fc_out", "down_proj")},
    "llama": {"q": ("q_proj", "qkv_proj"), "k": ("k_proj", "qkv_proj"),
              "v": ("v_proj", "qkv_proj"), "o": ("o_proj",),
              "gate": ("gate_proj", "gate_up_proj"), "up": ("up_proj", "gate_up_proj"),
              "down": ("down_proj",)},
}


@dataclass(frozen=True)
class FrozenBase:
    """A frozen base model with LoRA adapters (peft freezes every weight but the adapters):

    - a frozen linear saves no input for a weight gradient: `F.linear` / `addmm` save the
      input only when the weight requires grad, and bitsandbytes' 4-bit matmul does not
      from 0.43.2; 8-bit (`MatMul8bitLt`), and 4-bit before 0.43.2, keep the input
      whenever it requires grad (`input_saved`); 8-bit before 0.45.0 also keeps an int8
      copy of it per linear (`int8_copy`; `physics.bnb`);
    - an adapted linear saves its input once (lora_A's, the same tensor when lora_dropout
      is 0) and lora_A's r-wide output (lora_B's input): r·d bytes per token;
    - with lora_dropout p > 0 (`dropout`), peft computes `lora_B(lora_A(dropout(x)))` with
      one `nn.Dropout` per adapted linear: lora_A saves the dropped copy instead of `x`
      (so an input kept for an adapted weight alone goes), and each adapter keeps its own
      copy in the compute dtype (d bytes per element of its input; under autocast lora_A's
      16-bit cast of it) and its dropout's mask (1 byte per element on CUDA, a bool; on the
      CPU the mask is in the dropout input's dtype) — q, k and v, reading the same norm
      output, keep three copies and three masks. In layer 0 the first adapters' inputs
      require no grad (frozen embeddings and norms), so their dropout keeps no mask;
    - with the adapters' weights in fp32 over a 16-bit base (`adapter_f32`: peft's default
      `get_peft_model(..., autocast_adapter_dtype=True)`), peft casts each adapter's input
      to fp32 before lora_A (`_cast_input_dtype`): each adapter keeps its own fp32 copy
      (4 bytes per element of its input; with lora_dropout the dropped copy, its mask in
      the copy's dtype on the CPU), an input kept for adapted weights alone goes, and
      lora_A's r-wide output is fp32. Under torch.autocast (fp32 weights, so fp32 adapters)
      lora_A casts its input to 16 bits itself and the tables count it so, as for 16-bit
      adapters (the caller passes `adapter_f32` only for 16-bit compute without autocast),
      but an adapter reading a 16-bit tensor that another op keeps (sdpa's output, o_proj's
      input) gets peft's fp32 cast of it and then autocast's 16-bit cast back: a copy of
      its own (`freeze(..., autocast=True)`);
    - frozen norm weights: the normalised tensor kept only for the weight's gradient goes;
    - frozen embeddings: nothing before the first adapter of layer 0 requires grad, so that
      prefix saves nothing (`first_layer_less`), nor does the embedding dropout; a frozen
      lm_head saves no input (`head_trained`: in `modules_to_save`).
    """

    adapted: frozenset[str]     # roles with an adapter
    input_saved: bool = False   # 8-bit base (4-bit before 0.43.2): every linear keeps its input
    int8_copy: tuple[str, ...] = ()  # 8-bit before 0.45.0: the linears that also keep an
    #                                  int8 copy of their input
    head_trained: bool = False
    dropout: bool = False       # lora_dropout > 0: a dropped copy and a mask per adapter
    adapter_f32: bool = False   # fp32 adapters over 16-bit compute: an fp32 copy per adapter


def frozen_base(family: str, targets: Targets, base_bits: int = 16,
                modules_to_save: Any = (), dropout: bool = False,
                adapter_f32: bool = False, bnb_version: Optional[str] = None) -> FrozenBase:
    """The roles LoRA `targets` adapt (peft's matching: a module whose leaf name is listed,
    `all-linear`, or a regex over the module's dotted name); `dropout`: lora_dropout > 0;
    `adapter_f32`: fp32 adapters over 16-bit compute without autocast; `bnb_version`: the
    bitsandbytes release of a quantised base (None: the current one)."""
    roles = ROLE_NAMES["llama" if family == "llama" else "gpt2"]
    adapted = frozenset(r for r, names in roles.items()
                        if any(matches_target(n, targets) for n in names))
    leaves = {str(m).rsplit(".", 1)[-1] for m in modules_to_save or ()}
    return FrozenBase(adapted=adapted, input_saved=bnb.keeps_input(base_bits, bnb_version),
                      int8_copy=tuple(roles) if bnb.keeps_int8_copy(base_bits, bnb_version)
                      else (),
                      head_trained=bool(leaves & OUTPUT_NAMES), dropout=dropout,
                      adapter_f32=adapter_f32)


def freeze(table: list[Saved], fz: FrozenBase, autocast: bool = False) -> list[Saved]:
    """The table of a frozen-base layer (see `FrozenBase`): inputs kept only for a frozen
    weight's gradient go, each adapter adds lora_A's r-wide output; with lora_dropout
    (`fz.dropout`) an input kept for adapted weights alone goes too, and each adapter adds
    its dropped copy and its mask; with fp32 adapters (`fz.adapter_f32`) each adapter keeps
    an fp32 copy of its input instead of sharing it, and lora_A's output is fp32; under
    `autocast` a row-parallel adapter whose 16-bit input no entry keeps for its weight
    alone (another op keeps it) adds lora_A's own 16-bit cast of peft's fp32 copy."""
    own_copy = fz.dropout or fz.adapter_f32     # lora_A saves a tensor of its own
    kind = "f32" if fz.adapter_f32 else "act"
    for_weight = {r for e in table for r in e.weight_of}
    out: list[Saved] = []
    for e in table:
        # norm weights stay frozen whatever the base's bits; 8-bit linears keep their input
        if e.weight_of and (not fz.input_saved or e.weight_of == ("norm",)):
            kept = [r for r in e.weight_of if r in fz.adapted]
            if not kept or (own_copy and e.weight_of != ("norm",)):
                continue        # lora_A saves its own (dropped or fp32) copy, not this one
            if e.per_role and len(kept) != e.mult:
                e = replace(e, mult=len(kept))
        out.append(e)
    roles = sorted(fz.adapted, key=lambda r: (ROLE_STAGE[r], r))
    front = min((ROLE_STAGE[r] for r in roles), default=0)
    for role in fz.int8_copy:
        # LLM.int8 before 0.45.0: each 8-bit linear keeps an int8 copy of its input; in
        # layer 0 the linears up to the first adapter read a tensor that requires no grad
        stage = ROLE_STAGE[role]
        out.append(Saved(f"LLM.int8 int8 copy of the input ({role}; CAt)", ROLE_WIDTH[role],
                         kind="i8", tp=role in ROW_PARALLEL,
                         stage=front - 1 if stage <= front else stage))
    for role in roles:
        stage = ROLE_STAGE[role]
        w, tp = ROLE_WIDTH[role], role in ROW_PARALLEL
        if fz.dropout:
            out.append(Saved(f"LoRA dropout output ({role}; lora_A input)", w, kind=kind,
                             tp=tp, stage=stage))
            # layer 0's first adapters read a tensor that requires no grad: no mask there
            # (a stage before the first adapter's is what layer 0 does not keep)
            out.append(Saved(f"LoRA dropout mask ({role})", w, kind="mask", tp=tp,
                             stage=stage - 1 if stage == front else stage))
        elif fz.adapter_f32:
            out.append(Saved(f"LoRA fp32 input copy ({role}; lora_A input)", w, kind=kind,
                             tp=tp, stage=stage))
        elif autocast and tp and role not in for_weight:
            out.append(Saved(f"LoRA A 16-bit input copy ({role}; autocast's cast of peft's "
                             "fp32 copy)", w, tp=tp, stage=stage))
        out.append(Saved(f"LoRA A output ({role}; lora_B input)", "r", kind=kind, tp=False,
                         stage=stage))
    return out
