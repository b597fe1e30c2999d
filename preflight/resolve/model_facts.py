"""The facts the resolution stage emits beside the parameter count: mixture-of-experts,
latent attention, the model's tensors and buffers, its architecture family, what its config
says about saved activations (dropout, use_cache, attn_implementation), the dtype
`from_pretrained` loads it in, the quantisation a load asks for, and the PF004 finding for a
model it cannot size."""

from __future__ import annotations

import os
from typing import Any, Optional

from preflight.extract.pins import CURRENT_MAJOR, find_pin
from preflight.facts import spellings
from preflight.models import catalog
from preflight.models.shape import ModelShape
from preflight.plan import Diagnostic, Fact, Origin, Source
from preflight.resolve.values import Resolved, clean_fields


def moe_facts(shape: ModelShape) -> dict[str, Any]:
    """The mixture-of-experts facts of a counted model (none for a dense one)."""
    if not shape.experts:
        return {}
    out = {"experts": shape.experts, "experts_per_token": shape.experts_per_token,
           "expert_ffn_hidden": shape.expert_ffn or shape.ffn_hidden,
           "active_params": shape.active_params, "moe_layers": shape.moe_layers or shape.layers,
           "expert_params": shape.expert_params,
           "moe_router": ("fp32-renormalised" if shape.weights_f32 and shape.norm_topk else
                          "fp32-plain" if shape.weights_f32 else
                          "renormalised" if shape.norm_topk else "plain")}
    if shape.shared_expert_ffn:
        out["shared_expert_ffn_hidden"] = shape.shared_expert_ffn
    if shape.router_upcast:
        out["moe_routing"] = {"upcast": True, "group_mask": shape.group_mask,
                              "shared_gate": False}
    elif shape.attention_sinks:
        # gpt-oss: the softmax of the top-k logits, a clamped SwiGLU (physics.moe)
        out["moe_routing"] = {"upcast": False, "group_mask": False, "shared_gate": True,
                              "topk_softmax": True}
    elif shape.llama4_layers:
        # every expert over every token, the shared expert ungated (physics.moe)
        out["moe_routing"] = {"upcast": False, "group_mask": False, "shared_gate": False,
                              "dense_dispatch": True}
    return out


def attention_facts(shape: ModelShape) -> dict[str, Any]:
    """The latent-attention fact (DeepSeek), the layer kinds (Llama 4) or the attention
    sinks (gpt-oss) of a counted model (none for llama-style attention), and otherwise its
    heads' widths when they are not hidden / heads or rotate only part of each head."""
    if shape.latent_attention:
        return {"latent_attention": dict(shape.latent_attention)}
    if shape.llama4_layers:
        return {"llama4_layers": dict(shape.llama4_layers)}
    if shape.attention_sinks:
        return {"attention_sinks": True}
    hd, rot = shape.head_dim, shape.rotary_dim
    if hd and shape.heads and (hd * shape.heads != shape.hidden or (rot and rot != hd)):
        return {"attention_dims": {"head_dim": hd, "rotary_dim": rot or hd}}
    return {}


def family_facts(res: Resolved) -> list[tuple[str, Fact]]:
    """The architecture family of the resolved model: from its architecture when it was
    counted, else from the catalogue or the words of its name (an assumption, said so)."""
    if res.family:
        arch = res.shape.arch if res.shape is not None else ""
        out = [("family", Fact(value=res.family, origin=res.origin, source=res.source,
                               reason=f"{res.name}: {arch or 'its'} architecture"))]
        if arch:
            out.append(("model_type", Fact(value=arch, origin=res.origin, source=res.source,
                                           reason=f"{res.name}: model_type {arch}")))
        return out
    if res.shape is not None:
        # counted, but its layers' saved tensors are not modelled: not guessed from the name
        return [("family", Fact.unknown(
            f"{res.name or 'the model'}: the saved activations of a {res.shape.arch} layer "
            f"are not modelled", source=res.source))]
    fam, how = catalog.family_from_name(res.name or "")
    if fam is None:
        return []
    origin = Origin.CATALOG if how == "catalogue" else Origin.ASSUMED
    return [("family", Fact(value=fam, origin=origin, source=res.source,
                            reason=f"{res.name}: {fam} block, from the {how}"))]


def unknown_finding(res: Resolved) -> Diagnostic:
    name = res.name or "the model"
    if res.name is None:
        return Diagnostic.at(
            "PF004", f"cannot size the model: {res.unknown}", res.source,
            name="unknown-model", severity="warning",
            fix=("give the model name where preflight can read it, or its size: "
                 "[tool.preflight.models] \"<name>\" = <parameter count> in pyproject.toml, "
                 "or --params N"), data={})
    return Diagnostic.at(
        "PF004", f"cannot size {name}: {res.unknown}", res.source, name="unknown-model",
        severity="warning",
        fix=(f"add its size to pyproject.toml: [tool.preflight.models] \"{name}\" = "
             f"<parameter count> (or a table of its config.json fields such as "
             f"model_type, hidden_size, num_hidden_layers), or pass --params N"),
        data={"model": name})


def tensor_facts(res: Resolved, trainable: Optional[list]) -> list[tuple[str, Fact]]:
    """The `model_tensors` fact of a counted architecture: the trainable parameter tensors
    (`trainable`: their shapes with counts, None when not known) and the registered buffers
    its modules create (None when not modelled); nothing when neither is known."""
    shape = res.shape
    buffers = shape.buffers if shape is not None else None
    if trainable is None and buffers is None:
        return []
    value = {"trainable": None if trainable is None else
             [[list(d), n] for d, n in trainable],
             "buffers": None if buffers is None else
             [[name, list(d), dtype] for name, d, dtype in buffers]}
    return [("model_tensors", Fact(value=value, origin=Origin.DERIVED, source=res.source,
                                   reason=f"{res.name or 'the model'}: "
                                          f"{shape.arch if shape else ''} architecture's modules"))]


#: config fields holding a dropout probability (GPT-2, BERT, Llama, T5, OPT, Falcon …)
DROPOUT_FIELDS = ("resid_pdrop", "embd_pdrop", "attn_pdrop", "hidden_dropout_prob",
                  "attention_probs_dropout_prob", "attention_dropout", "hidden_dropout",
                  "dropout", "dropout_rate", "activation_dropout", "summary_first_dropout")
#: attn_implementation spellings → the `attention` fact
ATTN_IMPLEMENTATIONS = {"eager": "eager", "sdpa": "sdpa", "flash_attention_2": "flash",
                        "flash_attention_3": "flash", "flex_attention": "sdpa"}


def config_behaviour_facts(ref: dict, src: Optional[Source]) -> list[tuple[str, Fact]]:
    """What a model's config says about its saved activations: the dropout probability (0
    removes every mask), `use_cache`, and `attn_implementation` given to the config."""
    fields, _ = clean_fields(ref.get("fields") or ref.get("kwargs") or {})
    out: list[tuple[str, Fact]] = []
    probs = {k: fields[k] for k in DROPOUT_FIELDS
             if isinstance(fields.get(k), (int, float)) and not isinstance(fields.get(k), bool)}
    if probs:
        out.append(("dropout", Fact(value=float(max(probs.values())), origin=Origin.LITERAL,
                                    source=src, reason=", ".join(f"{k}={v}" for k, v in
                                                                 sorted(probs.items())))))
    if isinstance(fields.get("use_cache"), bool):
        out.append(("use_cache", Fact(value=fields["use_cache"], origin=Origin.LITERAL,
                                      source=src, reason="use_cache in the model's config")))
    att = fields.get("attn_implementation")
    if isinstance(att, str) and att in ATTN_IMPLEMENTATIONS and ref.get("kind") == "config":
        out.append(("attention", Fact(value=ATTN_IMPLEMENTATIONS[att], origin=Origin.LITERAL,
                                      source=src, reason=f"attn_implementation={att!r} given "
                                                         "to the config")))
    return out


def double_quant_of(kwargs: dict) -> Optional[bool]:
    """bnb_4bit_use_double_quant of the quantization_config, when written."""
    kw, _ = clean_fields(kwargs)
    q = kw.get("quantization_config")
    if isinstance(q, dict) and isinstance(q.get("kwargs"), dict):
        q = q["kwargs"]
    if isinstance(q, dict) and isinstance(q.get("bnb_4bit_use_double_quant"), bool):
        return q["bnb_4bit_use_double_quant"]
    return None


#: config.json's torch_dtype spellings → the fact's dtype names
DTYPES = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32", "torch.bfloat16": "bf16",
          "torch.float16": "fp16", "torch.float32": "fp32", "half": "fp16", "float": "fp32"}
_DTYPE_WORDS = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}


def load_dtype_facts(res: Resolved) -> list[tuple[str, Fact]]:
    """The dtype transformers' `from_pretrained` loads the trained model in, when the job
    does not say it (`dtype` / `torch_dtype` absent, or `"auto"`).

    `"auto"` is the checkpoint's dtype. Without either, the version decides: transformers
    ≥ 5 defaults to `dtype="auto"` (modeling_utils: `if dtype is None: dtype = "auto"`,
    then the config's dtype, else the first floating-point weight's), 4.x loaded float32.
    The version is the one the job pins nearest to its script (preflight.extract.pins),
    else the current major, and the fact's reason says which."""
    ref = res.ref
    if ref.get("kind") != "hub" or ref.get("library") not in ("transformers", "trl", "peft", "",
                                                              None):
        return []
    kw = ref.get("kwargs") or {}
    if quant_bits_of(kw):
        return []
    given = kw.get("dtype", kw.get("torch_dtype"))
    if given is not None and given != "auto":
        return []                   # an explicit dtype: the extractor's fact
    src, name = res.source, res.name or "the model"
    ck = res.checkpoint_dtype
    known = (f"{_DTYPE_WORDS[ck]}, the checkpoint's dtype ({res.checkpoint_dtype_from})"
             if ck else None)
    if given == "auto":
        if not known:
            return []               # the extractor's unknown stands
        return [("param_dtype", Fact(value=ck, origin=Origin.CATALOG, source=src,
                                     reason=f'dtype="auto": {known}'))]
    start = os.path.dirname(os.path.abspath(src.path)) if src and src.path else "."
    pin = find_pin("transformers", start)
    current = CURRENT_MAJOR["transformers"]
    major = pin.major if pin else current
    said = (f"transformers {major}.x ({pin.text} in {pin.where})" if pin else
            f"no transformers version pinned near the script: the current major, {current}, "
            "assumed")
    if major < 5:
        return [("param_dtype", Fact(value="fp32", origin=Origin.DEFAULT, source=src,
                                     reason=f"from_pretrained without torch_dtype loads float32 "
                                            f"weights in transformers 4.x; {said}"))]
    if not known:
        return [("param_dtype", Fact.unknown(
            f"from_pretrained without dtype loads the checkpoint's dtype in transformers ≥ 5 "
            f"(dtype=\"auto\"), and {name}'s is not known; {said}", source=src))]
    return [("param_dtype", Fact(value=ck, origin=Origin.DEFAULT, source=src,
                                 reason=f"from_pretrained without dtype loads the checkpoint's "
                                        f"dtype in transformers ≥ 5 (dtype=\"auto\"): {known}; "
                                        f"{said}"))]


def quant_bits_of(kwargs: dict) -> Optional[int]:
    kw, _ = clean_fields(kwargs)
    bits = spellings.load_bits(kw)
    if bits is not None:
        return bits
    q = kw.get("quantization_config")
    if isinstance(q, dict) and isinstance(q.get("kwargs"), dict):   # {"call": …, "kwargs": …}
        q = q["kwargs"]
    return spellings.load_bits(q)
