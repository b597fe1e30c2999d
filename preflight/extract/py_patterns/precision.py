"""Precision: torch autocast and its dtype / device, gradient scalers, casts of the model's
weights (`.half()`, `.to(dtype)`, `set_default_dtype`), FSDP's `MixedPrecision` policies."""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING, Any

from preflight.lang.python import Dotted, Evaluator, V, unk
from preflight.extract.py_patterns.common import (FROZEN, auxiliary, dtype_of, kind, last,
                                                  submodule_var)
from preflight.facts import spellings
from preflight.frameworks import NO_MATCH, Call, answers

if TYPE_CHECKING:
    from preflight.extract.py_patterns.collector import Patterns


@answers("autocast", "GradScaler", "ShardedGradScaler", "half", "bfloat16", "to",
         "set_default_dtype", "MixedPrecision", "MixedPrecisionPolicy")
def call(pats: Patterns, ev: Evaluator, c: Call) -> Any:
    """autocast, GradScaler, casts of the model, default dtype, MixedPrecision policies."""
    name, qual, recv, line, col = c.name, c.qual, c.recv, c.line, c.col
    args, kwargs, node, kwnodes, kw = c.args, c.kwargs, c.node, c.kwnodes, c.kw
    if name == "autocast":
        pats.saw_precision = True
        if pats.autocast_at is None:
            pats.autocast_at = (line, col)
        en = kw("enabled")
        if en is not None and en.known and en.value is False:
            return None
        # the device's op lists decide what some modules save (CPU autocast keeps pow
        # in 16 bits)
        where = (V("cuda", "literal", line, col) if "cuda.amp" in qual else
                 V("cpu", "literal", line, col) if "cpu.amp" in qual else
                 kw("device_type", 0))
        if where is not None and where.known and where.value in ("cuda", "cpu"):
            pats.emit("autocast_device", where)
        d = kw("dtype")
        if d is None and "cuda.amp" not in qual and len(args) > 1:
            d = args[1]
        if d is not None:
            if d.known and dtype_of(d):
                mp = dtype_of(d)
                pats.emit("mixed_precision", d, value=mp if mp != "fp32" else "none",
                          reason=f"torch autocast dtype at line {line}"
                          if d.origin != "literal" else None)
            elif not d.known:
                pats.emit("mixed_precision", unk(f"autocast dtype: {d.reason}", line, col,
                                                 d.default))
            return None
        dev = kw("device_type", 0) if "cuda.amp" not in qual else V("cuda")
        if dev is not None and dev.known and dev.value == "cpu":
            pats.emit("mixed_precision", V("bf16", "default", line, col,
                                           "CPU autocast defaults to bfloat16"))
        else:
            pats.emit("mixed_precision", V("fp16", "default", line, col,
                                           "CUDA autocast defaults to float16"))
        return None
    if name in ("GradScaler", "ShardedGradScaler"):
        pats.saw_precision = True
        en = kw("enabled")
        if en is None or (en.known and en.value):
            pats.emit("mixed_precision", V("fp16", "derived", line, col,
                                           "a GradScaler scales fp16 losses"), tier="hint")
        return None
    if name in ("half", "bfloat16", "to") and isinstance(node.func, ast.Attribute) \
            and (FROZEN.search(ev.src(node.func.value).lower())
                 or auxiliary(ev.src(node.func.value))):
        # a reference / reward / teacher model, or a helper network (the latent
        # autoencoder, the prompt encoder), is not trained: its dtype is not the trained
        # weights' (and no optimizer updates it)
        return None
    if name in ("half", "bfloat16") and not args and modelish(pats, recv, ev, node):
        pats.saw_precision = True
        pats.emit("param_dtype", V("fp16" if name == "half" else "bf16", "literal", line, col))
        pats.emit("model_cast", V(True, "literal", line, col))
        return None
    if name == "to" and modelish(pats, recv, ev, node):
        dev = args[0] if args else kwargs.get("device")
        where = kind(dev) if dev is not None and dev.known else None
        if isinstance(where, str) and where.split(":")[0] in ("cpu", "cuda"):
            # where the model (and its optimizer) runs: `model.to("cpu")`, `.to(device)`
            pats.emit("device", dev, value=where.split(":")[0], at=node)
        for a, an in zip(list(args) + [kwargs.get("dtype")],
                         list(node.args) + [getattr(kwnodes.get("dtype"), "value", None)]):
            if a is not None and a.known and isinstance(a.value, Dotted) and dtype_of(a):
                pats.saw_precision = True
                pats.emit("param_dtype", a, value=dtype_of(a), at=node)
                # a cast of the whole model casts its floating-point buffers too
                pats.emit("model_cast", a, value=True, at=node)
            elif a is not None and not a.known and an is not None and \
                    "dtype" in ev.src(an).lower():
                # `model.to(ptdtype)` with a dtype only known at run time
                pats.saw_precision = True
                pats.emit("param_dtype", unk(f"model cast to {ev.src(an)}: {a.reason}",
                                             line, col, a.default))
        return None
    if name == "set_default_dtype" and args:
        # the default dtype is the weights' only for a model built after it: a reset once
        # the model exists (`set_default_dtype(torch.float32)` after building it in bf16)
        # leaves its weights as they were
        if dtype_of(args[0]) and not model_built(pats):
            pats.saw_precision = True
            pats.emit("param_dtype", args[0], value=dtype_of(args[0]))
        return None
    if name == "MixedPrecision" or name == "MixedPrecisionPolicy":
        d = kw("param_dtype", 0)
        mp = spellings.autocast_dtype(kind(d)) if d is not None and d.known else None
        if mp:
            pats.saw_precision = True
            pats.emit("mixed_precision", d, value=mp)
        elif d is not None and not d.known:
            # a policy whose compute dtype is chosen at run time (`param_dtype=dtypes[cfg.x]`):
            # mixed precision is configured, its dtype is not known — never "none" (the
            # weights' own dtype is not the policy's: FSDP keeps the sharded ones as built)
            pats.emit("mixed_precision", unk(f"{name}: its param_dtype is not known "
                                             f"statically ({d.reason})", line, col))
        return None
    return NO_MATCH


def model_built(pats: Patterns) -> bool:
    """Whether the script has built (or loaded) a model by now (a config read by name,
    `LlamaConfig.from_name("7B")`, builds none)."""
    return any(isinstance(r, dict) and r.get("kind") in ("class", "torchvision", "hub") and
               not _names_config(r) for r in pats.model_refs)


def _names_config(ref: dict) -> bool:
    owner = str(ref.get("qual") or "").rsplit(".", 1)[0] if ref.get("qual") else ""
    return str(ref.get("class") or "").endswith("Config") or owner.endswith("Config")


#: attributes and methods of a model that are the model as a whole (a wrapper's inner
#: model, a decoder without its head, a cast or move): anything else reached from the model
#: (`model.lm_head`, `model.get_vision_tower()`) is one of its parts
_WHOLE = frozenset({"module", "model", "base_model", "get_model", "get_base_model", "_orig_mod",
                    "to", "cuda", "cpu", "half", "bfloat16", "float", "double", "train", "eval",
                    "requires_grad_", "_fsdp_wrapped_module", "transformer"})


#: a class whose instance is a model (a transformers `…ForCausalLM`, `GPT2LMHeadModel`, a `Net`)
_MODEL_CLASS = re.compile(r"^[A-Z]\w*(For[A-Z]\w+|LMHeadModel|Model|Net|GPT|Transformer)$")


def _part_of_model(recv: str, written: str) -> bool:
    """Is a cast's receiver a part of the model rather than the model: an attribute or a
    method's result reached from it (`vision_tower = model.get_vision_tower();
    vision_tower.to(torch.bfloat16)`, `model.lm_head.float()`)? `recv` is the receiver as
    evaluated (`AutoModelForCausalLM.from_pretrained().get_vision_tower()`), `written` as
    written (`model.lm_head`)."""
    segs = [x.removesuffix("()") for x in recv.lstrip("?").split(".")]
    built = max((i for i, x in enumerate(segs)
                 if x in ("from_pretrained", "from_config", "from_name") or _MODEL_CLASS.search(x)),
                default=None)
    if built is not None and built + 1 < len(segs):
        return any(x not in _WHOLE for x in segs[built + 1:])
    # as written, from the model's own name (`model.lm_head`, `self.net.encoder`); a call on
    # another object (`accelerator.unwrap_model(model)`) says nothing of parts
    words = [x.split("(", 1)[0] for x in written.split(".")]
    if words[:1] == ["self"]:
        words = words[1:]
    if len(words) < 2 or not re.search(r"model|\bnet\b|network", words[0].lower()):
        return False
    return any(x and x not in _WHOLE for x in words[1:])


def modelish(pats: Patterns, recv: str, ev: Evaluator, node: ast.AST) -> bool:
    """Whether a method's receiver is a model: by its name as written (`model.to`), or by
    what it evaluates to — a transformers model class (`LlamaForCausalLM(config)`) or a
    class the job instantiates as its model (`M().bfloat16()`)."""
    written = recv.lower().lstrip("?")
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        on = node.func.value
        if isinstance(on, ast.Name) and submodule_var(ev, node, on.id):
            # `for name, module in model.named_modules(): module.to(torch.float32)`: a
            # part of the model is cast, not the model
            return False
        on_src = ev.src(on)
        if _part_of_model(recv, on_src):
            return False
        written += " " + on_src.lower()
    if re.search(r"model|\bnet\b|network|module", written):
        return True
    if "from_pretrained" in recv or "from_config" in recv:
        return True
    cls = last(recv.lstrip("?").removesuffix("()"))
    if re.search(r"(For[A-Z]\w+|LMHeadModel|Model)$", cls):
        return True
    return any(r.get("kind") == "class" and r.get("class") == cls for r in pats.model_refs)
