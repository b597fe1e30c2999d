"""peft and bitsandbytes: `LoraConfig(r=, lora_alpha=, target_modules=)` however the targets
are written (a list, one name, a regex, `all-linear`, a comma list or `'[q_proj,v_proj]'`
from a command line), `get_peft_model` (its `autocast_adapter_dtype`, True by default:
fp32 adapters over a 16-bit base), `prepare_model_for_kbit_training` (which turns
gradient checkpointing on by default), and 4 / 8-bit loading (`BitsAndBytesConfig(
load_in_4bit=True, bnb_4bit_use_double_quant=…)`, `load_in_8bit=True`).
"""

from __future__ import annotations

import ast
from typing import Any, Optional

from preflight.lang.python import DCInst, Obj, V, plain, unk
from preflight.frameworks import NO_MATCH, Call, Example, Framework, answers, lora_targets

_QLORA = """\
import torch
from peft import LoraConfig, get_peft_model, prepare_model_for_kbit_training
from transformers import AutoModelForCausalLM, BitsAndBytesConfig

bnb = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4",
                         bnb_4bit_compute_dtype=torch.bfloat16)
model = AutoModelForCausalLM.from_pretrained("mistralai/Mistral-7B-v0.1", quantization_config=bnb)
model = prepare_model_for_kbit_training(model)
config = LoraConfig(r=64, lora_alpha=16, target_modules=["q_proj", "k_proj", "v_proj", "o_proj"])
model = get_peft_model(model, config)
optimizer = torch.optim.AdamW(model.parameters(), lr=2e-4)
"""


class Peft(Framework):
    name = "peft"
    title = "peft / bitsandbytes"
    reads = (
        "`LoraConfig(r=, lora_alpha=, target_modules=, modules_to_save=)`, TRL's "
        "`get_peft_config(model_args)`, `--lora_r` / `--lora_target_modules` flags (lists, "
        "comma lists, `'[q_proj,v_proj]'`, `all-linear`) when `--use_peft` / `--use_lora` / "
        "`--lora_enable` / `--q_lora` turns the adapter on, the base's bits from `--bits 4|8`; "
        "targets a script computes are unknown, but for the `find_all_linear_names(model)` "
        "idiom (a loop over `named_modules()` keeping the Linear classes, `lm_head` left "
        "out): peft's `all-linear`",
        "an adapter applied only in an `if` arm the launch does not take: no adapter",
        "`BitsAndBytesConfig(load_in_4bit=, load_in_8bit=, bnb_4bit_use_double_quant=)`, "
        "`from_pretrained(load_in_4bit=True)`",
        "`prepare_model_for_kbit_training(model)`: gradient checkpointing on unless "
        "`use_gradient_checkpointing=False`",
    )
    not_read = ("adapters loaded from a saved `adapter_config.json` (`PeftModel.from_pretrained`)",
                "DoRA / AdaLoRA / IA3 extra parameters")


_FIRE = """\
import fire
from peft import LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM


def train(base_model: str = "huggyllama/llama-7b", lora_r: int = 8, lora_alpha: int = 16,
          lora_target_modules: list = ["q_proj", "v_proj"]):
    model = AutoModelForCausalLM.from_pretrained(base_model)
    config = LoraConfig(r=lora_r, lora_alpha=lora_alpha, target_modules=lora_target_modules)
    model = get_peft_model(model, config)


if __name__ == "__main__":
    fire.Fire(train)
"""

#: int8 LoRA with the Trainer: the preparation turns checkpointing on and the Trainer's
#: `gradient_checkpointing=False` default leaves it on; the tokenizer closure reads the
#: function's `cutoff_len`
_INT8 = """\
import fire
import transformers
from peft import LoraConfig, get_peft_model, prepare_model_for_int8_training


def train(base_model: str = "huggyllama/llama-7b", micro_batch_size: int = 4,
          cutoff_len: int = 256):
    model = transformers.AutoModelForCausalLM.from_pretrained(base_model, load_in_8bit=True)
    tokenizer = transformers.AutoTokenizer.from_pretrained(base_model)

    def tokenize(prompt):
        return tokenizer(prompt, truncation=True, max_length=cutoff_len)

    model = prepare_model_for_int8_training(model)
    model = get_peft_model(model, LoraConfig(r=8, lora_alpha=16, target_modules=["q_proj", "v_proj"]))
    trainer = transformers.Trainer(
        model=model,
        args=transformers.TrainingArguments(per_device_train_batch_size=micro_batch_size,
                                            fp16=True, output_dir="out"),
    )
    trainer.train()


if __name__ == "__main__":
    fire.Fire(train)
"""

ADAPTER = Peft()
_GUANACO = """\
import argparse
from dataclasses import dataclass, field

import bitsandbytes as bnb
import torch
import transformers
from peft import LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM, BitsAndBytesConfig


@dataclass
class ModelArguments:
    model_name_or_path: str = field(default="huggyllama/llama-7b")
    bits: int = field(default=4)
    lora_r: int = field(default=64)


def find_all_linear_names(args, model):
    cls = bnb.nn.Linear4bit if args.bits == 4 else torch.nn.Linear
    names = set()
    for name, module in model.named_modules():
        if isinstance(module, cls):
            parts = name.split(".")
            names.add(parts[0] if len(parts) == 1 else parts[-1])
    if "lm_head" in names:
        names.remove("lm_head")
    return list(names)


def train():
    parser = transformers.HfArgumentParser((ModelArguments, transformers.TrainingArguments))
    model_args, training_args, extra = parser.parse_args_into_dataclasses(
        return_remaining_strings=True)
    args = argparse.Namespace(**vars(model_args), **vars(training_args))
    model = AutoModelForCausalLM.from_pretrained(
        args.model_name_or_path,
        quantization_config=BitsAndBytesConfig(load_in_4bit=args.bits == 4),
        torch_dtype=torch.bfloat16 if args.bf16 else torch.float32)
    modules = find_all_linear_names(args, model)
    model = get_peft_model(model, LoraConfig(r=args.lora_r, lora_alpha=16,
                                             target_modules=modules))
    for name, module in model.named_modules():
        if "norm" in name:
            module = module.to(torch.float32)
    transformers.Trainer(model=model, args=training_args).train()


train()
"""


Peft.EXAMPLES = [
    Example(title="a LoRA target list written as a list-like string on a fire command line",
            files={"finetune.py": _FIRE},
            command="python finetune.py --lora_r 16 --lora_target_modules '[q_proj,k_proj,v_proj,o_proj]'",
            facts={"lora": ({"r": 16, "alpha": 16, "targets": ["q_proj", "k_proj", "v_proj", "o_proj"],
                             "base_bits": 16}, "finetune.py:9", "cli")}),
    Example(title="QLoRA: 4-bit base, kbit preparation, LoRA on the attention projections",
            files={"qlora.py": _QLORA},
            command="python qlora.py",
            facts={"model": ("mistralai/Mistral-7B-v0.1", "qlora.py:7"),
                   "param_dtype": ("int4", "qlora.py:5"),
                   "lora": ({"r": 64, "alpha": 16, "targets": ["q_proj", "k_proj", "v_proj", "o_proj"],
                             "base_bits": 4, "modules_to_save": []}, "qlora.py:9"),
                   "activation_checkpointing": ("full", "qlora.py:8", "default"),
                   "optimizer": ("adamw", "qlora.py:11")}),
    Example(title="int8 preparation keeps checkpointing on under the Trainer's default; a "
                  "nested tokenizer reads the length from its enclosing function",
            files={"finetune.py": _INT8},
            command="python finetune.py --cutoff_len 512",
            facts={"activation_checkpointing": ("full", "finetune.py:14", "default"),
                   "seq_len": (512, "finetune.py:6", "cli"),
                   "param_dtype": ("int8", "finetune.py:8"),
                   "micro_batch": (4, "finetune.py:6", "default")}),
    Example(title="Guanaco's QLoRA script: the targets a find_all_linear_names helper lists "
                  "(every linear but lm_head: peft's all-linear), the rank from the line, "
                  "arguments gathered in an argparse.Namespace, the norms cast in a loop over "
                  "the modules (not a cast of the model)",
            files={"qlora.py": _GUANACO,
                   "run.sh": "python qlora.py --output_dir out --bf16 --lora_r 64 --bits 4\n"},
            facts={"param_dtype": ("int4", "qlora.py:37", "derived"),
                   "trainable_params": (159_907_840, "qlora.py:40", "derived"),
                   "mixed_precision": ("bf16", "run.sh:1", "cli")}),
]


# --------------------------------------------------------------------------- in a script
# `pats` is the script's fact collector, `ev` the evaluator (see `preflight.frameworks.Call`)


def bnb(pats: Any, o: Obj, at: V) -> None:
    """A `BitsAndBytesConfig(...)` (however it reached the loader): its 4 / 8-bit base
    weights, once per config object."""
    if any(q.get("obj") is o for q in pats.quant):
        return
    for k, bits in (("load_in_4bit", "int4"), ("load_in_8bit", "int8")):
        v = o.kwargs.get(k)
        if v is not None and v.known and v.value is True:
            pats.emit("param_dtype", v, value=bits,
                      reason=f"BitsAndBytesConfig({k}=True)")
            choices = list(getattr(getattr(pats, "ev", None), "choices", None) or ())
            pats.quant.append({"bits": 4 if bits == "int4" else 8,
                               "kwargs": plain(o.kwargs), "obj": o,
                               **({"choices": choices} if choices else {})})


def _assigned_call(ev: Evaluator, name: str, at: ast.AST) -> Optional[ast.Call]:
    """The call last assigned to `name` before `at`, in the function (or module) of the
    file being read that holds `at`; None when it is not a call or not found."""
    tree = getattr(ev, "tree", None)
    line = getattr(at, "lineno", 0)
    if tree is None or not line:
        return None
    scope: ast.AST = tree
    for n in ast.walk(tree):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                n.lineno <= line <= (n.end_lineno or n.lineno) and n.lineno >= getattr(scope, "lineno", 0):
            scope = n
    best: Optional[ast.Assign] = None
    for n in ast.walk(scope):
        if isinstance(n, ast.Assign) and n.lineno < line and \
                any(isinstance(t, ast.Name) and t.id == name for t in n.targets) and \
                (best is None or n.lineno > best.lineno):
            best = n
    return best.value if best is not None and isinstance(best.value, ast.Call) else None


def names_every_linear(fn: ast.FunctionDef) -> bool:
    """Whether a repository helper lists the names of every linear layer of the model but
    the output head — the `find_all_linear_names(model)` idiom: a loop over
    `model.named_modules()` keeping the modules that are a Linear class
    (`isinstance(module, bnb.nn.Linear4bit)`), with `lm_head` left out — which is what
    peft's `target_modules="all-linear"` adapts."""
    loops = [n for n in ast.walk(fn) if isinstance(n, ast.For) and isinstance(n.iter, ast.Call)
             and isinstance(n.iter.func, ast.Attribute) and n.iter.func.attr == "named_modules"]
    if not loops or any(isinstance(n, ast.Continue) for loop in loops for n in ast.walk(loop)):
        # no loop over the modules, or one that skips some by another test (LLaVA's
        # helper leaves the vision tower's names out): not every linear
        return False
    linear = any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
                 and n.func.id == "isinstance" and len(n.args) == 2
                 and "Linear" in ast.unparse(n.args[1])
                 for loop in loops for n in ast.walk(loop))
    if not linear:
        # `cls = bnb.nn.Linear4bit if args.bits == 4 else torch.nn.Linear`, then
        # `isinstance(module, cls)`: the class is chosen above the loop
        linear = any(isinstance(n, ast.Assign) and "Linear" in ast.unparse(n.value)
                     for n in fn.body)
    head = any(isinstance(n, ast.Constant) and n.value == "lm_head" for n in ast.walk(fn))
    returns = any(isinstance(n, ast.Return) and n.value is not None for n in ast.walk(fn))
    return linear and head and returns


def lora(pats: Any, kwargs: dict, node: ast.AST, via: Optional[V] = None) -> None:
    """The `lora` fact and model reference of a `LoraConfig(...)`'s keywords (`via`: the
    switch that turned it on, e.g. TRL's `use_peft`)."""
    line, col = node.lineno, node.col_offset + 1
    r = kwargs.get("r")
    alpha = kwargs.get("lora_alpha")
    targets = kwargs.get("target_modules")
    mts = kwargs.get("modules_to_save")
    dropout = kwargs.get("lora_dropout")

    def val(v: Optional[V], default: Any) -> Any:
        if v is None:
            return default
        return plain(v) if v.known else {"unknown": v.reason}

    rv = val(r, 8)
    d = {"r": rv, "alpha": val(alpha, 8), "targets": val(targets, None),
         "base_bits": 16, "modules_to_save": val(mts, None) or [],
         # peft's LoraConfig default is 0.0; TRL's ModelConfig (`via`) has its own
         "dropout": val(dropout, 0.0 if via is None else None),
         # get_peft_model's autocast_adapter_dtype=True (peft's default) keeps the adapters
         # in fp32 over a 16-bit base (`call` clears it for autocast_adapter_dtype=False)
         "adapter_dtype": "fp32"}
    if isinstance(d["targets"], str) and targets is not None and targets.origin == "cli":
        # a list written on a command line (fire reads `'[q_proj,v_proj]'` as a list)
        d["targets"] = lora_targets(d["targets"])
    elif isinstance(d["targets"], str):
        d["targets"] = [d["targets"]]      # peft: one name, `all-linear`, or a regex
    if d["targets"] is None:
        d["targets"] = []
    # built in an arm of an undecided `if` (`if model_args.use_peft:` with the arguments
    # read at run time): one alternative of the job, said so by model resolution
    choices = list(getattr(getattr(pats, "ev", None), "choices", None) or ())
    pats.lora_refs.append({"kind": "lora", **d, "source": pats.src(node),
                           **({"choices": choices} if choices else {})})
    origins = {v.origin for v in (r, alpha, targets, via) if v is not None}
    origin = "cli" if "cli" in origins else ("literal" if origins <= {"literal"} else "derived")
    if origins <= {"default"} and origins:
        origin = "default"
    reasons = [f"{k}={plain(v)!r} ({v.origin}, line {v.line})" for k, v in
               (("r", r), ("lora_alpha", alpha)) if v is not None and v.origin != "literal"]
    if isinstance(rv, dict):
        pats.emit("lora", unk(f"LoRA rank: {rv.get('unknown')}", line, col))
        return
    pats.emit("lora", V(d, origin, line, col, "; ".join(reasons) or None))


@answers("BitsAndBytesConfig", "LoraConfig", "get_peft_config", "get_quantization_config",
         "prepare_model_for_kbit_training", "prepare_model_for_int8_training", "get_peft_model")
def call(pats: Any, ev: Any, c: Call) -> Any:
    """bitsandbytes' and peft's calls, TRL's `get_peft_config` / `get_quantization_config`
    of its `ModelConfig`, and the k-bit preparation (gradient checkpointing on by default)."""
    name, qual, args, kwargs, node, kw = c.name, c.qual, c.args, c.kwargs, c.node, c.kw
    line, col = c.line, c.col
    if name == "BitsAndBytesConfig":
        o = Obj(qual, args, kwargs, line, col)
        bnb(pats, o, V(o, "literal", line, col))
        return V(o, "derived", line, col)
    if name == "LoraConfig":
        t = kwargs.get("target_modules")
        tn = c.kwnodes.get("target_modules")
        tn = getattr(tn, "value", tn)
        if isinstance(tn, ast.Name):
            tn = _assigned_call(ev, tn.id, node)     # `modules = find_all_linear_names(m)`
        if t is not None and (not t.known or isinstance(t.value, Obj)) and \
                isinstance(tn, ast.Call):
            fn = ev.function_definition(ev.ev(tn.func))
            if fn is not None and names_every_linear(fn):
                kwargs = {**kwargs, "target_modules": V(
                    "all-linear", "derived", t.line or line, t.col or col,
                    f"{fn.name}() names every linear layer of the model but the output "
                    f"head, as peft's 'all-linear' does")}
        lora(pats, kwargs, node)
        return None
    if name == "get_peft_model":
        # autocast_adapter_dtype=False keeps the adapters in the base's dtype; the call's
        # value is the evaluator's (NO_MATCH)
        a = kw("autocast_adapter_dtype")
        if a is not None:
            for ref in pats.lora_refs:
                ref["adapter_dtype"] = ("fp32" if a.value else None) if a.known else None
        return NO_MATCH
    if name == "get_peft_config" and args and args[0].known and isinstance(args[0].value, DCInst):
        f = args[0].value.fields
        use = f.get("use_peft")
        if use is not None and use.known:
            if use.value:
                lora(pats, {"r": f.get("lora_r"), "lora_alpha": f.get("lora_alpha"),
                            "target_modules": f.get("lora_target_modules"),
                            "modules_to_save": f.get("lora_modules_to_save"),
                            "lora_dropout": f.get("lora_dropout")}, node,
                           via=use)
            else:
                pats.emit("lora", use, value=None, reason="use_peft is False")
        return None
    if name == "get_quantization_config" and args and args[0].known and \
            isinstance(args[0].value, DCInst):
        f = args[0].value.fields
        o = Obj("BitsAndBytesConfig", [], {k: f[k] for k in ("load_in_4bit", "load_in_8bit")
                                           if k in f}, line, col)
        bnb(pats, o, V(o))
        return V(o, "derived", line, col)
    if name in ("prepare_model_for_kbit_training", "prepare_model_for_int8_training"):
        # peft turns gradient checkpointing on unless told not to
        g = kw("use_gradient_checkpointing")
        if g is None:
            pats.emit("activation_checkpointing", V("full", "default", line, col,
                                                    f"{name}: use_gradient_checkpointing defaults "
                                                    "to True"))
        elif g.known:
            pats.emit("activation_checkpointing", g, value="full" if g.value else "none")
        else:
            pats.emit("activation_checkpointing", g)
        return None
    return NO_MATCH
