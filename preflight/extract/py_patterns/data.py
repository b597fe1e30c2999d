"""The batch and the sequence: a training `DataLoader`'s batch size (not an evaluation one's)
and a tokenizer's `max_length`."""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING, Any

from preflight.lang.python import Evaluator
from preflight.frameworks import NO_MATCH, Call

if TYPE_CHECKING:
    from preflight.extract.py_patterns.collector import Patterns

_EVALISH = re.compile(r"eval|valid|\bval\b|val_|_val|test|dev_", re.I)


def evalish(pats: Patterns, ev: Evaluator, node: ast.Call, args: list) -> bool:
    """Whether a DataLoader feeds evaluation (by its target's or dataset's name)."""
    st = ev.cur_stmt
    text = ""
    if isinstance(st, (ast.Assign, ast.AnnAssign)):
        tg = st.targets if isinstance(st, ast.Assign) else [st.target]
        text = " ".join(ev.src(t) for t in tg)
    if node.args:
        text += " " + ev.src(node.args[0])
    return bool(_EVALISH.search(text))


def call(pats: Patterns, ev: Evaluator, c: Call) -> Any:
    """`DataLoader(batch_size=)`; a tokenizer's `max_length`."""
    name, recv, args, kwargs, node, kw = c.name, c.recv, c.args, c.kwargs, c.node, c.kw
    if name == "DataLoader":
        pats.seen_training_api = True
        b = kw("batch_size", 1)
        if b is not None and not evalish(pats, ev, node, args):
            if b.known and b.value is None:
                return None
            pats.emit("micro_batch", b, tier="dataloader")
        return None
    if re.search(r"tokeni[sz]er", recv, re.I) or re.search(r"tokeni[sz]er", name, re.I):
        ml = kwargs.get("max_length")
        if ml is not None and (not ml.known or isinstance(ml.value, int)):
            pats.emit("seq_len", ml, tier="tokenizer")
        return None
    return NO_MATCH
