"""litgpt's own model (litgpt/model.py `GPT`, `Block`, `CausalSelfAttention`; litgpt/lora.py
`LoRALinear`, `LoRAQKVLinear`), which `litgpt finetune` / `pretrain` train in place of
transformers' implementation: what one of its blocks saves for backward.

Every litgpt architecture runs the same attention and one of a few norms and MLPs; the
block's traits (`Block`) say which, per transformers `model_type` (`LITGPT`). Checked to
the byte against autograd's saved storages of litgpt 0.5.13 on CPU, fp32 and bf16, GQA and
MHA, every weight trained and LoRA (tests/test_litgpt_block_saved.py).

Per layer, per token (d bytes per activation element, h hidden, f MLP width, q = a·head_dim,
hk = k·head_dim):

norm "rms" (Llama, Mistral, TinyLlama) — litgpt's RMSNorm upcasts its input (`x.float()`,
    4h; in fp32 compute the tensor itself), keeps rstd (4) and multiplies the normalised
    tensor by `weight.float()` in fp32: the normalised tensor the weight's gradient needs is
    fp32 (4h, where transformers' is cast back to d·h first), and over 16-bit weights the
    fp32 copy of the weight is kept once per norm (4h bytes per layer, not per token). A
    frozen weight (LoRA) needs no normalised tensor, but the weight's copy stays (the
    input's gradient reads it).
norm "rms1p" (Gemma) — the same with `(1 + weight)`: a new tensor, so its fp32 copy is kept
    in fp32 compute too.
norm "ln" (Phi, GPT-NeoX) — `nn.LayerNorm`: its input (d·h) and fp32 mean and rstd (8).
attention — one fused qkv linear (its input, d·h, once); q and k are rotated and
    concatenated (`torch.cat`: new tensors in (B, heads, T, hs) layout), so sdpa's output
    follows that layout and `proj` reads a re-laid-out copy (q). With GQA/MQA
    (k < a) k and v are `repeat_interleave`d to every head before sdpa: sdpa keeps Q, K, V
    at q width each; with k == a v stays a view of the fused qkv output, so sdpa keeping V
    keeps all of it (q + 2hk). sdpa also keeps its output (q) and log-sum-exp (4a).
mlp "swiglu" (LLaMAMLP; GemmaMLP's fused tanh GELU keeps the same) — fc_1's and fc_2's
    shared input (d·h), fc_1's output (the activation's input), the activation's output,
    fc_2's output, the product (proj's input): d·(h + 4f).
mlp "gelu" (GptNeoxMLP) — `F.gelu` is one op and keeps its input only: fc's input (d·h),
    the GELU input and output (2d·f).
parallel 1 (Phi: shared_attention_norm) — one norm feeds attention and the MLP: its output
    is qkv's and fc's input, one tensor. parallel 2 (GPT-NeoX) — two norms of the same
    layer input: the second keeps only its mean and rstd (the input is the first's).
No dropout anywhere in the model.

Autocast (fp32 weights, `precision: bf16-mixed`): the residual stream and the norms are
fp32 (no weight copy: the fp32 weight is itself), and each linear casts its input once:
the fused qkv one copy, LLaMAMLP's fc_1 and fc_2 one each.

LoRA (`lora_freeze`): a frozen linear keeps no input. `LoRAQKVLinear` runs one dropout and
one lora_A for the enabled parts of the fused qkv: one dropped copy of the norm output and
one mask (not one per projection as peft's separate q/k/v adapters), lora_A's output r wide
per enabled part, and, when not all of q, k and v are enabled, the index of the enabled
output columns its zero-padding copies into (int64, one per column, per layer: a clone of a
buffer each forward). `LoRALinear` (proj, fc_1, fc_2, fc, the MLP's proj) is peft's
adapter: its dropped input and mask, lora_A's output. The adapters share the model's dtype.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Optional

from preflight.physics.lora import FrozenBase, freeze, matches_target
from preflight.physics.saved import Saved


@dataclass(frozen=True)
class Block:
    """A litgpt block's traits: `norm` "rms" | "rms1p" | "ln", `mlp` "swiglu" | "gelu",
    `parallel` 0 (sequential), 1 (one shared norm) or 2 (two norms of the layer input)."""

    norm: str = "rms"
    mlp: str = "swiglu"
    parallel: int = 0


#: transformers model_type → litgpt's block for that architecture (litgpt/config.py:
#: norm_class_name, mlp_class_name, parallel_residual, shared_attention_norm). A type absent
#: here has no litgpt table: the transformers table stands in, and the ledger says so.
LITGPT: dict[str, Block] = {
    "llama": Block(),                                   # Llama 2/3, TinyLlama
    "mistral": Block(),                                 # Mistral 7B v0.1 / v0.2
    "phi3": Block(),                                    # Phi-3: litgpt's LLaMAMLP, no fusion
    "gemma": Block(norm="rms1p"),                       # GemmaMLP: tanh GELU × fc_2
    "phi": Block(norm="ln", mlp="gelu", parallel=1),    # phi-1.5, phi-2
    "gpt_neox": Block(norm="ln", mlp="gelu", parallel=2),   # Pythia, StableLM-Alpha
}


@dataclass(frozen=True)
class Layer:
    """What the tables need of a litgpt layer: its block, the roles its linears play in the
    family's role names (`lora.ROLE_STAGE`), and which of q, k, v a LoRA adapts."""

    block: Block
    llama_roles: bool = True          # q/k/v/o/gate/up/down, else qkv/out/fc/proj
    lora_qkv: tuple[bool, bool, bool] = (False, False, False)

    @property
    def qkv_roles(self) -> tuple[str, ...]:
        return ("q", "k", "v") if self.llama_roles else ("qkv",)


#: what litgpt's block of a model_type keeps that the table does not count: the sliding-
#: window mask litgpt builds in every windowed layer (a (s, s) tensor in the compute dtype,
#: which sdpa keeps with its inputs; litgpt's Mistral-7B-v0.1 config windows every layer
#: at 4,096, its v0.2 none, and model_type does not tell them apart; Phi-3-mini at 2,048)
NOT_COUNTED = {
    "mistral": "a Mistral-7B-v0.1 job's sliding-window mask (s² × d bytes per layer, kept "
               "by sdpa) is not counted",
    "phi3": "the sliding-window mask litgpt builds in every layer (s² × d bytes per layer, "
            "kept by sdpa) is not counted",
}


def block_of(model_type: Optional[str]) -> Optional[Block]:
    """litgpt's block for a transformers `model_type` (None: not modelled)."""
    return LITGPT.get(model_type or "")


def _norm(blk: Block, i: int, autocast: bool, stage: int) -> list[Saved]:
    name = f"norm_{i}"
    if blk.norm == "ln":
        return [Saved(f"{name} (LayerNorm) input", "h", kind="f32" if autocast else "act",
                      tp=False, stage=stage),
                Saved(f"{name} mean and rstd (fp32)", "1", mult=2, kind="f32", tp=False,
                      stage=stage)]
    t = [Saved(f"{name} input upcast to fp32 (x.float())", "h", kind="f32", tp=False,
               stage=stage),
         Saved(f"{name} normalised (fp32: the weight's product is taken in fp32)", "h",
               kind="f32", tp=False, weight_of=("norm",), stage=stage),
         Saved(f"{name} rstd (fp32)", "1", kind="f32", tp=False, stage=stage)]
    if blk.norm == "rms1p":
        # (1 + weight) is a new tensor in any dtype; its fp32 copy is kept, once per norm
        t.append(Saved(f"{name} (1 + weight).float(), once per norm", "h/sb", kind="f32",
                       tp=False, stage=stage))
    elif not autocast:
        # weight.float() of 16-bit weights is a copy (of fp32 weights, the weight itself)
        t.append(Saved(f"{name} weight.float(), once per norm", "h/sb", kind="f32copy",
                       tp=False, stage=stage))
    return t


def litgpt_saved(sh, lay: Layer) -> list[Saved]:
    """One litgpt block's saved tensors (`sh`: `activations.Shape`), in forward order."""
    blk, llama = lay.block, lay.llama_roles
    ac = sh.autocast
    qkv_w = lay.qkv_roles
    fc_w = ("gate", "up") if llama else ("fc",)
    out_w, down_w = ("o",) if llama else ("out",), ("down",) if llama else ("proj",)
    shared = blk.parallel == 1 and not ac       # one norm output read by qkv and fc
    t = _norm(blk, 1, ac, 0)
    t.append(Saved("qkv input (norm_1 output" + (", and fc's)" if shared else ")")
                   + (" (autocast's 16-bit copy)" if ac else ""), "h", tp=False,
                   weight_of=qkv_w + (fc_w if shared else ()), stage=1))
    t.append(Saved("Q (rotated, concatenated: a new tensor)", "q", stage=2))
    if sh.k < sh.a:
        t.append(Saved("K, V repeat_interleave'd to every head", "q", mult=2, stage=2))
    else:
        t += [Saved("K (rotated, concatenated)", "hk", stage=2),
              Saved("V: a view of the fused qkv output, all of which sdpa keeps", "q",
                    stage=2),
              Saved("V: the fused qkv output's K and V columns", "hk", mult=2, stage=2)]
    t += [Saved("sdpa log-sum-exp (fp32)", "a", kind="f32", stage=2),
          Saved("sdpa output", "q", stage=3),
          Saved("proj input (a re-laid-out copy of the sdpa output)", "q", weight_of=out_w,
                stage=3)]
    ups = 2 if blk.mlp == "swiglu" else 1
    if blk.parallel == 0:
        t += _norm(blk, 2, ac, 4)
    elif blk.parallel == 2:
        t.append(Saved("norm_2 mean and rstd (fp32; its input is norm_1's)", "1", mult=2,
                       kind="f32", tp=False, stage=4))
    if not shared:
        t.append(Saved("MLP input" + (" (a 16-bit copy per linear)" if ac else ""), "h",
                       mult=ups if ac else 1, tp=False, weight_of=fc_w,
                       per_role=ac and ups > 1, stage=5))
    if blk.mlp == "swiglu":
        t += [Saved("fc_1 output (the activation's input)", "f", stage=6),
              Saved("activation output", "f", stage=6),
              Saved("fc_2 output", "f", stage=6),
              Saved("product (proj input)", "f", weight_of=down_w, stage=7)]
    else:
        t += [Saved("fc output (GELU input)", "f", stage=6),
              Saved("GELU output (proj input)", "f", weight_of=down_w, stage=7)]
    return t


def lora_freeze(table: list[Saved], fz: FrozenBase, lay: Layer) -> list[Saved]:
    """A litgpt LoRA layer's table (see the module's docstring): peft's `freeze` for the
    `LoRALinear` adapters, with the fused qkv's `LoRAQKVLinear` as one adapter of
    n·r-wide lora_A output (n: the enabled parts) and its zero-padding's index."""
    fz = replace(fz, adapter_f32=False)          # litgpt's adapters share the model's dtype
    qkv = set(lay.qkv_roles) & set(fz.adapted)
    one = lay.qkv_roles[0]
    adapted = (fz.adapted - set(lay.qkv_roles)) | ({one} if qkv else set())
    out = freeze(table, replace(fz, adapted=frozenset(adapted)))
    n = sum(lay.lora_qkv) or (3 if qkv else 0)
    if not qkv:
        return out
    # freeze names each adapter's entries "(<role>; …)": the fused one's are qkv's
    out = [replace(e, name=e.name.replace(f"({one};", "(qkv;").replace(f"({one})", "(qkv)"),
                   mult=n if e.sym == "r" else e.mult)
           if f"({one};" in e.name or f"({one})" in e.name else e for e in out]
    if n < 3:
        # index_copy_'s backward keeps the index and the source (lora_B's output, the
        # enabled columns wide: its formula reads `source.dim()`)
        q, k, v = lay.lora_qkv
        kv = int(k) + int(v)
        if q:
            out += [Saved("zero_pad index of the enabled q columns (int64, per layer)",
                          "q/sb", kind="i64", tp=False, stage=1),
                    Saved("zero_pad source: lora_B's q columns", "q", stage=1)]
        if kv:
            out += [Saved("zero_pad index of the enabled k/v columns (int64, per layer)",
                          "hk/sb", mult=kv, kind="i64", tp=False, stage=1),
                    Saved("zero_pad source: lora_B's k/v columns", "hk", mult=kv, stage=1)]
    return out


def head_saved(sh, frozen: Optional[FrozenBase], norm: str,
               part: str = "both") -> tuple[int, str]:
    """litgpt's final norm (ln_f) and lm_head input for the micro-batch, as (bytes, the
    per-token coefficient's text): "rms" keeps its fp32 input, fp32 normalised tensor (not
    with a frozen weight), rstd and, over 16-bit weights, the weight's fp32 copy once; "ln"
    its input and fp32 mean and rstd. `part` "embedding": nothing (the lookup keeps the
    token ids; litgpt has no dropout)."""
    if part == "embedding":
        return 0, "0"
    tokens = sh.s * sh.b
    head = sh.d if frozen is None or frozen.head_trained else 0
    if norm == "ln":
        ln = 4 if sh.autocast else sh.d
        return (ln * sh.h + 8 + head * sh.h) * tokens, f"({ln} + {head})·h + 8"
    normed = 0 if frozen is not None else 4
    const = 4 * sh.h if (norm == "rms1p" or (sh.d < 4 and not sh.autocast)) else 0
    return (((4 + normed + head) * sh.h + 4) * tokens + const,
            f"(4 + {normed} + {head})·h + 4" + (" + 4·h/(b·s) (ln_f's fp32 weight, once)"
                                                if const else ""))


def layer_for(model_type: Optional[str], family: str, targets) -> Optional[Layer]:
    """The litgpt layer of a job that trains litgpt's own model (None: its architecture has
    no litgpt table). `targets`: the LoRA targets (Hugging Face names, what the litgpt
    adapter maps `lora_query`… to; None: every linear)."""
    blk = block_of(model_type)
    if blk is None:
        return None
    qkv = tuple(targets is None or matches_target(n, targets)
                for n in ("q_proj", "k_proj", "v_proj"))
    return Layer(block=blk, llama_roles=family == "llama", lora_qkv=qkv)  # type: ignore[arg-type]


def label(model_type: Optional[str]) -> str:
    """What the activations line says of the table it used for a litgpt job."""
    if block_of(model_type) is None:
        return (f"litgpt trains its own model (litgpt/model.py); its {model_type or 'unknown'} "
                "block has no table of its own: the transformers table stands in (an "
                "approximation)")
    blk = LITGPT[model_type or ""]
    what = ("fp32 RMSNorm products" if blk.norm != "ln" else "one-op GELU") + \
        ", fused qkv (LoRA: one adapter, one dropped copy and mask, for its enabled parts), " \
        "K and V repeated to every head under GQA, no dropout"
    extra = NOT_COUNTED.get(model_type or "")
    return (f"the table of litgpt's own model (litgpt/model.py, litgpt/lora.py: {what})"
            + (f"; {extra}" if extra else ""))
