"""Multi-head latent attention (DeepSeek-V2 / V3): what the attention of one layer saves
for backward, and its parameters.

MLA compresses keys and values into one latent of `kv_lora_rank` (kl) per token, plus a
shared rotary key of `qk_rope_head_dim` (dr): kv_a_proj_with_mqa maps h → kl + dr, an
RMSNorm normalises the kl part, kv_b_proj decompresses it to every head's key (no-rope part,
dn = `qk_nope_head_dim`) and value (dv = `v_head_dim`). Queries go through a latent of
`q_lora_rank` (ql: q_a_proj, RMSNorm, q_b_proj) or, with none (DeepSeek-V2-Lite), one q_proj.
Each head's query and key are dn + dr wide (qk), its value dv.

As transformers ≥ 5 builds it, per token (d bytes per element; a heads):

    shared input   the attention norm's output, read by q_a_proj / q_proj and kv_a   d·h
    query latent   (ql > 0) the q_a_layernorm's fp32 input, rstd, normalised tensor
                   and q_b_proj's input                           4·ql + 4 + 2·d·ql
    kv latent      kv_a_layernorm's fp32 input (in fp32 compute, a view of kv_a's whole
                   kl + dr output), rstd, normalised tensor, kv_b_proj's input
                                                                  4·kl (+ 4·dr) + 4 + 2·d·kl
    heads, sdpa    the query and the key, each built by concatenating the rope and
                   no-rope parts                                  2 · d·a·qk
                   the value, a view of kv_b_proj's whole output   d·a·(dn + dv)
                   log-sum-exp (fp32)                             4·a
                   the kernel's output and o_proj's input, a contiguous copy of it
                   re-laid out (the value width differs from the key's)  2 · d·a·dv
    heads, eager   the query and the transposed key as the batched matmul reads them
                   2 · d·a·qk; the value copied contiguous d·a·dv; softmax output
                   fp32 4·a·s and its 16-bit copy d·a·s; o_proj's input d·a·dv

Rotary cos/sin are shared by the layers (not per token). Checked against autograd on CPU
(tests/test_deepseek.py): DeepSeek-V2 and V3 layers, fp32 and bf16, sdpa and eager, with
and without a query latent, to the byte. On CUDA, sdpa picks the memory-efficient kernel
for unequal query and value widths; its output layout was not measured.
"""

from __future__ import annotations

from dataclasses import dataclass

from preflight.physics.saved import Saved


@dataclass(frozen=True)
class MLA:
    """The shape of one multi-head latent attention (config field names in comments)."""

    kv_rank: int            # kv_lora_rank
    q_rank: int             # q_lora_rank (0: a plain q_proj)
    nope: int               # qk_nope_head_dim
    rope: int               # qk_rope_head_dim
    v: int                  # v_head_dim

    @property
    def label(self) -> str:
        q = f"q latent {self.q_rank:,}, " if self.q_rank else ""
        return f"latent attention ({q}kv latent {self.kv_rank:,})"

    @classmethod
    def from_fact(cls, val: object) -> "MLA | None":
        """The `latent_attention` fact (a dict of the config's field names) as an MLA."""
        if not isinstance(val, dict):
            return None
        try:
            return cls(kv_rank=int(val["kv_lora_rank"]), q_rank=int(val.get("q_lora_rank") or 0),
                       nope=int(val["qk_nope_head_dim"]), rope=int(val["qk_rope_head_dim"]),
                       v=int(val["v_head_dim"]))
        except (KeyError, TypeError, ValueError):
            return None

    def fields(self) -> dict[str, int]:
        return {"kv_lora_rank": self.kv_rank, "q_lora_rank": self.q_rank,
                "qk_nope_head_dim": self.nope, "qk_rope_head_dim": self.rope,
                "v_head_dim": self.v}


#: the symbols the MLA table adds to `Shape.value`
SYMBOLS = ("ql", "kl", "dr", "a·qk", "a·kv", "a·dv")


def symbol_value(m: MLA, a: int, sym: str) -> int:
    return {"ql": m.q_rank, "kl": m.kv_rank, "dr": m.rope, "a·qk": a * (m.nope + m.rope),
            "a·kv": a * (m.nope + m.v), "a·dv": a * m.v}[sym]


def attention_params(h: int, a: int, m: MLA, bias: bool = False) -> tuple[int, str]:
    """One layer's attention parameters: q (q_a h·ql + its norm ql + q_b ql·a·qk, or q_proj
    h·a·qk), kv_a h·(kl + dr), its norm kl, kv_b kl·a·(dn + dv), o_proj a·dv·h (the biases
    of q_a, kv_a and o_proj with `attention_bias`)."""
    qk, kv, dv = a * (m.nope + m.rope), a * (m.nope + m.v), a * m.v
    if m.q_rank:
        n = h * m.q_rank + m.q_rank + m.q_rank * qk
        text = f"{h:,}·{m.q_rank:,} + {m.q_rank:,} + {m.q_rank:,}·{qk:,}"
    else:
        n, text = h * qk, f"{h:,}·{qk:,}"
    n += h * (m.kv_rank + m.rope) + m.kv_rank + m.kv_rank * kv + dv * h
    text += (f" + {h:,}·{m.kv_rank + m.rope:,} + {m.kv_rank:,} + {m.kv_rank:,}·{kv:,} + "
             f"{dv:,}·{h:,}")
    if bias:
        n += (m.q_rank if m.q_rank else 0) + m.kv_rank + m.rope + h
        text += " + biases"
    return n, text


def mla_attention_saved(m: MLA, attention: str) -> list[Saved]:
    """The attention's saved tensors after the attention norm (its output, the shared
    projection input, included)."""
    t = [Saved("attention input (q and kv_a projections)", "h", tp=False, stage=1)]
    if m.q_rank:
        t += [Saved("q_a_layernorm fp32 input", "ql", kind="f32", tp=False, stage=1),
              Saved("q_a_layernorm rstd (fp32)", "1", kind="f32", tp=False, stage=1),
              Saved("q_a_layernorm normalised", "ql", tp=False, stage=1),
              Saved("q_b_proj input (query latent)", "ql", tp=False, stage=1)]
    t += [Saved("kv_a_layernorm fp32 input (compressed kv latent)", "kl", kind="f32",
                tp=False, stage=1),
          # in fp32 compute the norm's .float() is the kv_a output itself, rope part included
          Saved("rope key kept with the latent (fp32 compute only)", "dr", kind="f32only",
                tp=False, stage=1),
          Saved("kv_a_layernorm rstd (fp32)", "1", kind="f32", tp=False, stage=1),
          Saved("kv_a_layernorm normalised", "kl", tp=False, stage=1),
          Saved("kv_b_proj input (kv latent)", "kl", tp=False, stage=1)]
    if attention == "eager":
        t += [Saved("query and key (rope and no-rope parts, per head)", "a·qk", mult=2,
                    stage=2),
              Saved("value (contiguous copy for the matmul)", "a·dv", stage=2),
              Saved("softmax output (fp32)", "a·s", kind="f32", core=True, stage=2),
              Saved("16-bit attention probabilities", "a·s", kind="half", core=True, stage=2),
              Saved("attention output (o_proj input)", "a·dv", stage=3)]
    else:
        t += [Saved("query and key (rope and no-rope parts, per head)", "a·qk", mult=2,
                    stage=2),
              Saved("decompressed keys and values (kv_b_proj output; the value is a view)",
                    "a·kv", stage=2),
              Saved("attention log-sum-exp (fp32)", "a", kind="f32", stage=2),
              Saved("attention output (kernel output)", "a·dv", stage=3),
              Saved("o_proj input (the output re-laid out)", "a·dv", stage=3)]
    return t
