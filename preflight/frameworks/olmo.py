"""OLMo: `torchrun --nproc_per_node 8 scripts/train.py configs/….yaml [--key=value …]` and
its training YAML.

The model section gives the shape (`d_model`, `n_heads`, `n_kv_heads`, `n_layers`,
`mlp_hidden_size` — both SwiGLU halves, so the FFN width is half of it — or `mlp_ratio`),
`max_sequence_length`, and the embedding rows (`embedding_size`, the vocabulary padded;
`vocab_size` when unpadded). `global_train_batch_size` / `device_train_microbatch_size`
give the batch (accumulation = global / (micro × world size)); `precision: amp_bf16`
autocasts fp32 weights; the `fsdp` section shards (FULL_SHARD unless
`sharding_strategy` says otherwise); `activation_checkpointing` is off unless set;
`flash_attention` picks flash attention (SDPA otherwise).
"""

from __future__ import annotations

from preflight.facts import spellings
from preflight.frameworks import ConfigOut, Example, Framework, get_path, is_int
from preflight.plan import Origin

#: OLMo's `activation_checkpointing` strategies → the vocabulary
_CHECKPOINTING = {"whole_layer": "full", "fine_grained": "selective", "one_in_two": "selective",
                  "one_in_three": "selective", "one_in_four": "selective", "one_in_eight": "selective"}


class Olmo(Framework):
    name = "olmo"
    title = "OLMo"
    reads = (
        "`model.d_model`, `n_heads`, `n_kv_heads`, `n_layers`, `mlp_hidden_size` / `mlp_ratio`, "
        "`max_sequence_length`, `embedding_size` / `vocab_size`, `flash_attention`",
        "the OLMo 2 block (`norm_after`, `attention_layer_norm`, RMSNorm, no biases): the model "
        "counted as transformers' `olmo2`",
        "`global_train_batch_size`, `device_train_microbatch_size`, `precision`, `fsdp` "
        "(`sharding_strategy`), `activation_checkpointing`, `optimizer.name`",
    )
    not_read = ("`--key=value` overrides of the training script's own parser",
                "`distributed_strategy: ddp` with `ddp` options (read as FSDP's absence only)")

    def claims(self, cfg: dict, path: str) -> bool:
        m = cfg.get("model")
        # llm-foundry's Composer YAML shares `d_model` and `global_train_batch_size` but loads
        # data with `train_loader` and shards with `fsdp_config`: that one is Composer's
        return isinstance(m, dict) and "d_model" in m and "global_train_batch_size" in cfg and (
            "max_sequence_length" in m or "mlp_hidden_size" in m or "fsdp" in cfg or "run_name" in cfg) \
            and not any(k in cfg for k in ("train_loader", "fsdp_config"))

    @staticmethod
    def _olmo2_shape(m: dict, o: ConfigOut) -> None:
        """The OLMo 2 block (RMSNorm after attention and MLP, QK-norm, SwiGLU, no biases) is
        transformers' `olmo2` architecture: counted from the model section."""
        olmo2 = (str(m.get("block_type", "sequential")).lower() == "sequential"
                 and str(m.get("layer_norm_type", "")).lower() == "rms"
                 and m.get("norm_after") is True and m.get("attention_layer_norm") is True
                 and str(m.get("activation_type", "swiglu")).lower() == "swiglu"
                 and m.get("include_bias") is False and m.get("alibi", False) is False
                 and m.get("layer_norm_with_affine", True) is True
                 and m.get("attention_layer_norm_with_affine", True) is True
                 and not m.get("bias_for_layer_norm"))
        vkey = "embedding_size" if is_int(m.get("embedding_size")) else "vocab_size"
        keys = ("d_model", "n_layers", "n_heads", "mlp_hidden_size", vkey)
        if not olmo2 or not all(is_int(m.get(k)) for k in keys):
            return
        fields = {"hidden_size": m["d_model"], "num_hidden_layers": m["n_layers"],
                  "num_attention_heads": m["n_heads"],
                  "num_key_value_heads": m["n_kv_heads"] if is_int(m.get("n_kv_heads"))
                  else m["n_heads"],
                  "intermediate_size": m["mlp_hidden_size"] // 2, "vocab_size": m[vkey],
                  "tie_word_embeddings": bool(m.get("weight_tying", False))}
        o.model_refs.append({"kind": "config", "class": "Olmo2Config", "fields": fields,
                             "source": o.src(("model", "d_model"))})

    def read_config(self, cfg: dict, o: ConfigOut) -> None:
        m = cfg["model"]
        for key, fact in (("n_layers", "layers"), ("d_model", "hidden"), ("n_heads", "heads"),
                          ("max_sequence_length", "seq_len")):
            if is_int(m.get(key)):
                o.put(fact, m[key], ("model", key))
        if is_int(m.get("n_heads")):
            kv = m.get("n_kv_heads")
            if is_int(kv):
                o.put("kv_heads", kv, ("model", "n_kv_heads"))
            else:
                o.default("kv_heads", m["n_heads"], ("model", "n_heads"), "n_kv_heads unset: one per head")
        vkey = "embedding_size" if is_int(m.get("embedding_size")) else "vocab_size"
        if is_int(m.get(vkey)):
            o.put("vocab", m[vkey], ("model", vkey),
                  f"{vkey}: {m[vkey]}" + (" (the vocabulary padded: the embedding's rows)" if vkey == "embedding_size" else ""))
        d = m.get("d_model")
        if is_int(m.get("mlp_hidden_size")):
            swiglu = str(m.get("activation_type", "swiglu")).lower() == "swiglu"
            o.put("ffn_hidden", m["mlp_hidden_size"] // 2 if swiglu else m["mlp_hidden_size"],
                  ("model", "mlp_hidden_size"), f"mlp_hidden_size {m['mlp_hidden_size']}"
                  + (" holds both SwiGLU halves" if swiglu else ""), Origin.DERIVED if swiglu else None)
        elif is_int(d) and isinstance(m.get("mlp_ratio"), int):
            o.put("ffn_hidden", d * m["mlp_ratio"] // 2, ("model", "mlp_ratio"), "mlp_ratio × d_model / 2 (SwiGLU)",
                  Origin.DERIVED)
        self._olmo2_shape(m, o)
        if "flash_attention" in m:
            o.put("attention", "flash" if m["flash_attention"] is True else "sdpa", ("model", "flash_attention"))
        mb = cfg.get("device_train_microbatch_size")
        if is_int(mb):
            o.put("micro_batch", mb, ("device_train_microbatch_size",))
        gb = cfg.get("global_train_batch_size")
        if is_int(gb):
            o.extras["global_batch_size"] = {"value": gb, "source": o.src(("global_train_batch_size",))}
        p = cfg.get("precision")
        if isinstance(p, str) and spellings.mixed_precision(p):
            o.put("mixed_precision", spellings.mixed_precision(p), ("precision",))
            o.default("param_dtype", "fp32", ("precision",), f"precision: {p} autocasts fp32 weights")
        fs = cfg.get("fsdp")
        ds = str(cfg.get("distributed_strategy", "fsdp")).lower()
        if ds == "ddp":
            o.put("fsdp", None, ("distributed_strategy",), "distributed_strategy: ddp")
        else:
            st = get_path(fs, "sharding_strategy")
            if st is not None and spellings.fsdp_strategy(st):
                o.put("fsdp", spellings.fsdp_strategy(st), ("fsdp", "sharding_strategy"))
            else:
                o.default("fsdp", "full_shard", ("fsdp",) if isinstance(fs, dict) else ("global_train_batch_size",),
                          "OLMo shards with FSDP, FULL_SHARD by default")
        o.default("zero_stage", 0, ("precision",), "OLMo does not use DeepSpeed")
        ac = cfg.get("activation_checkpointing")
        if ac is None:
            o.default("activation_checkpointing", "none",
                      ("activation_checkpointing",) if "activation_checkpointing" in cfg else ("model",),
                      "activation_checkpointing unset: off")
        elif isinstance(ac, str) and ac.lower() in _CHECKPOINTING:
            o.put("activation_checkpointing", _CHECKPOINTING[ac.lower()], ("activation_checkpointing",))
        opt = get_path(cfg, "optimizer", "name")
        if isinstance(opt, str):
            o.put("optimizer", spellings.optimizer_name(opt) or "other", ("optimizer", "name"))
        o.default("lora", None, ("model",), "OLMo pretraining: no adapter")


_CFG = """\
run_name: tiny
model:
  d_model: 2048
  n_heads: 16
  n_layers: 16
  mlp_hidden_size: 16384
  activation_type: swiglu
  flash_attention: true
  max_sequence_length: 4096
  vocab_size: 100278
  embedding_size: 100352
optimizer:
  name: adamw
global_train_batch_size: 512
device_train_microbatch_size: 4
precision: amp_bf16
fsdp:
  precision: mixed
"""
_OLMO2 = _CFG.replace("  activation_type: swiglu\n", """\
  activation_type: swiglu
  block_type: sequential
  layer_norm_type: rms
  norm_after: true
  attention_layer_norm: true
  include_bias: false
  weight_tying: false
""")

ADAPTER = Olmo()
Olmo.EXAMPLES = [
    Example(title="an OLMo training YAML run by torchrun",
            files={"configs/tiny.yaml": _CFG, "scripts/train.py": "import olmo\n"},
            command="torchrun --nproc_per_node=8 scripts/train.py configs/tiny.yaml",
            facts={"layers": (16, "configs/tiny.yaml:5"), "hidden": (2048, "configs/tiny.yaml:3"),
                   "heads": (16, "configs/tiny.yaml:4"), "ffn_hidden": (8192, "configs/tiny.yaml:6"),
                   "seq_len": (4096, "configs/tiny.yaml:9"), "vocab": (100352, "configs/tiny.yaml:11"),
                   "attention": ("flash", "configs/tiny.yaml:8"), "optimizer": ("adamw", "configs/tiny.yaml:13"),
                   "micro_batch": (4, "configs/tiny.yaml:15"),
                   "grad_accum": (16, "configs/tiny.yaml:14", "derived"),
                   "mixed_precision": ("bf16", "configs/tiny.yaml:16"),
                   "fsdp": ("full_shard", "configs/tiny.yaml:17", "default"),
                   "activation_checkpointing": ("none", "configs/tiny.yaml:2", "default")}),
    Example(title="an OLMo 2 block (norms after attention and MLP, QK-norm, no biases): the "
                  "model is counted as transformers' olmo2",
            files={"configs/tiny.yaml": _OLMO2, "scripts/train.py": "import olmo\n"},
            command="torchrun --nproc_per_node=8 scripts/train.py configs/tiny.yaml",
            facts={"params": (1_484_916_736, "configs/tiny.yaml:3", "derived")}),
]
