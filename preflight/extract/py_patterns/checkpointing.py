"""Activation checkpointing: `gradient_checkpointing_enable()` (on or off under a condition),
`torch.utils.checkpoint`, checkpoint wrappers."""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING, Any

from preflight.lang.python import Evaluator, V, unk
from preflight.frameworks import NO_MATCH, Call, answers

if TYPE_CHECKING:
    from preflight.extract.py_patterns.collector import Patterns


#: the calls that switch a transformers model's checkpointing on (`_set_gradient_checkpointing`
#: is the private one `gradient_checkpointing_enable` calls, which some repositories call
#: on the language model of a multimodal one)
_ENABLE = ("gradient_checkpointing_enable", "enable_gradient_checkpointing",
           "_set_gradient_checkpointing")


@answers("gradient_checkpointing_enable", "enable_gradient_checkpointing",
         "_set_gradient_checkpointing", "checkpoint",
         "checkpoint_sequential", "checkpoint_wrapper", "apply_activation_checkpointing")
def call(pats: Patterns, ev: Evaluator, c: Call) -> Any:
    """A call that turns activation checkpointing on."""
    name, qual, recv, line, col = c.name, c.qual, c.recv, c.line, c.col
    if name == "_set_gradient_checkpointing":
        on = c.args[0] if c.args else c.kwargs.get("enable")
        if on is not None and on.known and on.value is False:
            return None         # `_set_gradient_checkpointing(False)`: switched off
    known = name in _ENABLE or (
        name in ("checkpoint", "checkpoint_sequential") and "checkpoint" in recv) or name in (
        "checkpoint_wrapper", "apply_activation_checkpointing")
    if known and _policy(c):
        # a selective checkpointing policy saves what it chooses: not full checkpointing
        pats.emit("activation_checkpointing", unk(
            f"{name}(..., context_fn=...): a selective checkpointing policy decides what each "
            "block keeps, which is not read statically (torchtitan's op-level policy is "
            "`--checkpointing selective_op`)", line, col))
        return None
    if name in _ENABLE:
        if ev.conds:
            # `if args.grad_ckpt: model.gradient_checkpointing_enable()`: on or off
            u = unk(f"{name}() runs only if {ev.conds[-1]}, not known statically",
                    line, col)
            u.default = {"alternatives": ["full", None]}
            pats.emit("activation_checkpointing", u)
        else:
            pats.emit("activation_checkpointing", V("full", "literal", line, col))
        return None
    if name in ("checkpoint", "checkpoint_sequential") and "checkpoint" in recv or \
            name in ("checkpoint_wrapper", "apply_activation_checkpointing"):
        if name == "checkpoint" and "utils" not in qual and not qual.startswith("?checkpoint"):
            if not re.search(r"torch|checkpoint$", recv):
                return None
        pats.emit("activation_checkpointing", V("full", "literal", line, col,
                                                f"{name}(...) in the model code"))
        return None
    return NO_MATCH


def _policy(c: Call) -> bool:
    """Whether the call passes a `context_fn` (selective checkpointing), itself or in
    `gradient_checkpointing_kwargs={...}` / `checkpoint_fn=partial(..., context_fn=...)`."""
    if "context_fn" in c.kwnodes:
        return True
    return any(isinstance(n, ast.Constant) and n.value == "context_fn"
               or isinstance(n, ast.keyword) and n.arg == "context_fn"
               for v in c.kwnodes.values() for n in ast.walk(v))
