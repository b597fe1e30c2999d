"""litgpt: `litgpt finetune_lora|finetune_full|pretrain --config cfg.yaml` and its YAML
(model name or checkpoint dir, precision, devices, num_nodes, train.* batch sizes, optimizer,
LoRA keys).
"""

from __future__ import annotations

import os

from preflight.frameworks import ConfigOut, Example, Framework, is_int
from preflight.frameworks._spell import optimizer_string, precision_setting
from preflight.plan import Origin


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
    prec = cfg.get("precision")
    if isinstance(prec, str) and precision_setting(prec):
        p = prec.lower()
        o.put("mixed_precision", precision_setting(p), ("precision",))
        pd = {"bf16-true": "bf16", "16-true": "fp16"}.get(p, "fp32")
        o.put("param_dtype", pd, ("precision",), f"precision: {prec}")
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
        if is_int(mb) and is_int(dev) and is_int(nn) and gb % (mb * dev * nn) == 0:
            o.put("grad_accum", gb // (mb * dev * nn), ("train", "global_batch_size"),
                  f"global_batch_size {gb} / (micro_batch_size {mb} × devices {dev} × num_nodes {nn})",
                  Origin.DERIVED)
    opt = cfg.get("optimizer")
    oname = opt.get("class_path") if isinstance(opt, dict) else opt
    if isinstance(oname, str):
        base = oname.rsplit(".", 1)[-1].lower()
        o.put("optimizer", (optimizer_string(base) or "other"), ("optimizer", "class_path") if isinstance(opt, dict) else ("optimizer",))
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
    o.put("lora", None, key, "no LoRA settings in this recipe", Origin.DEFAULT) \
        if not any(k.startswith("lora_") for k in cfg) else _lora(
            o, cfg.get("lora_r"), cfg.get("lora_alpha"),
            [k[len("lora_"):] for k in cfg if k.startswith("lora_") and cfg[k] is True], 16, ("lora_r",))


class Litgpt(Framework):
    name = "litgpt"
    title = "litgpt"
    programs = ("litgpt",)
    reads = (
        "`litgpt finetune_lora|finetune_full|pretrain --config cfg.yaml`",
        "`model_name` / `checkpoint_dir` (→ model), `precision` (`bf16-true` → bf16 weights), "
        "`devices`, `num_nodes`, `train.micro_batch_size`, `train.global_batch_size` "
        "(→ gradient accumulation), `train.max_seq_length`, `optimizer`",
        "FSDP when devices > 1 (HYBRID_SHARD in pretrain), LoRA keys (`lora_r`, `lora_alpha`, "
        "`lora_query` …), `quantize: bnb.nf4`",
    )
    not_read = (
        "`Config.from_name(...)` keyword overrides in the repository's own scripts",
        "`--train.*` command-line overrides (only the YAML is read)",
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

Litgpt.EXAMPLES = [
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
                   "fsdp": ("full_shard", "config_hub/full.yaml:4", "default")}),
]
