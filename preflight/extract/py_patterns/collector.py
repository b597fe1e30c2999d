"""The collector: `Patterns` holds what the evaluator's walk of one file has found (facts,
model references, what was seen) and offers every call it can name to the recognisers, in
order (`_CALLS`): the generic training API of this package's modules and the frameworks'
idioms in their adapters. The first recogniser that knows a call answers for it; a call is
offered only to those whose declaration (`frameworks.answers`) admits its last name.
"""

from __future__ import annotations

import ast
import functools
from typing import Any, Callable, Optional

from preflight.lang.python import UNK, ClassVal, DCInst, Evaluator, Obj, V, current_path, plain
from preflight.extract.py_patterns import (alternatives, arguments, attention, checkpointing, data,
                                           environment, fallbacks, freezing, kernels, models,
                                           optimizers, parallel, precision, vocab)
from preflight.frameworks import (NO_MATCH, Call, accelerate, deepspeed, fire_cli, hf_trainer,
                                  lightning, litgpt, may_answer, nanogpt, peft, unsloth)
from preflight.plan import Source

#: the recognisers of a call, in the order a call is offered to them (a call one of them
#: knows is not offered to the later ones: `Trainer` is Lightning's before it is the Hugging
#: Face Trainer, `from_pretrained` of a config is no model, …)
_CALLS: tuple[Callable[["Patterns", Evaluator, Call], Any], ...] = (
    environment.env_call, models.torchvision_call, parallel.spawn_call, parallel.submitit_call, vocab.resize_call,
    environment.argparse_call, hf_trainer.parser_call, arguments.training_args_call,
    optimizers.call, precision.call, accelerate.accelerator_call, lightning.trainer_call,
    hf_trainer.trainer_call, unsloth.fast_model_call, models.pretrained_call, litgpt.from_name_call,
    models.config_call,
    peft.call, fire_cli.cli_call, data.call, parallel.call, deepspeed.initialize_call,
    parallel.mesh_call, lightning.strategy_call, checkpointing.call, attention.call,
    kernels.call, freezing.call,
)

#: offer a call only to the recognisers whose declaration (`frameworks.answers`) admits its
#: last name; off, every call goes through all of `_CALLS` (the tests compare the two)
FILTER = True


@functools.lru_cache(maxsize=8192)   # a long-lived process reads many scripts
def _filtered(name: str) -> tuple[Callable[["Patterns", Evaluator, Call], Any], ...]:
    # most calls of a script are answered by none, and asking each of 24 recognisers
    # costs more than the rest of the call's handling
    return tuple(r for r in _CALLS if may_answer(r, name))


def candidates(name: str) -> tuple[Callable[["Patterns", Evaluator, Call], Any], ...]:
    """The recognisers offered a call of this last name, in `_CALLS` order."""
    return _filtered(name) if FILTER else _CALLS


class Patterns:
    """Collects facts and model references while the evaluator walks the file."""

    def __init__(self, path: str) -> None:
        self.path = path
        #: name, V, tier, the undecided choices around the setting (alternatives.Where)
        self.facts: list[tuple[str, V, str, Optional[alternatives.Where]]] = []
        #: the evaluator walking the file (its undecided choices), set by the extractor
        self.ev: Optional[Evaluator] = None
        self.model_refs: list[dict] = []
        #: configs loaded by name (`AutoConfig.from_pretrained`) and their model reference:
        #: an attribute the script sets on one (`config.n_layer = 6`) overrides the shape
        self.config_objs: list[tuple[Any, dict]] = []
        self.lora_refs: list[dict] = []
        self.quant: list[dict] = []
        self.pending: dict[str, dict] = {}
        self.seen_training_api = False
        self.saw_precision = False
        self.saw_optimizer_step = False
        self.saw_training_args = False
        #: trainers built (`Trainer(...)`, `SFTTrainer(...)`): what consumes an `optim` string
        self.trainers = 0
        #: the script steps an optimizer of its own, not the one an `optim` string names
        self.own_optimizer = False
        #: a loss that keeps no full logits (Liger), where it was asked for
        self.fused_loss: Optional[dict] = None
        self.unbound = False
        #: `model.resize_token_embeddings(...)`: a "resize" model ref, finished in `finish`
        self.resize: Optional[dict] = None
        #: where torch autocast is entered (its dtype is the compute's, not the weights')
        self.autocast_at: Optional[tuple[int, int]] = None
        #: the first `X.requires_grad_(False)` of the trained model or a part of it the
        #: evaluator ran, in any file it followed: (line, statement, path or None)
        self.frozen_at: Optional[tuple[int, str, Optional[str]]] = None

    # ----------------------------------------------------------------- emission
    def emit(self, name: str, v: V, tier: str = "api", reason: Optional[str] = None,
             value: Any = UNK, origin: Optional[str] = None, at: Optional[ast.AST] = None) -> None:
        """Record a fact. `value`/`origin` override the V's; `at` overrides its position."""
        if value is not UNK or origin is not None or reason or at is not None:
            line, col = (at.lineno, at.col_offset + 1) if at is not None else (v.line, v.col)
            # the value's own file: None is the file being analysed, which a V made
            # while following a call into another module would otherwise take for that
            # module (`train(attn_implementation="flash_attention_2")` in the entry)
            nv = V(v.value if value is UNK else value, origin or v.origin, line, col,
                   reason if reason is not None else v.reason, v.default,
                   (v.path if v.path is not None else self.path) if at is None else None)
            if not v.known and value is not UNK:
                nv.origin = origin or "derived"
            v = nv
        if self.unbound and not v.known and name != "model" and \
                "parameter `" in (v.reason or ""):
            # a helper never called from the entry point, walked with unknown parameters:
            # its known settings count, its unknowns are only noise
            return
        self.facts.append((name, v, tier, alternatives.where(self.ev)))

    def src(self, v: Any) -> dict:
        if isinstance(v, V):
            return Source(path=v.path or self.path, line=v.line, col=v.col)
        return Source(path=current_path() or self.path, line=getattr(v, "lineno", 0),
                      col=getattr(v, "col_offset", -1) + 1)

    # ----------------------------------------------------------------- hooks
    def on_pending(self, ev: Evaluator, name: str, cur: V, rhs: V, st: ast.AST) -> None:
        self.pending[name] = {"value": plain(cur), "op": {"FloorDiv": "//", "Div": "/",
                                                          "Mult": "*", "Add": "+", "Sub": "-"}
                              .get(type(st.op).__name__, type(st.op).__name__),
                              "by": rhs.reason, "line": st.lineno, "col": st.col_offset + 1}

    def on_exec(self, ev: Evaluator, arg: V, node: ast.Call) -> None:
        nanogpt.configurator_exec(self, ev, arg, node)

    def on_field_set(self, ev: Evaluator, inst: DCInst, attr: str, val: V, node: ast.AST) -> None:
        arguments.on_field_set(self, ev, inst, attr, val)

    def on_obj_attr_set(self, ev: Evaluator, obj: Any, attr: str, val: V) -> None:
        for o, ref in self.config_objs:
            if o is obj and not attr.startswith("_"):
                ref.setdefault("overrides", {})[attr] = plain(val)

    def on_dataclass(self, ev: Evaluator, inst: DCInst, node: ast.AST) -> None:
        arguments.on_dataclass(self, ev, inst)

    def on_class_call(self, ev: Evaluator, cls: ClassVal, args: list[V], kwargs: dict[str, V],
                      node: ast.Call) -> V:
        if optimizers.own_class(self, cls.node, node.lineno, node.col_offset + 1):
            return V(Obj(cls.name, args, kwargs, node.lineno, node.col_offset + 1), "derived",
                     node.lineno, node.col_offset + 1, f"instance of {cls.name}")
        return models.on_class_call(self, ev, cls, args, kwargs, node)

    def on_patch(self, ev: Evaluator, qual: str, node: ast.Call) -> None:
        attention.on_patch(self, ev, qual, node)

    def on_call(self, ev: Evaluator, qual: str, args: list[V], kwargs: dict[str, V],
                node: ast.Call, kwnodes: dict[str, ast.AST],
                func: Optional[V] = None) -> Optional[V]:
        c = Call(qual, args, kwargs, node, kwnodes, func)
        if qual.endswith("()") and args:
            models.model_input(self, qual[:-2], args[0])
        for recognise in candidates(c.name):
            out = recognise(self, ev, c)
            if out is not NO_MATCH:
                return out
        attention.any_call(self, c)
        models.class_call(self, ev, c)
        return None

    # ----------------------------------------------------------------- shared readers
    # what the adapters' hooks ask of the collector (an adapter never imports another one)
    def hub_model(self, ev: Evaluator, qual: str, name_v: V, kwargs: dict, node: ast.Call) -> None:
        models.hub_model(self, ev, qual, name_v, kwargs, node)

    def bnb(self, o: Any, at: V) -> None:
        peft.bnb(self, o, at)

    def lora(self, kwargs: dict, node: ast.AST, via: Optional[V] = None) -> None:
        peft.lora(self, kwargs, node, via)

    def deepspeed_dict(self, c: V) -> None:
        deepspeed.deepspeed_dict(self, c)

    def fsdp_strategy(self, s: Optional[V], line: int, col: int, default_reason: str) -> None:
        parallel.fsdp_strategy(self, s, line, col, default_reason)

    def optim_string(self, v: V) -> None:
        optimizers.optim_string(self, v)

    def given_optimizer(self, opt: V, line: int, col: int) -> None:
        optimizers.given_optimizer(self, opt, line, col)

    # ----------------------------------------------------------------- the end
    def finish(self, ev: Evaluator) -> None:
        """Fallbacks: module-level config names (nanoGPT style), hand-written attention,
        what a training script without any precision/LoRA/checkpointing setting implies.
        Settings made under undecided choices are settled first (`alternatives`)."""
        alternatives.settle(self)
        optimizers.unused_optim_string(self)
        fallbacks.finish(self, ev)
