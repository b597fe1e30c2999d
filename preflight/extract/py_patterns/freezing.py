"""Freezing by hand: `module.requires_grad_(False)` on the trained model or one of its parts,
as the evaluator runs it — in the entry script or in a module it follows (`train()` of a
package), in the arms the launch takes. Not every parameter trains then, and which do is not
read (`model.requires_grad_(False)` and then the projector's parameters switched back on)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from preflight.extract.py_patterns.common import FROZEN, auxiliary
from preflight.frameworks import NO_MATCH, Call, answers
from preflight.lang.python import Evaluator, current_path

if TYPE_CHECKING:
    from preflight.extract.py_patterns.collector import Patterns


@answers("requires_grad_")
def call(pats: "Patterns", ev: Evaluator, c: Call) -> Any:
    """`X.requires_grad_(False)`: X's parameters stop training, unless X is a frozen
    reference / teacher model or a helper network, which trains nothing anyway."""
    if c.name != "requires_grad_":
        return NO_MATCH
    node = c.node
    off = c.args[0] if c.args else c.kwargs.get("requires_grad")
    if off is None or not off.known or off.value is not False:
        return NO_MATCH
    func = getattr(node, "func", None)
    written = ev.src(func.value) if func is not None and hasattr(func, "value") else ""
    if not (FROZEN.search(written.lower()) or auxiliary(written)) and pats.frozen_at is None:
        pats.frozen_at = (c.line, ev.src(node)[:80], current_path())
    return NO_MATCH     # the call's value and its other readings are untouched
