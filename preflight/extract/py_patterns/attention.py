"""Attention: the kernel a script calls (SDPA, FlashAttention), attention computed by hand, a
patch of the model's attention, an `attn_implementation=` keyword."""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING, Any

from preflight.lang.python import Evaluator, V
from preflight.extract.py_patterns.common import last
from preflight.facts import spellings
from preflight.frameworks import NO_MATCH, Call, answers

if TYPE_CHECKING:
    from preflight.extract.py_patterns.collector import Patterns


def on_patch(pats: Patterns, ev: Evaluator, qual: str, node: ast.Call) -> None:
    """A call that monkey-patches the model's attention: `replace_llama_attn_with_flash_attn()`,
    `apply_flash_attention_patch()` (→ flash), `…_with_xformers_attn()` (→ sdpa: no s² matrix)."""
    name = last(qual).lower()
    if not re.search(r"replace|patch|monkey", name):
        return
    kind = "flash" if "flash" in name else ("sdpa" if re.search(r"xformers|sdpa|mem_eff", name)
                                            else None)
    if kind:
        pats.emit("attention", V(kind, "literal", node.lineno, node.col_offset + 1,
                                 f"{last(qual)}() patches the attention"), tier="attn")


@answers("scaled_dot_product_attention", "softmax", prefixes=("flash_attn",))
def call(pats: Patterns, ev: Evaluator, c: Call) -> Any:
    """`scaled_dot_product_attention`, `flash_attn_func`, a hand-written softmax of q·kᵀ."""
    name, top, line, col, node = c.name, c.top, c.line, c.col, c.node
    if name == "scaled_dot_product_attention":
        pats.emit("attention", V("sdpa", "literal", line, col), tier="attn")
        return None
    if name.startswith("flash_attn") and ("func" in name or top == "flash_attn"):
        pats.emit("attention", V("flash", "literal", line, col), tier="attn")
        return None
    if name == "softmax":
        text = ev.src(node)
        if re.search(r"@|matmul|bmm|einsum|att|score", text):
            pats.emit("attention", V("eager", "derived", line, col,
                                     "attention computed by hand (softmax of q·kᵀ)"),
                      tier="fallback")
        return None
    return NO_MATCH


def any_call(pats: Patterns, c: Call) -> None:
    """`attn_implementation=` on a call nothing else recognised."""
    kwargs = c.kwargs
    # attn_implementation on anything else
    v = kwargs.get("attn_implementation")
    if v is not None and v.known and isinstance(v.value, str) and spellings.attention(v.value):
        pats.emit("attention", v, value=spellings.attention(v.value))
