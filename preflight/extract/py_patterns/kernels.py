"""Liger-Kernel's patches in a script: `apply_liger_kernel_to_<model>(…)` switches its fused
linear cross-entropy on (the `loss_kernel` fact, liger) unless the call turns it off, and its
`rope` / `rms_norm` / `swiglu` keywords say the layer kernels (the `liger` fact's layers)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from preflight.lang.python import Evaluator, V
from preflight.frameworks import NO_MATCH, Call, answers

if TYPE_CHECKING:
    from preflight.extract.py_patterns.collector import Patterns

#: the layer keywords of Liger's patch functions (each on by default), as the fact names them
_LAYERS = (("rms_norm", "rms_norm"), ("swiglu", "swiglu"), ("rope", "rope"))


def _said(v: Any) -> Any:
    """A keyword's literal True / False, else None (not given, or not known statically)."""
    v = v.value if isinstance(v, V) and v.known else v
    return v if isinstance(v, bool) else None


@answers(prefixes=("apply_liger_kernel_to_",))
def call(pats: Patterns, ev: Evaluator, c: Call) -> Any:
    """`apply_liger_kernel_to_qwen2()`, `apply_liger_kernel_to_llama(rms_norm=False)`."""
    if not c.name.startswith("apply_liger_kernel_to_") or ev.conds:
        return NO_MATCH
    if _said(c.kw("fused_linear_cross_entropy")) is False:
        return None
    pats.emit("loss_kernel", V("liger", "literal", c.line, c.col,
                               f"{c.name}(): Liger-Kernel's fused linear cross-entropy"))
    off = [name for kw, name in _LAYERS if _said(c.kw(kw)) is False]
    if off:
        layers = [name for _, name in _LAYERS if name not in off]
        pats.emit("liger", V({"layers": layers}, "literal", c.line, c.col,
                             f"{c.name}(): " + ", ".join(f"{k}=False" for k in off)))
    return None
