"""GPT-NeoX: `deepy.py train.py -d configs a.yml b.yml` and its YAML (model shape,
parallelism, batch, checkpointing, attention; the DeepSpeed keys it embeds).
"""

from __future__ import annotations

import os
from typing import Optional

from preflight.frameworks import ConfigOut, Example, Framework, get, is_int
from preflight.plan import Invocation, Origin


#: the keys that size a GPT-NeoX model (with the tokenizer that sets its vocabulary)
MODEL_KEYS = ("num_layers", "hidden_size", "num_attention_heads", "num_kv_heads",
              "intermediate_size", "make_vocab_size_divisible_by", "model_parallel_size",
              "no_weight_tying", "tokenizer_type", "vocab_file", "padded_vocab_size", "norm",
              "pos_emb", "max_position_embeddings", "seq_length", "activation", "mlp_type")


def _neox(cfg: dict, o: ConfigOut) -> None:
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
        if key and is_int(cfg[key]):
            val = cfg[key]
            if fact == "pp" and val == 0:
                val = 1
            o.put(fact, val, (key,))
    key = k("checkpoint_activations")
    if key is not None:
        o.put("activation_checkpointing", "full" if cfg[key] is True else "none", (key,))
    heads = k("num_attention_heads")
    if heads and is_int(cfg[heads]):
        kv = k("num_kv_heads")
        if kv and is_int(cfg[kv]):
            o.put("kv_heads", cfg[kv], (kv,))
        elif kv is None:
            o.put("kv_heads", cfg[heads], (heads,), "num_kv_heads unset: one key/value head per "
                  "attention head (GPT-NeoX default)", Origin.DEFAULT)
    fields = {n: cfg[key] for n in MODEL_KEYS if (key := k(n)) is not None}
    if fields:
        # the model as this file describes it; the resolver merges the files of one job in
        # their order (resolve.registries.resolve_neox)
        first = k("num_layers") or k(next(iter(fields)))
        o.model_refs.append({"kind": "neox", "fields": fields, "source": o.src((first,))})
    att = k("attention_config")
    if att is not None:
        o.put("attention", "flash" if "flash" in str(cfg[att]).lower() else "eager", (att,),
              f"attention_config {cfg[att]}")
    elif heads:
        o.put("attention", "eager", (heads,), "attention_config unset: GPT-NeoX global attention "
              "(the score matrix is materialised)", Origin.DEFAULT)


def deepy_configs(inv: Invocation) -> Invocation:
    """gpt-neox `deepy.py train.py -d configs a.yml b.yml`: the YAMLs are the configs."""
    args = inv.args
    cfg_dir = ""
    names: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("-d", "--conf_dir") and i + 1 < len(args):
            cfg_dir = args[i + 1]
            i += 2
            continue
        if a.endswith((".yml", ".yaml")):
            names.append(a)
        i += 1
    cfgs = [os.path.join(cfg_dir, n) if cfg_dir else n for n in names]
    return inv.model_copy(update={"configs": cfgs})


class Neox(Framework):
    name = "neox"
    title = "GPT-NeoX"
    reads = (
        "`python deepy.py train.py -d configs a.yml b.yml` (every YAML named)",
        "`num_layers`, `hidden_size`, `num_attention_heads`, `num_kv_heads`, `seq_length`, "
        "`model_parallel_size`, `pipe_parallel_size`, `train_micro_batch_size_per_gpu`, "
        "`gradient_accumulation_steps`, `checkpoint_activations`, `attention_config`",
        "the DeepSpeed keys it embeds (`zero_optimization`, `bf16`, `fp16` with `type: bfloat16`)",
        "the model's size from its keys over the job's files (`pos_emb`, `no_weight_tying`, "
        "`intermediate_size`), the tokenizer's vocabulary (`tokenizer_type`, `vocab_file`) "
        "padded to `make_vocab_size_divisible_by` × `model_parallel_size`",
    )
    not_read = ("`hostfile` / `launcher` settings (nodes come from the launch line)",)

    def claims(self, cfg: dict, path: str) -> bool:
        return any(k in cfg or k.replace("_", "-") in cfg
                   for k in ("num_layers", "pipe_parallel_size", "model_parallel_size"))

    def read_config(self, cfg: dict, o: ConfigOut) -> None:
        _neox(cfg, o)
        # a file of a multi-file NeoX config: DeepSpeed defaults only where no file says
        # more; the DeepSpeed adapter reads its keys, asked through the registry (adapters
        # never import each other)
        get("deepspeed").read_embedded(cfg, o)


ADAPTER = Neox()
_CFG = """\
{
  "pipe_parallel_size": 2,
  "model_parallel_size": 2,
  "num_layers": 24,
  "hidden_size": 2048,
  "num_attention_heads": 16,
  "seq_length": 2048,
  "train_micro_batch_size_per_gpu": 8,
  "gradient_accumulation_steps": 2,
  "checkpoint_activations": true,
  "attention_config": [[["flash"], 24]],
  "zero_optimization": {"stage": 1},
  "fp16": {"enabled": true, "type": "bfloat16"},
}
"""

Neox.EXAMPLES = [
    Example(title="a NeoX YAML run through deepy.py",
            files={"configs/1B.yml": _CFG},
            command="python ./deepy.py train.py -d configs 1B.yml",
            facts={"pp": (2, "configs/1B.yml:2"), "tp": (2, "configs/1B.yml:3"),
                   "layers": (24, "configs/1B.yml:4"), "hidden": (2048, "configs/1B.yml:5"),
                   "heads": (16, "configs/1B.yml:6"), "seq_len": (2048, "configs/1B.yml:7"),
                   "micro_batch": (8, "configs/1B.yml:8"), "grad_accum": (2, "configs/1B.yml:9"),
                   "activation_checkpointing": ("full", "configs/1B.yml:10"),
                   "attention": ("flash", "configs/1B.yml:11"),
                   "zero_stage": (1, "configs/1B.yml:12"),
                   "mixed_precision": ("bf16", "configs/1B.yml:13")}),
]
