"""The knob lexicon: the names frameworks give their settings, mapped to facts, for config
documents that no framework adapter reads.

A YAML / JSON / TOML document or a Python config that no adapter claims still says a lot
by its keys' names: `per_device_train_batch_size: 4`, `gradient_accumulation_steps: 8`,
`max_seq_len: 2048`, `precision: bf16-mixed`. `read(cfg)` walks the document (its keys at
any depth, within a budget) and returns what those names mean, each as a `Reading` at its
key, to be reported with origin `inferred` (`preflight.plan.Origin.INFERRED`): weaker than
every framework's own reading and than `[tool.preflight]`, and never confident — the job
may not use the document at all, which the reason says.

Only unambiguous names are read. Left out on purpose:

* `batch_size` and `train_batch_size` — one framework's per-device batch is another's
  global batch (DeepSpeed's `train_batch_size`, detectron2's `IMS_PER_BATCH`, many
  research scripts): a lone `batch_size` is reported as an unknown `micro_batch` with the
  value as its alternative;
* `max_length`, `max_new_tokens`, `context_window` — generation or tokenizer limits as
  often as the training length;
* `lr`, `epochs`, `steps` and other knobs that size nothing.

A section named for evaluation, inference, generation or a frozen role (`eval`,
`validation`, `test`, `generation`, `rollout`, `reference`, `reward_model`, …) is not
read: its batch and length are not the training step's. Two keys that give one fact
different values make it unknown, with every value and key in the reason; a model's own
config (`model_type`, `architectures`) holds no training knobs and is not read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional

from preflight.facts import spellings

#: keys read per document (a data file of a million keys stops here)
MAX_KEYS = 20_000
#: depth of sections followed
MAX_DEPTH = 8


def _count(v: Any) -> Optional[int]:
    return v if isinstance(v, int) and not isinstance(v, bool) and v >= 1 else None


def _switch(value: str) -> Callable[[Any], Optional[str]]:
    return lambda v: value if v is True else None


def _checkpointing(v: Any) -> Optional[str]:
    if v is True:
        return "full"
    if v is False:
        return "none"
    return None


def _optimizer(v: Any) -> Optional[str]:
    if isinstance(v, dict):
        v = next((v[k] for k in ("type", "name", "_target_", "class_path") if k in v), None)
    if not isinstance(v, str):
        return None
    return spellings.optimizer_name(v) or spellings.optimizer_class(v.rsplit(".", 1)[-1])


def _model(v: Any) -> Optional[str]:
    if not isinstance(v, str) or not v.strip() or "\0" in v or " " in v.strip():
        return None
    return v.strip()


#: knob name (lower case, `-` as `_`) → (fact, converter of its value; None = not a value
#: of the fact). One table: the generic reader's whole vocabulary.
KNOBS: dict[str, tuple[str, Callable[[Any], Any]]] = {
    # the batch one device takes per step
    **{k: ("micro_batch", _count) for k in (
        "micro_batch_size", "micro_batch_size_per_gpu", "per_device_train_batch_size",
        "train_micro_batch_size_per_gpu", "batch_size_per_gpu", "batch_size_per_device",
        "per_gpu_train_batch_size", "per_device_batch_size", "device_train_microbatch_size",
        "train_batch_size_per_device", "micro_batch", "mbs", "samples_per_gpu",
        "local_batch_size", "micro_bs", "train_micro_batch_size", "micro_bsz",
        "device_batch_size")},
    # tokens per sequence in training
    **{k: ("seq_len", _count) for k in (
        "max_seq_len", "max_seq_length", "seq_length", "seq_len", "sequence_length",
        "sequence_len", "block_size", "cutoff_len", "model_max_length", "max_sequence_length",
        "context_length", "max_seq_length_train", "train_seq_len", "ctx_len", "bptt")},
    **{k: ("grad_accum", _count) for k in (
        "gradient_accumulation_steps", "grad_accum", "grad_accum_steps", "grad_accumulation",
        "gradient_accumulation", "accumulate_grad_batches", "accumulation_steps",
        "gradient_accumulation_iters", "accum_iter", "accum_iters", "accum_steps",
        "grad_acc_steps", "grad_acc", "grad_accumulation_steps", "grad_accum_iters",
        "gradient_accumulate_every")},
    **{k: ("mixed_precision", spellings.mixed_precision) for k in (
        "precision", "mixed_precision", "amp_dtype", "mixed_precision_dtype")},
    "bf16": ("mixed_precision", _switch("bf16")),
    "fp16": ("mixed_precision", _switch("fp16")),
    **{k: ("optimizer", _optimizer) for k in ("optimizer", "optim", "optimizer_name",
                                               "optimizer_type")},
    **{k: ("activation_checkpointing", _checkpointing) for k in (
        "gradient_checkpointing", "activation_checkpointing", "grad_checkpointing")},
    **{k: ("tp", _count) for k in ("tensor_parallel_size", "tensor_model_parallel_size",
                                   "tp_size")},
    **{k: ("pp", _count) for k in ("pipeline_parallel_size", "pipeline_model_parallel_size",
                                   "pp_size")},
    "zero_stage": ("zero_stage", lambda v: v if isinstance(v, int) and not isinstance(v, bool)
                   and 0 <= v <= 3 else None),
    **{k: ("model", _model) for k in ("model_name_or_path", "pretrained_model_name_or_path",
                                      "base_model", "model_id", "pretrained_model_name")},
}

#: the batch keys that may as well be the global batch: read only as an unknown
AMBIGUOUS_BATCH = ("batch_size", "train_batch_size")

#: a training script's own module-level names and flags that a document's keys do not
#: settle: in the script that builds the DataLoader, `batch_size` / `bsz` is the batch it
#: takes per step and `max_length` its tokenizer's length; in a document no adapter
#: reads they may be the global batch or a generation limit (`AMBIGUOUS_BATCH`)
SCRIPT_ONLY: dict[str, tuple[str, ...]] = {
    "micro_batch": AMBIGUOUS_BATCH + ("bsz",),
    "seq_len": ("max_length",),
}
#: the facts a script's names are read for (the others are read where the API takes them)
_SCRIPT_FACTS = ("micro_batch", "grad_accum", "seq_len")


def script_fact(name: str) -> Optional[str]:
    """The fact a training script's own global or flag named `name` stands for (`BATCH_SIZE`,
    `--grad-accum`, `block_size`): the batch, accumulation and length knobs of `KNOBS`
    and `SCRIPT_ONLY`; None for any other name."""
    k = name.lower().replace("-", "_")
    hit = KNOBS.get(k)
    if hit is not None and hit[0] in _SCRIPT_FACTS:
        return hit[0]
    return next((f for f, names in SCRIPT_ONLY.items() if k in names), None)

#: sections whose settings are not the training step's
_NOT_TRAINING = frozenset({
    "eval", "evaluation", "evaluator", "val", "valid", "validation", "test", "testing",
    "predict", "prediction", "inference", "generation", "generate", "sampling", "rollout",
    "ref", "reference", "ref_model", "reference_model", "reward", "reward_model", "critic",
    "teacher", "vllm", "serving", "tokenizer", "val_dataloader", "test_dataloader",
    "eval_dataloader", "val_cfg", "test_cfg", "data_preprocessor", "logging",
})
#: keys that mark a model's own config (config.json) or a tokenizer's, which set no
#: training knob
_MODEL_CONFIG = ("model_type", "architectures", "tokenizer_class")


@dataclass
class Reading:
    """One fact read by a knob's name: `value` (None: unknown, `why` says why), the key's
    path in the document, and the reason."""

    fact: str
    value: Any
    path: tuple
    why: str
    #: the value an unknown would have under one reading (a lone `batch_size`)
    alternative: Any = None


def _key(k: Any) -> str:
    return str(k).strip().lower().replace("-", "_")


def _walk(cfg: dict) -> list[tuple[tuple, Any]]:
    """(path, value) of every key, breadth first within the budgets, skipping sections
    that are not the training step's."""
    out: list[tuple[tuple, Any]] = []
    todo: list[tuple[tuple, dict]] = [((), cfg)]
    i = 0
    while i < len(todo) and len(out) < MAX_KEYS:
        prefix, d = todo[i]
        i += 1
        for k, v in d.items():
            if len(out) >= MAX_KEYS:
                break
            p = prefix + (k,)
            out.append((p, v))
            if isinstance(v, dict) and len(p) < MAX_DEPTH and _key(k) not in _NOT_TRAINING \
                    and not _key(k).startswith(("eval_", "val_", "test_")):
                todo.append((p, v))
    return out


def read(cfg: Any, unread: Optional[Callable[[Any], Optional[str]]] = None) -> list[Reading]:
    """The facts a document's knob names give. `unread(value)` says why a value of the
    document's language is not known (a Python config's computed value), else None."""
    if not isinstance(cfg, dict) or any(k in cfg for k in _MODEL_CONFIG):
        return []
    found: dict[str, list[tuple[tuple, Any, str]]] = {}
    blind: dict[str, tuple[tuple, str]] = {}
    batches: list[tuple[tuple, Any]] = []
    for p, v in _walk(cfg):
        k = _key(p[-1])
        why_not = unread(v) if unread is not None else None
        if k in AMBIGUOUS_BATCH and _count(v):
            batches.append((p, v))
            continue
        if k not in KNOBS:
            continue
        fact, conv = KNOBS[k]
        if why_not is not None:
            blind.setdefault(fact, (p, why_not))
            continue
        val = conv(v)
        if val is not None:
            found.setdefault(fact, []).append((p, val, k))
    out: list[Reading] = []
    for fact, hits in found.items():
        values = {repr(v) for _, v, _ in hits}
        p0, v0, _ = hits[0]
        if len(values) > 1:
            shown = ", ".join(f"{'.'.join(map(str, p))} = {v!r}" for p, v, _ in hits[:6])
            out.append(Reading(fact, None, p0, f"keys of this document give different values "
                                                f"({shown}); no framework adapter reads it"))
            continue
        where = ".".join(map(str, p0))
        out.append(Reading(fact, v0, p0, f"key {where} = {v0!r}, read by its name: no "
                                         "framework adapter reads this document"))
    for fact, (p, why) in blind.items():
        if fact not in found:
            out.append(Reading(fact, None, p, f"key {'.'.join(map(str, p))}: {why}"))
    if "micro_batch" not in found and batches:
        p, v = batches[0]
        out.append(Reading("micro_batch", None, p,
                           f"key {'.'.join(map(str, p))} = {v!r} may be the batch of one device "
                           "or of all of them; no framework adapter reads this document", v))
    return out


# --------------------------------------------------------------------------- examples
# Each is a test (tests/test_lexicon.py): a YAML document no adapter claims and the facts
# read from it, fact → (value, key path); a value of None is an explicit unknown.

EXAMPLES: list[dict] = [
    {"title": "a trainer's own YAML: batch, accumulation, length, precision, optimizer, model",
     "doc": "model:\n  model_name_or_path: org/tiny-llama\ntrainer:\n  micro_batch_size: 4\n"
            "  gradient_accumulation_steps: 8\n  max_seq_len: 2048\n  precision: bf16-mixed\n"
            "  optimizer: {type: AdamW, lr: 3.0e-4}\n",
     "expect": {"model": ("org/tiny-llama", "model.model_name_or_path"),
                "micro_batch": (4, "trainer.micro_batch_size"),
                "grad_accum": (8, "trainer.gradient_accumulation_steps"),
                "seq_len": (2048, "trainer.max_seq_len"),
                "mixed_precision": ("bf16", "trainer.precision"),
                "optimizer": ("adamw", "trainer.optimizer")}},
    {"title": "a lone batch_size may be global: unknown, its value the alternative",
     "doc": "batch_size: 256\nblock_size: 512\n",
     "expect": {"micro_batch": (None, "batch_size"), "seq_len": (512, "block_size")}},
    {"title": "two keys for one fact that disagree: unknown, both named",
     "doc": "data:\n  max_seq_length: 1024\nmodel:\n  seq_length: 4096\n",
     "expect": {"seq_len": (None, "data.max_seq_length")}},
    {"title": "evaluation and frozen-role sections are not the training step's",
     "doc": "train:\n  per_device_train_batch_size: 2\neval:\n  per_device_train_batch_size: 64\n"
            "reference_model:\n  model_name_or_path: org/ref\n",
     "expect": {"micro_batch": (2, "train.per_device_train_batch_size")}},
    {"title": "a model's own config.json holds no training knob",
     "doc": "model_type: llama\nmax_sequence_length: 2048\nhidden_size: 4096\n",
     "expect": {}},
    {"title": "switches: bf16 on, checkpointing on; a switch set off says nothing of precision",
     "doc": "bf16: true\nfp16: false\ngradient_checkpointing: true\n",
     "expect": {"mixed_precision": ("bf16", "bf16"), "activation_checkpointing": ("full", "gradient_checkpointing")}},
]
