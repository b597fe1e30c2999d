"""nanotron: `torchrun --nproc_per_node=N run_train.py --config-file config.yaml` and its
YAML config.

The config states the whole layout: `parallelism: {dp, tp, pp}` (the world is dp × tp ×
pp × context_parallel_size), `tokens: {micro_batch_size, batch_accumulation_per_replica,
sequence_length}`, and the model's shape under `model.model_config` (`hidden_size`,
`num_hidden_layers`, `num_attention_heads`, `num_key_value_heads`, `intermediate_size`,
`vocab_size`). `model.dtype` (bfloat16 by default) is the dtype the weights are kept in;
with `optimizer.accumulate_grad_in_fp32` the optimizer works on fp32 copies.
`parallelism.tp_mode: REDUCE_SCATTER` shards activations along the sequence,
`parallelism.recompute_layer` recomputes each layer, `optimizer.zero_stage` (0 or 1)
shards the optimizer state.
"""

from __future__ import annotations


from preflight.facts import spellings
from preflight.frameworks import UNKNOWN, ConfigOut, Example, Framework, get_path, is_int
from preflight.plan import Origin

#: model_config keys → facts (the Llama / Qwen2 configs nanotron defines)
_SHAPE = (("num_hidden_layers", "layers"), ("hidden_size", "hidden"), ("num_attention_heads", "heads"),
          ("num_key_value_heads", "kv_heads"), ("intermediate_size", "ffn_hidden"), ("vocab_size", "vocab"))
_TOKENS = (("micro_batch_size", "micro_batch"), ("batch_accumulation_per_replica", "grad_accum"),
           ("sequence_length", "seq_len"))


def _read(cfg: dict, o: ConfigOut) -> None:
    par = cfg.get("parallelism") if isinstance(cfg.get("parallelism"), dict) else {}
    tokens = cfg.get("tokens") if isinstance(cfg.get("tokens"), dict) else {}
    model = cfg.get("model") if isinstance(cfg.get("model"), dict) else {}
    for key, fact in _TOKENS:
        if is_int(tokens.get(key)):
            o.put(fact, tokens[key], ("tokens", key))
    mc = model.get("model_config") if isinstance(model.get("model_config"), dict) else {}
    for key, fact in _SHAPE:
        if is_int(mc.get(key)):
            o.put(fact, mc[key], ("model", "model_config", key))
    moe = mc.get("moe_config")
    if isinstance(moe, dict) and moe:
        # a mixture of experts: the dense count of the shape would leave the experts out
        o.unknown("params", ("model", "model_config", "moe_config"),
                  f"moe_config ({moe.get('num_experts', '?')} experts): nanotron's mixture "
                  f"of experts is not sized")
    elif sum(is_int(mc.get(k)) for k, _ in _SHAPE) >= 3 and not o.partial:
        # the shape is a transformers-style config: the parameter count follows from it
        cls = "Qwen2Config" if mc.get("is_qwen2_config") is True else "LlamaConfig"
        fields = {k: v for k, v in mc.items() if isinstance(v, (int, float, bool, str)) or v is None}
        o.model_refs.append({"kind": "config", "class": cls, "fields": fields,
                             "source": o.src(("model", "model_config"))})
    ai = mc.get("_attn_implementation")
    if isinstance(ai, str) and spellings.attention(ai):
        o.put("attention", spellings.attention(ai), ("model", "model_config", "_attn_implementation"))
    elif mc and not o.partial:
        o.default("attention", "flash", ("model", "model_config"),
                  "nanotron's model configs default _attn_implementation to flash_attention_2")
    dt = model.get("dtype")
    if isinstance(dt, str) and spellings.dtype(dt):
        d = spellings.dtype(dt)
        o.put("param_dtype", d, ("model", "dtype"))
        if d in ("bf16", "fp16"):
            o.put("mixed_precision", d, ("model", "dtype"), f"model.dtype {dt}: the forward runs in {d}")
    elif model and not o.partial:
        o.default("param_dtype", "bf16", ("model",), "nanotron's model.dtype defaults to bfloat16")
        o.default("mixed_precision", "bf16", ("model",), "nanotron's model.dtype defaults to bfloat16")
    opt = cfg.get("optimizer") if isinstance(cfg.get("optimizer"), dict) else {}
    if opt.get("accumulate_grad_in_fp32") is True:
        o.put("master_weights", True, ("optimizer", "accumulate_grad_in_fp32"),
              "accumulate_grad_in_fp32: the optimizer steps fp32 copies of the weights")
    name = get_path(opt, "optimizer_factory", "name")
    if isinstance(name, str):
        o.put("optimizer", spellings.optimizer_name(name.lower()) or "other",
              ("optimizer", "optimizer_factory", "name"))
    if is_int(opt.get("zero_stage")):
        o.put("zero_stage", opt["zero_stage"], ("optimizer", "zero_stage"))
    degrees = {}
    for key, fact in (("tp", "tp"), ("pp", "pp")):
        if is_int(par.get(key)):
            o.put(fact, par[key], ("parallelism", key))
    for key in ("dp", "tp", "pp", "context_parallel_size"):
        v = par.get(key, 1 if key == "context_parallel_size" else None)
        degrees[key] = v
    if all(is_int(v) and v >= 1 for v in degrees.values()):
        w = degrees["dp"] * degrees["tp"] * degrees["pp"] * degrees["context_parallel_size"]
        o.put("world_size", w, ("parallelism", "dp"),
              f"dp × tp × pp × context_parallel_size = {w}", Origin.DERIVED)
    if par:
        mode = par.get("tp_mode")
        if isinstance(mode, str):
            o.put("sp", mode.upper() == "REDUCE_SCATTER" and is_int(par.get("tp")) and par["tp"] > 1,
                  ("parallelism", "tp_mode"), f"tp_mode: {mode}")
        elif not o.partial:
            o.default("sp", False, ("parallelism",), "tp_mode defaults to ALL_REDUCE: no sequence sharding")
        if "recompute_layer" in par:
            o.put("activation_checkpointing", "full" if par["recompute_layer"] is True else "none",
                  ("parallelism", "recompute_layer"))
        elif not o.partial:
            o.default("activation_checkpointing", "none", ("parallelism",),
                      "parallelism.recompute_layer defaults to False")
        if not o.partial:
            o.default("fsdp", None, ("parallelism",), "nanotron shards with its own TP / PP / ZeRO-1, not FSDP")
            o.default("lora", False, ("parallelism",), "nanotron trains every weight (no adapter)")


class Nanotron(Framework):
    name = "nanotron"
    title = "nanotron"
    reads = (
        "YAML config: `parallelism` (`dp`, `tp`, `pp`, `context_parallel_size` → world size; "
        "`tp_mode: REDUCE_SCATTER` → sequence-sharded activations; `recompute_layer`), "
        "`tokens` (`micro_batch_size`, `batch_accumulation_per_replica`, `sequence_length`)",
        "`model.model_config` shape (`hidden_size`, `num_hidden_layers`, `num_attention_heads`, "
        "`num_key_value_heads`, `intermediate_size`, `vocab_size`, `_attn_implementation`), "
        "`model.dtype` (bfloat16 by default)",
        "`optimizer.optimizer_factory.name`, `optimizer.zero_stage`, "
        "`optimizer.accumulate_grad_in_fp32` (fp32 copies of the weights)",
        "`torchrun … run_train.py --config-file config.yaml`",
    )
    not_read = (
        "MoE settings (`moe_config`: the parameter count is unknown when it is set; "
        "`expert_parallel_size`)",
        "`tie_word_embeddings` beyond the shape's count; the pipeline engine's (`pp_engine`) "
        "in-flight micro-batches",
        "configs written by a Python script (`config_tiny_llama.py`) until the YAML exists",
    )

    def claims(self, cfg: dict, path: str) -> bool:
        par, tokens = cfg.get("parallelism"), cfg.get("tokens")
        return isinstance(par, dict) and isinstance(tokens, dict) and "dp" in par and (
            "micro_batch_size" in tokens or "sequence_length" in tokens)

    def read_config(self, cfg: dict, o: ConfigOut) -> None:
        _read(cfg, o)


ADAPTER = Nanotron()

_CONFIG = """\
general:
  project: pretrain
  seed: 42
model:
  dtype: bfloat16
  model_config:
    hidden_size: 2048
    intermediate_size: 8192
    num_attention_heads: 32
    num_hidden_layers: 24
    num_key_value_heads: 8
    vocab_size: 49152
    tie_word_embeddings: true
optimizer:
  accumulate_grad_in_fp32: true
  optimizer_factory:
    name: adamW
  zero_stage: 1
parallelism:
  dp: 2
  pp: 1
  tp: 4
  tp_mode: REDUCE_SCATTER
  recompute_layer: true
tokens:
  batch_accumulation_per_replica: 8
  micro_batch_size: 4
  sequence_length: 2048
"""

_MINIMAL = """\
model:
  model_config:
    hidden_size: 1024
    num_attention_heads: 16
    num_hidden_layers: 12
    vocab_size: 32000
parallelism:
  dp: 8
  pp: 1
  tp: 1
tokens:
  micro_batch_size: 16
  sequence_length: 1024
"""

_MOE = """\
model:
  model_config:
    hidden_size: 512
    intermediate_size: 1024
    num_attention_heads: 8
    num_hidden_layers: 6
    vocab_size: 32000
    moe_config:
      num_experts: 4
      top_k: 1
parallelism:
  dp: 4
  pp: 1
  tp: 1
tokens:
  micro_batch_size: 2
  sequence_length: 1024
"""

Nanotron.EXAMPLES = [
    Example(title="a pre-training config: layout, batch and shape from the YAML",
            files={"config.yaml": _CONFIG},
            command="torchrun --nproc_per_node=8 run_train.py --config-file config.yaml",
            facts={"micro_batch": (4, "config.yaml:27"), "grad_accum": (8, "config.yaml:26"),
                   "seq_len": (2048, "config.yaml:28"), "tp": (4, "config.yaml:22"),
                   "pp": (1, "config.yaml:21"), "sp": (True, "config.yaml:23"),
                   "activation_checkpointing": ("full", "config.yaml:24"),
                   "world_size": (8, "config.yaml:20", "derived"),
                   "hidden": (2048, "config.yaml:7"), "layers": (24, "config.yaml:10"),
                   "kv_heads": (8, "config.yaml:11"), "vocab": (49152, "config.yaml:12"),
                   "param_dtype": ("bf16", "config.yaml:5"), "optimizer": ("adamw", "config.yaml:17"),
                   "zero_stage": (1, "config.yaml:18"), "gpus_per_node": (8, "<command>:1", "cli")}),
    Example(title="the defaults fill what a short config leaves out",
            files={"small.yaml": _MINIMAL},
            command="torchrun --nproc_per_node=8 run_train.py --config-file small.yaml",
            facts={"micro_batch": (16, "small.yaml:12"), "kv_heads": (16, "small.yaml:2", "derived"),
                   "param_dtype": ("bf16", "small.yaml:1", "default"),
                   "attention": ("flash", "small.yaml:2", "default"),
                   "activation_checkpointing": ("none", "small.yaml:7", "default"),
                   "world_size": (8, "small.yaml:8", "derived")}),
    Example(title="a mixture of experts: its shape read, its size not guessed from the dense part",
            files={"moe.yaml": _MOE},
            command="torchrun --nproc_per_node=4 run_train.py --config-file moe.yaml",
            facts={"params": (UNKNOWN, "moe.yaml:8"), "layers": (6, "moe.yaml:6"),
                   "hidden": (512, "moe.yaml:3"), "micro_batch": (2, "moe.yaml:16")}),
]
