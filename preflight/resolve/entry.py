"""The resolution stage's entry points: `resolve` (a job's model references → the params,
trainable_params, shape, lora, model and family facts, and the findings for what it cannot
size) and `facts_for_name` (`preflight estimate --model NAME`, with shape overrides)."""

from __future__ import annotations

import os
from typing import Optional

from preflight.lang.python.arms import exclusive
from preflight.lazy import lazy
from preflight.models import formulas
from preflight.models.lora import default_targets, lora_counts
from preflight.plan import Diagnostic, Fact, Origin, Source
from preflight.resolve.classes import resolve_class
from preflight.resolve.model_facts import (config_behaviour_facts, double_quant_of, family_facts,
                                           load_dtype_facts, quant_bits_of, tensor_facts,
                                           unknown_finding)
from preflight.resolve.locations import project_entry
from preflight.resolve.model_attention import class_attention
from preflight.resolve.named_configs import resolve_named
from preflight.resolve.names import resolve_name
from preflight.resolve.registries import resolve_megatron, resolve_neox, resolve_torchtitan
from preflight.resolve.shapes import shape_for_arch
from preflight.resolve.values import (ALL_FIELD_NAMES, MISSING, Resolved, as_int, clean_fields,
                                      origin_of, plain_value, shape_facts_from_fields, source_of)

vision = lazy("preflight.models.vision")


# --------------------------------------------------------------------------- entry points

def _rival_loads(main: list[Resolved]) -> list[Resolved]:
    """The trained model's loads by name made in different arms of an undecided choice
    (each arm's own trained model), when they name different models; [] otherwise."""
    hubs = [r for r in main if r.ref.get("kind") == "hub" and r.ref.get("choices")]
    for i, a in enumerate(hubs):
        for b in hubs[i + 1:]:
            if a.name != b.name and exclusive(tuple(a.ref["choices"]), tuple(b.ref["choices"])):
                return hubs
    return []


def resolve(refs: list[dict], *, search_dirs: list[str], project_models: dict,
            params_override: Optional[int], modules: Optional[dict] = None,
            hub: bool = False) -> tuple[list[tuple[str, Fact]], list[Diagnostic]]:
    """Facts (params, trainable_params, shape facts, lora, model, and the attention of a
    model class of the repository) for a job's model refs (`_resolve`). `hub`: the user
    allows the network (a name no local file or catalogue entry sizes is asked of the
    Hugging Face hub)."""
    facts, diags = _resolve(refs, search_dirs=search_dirs, project_models=project_models,
                            params_override=params_override, modules=modules, hub=hub)
    # the trained model's class (the first one built) as its own module says it attends
    first = next((r for r in refs or [] if isinstance(r, dict) and r.get("kind") == "class"
                  and r.get("role") != "secondary"), None)
    if first is not None:
        try:
            attn = class_attention(first, search_dirs)
        except (OSError, ValueError, RecursionError):
            attn = None
        if attn is not None:
            facts.append(("attention", attn))
    return facts, diags


def _resolve(refs: list[dict], *, search_dirs: list[str], project_models: dict,
             params_override: Optional[int], modules: Optional[dict] = None,
             hub: bool = False) -> tuple[list[tuple[str, Fact]], list[Diagnostic]]:
    """Facts (params, trainable_params, shape facts, lora, model) for a job's model refs.

    `refs` are the extractor's `model_refs` (kinds hub, config, auto_config, class, lora,
    quant) from every file of the job. `modules` maps file paths to their `modules.Code`
    (text and `ast` tree: where custom classes may live). Never raises on bad input.
    """
    facts: list[tuple[str, Fact]] = []
    diags: list[Diagnostic] = []
    resolved: list[Resolved] = []
    lora_ref: Optional[dict] = None
    bits = 16
    bits_src: Optional[Source] = None
    double_quant: Optional[bool] = None
    custom_config: Optional[dict] = None
    built_configs: list[dict] = []          # the model configs built since the last class
    has_class = any(isinstance(r, dict) and r.get("kind") == "class" for r in refs or [])

    # the script's `resize_token_embeddings(...)` resizes the model it trains
    resize = next((r for r in refs or [] if isinstance(r, dict) and r.get("kind") == "resize"),
                  None)
    if resize is not None:
        refs = [{**r, "resize": resize} if isinstance(r, dict) and r.get("kind") in
                ("hub", "auto_config") and r.get("role") != "secondary" else r for r in refs]

    # a GPT-NeoX model is described across the job's YAML files: one reference, merged
    neox = [r for r in refs or [] if isinstance(r, dict) and r.get("kind") == "neox"]
    if neox:
        refs = [r for r in refs if not (isinstance(r, dict) and r.get("kind") == "neox")
                or r is neox[0]]
    for ref in refs or []:
        if not isinstance(ref, dict):
            continue
        kind = ref.get("kind")
        if kind is None and "bits" in ref:
            kind = "quant"
        src = source_of(ref.get("source"))
        try:
            if kind == "hub":
                kw = ref.get("kwargs") or {}
                q = quant_bits_of(kw)
                if q:
                    bits, bits_src = q, src
                    dq = double_quant_of(kw)
                    if dq is not None:
                        double_quant = dq
                named = None
                if ref.get("qual") and project_entry(str(ref.get("name")), project_models) is None:
                    named = resolve_named(ref.get("name"), ref, src, search_dirs)
                r = named or resolve_name(ref.get("name"), ref, src, search_dirs=search_dirs,
                                          project_models=project_models, hub=hub)
                if ref.get("origin") == Origin.INFERRED.value:
                    # named by a knob of a document no adapter reads (the knob lexicon):
                    # its size is the catalogue's, whether the job trains it is inferred
                    r.origin = Origin.INFERRED
                inferred = ref.get("inferred")
                if isinstance(inferred, dict):
                    # a placeholder argument read as the model the job's documentation names
                    r.origin = Origin.INFERRED
                    r.source = source_of(inferred.get("source")) or r.source
                    r.reason = str(inferred.get("reason") or "") + (
                        f"; {r.reason}" if r.reason else "")
                resolved.append(r)
            elif kind == "auto_config":
                overrides, missing = clean_fields(ref.get("overrides") or {})
                r = resolve_name(ref.get("name"), ref, src, search_dirs=search_dirs,
                                 project_models=project_models, extra_overrides=overrides,
                                 hub=hub)
                if overrides and r.origin is Origin.CATALOG:
                    r.origin = Origin.DERIVED
                resolved.append(r)
            elif kind == "config":
                cls = str(ref.get("class") or "")
                fields, missing = clean_fields(ref.get("fields") or {})
                arch = formulas.CONFIG_CLASSES.get(cls.split(".")[-1])
                if arch is None:
                    # a model's config names at least two of its sizes (a rope or a norm
                    # config with one `dim` is not a model)
                    raw = shape_facts_from_fields(fields)
                    looks_like_model = len(set(raw) - {"kv_heads"}) >= 2
                    if not looks_like_model:
                        continue            # a training / data config, not a model's
                    # a field the script passes but preflight cannot read is unknown to the
                    # model built from it (never the config class's default)
                    # here: the nn.Module counter (a package) only when a class is counted
                    from preflight.models.modules import Unknown as _Unknown
                    custom_config = {**fields, **{k: _Unknown(f"{k} is not known statically")
                                                  for k in missing}}
                    built_configs.append(ref.get("fields") or {})
                    if not has_class:
                        r = Resolved(ref=ref, origin=Origin.DERIVED, source=src, name=cls,
                                     shape_facts=shape_facts_from_fields(fields))
                        r.unknown = (f"{cls} is not a transformers config and no model class "
                                     f"built from it was found")
                        resolved.append(r)
                    continue
                r = Resolved(ref=ref, origin=Origin.DERIVED, source=src, name=cls)
                shape_keys = set(ALL_FIELD_NAMES) & set(missing)
                if shape_keys:
                    r.unknown = (f"{cls}: field(s) {', '.join(sorted(shape_keys))} not known "
                                 f"statically")
                    r.shape_facts = shape_facts_from_fields(fields)
                    resolved.append(r)
                    continue
                r.reason = f"{cls}(" + ", ".join(f"{k}={v}" for k, v in sorted(fields.items())
                                                 if not isinstance(v, (dict, list))) + ")"
                head = formulas.head_of_class(ref.get("model_class"))
                resolved.append(shape_for_arch(r, arch, fields, head,
                                               as_int(fields.get("num_labels")), r.reason))
            elif kind == "megatron":
                resolved.append(resolve_megatron(ref, src))
            elif kind == "neox":
                resolved.append(resolve_neox(neox, search_dirs))
            elif kind == "torchvision":
                name = str(ref.get("name") or "")
                r = Resolved(ref=ref, origin=Origin.CATALOG, source=src,
                             name=f"torchvision.models.{name}")
                kw, _ = clean_fields(ref.get("kwargs") or {})
                r.params = vision.torchvision_params(name, kw)
                if r.params is None:
                    r.unknown = (f"torchvision.models.{name}("
                                 + ", ".join(f"{k}={v!r}" for k, v in kw.items())
                                 + ") is not in preflight's table of torchvision models")
                else:
                    r.reason = f"torchvision.models.{name}: torchvision's parameter count"
                resolved.append(r)
            elif kind == "torchtitan":
                r = resolve_torchtitan(ref, src, search_dirs, project_models)
                if r is not None:       # the module's files are not in the job: nothing to say
                    resolved.append(r)
            elif kind == "class":
                resolved.append(resolve_class(ref, src, custom_config, modules or {},
                                              search_dirs, alternatives=built_configs))
                built_configs = []
            elif kind == "lora":
                # the same adapter read twice (the entry script following a helper into
                # its module, and that module walked on its own with unknown arguments):
                # a known rank is not replaced by an unknown one
                keep = lora_ref
                if lora_ref is None or as_int(plain_value(ref.get("r"))) is not None or \
                        as_int(plain_value(lora_ref.get("r"))) is None:
                    keep, lora_ref = lora_ref, ref
                if keep is not None and lora_ref.get("targets") in (None, [], "") and \
                        keep.get("targets") not in (None, [], ""):
                    # the rank from the command line, the targets from the script's config
                    # (`target_modules=find_linear_names(model)`: unknown, never the
                    # library's default list)
                    lora_ref = {**lora_ref, "targets": keep["targets"]}
            elif kind == "quant":
                b = as_int(plain_value(ref.get("bits")))
                if b in (4, 8):
                    bits, bits_src = b, src
        except Exception as e:  # never a traceback for odd refs
            r = Resolved(ref=ref, origin=Origin.UNKNOWN, source=src,
                         name=str(ref.get("name") or ref.get("class") or kind))
            r.unknown = f"could not resolve this reference ({type(e).__name__}: {e})"
            resolved.append(r)

    for r in resolved:
        diags.extend(r.diagnostics)
    # the trained model is the first one the job loads; later loads (a reference or reward
    # model, a reload for evaluation) carry role "secondary" and never size the job, even
    # when the first one cannot be resolved
    main = [r for r in resolved if r.ref.get("role") != "secondary"] or [
        r for r in resolved if not r.ref.get("auxiliary")]
    override_src = None
    rivals = _rival_loads(main)
    if rivals:
        # the trained model is loaded in arms of an undecided `if` (`if args.arch ==
        # "llama": ... else: ...`): which one the job trains is not known, so neither
        # sizes it (the `model` fact says the alternatives)
        if params_override is not None:
            facts.append(("params", Fact(value=int(params_override), origin=Origin.CLI,
                                         source=None, reason="--params")))
        else:
            names = " or ".join(dict.fromkeys(repr(r.name) for r in rivals))
            facts.append(("params", Fact.unknown(
                f"the model trained depends on a choice not known statically: {names}",
                source=rivals[-1].source)))
        return facts, diags
    primary = next((r for r in main if r.known), None)
    if params_override is not None:
        facts.append(("params", Fact(value=int(params_override), origin=Origin.CLI,
                                     source=override_src, reason="--params")))
    if resolved and not main:
        # only helper networks loaded by name (a diffusion trainer's latent autoencoder
        # beside a network it builds itself): none of them is the one trained
        names = ", ".join(sorted({str(r.name) for r in resolved}))
        if params_override is None:
            facts.append(("params", Fact.unknown(
                f"the trained network is not loaded by name (only the helper networks "
                f"{names} are): its size is not known", source=resolved[0].source)))
        return facts, diags
    if primary is None:
        if resolved:
            # a load whose name the script does not know statically, beside the name a
            # config or the command line gives the same model: the named one is what
            # cannot be sized, and the nameless load is no second finding
            named = [r for r in main if r.name]
            first = (named or main)[0]
            if params_override is None:
                # one finding per model: its config read and its weights loaded by the same
                # name are one model that cannot be sized, at the first line naming it
                said: set = set()
                for r in named or main:
                    if r.name is None or r.name not in said:
                        diags.append(unknown_finding(r))
                    said.add(r.name)
                facts.append(("params", Fact.unknown(first.unknown or "model size unknown",
                                                     source=first.source)))
            for k, v in first.shape_facts.items():
                facts.append((k, Fact(value=v, origin=first.origin, source=first.source,
                                      reason=f"{first.name}: config field" +
                                      (f"; {first.reason}" if first.reason else ""))))
            facts += family_facts(first)
            facts += load_dtype_facts(first)
        return facts, diags

    p = primary
    # the dtype is the load's: a config read first (`AutoConfig.from_pretrained(name)`) and
    # then `from_pretrained(name, config=config)` load the weights at the second call
    load = next((r for r in main if r.ref.get("kind") == "hub"), p)
    if load is not p and load.checkpoint_dtype is None and p.checkpoint_dtype:
        load.checkpoint_dtype, load.checkpoint_dtype_from = p.checkpoint_dtype, \
            p.checkpoint_dtype_from
    facts += load_dtype_facts(load)
    if p.name and p.ref.get("kind") in ("hub", "auto_config"):
        facts.append(("model", Fact(value=p.name, origin=p.origin, source=p.source,
                                    reason=p.reason or None)))
    reason = p.reason
    if p.shape is not None and p.shape.experts:
        reason += (f"; mixture of experts: {p.shape.active_params:,} active per token "
                   f"({p.shape.experts_per_token} of {p.shape.experts} experts)")
    base_params = Fact(value=p.params, origin=p.origin, source=p.source, reason=reason or None)
    for k, v in p.shape_facts.items():
        facts.append((k, Fact(value=v, origin=p.origin, source=p.source,
                              reason=p.reason or None)))
    if isinstance(p.stack, dict):
        facts.append(("layer_stack", Fact(value=p.stack, origin=Origin.DERIVED, source=p.source,
                                          reason=f"{p.stack['class']}: its forward applied to "
                                                 f"{tuple(p.stack['input_shape'])} per sample")))
    elif isinstance(p.stack, str):
        facts.append(("layer_stack", Fact.unknown(p.stack, source=p.source)))
    facts += family_facts(p)
    facts += config_behaviour_facts(p.ref, p.source)
    facts += p.more

    if lora_ref is None and p.adapter is not None:
        lora_ref = p.adapter
    if lora_ref is None:
        facts += tensor_facts(p, p.shape.param_shapes if p.shape is not None else None)
        facts.append(("params", base_params))
        facts.append(("lora", Fact(value=None, origin=Origin.DEFAULT, source=p.source,
                                   reason="no LoRA / adapter configuration found")))
        facts.append(("trainable_params", Fact(value=p.params, origin=Origin.DEFAULT,
                                               source=p.source,
                                               reason="no adapter: every parameter trains")))
        return facts, diags

    lsrc = source_of(lora_ref.get("source"))
    if lora_ref.get("choices"):
        # the adapter is built only in an arm of an undecided `if`: with it or without
        # it, the job is one of two; neither is said as what runs
        why = (f"a LoRA adapter is built only if {lora_ref['choices'][-1]}, not known "
               f"statically")
        facts += tensor_facts(p, None)
        facts.append(("params", Fact.unknown(why, source=lsrc, default=base_params.value)))
        facts.append(("lora", Fact.unknown(why, source=lsrc,
                                           default={"alternatives": ["lora", False]})))
        facts.append(("trainable_params", Fact.unknown(why, source=lsrc)))
        return facts, diags
    bb = lora_ref.get("base_bits")
    if bits == 16 and isinstance(bb, dict) and "unknown" in bb:
        # the base is quantised only in an arm of an undecided `if`: 16 or 4/8 bits
        facts.append(("lora", Fact.unknown(str(bb["unknown"]), source=lsrc)))
        facts.append(("params", base_params))
        facts.append(("trainable_params", Fact.unknown(str(bb["unknown"]), source=lsrc)))
        return facts, diags
    lorigin = origin_of(lora_ref.get("origin"), Origin.LITERAL)
    r_ = as_int(plain_value(lora_ref.get("r")))
    targets = plain_value(lora_ref.get("targets"))
    if isinstance(targets, dict):
        targets = MISSING       # an expression not evaluated (`{"call": ...}`), not names
    save = plain_value(lora_ref.get("modules_to_save"))
    save = [] if save in (None, MISSING) else ([save] if isinstance(save, str) else list(save))
    alpha = plain_value(lora_ref.get("alpha"))
    dropout = plain_value(lora_ref.get("dropout"))
    adapter_dtype = plain_value(lora_ref.get("adapter_dtype"))
    if bits == 16:
        b = as_int(plain_value(lora_ref.get("base_bits")))
        if b in (4, 8):
            bits = b
    arch = p.shape.arch if p.shape is not None else None
    if targets in (None, [], "") and arch:
        targets = default_targets(arch)
    lora_val = {"r": r_, "alpha": alpha if alpha is not MISSING else None,
                # None: the targets are not known (an expression evaluated at run time)
                "targets": (targets if isinstance(targets, list) else
                            [targets] if isinstance(targets, str) else
                            None if targets is MISSING else []),
                "base_bits": bits, "modules_to_save": save,
                "dropout": dropout if isinstance(dropout, (int, float))
                and not isinstance(dropout, bool) else None,
                "adapter_dtype": adapter_dtype if adapter_dtype in ("fp32", "bf16", "fp16")
                else None}
    if bits == 4 and double_quant is not None:
        lora_val["double_quant"] = double_quant     # bnb_4bit_use_double_quant
    facts.append(("lora", Fact(value=lora_val, origin=lorigin, source=lsrc,
                               reason=(f"frozen base at {bits} bits" +
                                       (f" ({bits_src})" if bits_src else "")))))
    if r_ is None or targets is MISSING or p.shape is None:
        why = ("the LoRA rank is not known" if r_ is None else
               "the LoRA target modules are not known" if targets is MISSING else
               f"{p.name} is not a transformers architecture: its linear layers are not "
               f"known to preflight")
        facts.append(("params", base_params))
        facts.append(("trainable_params", Fact.unknown(why, source=lsrc)))
        return facts, diags
    out = lora_counts(p.shape, {"r": r_, "targets": targets, "modules_to_save": save,
                                "train_untargeted": bool(lora_ref.get("train_untargeted"))})
    if out["trainable_params"] is not None:
        # what the ledger needs for the frozen base (lora.frozen_base_bytes)
        lora_val.update(base_params=p.params, adapter_params=out["adapters"],
                        saved_params=out["saved"],
                        quantized_params=sum(x.weight_params for x in p.shape.linears
                                             if x.in_block),
                        quantized_rows=sum(x.out_features * x.count for x in p.shape.linears
                                           if x.in_block))
        facts = [(n, Fact(value=lora_val, origin=f.origin, source=f.source, reason=f.reason)
                  if n == "lora" else f) for n, f in facts]
    if out["trainable_params"] is None:
        facts.append(("params", base_params))
        facts.append(("trainable_params", Fact.unknown("; ".join(out["unknown"]), source=lsrc)))
        return facts, diags
    facts += tensor_facts(p, out.get("trainable_shapes"))
    for u in out["unknown"]:
        diags.append(Diagnostic.at("PF003", u, lsrc, name="unresolved-value",
                                   severity="warning"))
    how = (f"LoRA r={r_} on {targets if isinstance(targets, str) else ', '.join(targets)}: "
           f"{out['adapters']:,} adapter params")
    if out["saved"]:
        how += f" + {out['saved']:,} in modules_to_save"
    facts.append(("trainable_params", Fact(value=out["trainable_params"], origin=Origin.DERIVED,
                                           source=lsrc, reason=how)))
    # params: the adapted model as peft counts it (base + adapters + saved copies), at the
    # base model's reference; the base count stays in the reason
    facts.append(("params", Fact(value=out["params"], origin=p.origin, source=p.source,
                                 reason=f"{p.params:,} base ({reason}) + "
                                        f"{out['trainable_params']:,} trainable adapter "
                                        f"params")))
    return facts, diags


def shape_overrides(shape: dict[str, int]) -> dict[str, int]:
    """Shape facts (`layers`, `hidden`, …) as config fields under every spelling the
    formulas read, so that an override wins whichever name the model's config uses."""
    return {n: v for fact, v in shape.items() for n in _OVERRIDE_NAMES.get(fact, ())}


#: the config field names the parameter formulas read, per shape fact
_OVERRIDE_NAMES = {
    "layers": ("num_hidden_layers", "n_layer"),
    "hidden": ("hidden_size", "n_embd", "d_model"),
    "heads": ("num_attention_heads", "n_head"),
    "kv_heads": ("num_key_value_heads", "num_kv_heads", "n_head_kv"),
    "ffn_hidden": ("intermediate_size", "n_inner", "ffn_dim", "d_ff"),
    "vocab": ("vocab_size",),
    "experts": ("num_local_experts", "num_experts", "n_routed_experts"),
    "experts_per_token": ("num_experts_per_tok", "moe_router_topk"),
    "expert_ffn_hidden": ("moe_intermediate_size",),
}


def facts_for_name(name: str, *, search_dirs: Optional[list[str]] = None,
                   project_models: Optional[dict] = None,
                   overrides: Optional[dict[str, int]] = None,
                   lora: Optional[dict] = None, hub: bool = False
                   ) -> Optional[list[tuple[str, Fact]]]:
    """Facts for `preflight estimate --model NAME`, or None when NAME does not resolve.
    `overrides` (shape facts) change the model's shape before it is counted; `hub`: the
    user allows the network."""
    ref = {"kind": "hub", "name": name, "source": None}
    if overrides:
        ref["kwargs"] = shape_overrides(overrides)
    facts, _ = resolve([ref] + ([lora] if lora else []),
                       search_dirs=search_dirs if search_dirs is not None else [os.getcwd()],
                       project_models=project_models or {}, params_override=None, hub=hub)
    if not any(n == "params" and f.known for n, f in facts):
        return None
    return facts
