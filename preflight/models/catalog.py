"""The offline model catalogue (`catalog.json`): hub names → architecture + config fields.

The catalogue stores shapes, not counts: counts come from `formulas.count`. Names match
case-insensitively, with or without the organisation prefix (or a local path ending in the
name), and fine-tune suffixes (`-hf`, `-Instruct`, `-chat`, `-it`, `-base`, a trailing
version or date…) fall back to the base model's shape.
"""

from __future__ import annotations

import json
import os
import re
from functools import lru_cache
from typing import Optional

from preflight.models.formulas import activation_family

_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "catalog.json")

#: Name tokens that do not change the shape (fine-tune / packaging tags, and the formats a
#: re-published checkpoint is quantized to: the parameters are the same)
_DROP = {"hf", "instruct", "chat", "it", "base", "sft", "dpo", "rlhf", "deduped", "fp16",
         "bf16", "fp32", "awq", "gptq", "gguf", "bnb", "4bit", "8bit", "unsloth", "ms", "v1",
         "final", "pretrained", "original", "converted", "pt", "nf4", "fp8", "nvfp4", "mxfp4",
         "int4", "int8", "w4a16", "w8a8", "dequantized", "prequantized", "linearized"}
_TAIL = re.compile(r"^(v\d+(\.\d+)*|\d{4}|\d{6})$")   # v0.1, v1.0, 2407, 2507


@lru_cache(maxsize=1)
def _load() -> tuple[dict[str, tuple[str, str, dict]], list[dict]]:
    with open(_PATH, encoding="utf-8") as f:
        data = json.load(f)
    index: dict[str, tuple[str, str, dict]] = {}
    for m in data["models"]:
        entry = (m["name"], m["arch"], m["config"])
        for key in [m["name"], *m.get("aliases", [])]:
            k = key.lower()
            index.setdefault(k, entry)
            index.setdefault(k.rsplit("/", 1)[-1], entry)
    return index, data["models"]


def entries() -> list[dict]:
    """Every catalogue entry: {name, arch, aliases, config}."""
    return list(_load()[1])


def _candidates(name: str) -> list[str]:
    n = name.strip().strip("/").lower()
    out = [n]
    alt = n.replace(" ", "-").replace("_", "-")
    if alt != n:                               # "llama3_70b", "Llama 2 7B"
        out.extend(c for c in _candidates(alt) if c not in out)
    base = n.rsplit("/", 1)[-1]
    out.append(base)
    tokens = base.split("-")
    kept = [t for i, t in enumerate(tokens) if i == 0 or t not in _DROP]
    out.append("-".join(kept))
    while len(kept) > 1 and (_TAIL.match(kept[-1]) or kept[-1] in _DROP):
        kept = kept[:-1]
        out.append("-".join(kept))
    # "llama-2-7b-chat" style already handled; "Meta-Llama-3-8B" ↔ "llama-3-8b"
    if base.startswith("meta-"):
        out.extend(c[len("meta-"):] for c in list(out) if c.startswith("meta-"))
    seen: list[str] = []
    for c in out:
        if c and c not in seen:
            seen.append(c)
    return seen


def lookup_entry(name: str) -> Optional[tuple[str, str, dict]]:
    """(canonical name, arch, config fields) for `name`, or None."""
    if not isinstance(name, str) or not name.strip():
        return None
    index = _load()[0]
    for c in _candidates(name):
        if c in index:
            canonical, arch, cfg = index[c]
            return canonical, arch, dict(cfg)
    return None


def checkpoint_dtype(name: str) -> Optional[tuple[str, str]]:
    """(dtype of the published weights — "bf16" | "fp16" | "fp32" —, canonical name) for
    a catalogue name or alias, matched exactly (with or without the organisation): a
    fine-tune that borrows a base model's shape may be saved in another dtype. None when
    the name is not an entry or its dtype is not recorded."""
    if not isinstance(name, str) or not name.strip():
        return None
    n = name.strip().strip("/").lower()
    for m in _load()[1]:
        keys = {k.lower() for k in [m["name"], *m.get("aliases", [])]}
        keys |= {k.rsplit("/", 1)[-1] for k in keys}
        if (n in keys or n.rsplit("/", 1)[-1] == m["name"].lower().rsplit("/", 1)[-1]) \
                and m.get("checkpoint_dtype"):
            return m["checkpoint_dtype"], m["name"]
    return None


def lookup(name: str) -> Optional[tuple[str, dict]]:
    """(arch, config fields) for a hub name / alias / local path ending in a known name."""
    hit = lookup_entry(name)
    return (hit[1], hit[2]) if hit else None


def family_of(name: str) -> Optional[str]:
    """"llama" or "gpt2" (the activation model's block type) for a catalogue name."""
    hit = lookup(name)
    return activation_family(hit[0], hit[1]) if hit else None


#: words of model names whose architecture is a llama-style block (RMSNorm, SwiGLU, rotary)
_LLAMA_WORDS = ("llama", "mistral", "mixtral", "qwen", "gemma", "yi-", "deepseek", "olmo",
                "smollm", "phi-3", "phi3", "internlm", "baichuan", "tinyllama", "vicuna", "zephyr",
                "granite", "codellama", "starcoder2")
#: … and a GPT-2-style block (LayerNorm, GELU MLP)
_GPT2_WORDS = ("gpt2", "gpt-2", "nanogpt", "gpt-neo", "gpt_neo", "gptj", "gpt-j", "pythia",
               "opt-", "bloom", "falcon", "gpt-neox", "distilgpt")


def family_from_name(name: Optional[str]) -> tuple[Optional[str], str]:
    """(family, how it was known) for a model name: the catalogue's architecture, else the
    words of the name ("model name"), else (None, "")."""
    if not name:
        return None, ""
    try:
        fam = family_of(str(name))
    except (ValueError, TypeError):
        fam = None
    if fam:
        return fam, "catalogue"
    m = str(name).lower()
    if any(w in m for w in _LLAMA_WORDS):
        return "llama", "model name"
    if any(w in m for w in _GPT2_WORDS):
        return "gpt2", "model name"
    return None, ""
