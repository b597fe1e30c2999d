"""PF110: eager attention materialises the T×T score matrix at long sequence."""

from preflight.engine import Example, Rule, gib, pct
from preflight.rules._common import hf_script, line_of

_EAGER = hf_script("Qwen/Qwen2.5-0.5B", mb=4, seq=8192, attn="eager")
_SDPA = hf_script("Qwen/Qwen2.5-0.5B", mb=4, seq=8192, attn="sdpa")
_SHORT = hf_script("Qwen/Qwen2.5-0.5B", mb=4, seq=512, attn="eager")

#: eager attention is worth a finding from this share of capacity on
SHARE = 0.10


class MaterialisedAttention(Rule):
    """
    ## What it does
    Fires when attention is computed eagerly (`softmax(q @ kᵀ) @ v`,
    `attn_implementation="eager"`) at a sequence length where the materialised
    score matrix — micro-batch × heads × T² per layer, kept for backward — takes a
    large share of the GPU.

    ## Why is this bad
    The score matrix is quadratic in the sequence: for L=32 layers, 32 heads, B=4 and
    T=2048 in bf16 it is 4 × 32 × 2048² × 2 B = 1 GiB per layer, 32 GiB over 32 layers —
    on top of every other activation. At T=8192 it is 16× that. Memory-efficient
    attention (SDPA, FlashAttention) never stores it and is faster.

    ## Example
    ```python
    model = AutoModelForCausalLM.from_pretrained(name, attn_implementation="eager")
    ```

    ## Use instead
    ```python
    model = AutoModelForCausalLM.from_pretrained(name, attn_implementation="sdpa")
    # or "flash_attention_2"; in your own modules F.scaled_dot_product_attention(q, k, v)
    ```
    """

    code = "PF110"
    name = "materialised-attention"
    summary = "Eager attention materialises the T×T score matrix at long sequence"
    severity = "warning"
    misconception = None
    case = None

    INVALID = [Example(files={"train.py": _EAGER}, command="torchrun --nproc_per_node 8 train.py",
                       expect=[("PF110", "train.py", line_of(_EAGER, "attn_implementation"))])]
    VALID = [Example(files={"train.py": _SDPA}, command="torchrun --nproc_per_node 8 train.py"),
             Example(files={"train.py": _SHORT}, command="torchrun --nproc_per_node 8 train.py")]

    def check(self, ctx):
        if ctx.v("attention") != "eager":
            return
        mb, seq, heads, layers = (ctx.v("micro_batch"), ctx.v("seq_len"), ctx.v("heads"),
                                  ctx.v("layers"))
        if not (mb and seq and heads and layers):
            return
        tp = ctx.v("tp") or 1
        width = 4 if ctx.v("mixed_precision", "none") == "none" and ctx.v("param_dtype") in (None, "fp32") else 2
        per_layer = mb * (heads / tp) * seq * seq * width
        kept = 1 if ctx.v("activation_checkpointing", "none") == "full" else layers
        total = per_layer * kept
        cap = ctx.capacity
        if cap:
            if total < SHARE * cap:
                return
            share = f" — {pct(total / cap)} of {ctx.gpu}'s {gib(cap)}"
        else:
            if total < 8 * 2**30:
                return
            share = ""
        yield self.diagnostic(
            f"eager attention materialises the {seq:,}×{seq:,} score matrix: {mb} × "
            f"{heads // tp if heads % tp == 0 else heads / tp} heads × {seq:,}² × {width} B = "
            f"{gib(per_layer)} per layer, {gib(total)} over {kept} layer(s){share}",
            ctx.src("attention"),
            fix='use memory-efficient attention: attn_implementation="sdpa" (or '
                '"flash_attention_2"); F.scaled_dot_product_attention in your own modules',
            data={"per_layer_bytes": int(per_layer), "total_bytes": int(total)})
