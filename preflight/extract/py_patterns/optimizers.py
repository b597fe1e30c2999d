"""Optimizers: the class a script builds (torch, bitsandbytes, apex, DeepSpeed, … by their
vocabulary spellings), its momentum / AdamW mode, fused steps, and a named `optim` string."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any, Optional

from preflight.extract.py_patterns import own_optimizers
from preflight.lang.python import Dotted, Evaluator, V, current_path, unk
from preflight.facts import spellings
from preflight.frameworks import NO_MATCH, Call, answers

if TYPE_CHECKING:
    from preflight.extract.py_patterns.collector import Patterns

OPTIMIZER_MODULES = ("torch.optim", "bitsandbytes", "bnb", "transformers", "deepspeed", "apex",
                     "lion_pytorch", "torch_optimizer", "timm", "came_pytorch", "?", "")


#: the tier of an optimizer named by a string: what a trainer builds unless it is handed
#: an optimizer of the script's own (`Trainer(optimizers=(opt, None))`, `given_optimizer`)
NAMED = "named"


def optim_string(pats: Patterns, v: V) -> None:
    """An optimizer named by a string (`optim="adamw_torch"`)."""
    if v.known and isinstance(v.value, str):
        pats.emit("optimizer", v, value=spellings.optimizer_name(v.value) or "other", tier=NAMED)
    elif not v.known:
        pats.emit("optimizer", v, tier=NAMED)


def unused_optim_string(pats: Patterns) -> None:
    """An `optim` string no trainer reads (arguments built, the script's own loop steps an
    optimizer it builds itself) is not the optimizer: the class built is."""
    named = [f for f in pats.facts if f[0] == "optimizer" and f[2] == NAMED]
    built = [f for f in pats.facts if f[0] == "optimizer" and f[2] == "api"]
    if named and built and not pats.trainers:
        pats.facts = [f for f in pats.facts if not (f[0] == "optimizer" and f[2] == NAMED)]
        pats.own_optimizer = True


def given_optimizer(pats: Patterns, opt: V, line: int, col: int) -> None:
    """A trainer handed the script's own optimizer object: a string naming one (`optim=`)
    is not what runs. The object's own class said what it is where it was built; when it
    said nothing, the optimizer is unknown."""
    if not opt.known or opt.value is None:
        return
    pats.facts = [f for f in pats.facts if not (f[0] == "optimizer" and f[2] == NAMED)]
    pats.own_optimizer = True
    if not any(f[0] == "optimizer" for f in pats.facts):
        pats.emit("optimizer", unk("the trainer is handed an optimizer built by the script "
                                   "(`optimizers=`), whose class is not read", line, col))


#: bitsandbytes' generic classes take their variant as arguments: (optim_bits, is_paged) →
#: the vocabulary's optimizer, for AdamW / Adam (`bnb.optim.AdamW(optim_bits=32, is_paged=True)`)
_BNB_ADAM = {(32, False): None, (8, False): "adamw_8bit", (32, True): "paged_adamw_32bit",
             (8, True): "paged_adamw_8bit"}


def _bnb_variant(pats: Patterns, c: Call, val: str) -> Optional[str]:
    """A bitsandbytes optimizer's variant from its `optim_bits` / `is_paged` arguments;
    None after emitting an unknown when one of them is known only at run time."""
    if c.name not in ("AdamW", "Adam"):
        return val
    bits, paged = c.kw("optim_bits"), c.kw("is_paged")
    if bits is None and paged is None:
        return val
    for a, what in ((bits, "optim_bits"), (paged, "is_paged")):
        if a is not None and not a.known:
            u = unk(f"bitsandbytes {c.name}({what}=...): {a.reason}", c.line, c.col)
            pats.emit("optimizer", u)
            return None
    key = (8 if bits is not None and bits.value == 8 else 32,
           bool(paged is not None and paged.value))
    return _BNB_ADAM[key] or val


def own_class(pats: Patterns, node: ast.ClassDef, line: int, col: int) -> bool:
    """A class of the repository built: when it is an optimizer, the optimizer is `other`
    and its state per parameter is read from the class (`own_optimizers`)."""
    if not own_optimizers.is_optimizer_class(node):
        return False
    n, why = own_optimizers.state_count(node)
    pats.emit("optimizer", V("other", "literal", line, col,
                             f"{node.name}, an optimizer class of the repository"))
    pats.emit("optimizer_states", V(n, "derived", line, col, why) if n is not None
              else unk(why, line, col))
    pats.seen_training_api = True
    return True


def _named_class(pats: Patterns, ev: Evaluator, c: Call) -> bool:
    """An optimizer class that no vocabulary table names: the repository's own (read), or
    one whose definition is not read but whose name extends a known optimizer."""
    if c.qual.startswith("?") or c.name in ("step", "create_optimizer"):
        return False
    node = ev.class_definition(c.qual)
    if node is not None:
        return own_class(pats, node, c.line, c.col)
    if c.top in OPTIMIZER_MODULES:
        return False
    base = own_optimizers.named_like_optimizer(c.name)
    if base is None:
        return False
    pats.emit("optimizer", V("other", "literal", c.line, c.col,
                             f"{c.name} (a variant of {base} the vocabulary does not name)"))
    pats.emit("optimizer_states", unk(f"{c.name} is defined outside the files read: its state "
                                      f"per parameter is not known", c.line, c.col))
    pats.seen_training_api = True
    return True


def _named_by(c: Call, val: str) -> V:
    """The optimizer a call builds, said where its class was chosen: the literal call, or
    the flag, default or config value that picked the class at run time
    (`getattr(torch.optim, args.optim)(...)`)."""
    f = c.func
    if f is not None and f.known and isinstance(f.value, Dotted) and f.origin != "literal":
        return V(val, f.origin, f.line or c.line, f.col or c.col, f.reason)
    return V(val, "literal", c.line, c.col)


@answers("create_optimizer", "step", "ZeroRedundancyOptimizer", *spellings.OPTIMIZER_CLASSES,
         suffixes=tuple(spellings.OPTIMIZER_CLASSES) + own_optimizers.NAME_SUFFIXES)
def call(pats: Patterns, ev: Evaluator, c: Call) -> Any:
    """An optimizer class built; `create_optimizer`; `optimizer.step()`."""
    name, qual, recv, top, line, col, kw = c.name, c.qual, c.recv, c.top, c.line, c.col, c.kw
    if top not in OPTIMIZER_MODULES and _named_class(pats, ev, c):
        return None
    if name == "ZeroRedundancyOptimizer":
        # ZeRO-1 of torch.distributed: the state is `optimizer_class`'s, sharded
        oc = kw("optimizer_class", 1)
        inner = spellings.optimizer_class(oc.value.name.rsplit(".", 1)[-1]) \
            if oc is not None and oc.known and isinstance(oc.value, Dotted) else None
        pats.emit("optimizer", V(inner, "literal", line, col) if inner else
                  unk("ZeroRedundancyOptimizer of an optimizer_class not read", line, col))
        pats.seen_training_api = True
        return None
    if spellings.optimizer_class(name) and (
            top in OPTIMIZER_MODULES or qual.startswith("?")
            or any(m in qual for m in ("optim", "bnb", "bitsandbytes"))):
        val = spellings.optimizer_class(name)
        if val == "sgd":
            m = kw("momentum", 2)
            if m is not None and m.known and isinstance(m.value, (int, float)) and m.value > 0:
                val = "sgd_momentum"
            elif m is not None and not m.known:
                pats.emit("optimizer", unk(f"SGD momentum {m.reason}", line, col))
                return None
        if name == "FusedAdam":
            m = kw("adam_w_mode")
            if m is not None and m.known and m.value is False:
                val = "adam"
        if "bnb" in qual or "bitsandbytes" in qual:
            val = _bnb_variant(pats, c, val)
            if val is None:
                return None
        pats.emit("optimizer", _named_by(c, val))
        for k in ("fused", "capturable"):
            f = kw(k)
            if f is not None and f.known and f.value is True:
                # step counts on the parameters' device (torch.optim)
                pats.emit("optimizer_fused", V(True, "literal", line, col))
        pats.seen_training_api = True
        return None
    if spellings.optimizer_class(name) and top and not qual.startswith("?"):
        # a class of the vocabulary from a package not listed above (`from muon import Muon`)
        pats.emit("optimizer", V(spellings.optimizer_class(name), "literal", line, col))
        pats.seen_training_api = True
        return None
    if name == "create_optimizer" and "optim" in qual:
        return None
    if name == "step" and "optim" in recv.lower():
        pats.saw_optimizer_step = True
        every = _stepped_every(ev, c.node)
        if every is not None:
            # `if (step + 1) % args.accum == 0: optimizer.step()`: one step per N batches
            n = ev.ev(every)
            if n.known and isinstance(n.value, int) and not isinstance(n.value, bool):
                if n.value >= 1:
                    pats.emit("grad_accum", n, reason=f"optimizer.step() once every "
                                                      f"`{ev.src(every)}` = {n.value} batches "
                                                      f"(line {c.node.lineno})")
            elif not n.known or not isinstance(n.value, (int, float)):
                why = n.reason if not n.known else f"{type(n.value).__name__} value"
                pats.emit("grad_accum", unk(f"optimizer.step() once every `{ev.src(every)}` "
                                            f"batches, not known statically: {why}",
                                            n.line or c.node.lineno, n.col or 1,
                                            n.default if not n.known else None))
        return None
    return NO_MATCH


def _stepped_every(ev: Evaluator, call: ast.AST) -> Optional[ast.expr]:
    """N of the `if` that guards an optimizer step with `i % N == 0` (or `not i % N`,
    `i % N == N - 1`): the step taken once every N batches, gradient accumulation. None
    when the step is not so guarded, a loop or a function lies between, or the call is not
    in the file being read. The guard is the innermost `if` being run whose body holds the
    call (`Evaluator.if_stack`)."""
    if current_path() is not None:
        return None
    line = getattr(call, "lineno", 0)
    for st, loops, depth in reversed(getattr(ev, "if_stack", ())):
        if loops != ev.loops or depth != ev.depth:
            return None          # a loop or a call of a function between the `if` and the step
        if st.body and st.body[0].lineno <= line <= (st.body[-1].end_lineno or line):
            return _modulus(st.test)
    return None


def _modulus(test: ast.expr) -> Optional[ast.expr]:
    if isinstance(test, ast.BoolOp):
        # `(i + 1) % N == 0 or i == len(loader) - 1`: the last batch steps too
        return next((n for n in map(_modulus, test.values) if n is not None), None)
    t = test
    if isinstance(t, ast.UnaryOp) and isinstance(t.op, ast.Not) and \
            isinstance(t.operand, ast.BinOp) and isinstance(t.operand.op, ast.Mod):
        return t.operand.right                                  # `not i % N`
    if isinstance(t, ast.Compare) and len(t.ops) == 1 and isinstance(t.ops[0], ast.Eq) and \
            isinstance(t.left, ast.BinOp) and isinstance(t.left.op, ast.Mod):
        rhs = t.comparators[0]
        n = t.left.right
        if isinstance(rhs, ast.Constant) and rhs.value == 0:
            return n                                            # `i % N == 0`
        if isinstance(rhs, ast.BinOp) and isinstance(rhs.op, ast.Sub) and \
                ast.dump(rhs.left) == ast.dump(n) and isinstance(rhs.right, ast.Constant) \
                and rhs.right.value == 1:
            return n                                            # `i % N == N - 1`
    return None
