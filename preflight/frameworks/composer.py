"""Composer / llm-foundry: `composer [-n N] train.py cfg.yaml [key=value …]` and the
llm-foundry training YAML.

The YAML gives the global batch (`global_train_batch_size`) and the per-device microbatch
(`device_train_microbatch_size`; `auto` is found at run time); accumulation is the global
batch over microbatch × world size. `precision: amp_bf16` autocasts with fp32 weights
(`amp_fp16`, `amp_fp8` likewise; `fp32` none). `fsdp_config` shards with FSDP
(`sharding_strategy`, `activation_checkpointing`, `cpu_offload`); without it the job is DDP.
The model is a Hugging Face checkpoint (`pretrained_model_name_or_path`) or an MPT shape
(`d_model`, `n_heads`, `n_layers`, `expansion_ratio`, `vocab_size`). `${variables.x}`
interpolations within the file are followed.
"""

from __future__ import annotations

import re
from typing import Any, Optional

from preflight.facts import spellings
from preflight.frameworks import (UNKNOWN, ConfigOut, Example, Framework, get_path, is_int,
                                  read_overrides)
from preflight.lang.shell.values import as_int
from preflight.plan import Fact, Invocation, Origin

#: llm-foundry optimizer names → the class they build
_OPTIMIZERS = {"decoupled_adamw": "DecoupledAdamW", "adamw": "AdamW", "decoupled_lionw": "DecoupledLionW",
               "decoupled_sgdw": "DecoupledSGDW", "adam": "Adam", "sgd": "SGD"}
_REF = re.compile(r"^\$\{\s*([\w.]+)\s*\}$")


def _resolve(cfg: dict, v: Any, depth: int = 0) -> Any:
    """`${variables.max_seq_len}` / `${max_seq_len}` → the value at that path of the file."""
    if isinstance(v, str) and depth < 8:
        m = _REF.match(v.strip())
        if m:
            return _resolve(cfg, get_path(cfg, *m.group(1).split(".")), depth + 1)
    return v


class Composer(Framework):
    name = "composer"
    title = "Composer / llm-foundry"
    programs = ("composer",)
    reads = (
        "`composer [-n N | --nproc N] [--world_size W] train.py cfg.yaml key=value …`",
        "`global_train_batch_size`, `device_train_microbatch_size` (`auto`: unknown), "
        "`max_seq_len`, `precision` (`amp_bf16`, `amp_fp16`, `amp_fp8`, `fp32`), "
        "`optimizer.name`, `fsdp_config` (`sharding_strategy`, `activation_checkpointing`, "
        "`cpu_offload`), `model.pretrained_model_name_or_path`, MPT shapes (`d_model`, "
        "`n_heads`, `n_layers`, `expansion_ratio`, `vocab_size`), `attn_config.attn_impl`",
        "`${variables.*}` interpolations inside the file; dotted `key=value` overrides",
    )
    not_read = (
        "`parallelism_config` (tensor parallelism of newer llm-foundry)",
        "`peft_config` of llm-foundry fine-tuning YAMLs",
        "interpolations from the environment (`${oc.env:…}`)",
    )

    def claims(self, cfg: dict, path: str) -> bool:
        return any(k in cfg for k in ("global_train_batch_size", "device_train_microbatch_size")) or (
            "max_duration" in cfg and ("train_loader" in cfg or "precision" in cfg))

    def read_config(self, cfg: dict, o: ConfigOut) -> None:
        def val(*p: str) -> Any:
            return _resolve(cfg, get_path(cfg, *p))

        model = cfg.get("model") if isinstance(cfg.get("model"), dict) else {}
        hub = val("model", "pretrained_model_name_or_path")
        if isinstance(hub, str):
            o.hub_model(hub, ("model", "pretrained_model_name_or_path"))
        elif model.get("d_model") is not None:
            for key, fact in (("n_layers", "layers"), ("d_model", "hidden"), ("n_heads", "heads"),
                              ("vocab_size", "vocab")):
                v = val("model", key)
                if is_int(v):
                    o.put(fact, v, ("model", key))
            d, e = val("model", "d_model"), val("model", "expansion_ratio")
            if is_int(d) and isinstance(e, (int, float)) and not isinstance(e, bool):
                o.put("ffn_hidden", int(d * e), ("model", "expansion_ratio"),
                      f"d_model {d} × expansion_ratio {e}", Origin.DERIVED)
            heads = val("model", "n_heads")
            if is_int(heads) and not o.partial:
                kv = val("model", "attn_config", "kv_n_heads")
                o.put("kv_heads", kv if is_int(kv) else heads, ("model", "attn_config", "kv_n_heads")
                      if is_int(kv) else ("model", "n_heads"), "" if is_int(kv) else
                      "attn_config.kv_n_heads unset: multi-head attention", None if is_int(kv) else Origin.DEFAULT)
        msl = val("max_seq_len")
        key = ("max_seq_len",)
        if not is_int(msl):
            msl, key = val("model", "max_seq_len"), ("model", "max_seq_len")
        if is_int(msl):
            o.put("seq_len", msl, key)
        mb = val("device_train_microbatch_size")
        if is_int(mb):
            o.put("micro_batch", mb, ("device_train_microbatch_size",))
        elif mb is not None:
            o.unknown("micro_batch", ("device_train_microbatch_size",),
                      f"device_train_microbatch_size: {mb} (Composer finds it at run time)")
        gb = val("global_train_batch_size")
        if is_int(gb):
            o.extras["global_batch_size"] = {"value": gb, "source": o.src(("global_train_batch_size",))}
        p = val("precision")
        if isinstance(p, str) and spellings.mixed_precision(p):
            o.put("mixed_precision", spellings.mixed_precision(p), ("precision",))
            if not o.partial:
                o.put("param_dtype", "fp32", ("precision",), f"precision: {p} keeps fp32 weights", Origin.DEFAULT)
        oname = val("optimizer", "name")
        if isinstance(oname, str):
            cls = _OPTIMIZERS.get(oname.lower())
            o.put("optimizer", (spellings.optimizer_class(cls) if cls else None) or "other", ("optimizer", "name"))
        att = val("model", "attn_config", "attn_impl")
        if isinstance(att, str):
            # llm-foundry's `torch` attention is its own unfused implementation (s × s scores)
            o.put("attention", "eager" if att.lower() == "torch" else (spellings.attention(att) or "eager"),
                  ("model", "attn_config", "attn_impl"))
        fc = cfg.get("fsdp_config")
        if isinstance(fc, dict):
            s = fc.get("sharding_strategy")
            if s is not None and spellings.fsdp_strategy(s):
                o.put("fsdp", spellings.fsdp_strategy(s), ("fsdp_config", "sharding_strategy"))
            elif not o.partial:
                o.default("fsdp", "full_shard", ("fsdp_config",), "fsdp_config without sharding_strategy: FULL_SHARD")
            if "activation_checkpointing" in fc:
                o.put("activation_checkpointing", "full" if fc["activation_checkpointing"] is True else "none",
                      ("fsdp_config", "activation_checkpointing"))
            if "cpu_offload" in fc:
                o.put("offload", "optimizer+params" if fc["cpu_offload"] is True else "none",
                      ("fsdp_config", "cpu_offload"))
        elif not o.partial and "fsdp_config" not in cfg and ("precision" in cfg or gb is not None):
            o.default("fsdp", None, ("precision",) if "precision" in cfg else ("global_train_batch_size",),
                      "no fsdp_config: Composer runs DDP")
        if not o.partial and ("precision" in cfg or gb is not None):
            o.default("zero_stage", 0, ("precision",) if "precision" in cfg else ("global_train_batch_size",),
                      "no deepspeed_config: no ZeRO")

    # composer [-n N] [--world_size W] [--node_rank R] script.py [args…]
    def launch(self, prog: str, rest: list[str], line: Any, cwd: str = "") -> Optional[Invocation]:
        i = 0
        n = world = None
        while i < len(rest) and rest[i].startswith("-"):
            w = rest[i]
            k, v = (w.split("=", 1) + [None])[:2] if w.startswith("--") and "=" in w else (w, None)
            if k in ("-n", "--nproc", "--world_size", "--node_rank", "--master_addr", "--master_port",
                     "--base_rank", "--stdout", "--stderr") and v is None:
                v = rest[i + 1] if i + 1 < len(rest) else None
                i += 1
            if k in ("-n", "--nproc"):
                n = v
                line.fact("gpus_per_node", v, as_int, k)
            elif k == "--world_size":
                world = v
                line.fact("world_size", v, as_int, k)
            i += 1
        if i >= len(rest):
            return None
        if n is None:
            line.facts.append(("gpus_per_node", Fact.unknown(
                "composer without -n starts one process per visible GPU", source=line.source)))
        if world is None:
            line.facts.append(("nodes", Fact(value=1, origin=Origin.DEFAULT, source=line.source,
                                             reason="composer without --world_size runs on one node")))
        script, args = rest[i], rest[i + 1:]
        configs = [a for a in args if a.lower().endswith((".yaml", ".yml"))][:1]
        over = [a for a in args if "=" in a and not a.startswith("-")]
        if over:
            line.facts.extend(read_overrides(self.read_config, over, line.source, line.origin))
        return Invocation(script=script, args=args, source=line.source, facts=line.facts,
                          configs=line.configs + configs)


_MPT = """\
variables:
  max_seq_len: 2048
max_seq_len: ${variables.max_seq_len}
model:
  name: mpt_causal_lm
  d_model: 2048
  n_heads: 16
  n_layers: 24
  expansion_ratio: 4
  max_seq_len: ${variables.max_seq_len}
  vocab_size: 50368
  attn_config:
    attn_impl: flash
optimizer:
  name: decoupled_adamw
  lr: 2.0e-4
precision: amp_bf16
fsdp_config:
  sharding_strategy: FULL_SHARD
  activation_checkpointing: true
global_train_batch_size: 512
device_train_microbatch_size: 8
max_duration: 24800ba
"""
_HF = """\
model:
  name: hf_causal_lm
  pretrained_model_name_or_path: mosaicml/mpt-7b
  pretrained: true
max_seq_len: 4096
precision: amp_bf16
global_train_batch_size: 64
device_train_microbatch_size: auto
max_duration: 1ep
"""

#: llm-foundry's full shape: `run_name`, `train_loader` and `d_model` beside the global batch,
#: which OLMo's configs share in part
_FOUNDRY = """\
variables:
  max_seq_len: 4096
max_seq_len: ${variables.max_seq_len}
run_name: mpt-3b-run
model:
  name: mpt_causal_lm
  d_model: 2560
  n_heads: 32
  n_layers: 32
  expansion_ratio: 4
  vocab_size: 50368
train_loader:
  name: text
  dataset:
    max_seq_len: ${variables.max_seq_len}
optimizer:
  name: decoupled_adamw
  lr: 1.6e-4
global_train_batch_size: 512
device_train_microbatch_size: 4
precision: amp_bf16
"""

ADAPTER = Composer()
Composer.EXAMPLES = [
    Example(title="MPT pretraining YAML on 8 GPUs; accumulation from the global batch",
            files={"yamls/mpt-1b.yaml": _MPT, "train.py": "from composer import Trainer\n"},
            command="composer -n 8 train.py yamls/mpt-1b.yaml",
            facts={"layers": (24, "yamls/mpt-1b.yaml:8"), "hidden": (2048, "yamls/mpt-1b.yaml:6"),
                   "heads": (16, "yamls/mpt-1b.yaml:7"), "ffn_hidden": (8192, "yamls/mpt-1b.yaml:9"),
                   "seq_len": (2048, "yamls/mpt-1b.yaml:3"),
                   "attention": ("flash", "yamls/mpt-1b.yaml:13"),
                   "optimizer": ("adamw", "yamls/mpt-1b.yaml:15"),
                   "mixed_precision": ("bf16", "yamls/mpt-1b.yaml:17"),
                   "fsdp": ("full_shard", "yamls/mpt-1b.yaml:19"),
                   "activation_checkpointing": ("full", "yamls/mpt-1b.yaml:20"),
                   "micro_batch": (8, "yamls/mpt-1b.yaml:22"),
                   "grad_accum": (8, "yamls/mpt-1b.yaml:21", "derived"),
                   "gpus_per_node": (8, "<command>:1", "cli")}),
    Example(title="Hugging Face model; a microbatch found at run time; a key=value override",
            files={"finetune.yaml": _HF, "train.py": "from composer import Trainer\n"},
            command="composer -n 4 train.py finetune.yaml max_seq_len=2048",
            facts={"model": ("mosaicml/mpt-7b", "finetune.yaml:3"),
                   "seq_len": (2048, "<command>:1", "cli"),
                   "micro_batch": (UNKNOWN, "finetune.yaml:8"),
                   "fsdp": (None, "finetune.yaml:6", "default")}),
    Example(title="llm-foundry YAML with a run_name and a train_loader: Composer's, not OLMo's",
            files={"yamls/mpt-3b.yaml": _FOUNDRY, "train.py": "from composer import Trainer\n"},
            command="composer train.py yamls/mpt-3b.yaml",
            facts={"seq_len": (4096, "yamls/mpt-3b.yaml:3"),
                   "optimizer": ("adamw", "yamls/mpt-3b.yaml:17"),
                   "hidden": (2560, "yamls/mpt-3b.yaml:7"),
                   "micro_batch": (4, "yamls/mpt-3b.yaml:20"),
                   "fsdp": (None, "yamls/mpt-3b.yaml:21", "default")}),
]
