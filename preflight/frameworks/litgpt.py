"""litgpt: `litgpt finetune_lora|finetune_full|pretrain --config cfg.yaml` and its YAML
(model name or checkpoint dir, precision, devices, num_nodes, train.* batch sizes, optimizer,
LoRA keys).
"""

from __future__ import annotations

import os

from typing import Any

from preflight.lang.python import Evaluator, Obj, V
from preflight.facts import spellings
from preflight.frameworks import (NO_MATCH, Call, ConfigOut, Example, Framework, answers, flag_int,
                                  is_int)
from preflight.plan import Origin


#: litgpt's `lora_<part>: true` switches → the Hugging Face linear layers they adapt
_LORA_TARGETS = {"query": ["q_proj"], "key": ["k_proj"], "value": ["v_proj"], "projection": ["o_proj"],
                 "mlp": ["gate_proj", "up_proj", "down_proj"], "head": ["lm_head"]}


def _litgpt(cfg: dict, o: ConfigOut) -> None:
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
    o.put("model_implementation", "litgpt", key if key[0] in cfg else (),
          "litgpt finetune / pretrain train litgpt's own GPT (litgpt/model.py), not "
          "transformers' model", Origin.DEFAULT)
    prec = cfg.get("precision")
    if isinstance(prec, str) and spellings.precision(prec):
        mx, pd = spellings.precision(prec)
        o.put("mixed_precision", mx, ("precision",))
        o.put("param_dtype", pd or "fp32", ("precision",), f"precision: {prec}")
    dev, nn = cfg.get("devices"), cfg.get("num_nodes", 1)
    if is_int(dev):
        o.put("gpus_per_node", dev, ("devices",))
    elif dev is not None:
        o.unknown("gpus_per_node", ("devices",), f"devices: {dev} uses every visible GPU")
    if is_int(nn):
        o.put("nodes", nn, ("num_nodes",) if "num_nodes" in cfg else ("devices",),
              "" if "num_nodes" in cfg else "litgpt num_nodes defaults to 1",
              Origin.CONFIG if "num_nodes" in cfg else Origin.DEFAULT)
    tr = cfg.get("train") if isinstance(cfg.get("train"), dict) else {}
    mb, gb = tr.get("micro_batch_size"), tr.get("global_batch_size")
    if is_int(mb):
        o.put("micro_batch", mb, ("train", "micro_batch_size"))
    if is_int(tr.get("max_seq_length")):
        o.put("seq_len", tr["max_seq_length"], ("train", "max_seq_length"))
    if is_int(gb):
        o.extras["global_batch_size"] = {"value": gb, "source": o.src(("train", "global_batch_size"))}
    opt = cfg.get("optimizer")
    oname = opt.get("class_path") if isinstance(opt, dict) else opt
    okey = ("optimizer", "class_path") if isinstance(opt, dict) else ("optimizer",)
    q = cfg.get("quantize")
    if isinstance(oname, str) and isinstance(q, str) and q.startswith("bnb.") and "AdamW" in oname:
        # with a bitsandbytes quantization litgpt builds the AdamW as bitsandbytes' PagedAdamW
        o.put("optimizer", "paged_adamw_32bit", okey,
              f"optimizer {oname} with quantize: {q}: litgpt uses bitsandbytes PagedAdamW")
    elif isinstance(oname, str):
        base = oname.rsplit(".", 1)[-1]
        o.put("optimizer", spellings.optimizer_class(base) or spellings.optimizer_name(base) or "other", okey)
    o.put("zero_stage", 0, ("devices",) if "devices" in cfg else (), "litgpt does not use DeepSpeed", Origin.DEFAULT)
    o.put("attention", "sdpa", ("model_name",) if "model_name" in cfg else (),
          "litgpt's attention calls torch's scaled_dot_product_attention", Origin.DEFAULT)
    pretrain = "/pretrain/" in o.path.replace(os.sep, "/") or "pretrain" in os.path.basename(o.path)
    if is_int(dev) and is_int(nn):
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
    q = cfg.get("quantize")
    bits = 4 if isinstance(q, str) and "nf4" in q or isinstance(q, str) and "fp4" in q else (
        8 if isinstance(q, str) and "int8" in q else 16)
    if bits != 16:
        o.quant(bits, ("quantize",), f"quantize: {q}")
    if not any(k.startswith("lora_") for k in cfg):
        o.put("lora", None, key, "no LoRA settings in this recipe", Origin.DEFAULT)
    else:
        # litgpt's LoRA switches name parts of its fused layers: the Hugging Face module each is
        targets = [t for k, mods in _LORA_TARGETS.items() if cfg.get(f"lora_{k}") is True for t in mods]
        o.lora(cfg.get("lora_r"), cfg.get("lora_alpha"), targets, bits, ("lora_r",),
               dropout=cfg.get("lora_dropout"))


#: `litgpt finetune_* --train.micro_batch_size 4 --devices 2 …` overrides of the YAML
FLAGS = {
    "train.micro_batch_size": ("micro_batch", flag_int),
    "train.max_seq_length": ("seq_len", flag_int),
    "precision": ("mixed_precision", lambda s: spellings.mixed_precision(s) if s else None),
    "devices": ("gpus_per_node", lambda s: flag_int(s) if (flag_int(s) or 0) > 0 else None),
    "num_nodes": ("nodes", flag_int),
    "quantize": ("param_dtype", lambda s: "int4" if s and ("nf4" in s or "fp4" in s) else
                 ("int8" if s and "int8" in s else None)),
}


class Litgpt(Framework):
    name = "litgpt"
    title = "litgpt"
    programs = ("litgpt",)
    FLAGS = FLAGS
    global_batch_flag = "train.global_batch_size"

    def reads_flags(self, flags: dict, script: str) -> bool:
        return script.startswith("litgpt ")

    def flag_defaults(self, flags: dict[str, Any], script: str = "") -> list[tuple[str, Any, str]]:
        words = script.split()
        command = "_".join(words[1:3]) if len(words) > 1 else ""
        if command.startswith("finetune") and "full" not in command:
            # finetune/lora.py, adapter.py, adapter_v2.py: model(input_ids,
            # lm_head_chunk_size=128) then chunked_cross_entropy over the chunks (full.py
            # takes the whole logits)
            return [("loss_kernel", "chunked", f"`{' '.join(words[:3])}` runs the lm_head in "
                     "128-position chunks and litgpt's chunked_cross_entropy")]
        return []

    reads = (
        "`litgpt finetune_lora|finetune_full|pretrain --config cfg.yaml`",
        "`model_name` / `checkpoint_dir` (→ model), `precision` (`bf16-true` → bf16 weights), "
        "`devices`, `num_nodes`, `train.micro_batch_size`, `train.global_batch_size` "
        "(→ gradient accumulation), `train.max_seq_length`, `optimizer`",
        "FSDP when devices > 1 (HYBRID_SHARD in pretrain), LoRA keys (`lora_r`, `lora_alpha`, "
        "`lora_query` / `_key` / `_value` / `_projection` / `_mlp` / `_head`), "
        "`quantize: bnb.nf4` (4-bit base; an AdamW then runs as bitsandbytes' PagedAdamW)",
        "that the job trains litgpt's own GPT (the `model_implementation` fact: the activation "
        "tables of litgpt's implementation)",
        "the command: `finetune_lora` / `finetune_adapter` (and `finetune`) run the lm_head in "
        "128-position chunks and litgpt's chunked cross-entropy (the chunked loss kernel)",
        "`Config.from_name(\"pythia-410m\")` / `GPT.from_name(...)` in a script: the model",
        "command-line overrides: `--train.micro_batch_size`, `--train.global_batch_size`, "
        "`--train.max_seq_length`, `--precision`, `--devices`, `--num_nodes`, `--quantize`",
    )
    not_read = (
        "`Config.from_name(name, n_layer=…)` keyword overrides (the named model's shape is used)",
        "a model given only as the positional checkpoint argument without a config file",
    )

    def claims(self, cfg: dict, path: str) -> bool:
        return isinstance(cfg.get("train"), dict) and any(k in cfg for k in ("checkpoint_dir", "model_name",
                                                                             "precision", "devices"))

    def read_config(self, cfg: dict, o: ConfigOut) -> None:
        _litgpt(cfg, o)


ADAPTER = Litgpt()
_FULL = """\
checkpoint_dir: checkpoints/meta-llama/Meta-Llama-3-8B
out_dir: out/finetune/full
precision: bf16-true
devices: 4
num_nodes: 1
train:
  global_batch_size: 64
  micro_batch_size: 4
  max_seq_length: 512
optimizer:
  class_path: torch.optim.AdamW
"""

_QLORA = """\
checkpoint_dir: checkpoints/meta-llama/Llama-2-7b-hf
precision: bf16-true
quantize: bnb.nf4
devices: 1
lora_r: 32
lora_alpha: 16
lora_query: true
lora_key: false
lora_value: true
optimizer:
  class_path: torch.optim.AdamW
train:
  global_batch_size: 8
  micro_batch_size: 2
  max_seq_length: 512
"""

_SCRIPT = """\
import lightning as L
import torch
from litgpt import GPT, Config

fabric = L.Fabric(devices=2, precision="bf16-mixed", strategy="fsdp")
config = Config.from_name("pythia-410m")
model = GPT(config)
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
"""

Litgpt.EXAMPLES = [
    Example(title="a script of its own: Config.from_name names the model, Fabric runs it",
            files={"pretrain.py": _SCRIPT},
            command="python pretrain.py",
            facts={"model": ("pythia-410m", "pretrain.py:6"), "params": (405334016, "pretrain.py:6", "catalog"),
                   "model_implementation": ("litgpt", "pretrain.py:6", "default"),
                   "gpus_per_node": (2, "pretrain.py:5"), "mixed_precision": ("bf16", "pretrain.py:5"),
                   "fsdp": ("full_shard", "pretrain.py:5")}),
    Example(title="QLoRA recipe with a --train.micro_batch_size override",
            files={"qlora.yaml": _QLORA},
            command="litgpt finetune_lora --config qlora.yaml --train.micro_batch_size 4",
            facts={"model": ("meta-llama/Llama-2-7b-hf", "qlora.yaml:1"),
                   "param_dtype": ("int4", "qlora.yaml:3"),
                   "lora": ({"r": 32, "alpha": 16, "targets": ["q_proj", "v_proj"], "base_bits": 4},
                            "qlora.yaml:5"),
                   "micro_batch": (4, "<command>:1", "cli"),
                   "loss_kernel": ("chunked", "<command>:1", "default"),
                   "optimizer": ("paged_adamw_32bit", "qlora.yaml:11"),
                   "grad_accum": (2, "qlora.yaml:13", "derived"),
                   "seq_len": (512, "qlora.yaml:15")}),
    Example(title="full fine-tune recipe: accumulation from the global batch",
            files={"config_hub/full.yaml": _FULL},
            command="litgpt finetune_full --config config_hub/full.yaml",
            facts={"model": ("meta-llama/Meta-Llama-3-8B", "config_hub/full.yaml:1"),
                   "param_dtype": ("bf16", "config_hub/full.yaml:3"),
                   "gpus_per_node": (4, "config_hub/full.yaml:4"),
                   "nodes": (1, "config_hub/full.yaml:5"),
                   "micro_batch": (4, "config_hub/full.yaml:8"),
                   "seq_len": (512, "config_hub/full.yaml:9"),
                   "grad_accum": (4, "config_hub/full.yaml:7", "derived"),
                   "optimizer": ("adamw", "config_hub/full.yaml:11"),
                   "fsdp": ("full_shard", "config_hub/full.yaml:4", "default"),
                   "model_implementation": ("litgpt", "config_hub/full.yaml:1", "default")}),
]


# --------------------------------------------------------------------------- in a script
# `pats` is the script's fact collector, `ev` the evaluator (see `preflight.frameworks.Call`)


@answers("from_name")
def from_name_call(pats: Any, ev: Evaluator, c: Call) -> Any:
    """litgpt's `Config.from_name(...)` / `GPT.from_name(...)`: the model by its name."""
    name, qual, args, kwargs, node, line, col = c.name, c.qual, c.args, c.kwargs, c.node, c.line, c.col
    owner = c.recv.rsplit(".", 1)[-1]
    if name == "from_name" and (owner.endswith("Config") or owner == "GPT"):
        # litgpt: `Config.from_name("pythia-160m")` / `GPT.from_name(...)` name the model
        nm = args[0] if args else kwargs.get("name")
        if nm is not None:
            pats.seen_training_api = True
            pats.hub_model(ev, qual, nm, {}, node)
            pats.emit("model_implementation", V("litgpt", "default", line, col,
                                                f"{owner}.from_name(...) builds litgpt's own "
                                                "GPT (litgpt/model.py)"))
        return V(Obj(qual, args, kwargs, line, col), "derived", line, col, f"{owner}.from_name(...)")
    return NO_MATCH
