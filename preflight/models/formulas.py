"""Exact parameter counts and shapes from Hugging Face `config.json` fields.

One function per architecture family (`models.families`). Each walks the module tree the
transformers implementation builds (embeddings, every linear with its bias, every norm, the
head) and adds up the parameters, so the result is exact, not a 12·L·h² approximation.
Defaults are the config classes' own defaults, so a partial config
(`LlamaConfig(num_hidden_layers=2)`) counts as transformers would build it.

This module owns what is shared by them all: the names an architecture goes by (aliases,
config classes, `architectures` entries), the default head, the dispatch to the family
formulas (`count`), the resized vocabulary and the activation block of each architecture.

Nothing here imports torch or transformers.
"""

from __future__ import annotations

from typing import Callable, Optional

from preflight.models.families.bert import bert
from preflight.models.families.bloom import bloom
from preflight.models.families.deepseek import deepseek
from preflight.models.families.deepseek_v4 import deepseek_v4
from preflight.models.families.falcon import falcon
from preflight.models.families.falcon_h1 import falcon_h1
from preflight.models.families.gemma3 import gemma3
from preflight.models.families.gemma3n import gemma3n_text
from preflight.models.families.gemma4 import gemma4, gemma4_text
from preflight.models.families.glm import glm
from preflight.models.families.glm4_moe import glm4_moe
from preflight.models.families.gpt2 import gpt2
from preflight.models.families.gpt_neox import gpt_neox
from preflight.models.families.gptj import gptj
from preflight.models.families.gpt_oss import gpt_oss
from preflight.models.families.llama import LLAMA_DEFAULTS, llama_like
from preflight.models.families.llama4 import llama4
from preflight.models.families.llava import llava, text_config
from preflight.models.families.mamba import mamba
from preflight.models.families.megatron import megatron
from preflight.models.families.modernbert import modernbert
from preflight.models.families.nemotron_h import nemotron_h
from preflight.models.families.olmo import olmo
from preflight.models.families.opt import opt
from preflight.models.families.phi import phi
from preflight.models.families.qwen3_5 import qwen3_5_text
from preflight.models.families.qwen_vl import qwen_vl
from preflight.models.families.stablelm import stablelm
from preflight.models.families.starcoder2 import starcoder2
from preflight.models.families.t5 import t5
from preflight.models.shape import HEADS, ModelShape, UnsupportedArchitecture


# --------------------------------------------------------------------------- resized vocab


def resized_vocab(vocab: int, multiple: int, added: bool) -> Optional[int]:
    """The vocabulary after `resize_token_embeddings(len(tokenizer), pad_to_multiple_of=M)`:
    the tokenizer's length (the model's `vocab` plus the tokens the script added) rounded
    up to a multiple of M. When tokens are added their number is not known statically, but
    any count from 1 to the gap below the next multiple gives the same size, so the size is
    known for M > 1; for M = 1 it is not (None). With no token added: `vocab` rounded up."""
    m = max(int(multiple), 1)
    if not added:
        return -(-vocab // m) * m
    if m == 1:
        return None
    return -(-(vocab + 1) // m) * m


# --------------------------------------------------------------------------- dispatch

_ALIASES = {
    "gpt-neox": "gpt_neox", "gpt-j": "gptj", "gptneox": "gpt_neox", "neox": "gpt_neox",
    "mt5": "t5", "umt5": None, "refinedweb": "falcon", "refinedwebmodel": "falcon",
    "roberta": "roberta", "xlm-roberta": "roberta", "codellama": "llama",
    "qwen2.5": "qwen2", "tinyllama": "llama", "phi-msft": None,
    "qwen2-moe": "qwen2_moe", "qwen3-moe": "qwen3_moe",
    "deepseek-v2": "deepseek_v2", "deepseek-v3": "deepseek_v3", "deepseekv2": "deepseek_v2",
    "deepseekv3": "deepseek_v3", "deepseek-v4": "deepseek_v4",
    "megatron-lm": "megatron", "megatron_gpt": "megatron", "gpt_megatron": "megatron",
    "gpt-oss": "gpt_oss", "gptoss": "gpt_oss", "glm4-moe": "glm4_moe",
    "glm4-moe-lite": "glm4_moe_lite",
    "falcon-h1": "falcon_h1",
    "falconh1": "falcon_h1", "nemotron-h": "nemotron_h",
    "qwen2-vl": "qwen2_vl", "qwen2.5-vl": "qwen2_5_vl", "qwen2.5_vl": "qwen2_5_vl",
    "qwen3-vl": "qwen3_vl", "qwen3-vl-moe": "qwen3_vl_moe", "qwen3.5": "qwen3_5",
    "qwen3.5-moe": "qwen3_5_moe", "llama-4": "llama4", "llama4-text": "llama4_text",
    "starcoder-2": "starcoder2", "stable-lm": "stablelm",
}

#: config class name → architecture (for `LlamaConfig(...)` in scripts).
CONFIG_CLASSES = {
    "LlamaConfig": "llama", "MistralConfig": "mistral", "MixtralConfig": "mixtral",
    "Qwen2Config": "qwen2", "Qwen3Config": "qwen3", "GemmaConfig": "gemma",
    "Qwen2MoeConfig": "qwen2_moe", "Qwen3MoeConfig": "qwen3_moe",
    "Gemma2Config": "gemma2", "Gemma3Config": "gemma3", "Gemma3TextConfig": "gemma3_text",
    "Olmo2Config": "olmo2", "Olmo3Config": "olmo3", "OlmoeConfig": "olmoe",
    "OlmoConfig": "olmo", "GlmConfig": "glm", "Glm4Config": "glm4",
    "ModernBertConfig": "modernbert", "Gemma3nTextConfig": "gemma3n_text",
    "SmolLM3Config": "smollm3",
    "Gemma4Config": "gemma4", "Gemma4TextConfig": "gemma4_text",
    "PhiConfig": "phi", "Phi3Config": "phi3",
    "GPT2Config": "gpt2", "GPTJConfig": "gptj", "GPTNeoXConfig": "gpt_neox", "OPTConfig": "opt",
    "FalconConfig": "falcon", "BloomConfig": "bloom", "BertConfig": "bert",
    "RobertaConfig": "roberta", "XLMRobertaConfig": "roberta", "T5Config": "t5",
    "DeepseekV2Config": "deepseek_v2", "DeepseekV3Config": "deepseek_v3",
    "DeepseekV4Config": "deepseek_v4",
    "GptOssConfig": "gpt_oss", "Llama4Config": "llama4", "Llama4TextConfig": "llama4_text",
    "Glm4MoeConfig": "glm4_moe", "Glm4MoeLiteConfig": "glm4_moe_lite",
    "GlmMoeDsaConfig": "glm_moe_dsa",
    "MambaConfig": "mamba", "Mamba2Config": "mamba2",
    "FalconH1Config": "falcon_h1", "NemotronHConfig": "nemotron_h",
    "Qwen2VLConfig": "qwen2_vl", "Qwen2_5_VLConfig": "qwen2_5_vl", "Qwen3VLConfig": "qwen3_vl",
    "Qwen3VLMoeConfig": "qwen3_vl_moe", "Qwen3_5Config": "qwen3_5",
    "Qwen3_5MoeConfig": "qwen3_5_moe",
    "Qwen3_5TextConfig": "qwen3_5_text", "Qwen3_5MoeTextConfig": "qwen3_5_moe_text",
    "Mistral3Config": "mistral3", "LlavaConfig": "llava",
    "Starcoder2Config": "starcoder2", "StableLmConfig": "stablelm",
}

_DEFAULT_HEAD = {"bert": "masked_lm", "roberta": "masked_lm", "t5": "seq2seq_lm",
                 "modernbert": "masked_lm"}

_FUNCS: dict[str, Callable[..., ModelShape]] = {
    "phi": phi, "gpt2": gpt2, "gpt_neox": gpt_neox, "gptj": gptj, "opt": opt, "falcon": falcon,
    "bloom": bloom, "t5": t5, "megatron": megatron, "gemma3": gemma3,
    "olmo": olmo, "modernbert": modernbert, "gemma3n_text": gemma3n_text,
    "gemma4": gemma4, "gemma4_text": gemma4_text,
    "glm": lambda cfg, head, n: glm("glm", cfg, head, n),
    "glm4": lambda cfg, head, n: glm("glm4", cfg, head, n),
    "deepseek_v2": lambda cfg, head, n: deepseek("deepseek_v2", cfg, head, n),
    "deepseek_v3": lambda cfg, head, n: deepseek("deepseek_v3", cfg, head, n),
    "deepseek_v4": deepseek_v4,
    "glm4_moe_lite": lambda cfg, head, n: deepseek("glm4_moe_lite", cfg, head, n),
    "glm_moe_dsa": lambda cfg, head, n: deepseek("glm_moe_dsa", cfg, head, n),
    "gpt_oss": gpt_oss, "llama4": llama4, "llama4_text": llama4, "glm4_moe": glm4_moe,
    "mamba": lambda cfg, head, n: mamba("mamba", cfg, head, n),
    "mamba2": lambda cfg, head, n: mamba("mamba2", cfg, head, n), "falcon_h1": falcon_h1,
    "nemotron_h": nemotron_h,
    "qwen2_vl": lambda cfg, head, n: qwen_vl("qwen2_vl", cfg, head, n),
    "qwen2_5_vl": lambda cfg, head, n: qwen_vl("qwen2_5_vl", cfg, head, n),
    "qwen3_vl": lambda cfg, head, n: qwen_vl("qwen3_vl", cfg, head, n),
    "qwen3_vl_moe": lambda cfg, head, n: qwen_vl("qwen3_vl_moe", cfg, head, n),
    "qwen3_5": lambda cfg, head, n: qwen_vl("qwen3_5", cfg, head, n),
    "qwen3_5_moe": lambda cfg, head, n: qwen_vl("qwen3_5_moe", cfg, head, n),
    "qwen3_5_text": lambda cfg, head, n: qwen3_5_text("qwen3_5_text", cfg, head, n),
    "qwen3_5_moe_text": lambda cfg, head, n: qwen3_5_text("qwen3_5_moe_text", cfg, head, n),
    "llava": lambda cfg, head, n: llava("llava", cfg, head, n, _text_model),
    "mistral3": lambda cfg, head, n: llava("mistral3", cfg, head, n, _text_model),
    "starcoder2": starcoder2, "stablelm": stablelm,
}

ARCHITECTURES = tuple(sorted(set(LLAMA_DEFAULTS) | set(_FUNCS) | {"bert", "roberta"}))


def normalise_arch(arch: str) -> Optional[str]:
    a = (arch or "").strip().lower()
    a = _ALIASES.get(a, a)
    return a if a in ARCHITECTURES else None


def default_head(arch: str) -> str:
    return _DEFAULT_HEAD.get(arch, "causal_lm")


def count(arch: str, cfg: dict, *, head: Optional[str] = None,
          num_labels: Optional[int] = None) -> ModelShape:
    """The exact parameter count and shape of `arch` built from config fields `cfg`.

    `head` picks the task head (`causal_lm` for decoders, `masked_lm` for BERT/RoBERTa,
    `seq2seq_lm` for T5 by default; `base`, `seq_cls`, `token_cls`).
    Raises `UnsupportedArchitecture` for an architecture without a formula and
    `KeyError` / `ValueError` for a config that lacks a needed field.
    """
    a = normalise_arch(arch)
    if a is None:
        raise UnsupportedArchitecture(f"no parameter formula for model_type {arch!r}")
    head = head or default_head(a)
    if head not in HEADS:
        raise UnsupportedArchitecture(f"unknown head {head!r}")
    cfg = dict(cfg or {})
    if a in LLAMA_DEFAULTS:
        return llama_like(a, cfg, head, num_labels)
    if a in ("bert", "roberta"):
        return bert(a, cfg, head, num_labels)
    return _FUNCS[a](cfg, head, num_labels)


def _text_model(model_type: str, cfg: dict) -> Optional[ModelShape]:
    """An image-text model's language model without its head (None: no formula)."""
    return count(model_type, cfg, head="base") if normalise_arch(model_type) else None


def arch_of_config(cfg: dict) -> Optional[str]:
    """The architecture named by a config.json (`model_type`, else `architectures[0]`)."""
    mt = cfg.get("model_type")
    if isinstance(mt, str) and normalise_arch(mt):
        return normalise_arch(mt)
    for a in cfg.get("architectures") or []:
        low = str(a).lower()
        for prefix, arch in (("llama4forcausallm", "llama4_text"), ("llama4", "llama4"),
                             ("gptoss", "gpt_oss"), ("glm4moelite", "glm4_moe_lite"),
                             ("glmmoedsa", "glm_moe_dsa"),
                             ("glm4moe", "glm4_moe"),
                             ("falconh1", "falcon_h1"), ("nemotronh", "nemotron_h"),
                             ("falconmamba", None), ("mamba2", "mamba2"), ("mamba", "mamba"),
                             ("qwen2vl", "qwen2_vl"), ("qwen2_5_vl", "qwen2_5_vl"),
                             ("qwen3vlmoe", "qwen3_vl_moe"),
                             ("qwen3vl", "qwen3_vl"), ("qwen3_5moeforcausallm", "qwen3_5_moe_text"),
                             ("qwen3_5moe", "qwen3_5_moe"), ("qwen3_5forcausallm", "qwen3_5_text"),
                             ("qwen3_5", "qwen3_5"),
                             ("llavaforconditionalgeneration", "llava"),
                             ("mistral3", "mistral3"),
                             ("starcoder2", "starcoder2"), ("stablelm", "stablelm"),
                             ("llama", "llama"), ("mistral", "mistral"),
                             ("mixtral", "mixtral"), ("qwen3moe", "qwen3_moe"),
                             ("deepseekv4", "deepseek_v4"),
                             ("deepseekv3", "deepseek_v3"), ("deepseekv2", "deepseek_v2"),
                             ("qwen2moe", "qwen2_moe"), ("qwen3", "qwen3"), ("qwen2", "qwen2"),
                             ("gemma4forcausallm", "gemma4_text"), ("gemma4", "gemma4"),
                             ("gemma3nforcausallm", "gemma3n_text"),
                             ("gemma3forcausallm", "gemma3_text"), ("gemma3", "gemma3"),
                             ("olmo2", "olmo2"), ("olmo3", "olmo3"), ("olmoe", "olmoe"),
                             ("olmoforcausallm", "olmo"),
                             ("glm4forcausallm", "glm4"), ("glmforcausallm", "glm"),
                             ("smollm3", "smollm3"),
                             ("modernbert", "modernbert"),
                             ("gemma2", "gemma2"), ("gemma", "gemma"), ("phi3", "phi3"),
                             ("phi", "phi"), ("gpt2", "gpt2"), ("gptneox", "gpt_neox"),
                             ("gptj", "gptj"),
                             ("opt", "opt"), ("falcon", "falcon"), ("bloom", "bloom"),
                             ("roberta", "roberta"), ("bert", "bert"), ("t5", "t5")):
            if low.startswith(prefix):
                return arch
    return None


def head_of_class(name: Optional[str]) -> Optional[str]:
    """`AutoModelForSequenceClassification` → `seq_cls`; None when the class names no head."""
    if not name:
        return None
    n = name.split(".")[-1]
    for suffix, head in (("ForCausalLM", "causal_lm"), ("ForMaskedLM", "masked_lm"),
                         ("ForConditionalGeneration", "seq2seq_lm"),
                         # the image-text auto class builds the …ForConditionalGeneration
                         ("ForImageTextToText", "seq2seq_lm"),
                         ("ForSeq2SeqLM", "seq2seq_lm"),
                         ("ForSequenceClassification", "seq_cls"),
                         ("ForTokenClassification", "token_cls")):
        if n.endswith(suffix):
            return head
    if n in ("AutoModel",) or (n.endswith("Model") and not n.endswith("PreTrainedModel")):
        return "base"
    return None


#: the block type each architecture's activations follow: "llama" (RMSNorm, gated SiLU MLP,
#: no biases/dropout) or "gpt2" (LayerNorm, GELU MLP with biases)
_BLOCK = {"llama": "llama", "mistral": "llama", "mixtral": "llama", "qwen2": "llama",
          "qwen2_moe": "llama", "qwen3_moe": "llama", "deepseek_v2": "llama",
          "deepseek_v3": "llama",
          "qwen3": "llama", "gemma": "llama", "gemma2": "llama", "gemma3": "llama",
          "gemma3_text": "llama", "olmo2": "llama", "olmo3": "llama", "olmoe": "llama",
          "phi3": "llama", "olmo": "llama",
          "glm": "llama", "glm4": "llama", "smollm3": "llama",
          "llama4": "llama", "llama4_text": "llama", "gpt_oss": "llama", "glm4_moe": "llama",
          "qwen2_vl": "llama", "qwen2_5_vl": "llama", "qwen3_vl": "llama", "llava": "llama",
          "mistral3": "llama",
          "stablelm": "llama",
          "gpt2": "gpt2", "gpt_neox": "gpt2", "opt": "gpt2", "bloom": "gpt2", "starcoder2": "gpt2",
          "phi": "gpt2", "bert": "gpt2", "roberta": "gpt2", "modernbert": "gpt2"}
# Falcon (fused multi-query attention, its own rotary and parallel block) and T5
# (relative position bias, an encoder and a decoder with cross-attention) have no table:
# GPT-2's, once used for both, is 11 % under to 2.5× over what autograd saves for them


#: the language models of an image-text model whose layer is Llama's (physics.dense.LLAMA)
_LLAMA_TEXT = ("llama", "mistral")


def _stablelm_beyond_table(cfg: dict) -> bool:
    """StableLM's per-head q/k LayerNorms, parallel residual and dropout are not in the
    table (StableLM-2-12B's options; StableLM-3B-4E1T and StableLM-2-1.6B have none)."""
    if cfg.get("qk_layernorm") is not False and cfg.get("qk_layernorm") is not None:
        return True
    if cfg.get("use_parallel_residual") not in (None, False):
        return True
    drops = [cfg.get(k) for k in ("hidden_dropout", "attention_dropout")]
    return any(not (d is None or (isinstance(d, (int, float)) and not isinstance(d, bool)
                                  and d == 0)) for d in drops)


def activation_family(arch: str, cfg: Optional[dict] = None) -> Optional[str]:
    """"llama" or "gpt2": the block type the activation model should use for `arch`."""
    a = normalise_arch(arch)
    if a == "megatron":
        return "llama" if (cfg or {}).get("swiglu") else "gpt2"
    if a == "olmoe" and (cfg or {}).get("clip_qkv") is not None:
        # the in-place clamps of Q, K and V keep what llama's table does not count
        return None
    if a == "stablelm" and _stablelm_beyond_table(cfg or {}):
        return None
    if a in ("llava", "mistral3"):
        # the language model's layers follow llama's table when it is Llama's or Mistral's
        # layer (Ministral-3's scales its queries by position: not modelled)
        return "llama" if text_config(a, cfg or {})[0] in _LLAMA_TEXT else None
    return _BLOCK.get(a or "")
