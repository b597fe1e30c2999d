"""Unsloth: `FastLanguageModel.from_pretrained(model_name=…, max_seq_length=…,
load_in_4bit=…, dtype=None)` and `FastLanguageModel.get_peft_model(model, r=…,
lora_alpha=…, target_modules=[…], use_gradient_checkpointing="unsloth")` in a script that
then trains with TRL's `SFTTrainer` (read by the TRL and Trainer adapters).

Unsloth's own defaults, which differ from transformers' and peft's: `load_in_4bit=True`
(a 4-bit base unless `load_in_8bit`, `load_in_16bit` or `full_finetuning` says otherwise),
`dtype=None` (bfloat16 where the GPU supports it, else float16), `max_seq_length=2048` —
the length the trainer uses when its own arguments do not set one —, and for the adapter
`r=16`, `lora_alpha=16`, the seven projections of a decoder layer, and
`use_gradient_checkpointing="unsloth"` (checkpointing with the saved activations offloaded
to CPU memory). `FastModel` and `FastVisionModel` take the same keywords.
"""

from __future__ import annotations

from typing import Any

from preflight.facts import spellings
from preflight.frameworks import NO_MATCH, Call, Example, Framework, answers
from preflight.lang.python import Evaluator, V

#: the loader classes whose `from_pretrained` / `get_peft_model` are Unsloth's
_LOADERS = ("FastLanguageModel", "FastModel", "FastVisionModel", "FastLlamaModel", "FastMistralModel",
            "FastQwen2Model", "FastGemmaModel")
#: get_peft_model's default target modules
_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def _true(v: Any) -> bool:
    return v is not None and v.known and v.value is True


def _from_pretrained(pats: Any, ev: Evaluator, c: Call) -> None:
    line, col = c.line, c.col
    pats.seen_training_api = True
    name = c.kw("model_name", 0)
    if name is None:
        name = V("unsloth/Llama-3.2-1B-Instruct", "default", line, col,
                 "FastLanguageModel.from_pretrained: model_name defaults to unsloth/Llama-3.2-1B-Instruct")
    b4, b8, b16, full = (c.kw(k) for k in ("load_in_4bit", "load_in_8bit", "load_in_16bit", "full_finetuning"))
    sixteen = _true(b16) or _true(full)
    load: dict[str, V] = {}
    if _true(b8) and not _true(full):
        load["load_in_8bit"] = b8
    elif b4 is not None and not sixteen:
        load["load_in_4bit"] = b4
    elif b4 is None and not sixteen:
        load["load_in_4bit"] = V(True, "default", line, col, "Unsloth's load_in_4bit defaults to True")
    # the model and its reference; the 4 / 8-bit base from the keywords filled with Unsloth's defaults
    pats.hub_model(ev, c.qual, name, load, c.node)
    quant = any(_true(v) for v in load.values())
    if not quant:
        dt = c.kw("dtype")
        if dt is None or (dt.known and dt.value is None):
            pats.emit("param_dtype", V("bf16", "default", line, col,
                                       "Unsloth's dtype=None: bfloat16 where the GPU supports it, "
                                       "float16 otherwise"))
        elif not dt.known:
            pats.emit("param_dtype", dt)
        else:
            d = spellings.dtype(str(dt.value))
            if d:
                pats.emit("param_dtype", dt, value=d)
    sl = c.kw("max_seq_length")
    if sl is None:
        # derived, not a mere default: it displaces the trainer config's own default length
        sl = V(2048, "derived", line, col, "Unsloth's max_seq_length defaults to 2048, the "
                                           "trainer's length when its arguments set none")
    # the trainer's length when its arguments set none (Unsloth patches the trainer so)
    pats.emit("seq_len", sl, reason=sl.reason or "the model's max_seq_length: the trainer's "
                                                 "length unless its arguments set one")
    if _true(full):
        pats.emit("lora", full, value=None, reason="full_finetuning=True: every weight trains")


def _get_peft_model(pats: Any, c: Call) -> None:
    line, col = c.line, c.col
    kw: dict[str, V] = {}
    for key, default in (("r", 16), ("lora_alpha", 16), ("target_modules", list(_TARGETS))):
        v = c.kw(key)
        kw[key] = v if v is not None else V(default, "default", line, col,
                                            f"Unsloth's get_peft_model: {key} defaults to {default}")
    if c.kw("modules_to_save") is not None:
        kw["modules_to_save"] = c.kw("modules_to_save")
    pats.lora(kw, c.node)
    g = c.kw("use_gradient_checkpointing")
    if g is None:
        pats.emit("activation_checkpointing", V("full", "default", line, col,
                                                "use_gradient_checkpointing defaults to \"unsloth\": "
                                                "checkpointing, saved activations offloaded to CPU"))
    elif not g.known:
        pats.emit("activation_checkpointing", g)
    else:
        on = g.value is True or (isinstance(g.value, str) and g.value.lower() in ("unsloth", "true"))
        pats.emit("activation_checkpointing", g, value="full" if on else "none",
                  reason=f"use_gradient_checkpointing={g.value!r}")


@answers("from_pretrained", "get_peft_model")
def fast_model_call(pats: Any, ev: Evaluator, c: Call) -> Any:
    """Unsloth's loaders: the model, its 4-bit base, its length and its adapter."""
    owner = c.recv.rsplit(".", 1)[-1]
    if owner not in _LOADERS:
        return NO_MATCH
    if c.name == "from_pretrained":
        _from_pretrained(pats, ev, c)
        return None
    _get_peft_model(pats, c)
    return None


class Unsloth(Framework):
    name = "unsloth"
    title = "Unsloth"
    reads = (
        "`FastLanguageModel` / `FastModel` / `FastVisionModel.from_pretrained(model_name=…, "
        "max_seq_length=…, load_in_4bit=…, load_in_8bit=…, load_in_16bit=…, full_finetuning=…, "
        "dtype=…)` with Unsloth's defaults (4-bit base, length 2048, bf16 where supported)",
        "`.get_peft_model(model, r=…, lora_alpha=…, target_modules=[…], "
        "use_gradient_checkpointing=…)` (defaults: 16, 16, the seven projections, \"unsloth\" "
        "offloaded checkpointing)",
        "the TRL `SFTTrainer` / `SFTConfig` that trains it (batch, accumulation, optimizer) "
        "through the TRL and Trainer adapters",
    )
    not_read = (
        "the CPU offload of \"unsloth\" checkpointing (counted as full checkpointing on the GPU)",
        "`fast_inference=True` (a vLLM engine beside the model, `gpu_memory_utilization`) and "
        "Unsloth's fused kernels' savings",
        "a trainer length capped to the model's `max_seq_length` (the smaller is not taken)",
    )


ADAPTER = Unsloth()

_QLORA = """\
from unsloth import FastLanguageModel
from trl import SFTConfig, SFTTrainer
from datasets import load_dataset

max_seq_length = 4096
model, tokenizer = FastLanguageModel.from_pretrained(
    model_name="unsloth/Meta-Llama-3.1-8B-bnb-4bit",
    max_seq_length=max_seq_length,
    dtype=None,
)
model = FastLanguageModel.get_peft_model(
    model,
    r=32,
    target_modules=["q_proj", "k_proj", "v_proj", "o_proj"],
    use_gradient_checkpointing="unsloth",
)
dataset = load_dataset("yahma/alpaca-cleaned", split="train")
trainer = SFTTrainer(
    model=model,
    tokenizer=tokenizer,
    train_dataset=dataset,
    args=SFTConfig(
        per_device_train_batch_size=2,
        gradient_accumulation_steps=4,
        optim="adamw_8bit",
        output_dir="outputs",
    ),
)
trainer.train()
"""

_BF16 = """\
from unsloth import FastModel
from trl import SFTConfig, SFTTrainer

model, tokenizer = FastModel.from_pretrained(
    model_name="Qwen/Qwen2.5-1.5B-Instruct",
    load_in_16bit=True,
)
model = FastModel.get_peft_model(model, lora_alpha=32)
trainer = SFTTrainer(model=model, tokenizer=tokenizer, train_dataset=None,
                     args=SFTConfig(per_device_train_batch_size=4, output_dir="out"))
trainer.train()
"""

Unsloth.EXAMPLES = [
    Example(title="QLoRA notebook idiom: the 4-bit base by default, the model's length, the adapter",
            files={"train.py": _QLORA},
            facts={"model": ("unsloth/Meta-Llama-3.1-8B-bnb-4bit", "train.py:7"),
                   "param_dtype": ("int4", "train.py:6", "default"),
                   "seq_len": (4096, "train.py:5"),
                   "lora": ({"r": 32, "alpha": 16, "targets": ["q_proj", "k_proj", "v_proj", "o_proj"],
                             "base_bits": 4}, "train.py:11"),
                   "activation_checkpointing": ("full", "train.py:15"),
                   "micro_batch": (2, "train.py:23"), "grad_accum": (4, "train.py:24"),
                   "optimizer": ("adamw_8bit", "train.py:25")}),
    Example(title="a 16-bit LoRA with FastModel: Unsloth's adapter and length defaults",
            files={"sft.py": _BF16},
            facts={"model": ("Qwen/Qwen2.5-1.5B-Instruct", "sft.py:5"),
                   "param_dtype": ("bf16", "sft.py:4", "default"),
                   "seq_len": (2048, "sft.py:4", "derived"),
                   "lora": ({"r": 16, "alpha": 32, "targets": list(_TARGETS), "base_bits": 16},
                            "sft.py:8"),
                   "activation_checkpointing": ("full", "sft.py:10", "default"),
                   "micro_batch": (4, "sft.py:10")}),
]
