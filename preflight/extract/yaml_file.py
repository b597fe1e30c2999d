"""YAML config files: accelerate configs and training recipes (axolotl, LLaMA-Factory,
litgpt config_hub, GPT-NeoX), each fact at the line and column of its key.

YAML is composed with `yaml.SafeLoader` and converted node by node (positions.yaml_tree):
no tag — `!!python/object` included — ever constructs an object; such a tag is reported
and its value read as plain text.
"""

from __future__ import annotations

import os
from typing import Any, Optional

from preflight.extract.json_file import deepspeed_facts, is_deepspeed
from preflight.extract.positions import yaml_tree
from preflight.facts import spellings
from preflight.plan import Diagnostic, Extraction, Fact, Origin, Source

class _Out:
    def __init__(self, path: str, pos: dict):
        self.path, self.pos = path, pos
        self.facts: list[tuple[str, Fact]] = []
        self.configs: list[str] = []
        self.model_refs: list[dict] = []
        self.extras: dict[str, Any] = {}

    def src(self, p: tuple) -> Source:
        q = p
        while q and q not in self.pos:
            q = q[:-1]
        line, col = self.pos.get(q, (1, 1))
        return Source(path=self.path, line=line, col=col)

    def put(self, name: str, value: Any, p: tuple, why: str = "", origin: Origin = Origin.CONFIG) -> None:
        if value is None and name not in ("fsdp", "lora"):
            return
        self.facts.append((name, Fact(value=value, origin=origin, source=self.src(p),
                                      reason=why or f"{'.'.join(map(str, p))}: {value}")))

    def unknown(self, name: str, p: tuple, why: str) -> None:
        self.facts.append((name, Fact.unknown(why, source=self.src(p))))


def _get(d: Any, *path: Any) -> Any:
    for k in path:
        if not isinstance(d, dict) or k not in d:
            return None
        d = d[k]
    return d


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _truthy(v: Any) -> bool:
    return v is True or (isinstance(v, str) and v.lower() in ("true", "yes", "1"))


# --------------------------------------------------------------------------- accelerate


def _accelerate(cfg: dict, o: _Out) -> None:
    dt = str(cfg.get("distributed_type", "")).upper()
    if _is_int(cfg.get("num_processes")):
        o.put("world_size", cfg["num_processes"], ("num_processes",))
    if _is_int(cfg.get("num_machines")):
        o.put("nodes", cfg["num_machines"], ("num_machines",))
    mp = cfg.get("mixed_precision")
    if isinstance(mp, str) or mp is False:
        v = spellings.mixed_precision("no" if mp is False else mp)
        if v:
            o.put("mixed_precision", v, ("mixed_precision",), f"mixed_precision: {mp}")
    if dt == "FSDP":
        fc = cfg.get("fsdp_config") if isinstance(cfg.get("fsdp_config"), dict) else {}
        strat = fc.get("fsdp_sharding_strategy")
        if spellings.fsdp_strategy(strat):
            o.put("fsdp", spellings.fsdp_strategy(strat), ("fsdp_config", "fsdp_sharding_strategy"))
        elif fc.get("fsdp_version") == 2 or "fsdp_reshard_after_forward" in fc:
            r = fc.get("fsdp_reshard_after_forward", True)
            o.put("fsdp", "full_shard" if r is not False else "shard_grad_op",
                  ("fsdp_config", "fsdp_reshard_after_forward") if "fsdp_reshard_after_forward" in fc else ("distributed_type",),
                  f"FSDP2 reshard_after_forward: {r}")
        else:
            o.put("fsdp", "full_shard", ("distributed_type",), "distributed_type: FSDP (default FULL_SHARD)")
        if "fsdp_offload_params" in fc:
            o.put("offload", "optimizer+params" if _truthy(fc["fsdp_offload_params"]) else "none",
                  ("fsdp_config", "fsdp_offload_params"))
        if "fsdp_activation_checkpointing" in fc:
            o.put("activation_checkpointing", "full" if _truthy(fc["fsdp_activation_checkpointing"]) else "none",
                  ("fsdp_config", "fsdp_activation_checkpointing"))
        o.put("zero_stage", 0, ("distributed_type",), "distributed_type: FSDP (no ZeRO)", Origin.DEFAULT)
        if mp in ("bf16", "fp16"):
            o.put("param_dtype", "fp32", ("mixed_precision",),
                  "FSDP mixed precision keeps fp32 parameters", Origin.DEFAULT)
    elif dt == "DEEPSPEED":
        dc = cfg.get("deepspeed_config") if isinstance(cfg.get("deepspeed_config"), dict) else {}
        o.put("fsdp", None, ("distributed_type",), "distributed_type: DEEPSPEED")
        if isinstance(dc.get("deepspeed_config_file"), str):
            o.configs.append(dc["deepspeed_config_file"])
        if _is_int(dc.get("zero_stage")):
            o.put("zero_stage", dc["zero_stage"], ("deepspeed_config", "zero_stage"))
        od = str(dc.get("offload_optimizer_device", "none")).lower()
        pd = str(dc.get("offload_param_device", "none")).lower()
        if "offload_param_device" in dc or "offload_optimizer_device" in dc:
            val = "optimizer+params" if pd in ("cpu", "nvme") else ("optimizer" if od in ("cpu", "nvme") else "none")
            key = "offload_param_device" if pd in ("cpu", "nvme") else "offload_optimizer_device"
            o.put("offload", val, ("deepspeed_config", key if key in dc else "offload_param_device"))
        if _is_int(dc.get("gradient_accumulation_steps")):
            o.put("grad_accum", dc["gradient_accumulation_steps"], ("deepspeed_config", "gradient_accumulation_steps"))
    elif dt in ("MULTI_GPU", "NO", "MULTI_CPU"):
        o.put("fsdp", None, ("distributed_type",), f"distributed_type: {dt}")
        o.put("zero_stage", 0, ("distributed_type",), f"distributed_type: {dt}", Origin.DEFAULT)
    if dt == "NO" and not _is_int(cfg.get("num_processes")):
        o.put("world_size", 1, ("distributed_type",), "distributed_type: NO (one process)")
    o.extras["accelerate"] = True


# --------------------------------------------------------------------------- recipes


def _lora(o: _Out, r: Any, alpha: Any, targets: Any, bits: int, p: tuple) -> None:
    if not _is_int(r):
        o.unknown("lora", p, "adapter set but its rank is not a number in this file")
        return
    t = targets if isinstance(targets, list) else ([targets] if isinstance(targets, str) else [])
    val = {"r": r, "alpha": alpha if isinstance(alpha, (int, float)) else None,
           "targets": [str(x) for x in t], "base_bits": bits}
    o.put("lora", val, p, f"LoRA r={r}")
    o.model_refs.append({"kind": "lora", "r": r, "alpha": val["alpha"], "targets": val["targets"],
                         "source": o.src(p)})


def _attention(v: Any) -> Optional[str]:
    return spellings.attention(str(v))


def _axolotl(cfg: dict, o: _Out) -> None:
    bm = cfg.get("base_model")
    if isinstance(bm, str):
        o.put("model", bm, ("base_model",))
        o.model_refs.append({"kind": "hub", "name": bm, "source": o.src(("base_model",))})
    for key, name in (("sequence_len", "seq_len"), ("micro_batch_size", "micro_batch"),
                      ("gradient_accumulation_steps", "grad_accum")):
        if _is_int(cfg.get(key)):
            o.put(name, cfg[key], (key,))
    if cfg.get("bf16") in (True, "true", "auto", "True"):
        org = Origin.CONFIG if cfg.get("bf16") is True or cfg.get("bf16") == "true" else Origin.ASSUMED
        o.put("mixed_precision", "bf16", ("bf16",), f"bf16: {cfg['bf16']}" + (
            " (bf16 where the GPU supports it)" if org is Origin.ASSUMED else ""), org)
    elif cfg.get("fp16") is True:
        o.put("mixed_precision", "fp16", ("fp16",))
    bits = 4 if cfg.get("load_in_4bit") is True else (8 if cfg.get("load_in_8bit") is True else 16)
    if bits != 16:
        key = "load_in_4bit" if bits == 4 else "load_in_8bit"
        o.put("param_dtype", "int4" if bits == 4 else "int8", (key,))
        o.model_refs.append({"kind": "quant", "bits": bits, "source": o.src((key,))})
    ad = cfg.get("adapter")
    if isinstance(ad, str) and ad.lower() in ("lora", "qlora"):
        targets = cfg.get("lora_target_modules")
        if cfg.get("lora_target_linear") is True:
            targets = ["all-linear"]
        if ad.lower() == "qlora" and bits == 16:
            bits = 4
        _lora(o, cfg.get("lora_r"), cfg.get("lora_alpha"), targets, bits, ("adapter",))
    elif "adapter" in cfg or "base_model" in cfg:
        o.put("lora", None, ("adapter",) if "adapter" in cfg else ("base_model",), "no adapter: full fine-tune",
              Origin.CONFIG if "adapter" in cfg else Origin.DEFAULT)
    if isinstance(cfg.get("deepspeed"), str):
        o.configs.append(cfg["deepspeed"])
    fs = cfg.get("fsdp")
    fcfg = cfg.get("fsdp_config") if isinstance(cfg.get("fsdp_config"), dict) else None
    if fs or fcfg:
        val = "full_shard"
        if isinstance(fs, list) and any(str(x).lower() == "shard_grad_op" for x in fs):
            val = "shard_grad_op"
        if fcfg and fcfg.get("reshard_after_forward") is False:
            val = "shard_grad_op"
        o.put("fsdp", val, ("fsdp",) if fs else ("fsdp_config",))
        if fcfg and (fcfg.get("offload_params") is True or fcfg.get("fsdp_offload_params") is True):
            o.put("offload", "optimizer+params", ("fsdp_config",))
    elif not cfg.get("deepspeed"):
        o.put("fsdp", None, ("base_model",), "no fsdp / deepspeed setting", Origin.DEFAULT)
        o.put("zero_stage", 0, ("base_model",), "no deepspeed setting", Origin.DEFAULT)
    if "gradient_checkpointing" in cfg:
        gc = cfg["gradient_checkpointing"]
        o.put("activation_checkpointing", "full" if gc in (True, "true") else (
            "selective" if gc == "offload" else "none"), ("gradient_checkpointing",))
    for key in ("attn_implementation", "flash_attention", "sdp_attention", "xformers_attention", "eager_attention"):
        if key in cfg:
            v = cfg[key]
            att = _attention(v) if key == "attn_implementation" else (
                spellings.ATTENTION_SWITCHES.get(key)
                if v is True else None)
            if att:
                o.put("attention", att, (key,))
                break
    opt = cfg.get("optimizer")
    if isinstance(opt, str):
        o.put("optimizer", spellings.optimizer_name(opt) or "other", ("optimizer",))


def _llamafactory(cfg: dict, o: _Out) -> None:
    m = cfg.get("model_name_or_path")
    if isinstance(m, str):
        o.put("model", m, ("model_name_or_path",))
        o.model_refs.append({"kind": "hub", "name": m, "source": o.src(("model_name_or_path",))})
    for key, name in (("cutoff_len", "seq_len"), ("per_device_train_batch_size", "micro_batch"),
                      ("gradient_accumulation_steps", "grad_accum")):
        if _is_int(cfg.get(key)):
            o.put(name, cfg[key], (key,))
    if cfg.get("bf16") is True:
        o.put("mixed_precision", "bf16", ("bf16",))
    elif cfg.get("fp16") is True:
        o.put("mixed_precision", "fp16", ("fp16",))
    ft = str(cfg.get("finetuning_type", "lora")).lower()
    qb = cfg.get("quantization_bit")
    bits = qb if qb in (4, 8) else 16
    if bits != 16:
        o.put("param_dtype", f"int{bits}", ("quantization_bit",))
        o.model_refs.append({"kind": "quant", "bits": bits, "source": o.src(("quantization_bit",))})
    if ft == "lora":
        r = cfg.get("lora_rank", 8)
        alpha = cfg.get("lora_alpha", r * 2 if _is_int(r) else None)
        tgt = cfg.get("lora_target", "all")
        tgt = [t.strip() for t in tgt.split(",")] if isinstance(tgt, str) else tgt
        _lora(o, r, alpha, tgt, bits, ("finetuning_type",) if "finetuning_type" in cfg else ("stage",))
    else:
        o.put("lora", None, ("finetuning_type",), f"finetuning_type: {ft}")
        if bits == 16 and (cfg.get("bf16") is True or cfg.get("pure_bf16") is True) and ft == "full":
            pass
    if isinstance(cfg.get("deepspeed"), str):
        o.configs.append(cfg["deepspeed"])
    else:
        o.put("zero_stage", 0, ("stage",), "no deepspeed setting", Origin.DEFAULT)
    if cfg.get("disable_gradient_checkpointing") is True:
        o.put("activation_checkpointing", "none", ("disable_gradient_checkpointing",))
    else:
        o.put("activation_checkpointing", "full",
              ("disable_gradient_checkpointing",) if "disable_gradient_checkpointing" in cfg else ("stage",),
              "LLaMA-Factory enables gradient checkpointing unless disable_gradient_checkpointing",
              Origin.DEFAULT)
    if "flash_attn" in cfg:
        att = _attention(cfg["flash_attn"])
        if att:
            o.put("attention", att, ("flash_attn",))
    opt = cfg.get("optim")
    if isinstance(opt, str):
        o.put("optimizer", spellings.optimizer_name(opt) or "other", ("optim",))
    else:
        o.put("optimizer", "adamw", ("stage",), "TrainingArguments.optim defaults to adamw_torch", Origin.DEFAULT)


def _litgpt(cfg: dict, o: _Out) -> None:
    name = cfg.get("model_name")
    if not isinstance(name, str) and isinstance(cfg.get("checkpoint_dir"), str):
        cd = cfg["checkpoint_dir"].rstrip("/")
        parts = cd.split("/")
        name = "/".join(parts[-2:]) if len(parts) >= 2 and parts[0] == "checkpoints" else cd
        key = ("checkpoint_dir",)
    else:
        key = ("model_name",)
    if isinstance(name, str):
        o.put("model", name, key)
        o.model_refs.append({"kind": "hub", "name": name, "source": o.src(key)})
    prec = cfg.get("precision")
    if isinstance(prec, str) and spellings.precision(prec):
        mx, pd = spellings.precision(prec)
        o.put("mixed_precision", mx, ("precision",))
        o.put("param_dtype", pd or "fp32", ("precision",), f"precision: {prec}")
    dev, nn = cfg.get("devices"), cfg.get("num_nodes", 1)
    if _is_int(dev):
        o.put("gpus_per_node", dev, ("devices",))
    elif dev is not None:
        o.unknown("gpus_per_node", ("devices",), f"devices: {dev} uses every visible GPU")
    if _is_int(nn):
        o.put("nodes", nn, ("num_nodes",) if "num_nodes" in cfg else ("devices",),
              "" if "num_nodes" in cfg else "litgpt num_nodes defaults to 1",
              Origin.CONFIG if "num_nodes" in cfg else Origin.DEFAULT)
    tr = cfg.get("train") if isinstance(cfg.get("train"), dict) else {}
    mb, gb = tr.get("micro_batch_size"), tr.get("global_batch_size")
    if _is_int(mb):
        o.put("micro_batch", mb, ("train", "micro_batch_size"))
    if _is_int(tr.get("max_seq_length")):
        o.put("seq_len", tr["max_seq_length"], ("train", "max_seq_length"))
    if _is_int(gb):
        o.extras["global_batch_size"] = {"value": gb, "source": o.src(("train", "global_batch_size"))}
        if _is_int(mb) and _is_int(dev) and _is_int(nn) and gb % (mb * dev * nn) == 0:
            o.put("grad_accum", gb // (mb * dev * nn), ("train", "global_batch_size"),
                  f"global_batch_size {gb} / (micro_batch_size {mb} × devices {dev} × num_nodes {nn})",
                  Origin.DERIVED)
    opt = cfg.get("optimizer")
    oname = opt.get("class_path") if isinstance(opt, dict) else opt
    if isinstance(oname, str):
        base = oname.rsplit(".", 1)[-1]
        o.put("optimizer", spellings.optimizer_class(base) or spellings.optimizer_name(base) or "other", ("optimizer", "class_path") if isinstance(opt, dict) else ("optimizer",))
    o.put("zero_stage", 0, ("devices",) if "devices" in cfg else (), "litgpt does not use DeepSpeed", Origin.DEFAULT)
    o.put("attention", "sdpa", ("model_name",) if "model_name" in cfg else (),
          "litgpt's attention calls torch's scaled_dot_product_attention", Origin.DEFAULT)
    pretrain = "/pretrain/" in o.path.replace(os.sep, "/") or "pretrain" in os.path.basename(o.path)
    if _is_int(dev) and _is_int(nn):
        if dev * nn > 1:
            o.put("fsdp", "hybrid_shard" if pretrain else "full_shard", ("devices",),
                  "litgpt runs FSDP when devices > 1" + (" (HYBRID_SHARD in pretrain)" if pretrain else ""),
                  Origin.DEFAULT)
            if not pretrain:
                o.put("activation_checkpointing", "full", ("devices",),
                      "litgpt fine-tuning checkpoints every Block under FSDP", Origin.DEFAULT)
        else:
            o.put("fsdp", None, ("devices",), "one device: no FSDP", Origin.DEFAULT)
    if pretrain:
        o.put("activation_checkpointing", "none", ("train",) if tr else (),
              "litgpt pretrain does not checkpoint activations", Origin.DEFAULT)
    o.put("lora", None, key, "no LoRA settings in this recipe", Origin.DEFAULT) \
        if not any(k.startswith("lora_") for k in cfg) else _lora(
            o, cfg.get("lora_r"), cfg.get("lora_alpha"),
            [k[len("lora_"):] for k in cfg if k.startswith("lora_") and cfg[k] is True], 16, ("lora_r",))


def _neox(cfg: dict, o: _Out) -> None:
    def k(*names: str) -> Optional[str]:
        for n in names:
            for v in (n, n.replace("_", "-")):
                if v in cfg:
                    return v
        return None

    for names, fact in ((("num_layers",), "layers"), (("hidden_size",), "hidden"),
                        (("num_attention_heads",), "heads"), (("seq_length",), "seq_len"),
                        (("model_parallel_size",), "tp"), (("pipe_parallel_size",), "pp"),
                        (("train_micro_batch_size_per_gpu",), "micro_batch"),
                        (("gradient_accumulation_steps",), "grad_accum")):
        key = k(*names)
        if key and _is_int(cfg[key]):
            val = cfg[key]
            if fact == "pp" and val == 0:
                val = 1
            o.put(fact, val, (key,))
    key = k("checkpoint_activations")
    if key is not None:
        o.put("activation_checkpointing", "full" if cfg[key] is True else "none", (key,))
    heads = k("num_attention_heads")
    if heads and _is_int(cfg[heads]):
        kv = k("num_kv_heads")
        if kv and _is_int(cfg[kv]):
            o.put("kv_heads", cfg[kv], (kv,))
        elif kv is None:
            o.put("kv_heads", cfg[heads], (heads,), "num_kv_heads unset: one key/value head per "
                  "attention head (GPT-NeoX default)", Origin.DEFAULT)
    att = k("attention_config")
    if att is not None:
        o.put("attention", "flash" if "flash" in str(cfg[att]).lower() else "eager", (att,),
              f"attention_config {cfg[att]}")
    elif heads:
        o.put("attention", "eager", (heads,), "attention_config unset: GPT-NeoX global attention "
              "(the score matrix is materialised)", Origin.DEFAULT)
    if isinstance(cfg.get("fp16"), dict) and cfg["fp16"].get("enabled") is True and \
            str(cfg["fp16"].get("type", "")).lower() == "bfloat16":
        cfg = dict(cfg, fp16={"enabled": False}, bf16={"enabled": True})


def _recipe_kind(cfg: dict) -> Optional[str]:
    if "compute_environment" in cfg or ("distributed_type" in cfg and
                                         any(k in cfg for k in ("num_processes", "mixed_precision", "fsdp_config",
                                                                "deepspeed_config", "machine_rank"))):
        return "accelerate"
    if "base_model" in cfg and any(k in cfg for k in ("micro_batch_size", "sequence_len", "datasets", "adapter")):
        return "axolotl"
    if "model_name_or_path" in cfg and any(k in cfg for k in ("finetuning_type", "stage", "cutoff_len", "template")):
        return "llamafactory"
    if isinstance(cfg.get("train"), dict) and any(k in cfg for k in ("checkpoint_dir", "model_name", "precision", "devices")):
        return "litgpt"
    if any(k in cfg or k.replace("_", "-") in cfg for k in ("num_layers", "pipe_parallel_size", "model_parallel_size")):
        return "neox"
    if is_deepspeed(cfg):
        return "deepspeed"
    return None


def extract(path: str, text: str, args: Optional[list[str]] = None) -> Extraction:
    import yaml

    try:
        cfg, pos, odd = yaml_tree(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
        line, col = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        return Extraction(path=path, kind="yaml", diagnostics=[Diagnostic(
            code="PF005", name="malformed-config", severity="error",
            message=f"malformed YAML: {problem}", path=path, line=line, col=col,
            fix="fix the YAML syntax (indentation or an unclosed quote is the usual cause)")])
    except RecursionError:
        return Extraction(path=path, kind="yaml", diagnostics=[Diagnostic(
            code="PF005", name="malformed-config", message="YAML nested too deeply to read",
            path=path, line=1, col=1)])
    diags: list[Diagnostic] = []
    for tag in dict.fromkeys(t for t in odd if "python" in t):
        short = tag.replace("tag:yaml.org,2002:", "!!")
        line, col = 1, 1
        for i, ln in enumerate(text.splitlines()):
            k = ln.find(short) if short.startswith("!!") else ln.find(tag)
            if k < 0:
                k = ln.find("!!python")
            if k >= 0:
                line, col = i + 1, k + 1
                break
        diags.append(Diagnostic(code="PF005", name="malformed-config", severity="warning",
                                message=f"YAML tag {short} is not constructed; its value is read as plain text",
                                path=path, line=line, col=col))
    if not isinstance(cfg, dict):
        return Extraction(path=path, kind="yaml", diagnostics=diags)
    o = _Out(path, pos)
    kind = _recipe_kind(cfg)
    if kind == "accelerate":
        _accelerate(cfg, o)
    elif kind == "axolotl":
        _axolotl(cfg, o)
    elif kind == "llamafactory":
        _llamafactory(cfg, o)
    elif kind == "litgpt":
        _litgpt(cfg, o)
    elif kind == "neox":
        _neox(cfg, o)
    if kind in ("neox", "deepspeed") or (kind is None and is_deepspeed(cfg)):
        c = cfg
        if isinstance(c.get("fp16"), dict) and c["fp16"].get("enabled") is True and \
                str(c["fp16"].get("type", "")).lower() == "bfloat16":
            c = dict(c, fp16={"enabled": False}, bf16={"enabled": True})
            o.pos.setdefault(("bf16", "enabled"), o.pos.get(("fp16", "type"), (1, 1)))
        facts, extras = deepspeed_facts(c, o.src)
        if kind == "neox":
            # a file of a multi-file NeoX config: defaults only where the file says nothing
            facts = [(n, f) for n, f in facts if f.origin is not Origin.DEFAULT]
        o.facts.extend(facts)
        o.extras.update(extras)
    if o.model_refs:
        o.extras["model_refs"] = o.model_refs
    if kind:
        o.extras["recipe"] = kind
    return Extraction(path=path, kind=kind or "yaml", facts=o.facts, diagnostics=diags,
                      references=list(o.configs), extras=o.extras)
