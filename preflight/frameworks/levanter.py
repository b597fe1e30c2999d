"""Levanter: `python -m levanter.main.train_lm --config_path config/llama2_7b.yaml
[--trainer.key value …]` and its draccus YAML (`trainer: {mp, train_batch_size,
per_device_parallelism, model_axis_size, …}`, `model: {type, seq_len, hidden_dim, …}`).

Levanter trains with JAX, not PyTorch. preflight's memory model is PyTorch's (its
optimizer states, autocast, DDP / FSDP / ZeRO sharding, the CUDA caching allocator), so a
Levanter job is recognised and reported *not sized*, with that reason, rather than sized
as the PyTorch job it is not. Its config is claimed so that no generic reading of knob
names states PyTorch facts about it.
"""

from __future__ import annotations

from preflight.facts import spellings
from preflight.frameworks import UNKNOWN, ConfigOut, Example, Framework, get_path, is_int

_WHY = ("a Levanter job trains with JAX: preflight sizes PyTorch jobs only, so its memory is "
        "not estimated")
#: model keys → facts (Levanter's LlamaConfig / GPT-2 config names)
_SHAPE = (("seq_len", "seq_len"), ("num_layers", "layers"), ("hidden_dim", "hidden"),
          ("num_heads", "heads"), ("num_kv_heads", "kv_heads"), ("intermediate_dim", "ffn_hidden"))
#: trainer keys only Levanter's (draccus) TrainerConfig defines
_TRAINER_KEYS = ("mp", "per_device_parallelism", "model_axis_size", "fsdp_axis", "batch_axis",
                 "tensor_parallel_axes", "per_device_eval_parallelism", "axis_resources")


class Levanter(Framework):
    name = "levanter"
    title = "Levanter (JAX)"
    reads = (
        "its draccus YAML (`trainer.mp`, `trainer.per_device_parallelism`, "
        "`trainer.model_axis_size`, …) and `python -m levanter.main.*` lines: recognised as a "
        "JAX job and reported not sized (params unknown, with the reason)",
        "what the file states regardless of framework: `model.seq_len`, `num_layers`, "
        "`hidden_dim`, `num_heads`, `num_kv_heads`, `intermediate_dim`, "
        "`gradient_checkpointing`; `trainer.mp` (`p=f32,c=bfloat16`); "
        "`trainer.per_device_parallelism`",
    )
    not_read = (
        "every memory fact: JAX's sharding (named axes, `model_axis_size`), `jmp` precision "
        "policies and XLA's buffers are not PyTorch's, which preflight models",
    )

    def claims(self, cfg: dict, path: str) -> bool:
        tr = cfg.get("trainer")
        return isinstance(tr, dict) and sum(k in tr for k in _TRAINER_KEYS) >= 1 and (
            isinstance(cfg.get("model"), dict) or "train_batch_size" in tr)

    def read_config(self, cfg: dict, o: ConfigOut) -> None:
        where = ("trainer", "mp") if get_path(cfg, "trainer", "mp") is not None else ("trainer",)
        o.unknown("params", where, _WHY)
        o.unknown("model", ("model", "type") if get_path(cfg, "model", "type") is not None else where, _WHY)
        # what the file states of the model and the step holds whatever the framework
        model = cfg.get("model") if isinstance(cfg.get("model"), dict) else {}
        for key, fact in _SHAPE:
            if is_int(model.get(key)):
                o.put(fact, model[key], ("model", key))
        if isinstance(model.get("gradient_checkpointing"), bool):
            o.put("activation_checkpointing", "full" if model["gradient_checkpointing"] else "none",
                  ("model", "gradient_checkpointing"))
        mp = get_path(cfg, "trainer", "mp")
        if isinstance(mp, str):
            policy = dict(p.split("=", 1) for p in mp.replace(" ", "").split(",") if "=" in p)
            for part, fact in (("p", "param_dtype"), ("c", "mixed_precision")):
                d = spellings.dtype(policy.get(part, "")) if policy.get(part) else None
                if d:
                    o.put(fact, "none" if fact == "mixed_precision" and d == "fp32" else d, ("trainer", "mp"),
                          f"trainer.mp {mp}: {'parameters' if part == 'p' else 'compute'} in {policy[part]}")
        pdp = get_path(cfg, "trainer", "per_device_parallelism")
        if is_int(pdp) and pdp > 0:
            o.put("micro_batch", pdp, ("trainer", "per_device_parallelism"))


ADAPTER = Levanter()

_CONFIG = """\
data:
  tokenizer: "NousResearch/Llama-2-7b-hf"
model:
  type: llama
  seq_len: 4096
  hidden_dim: 4096
  num_layers: 32
  num_heads: 32
trainer:
  mp: p=f32,c=bfloat16
  train_batch_size: 256
  per_device_parallelism: 4
  model_axis_size: 1
  num_train_steps: 10000
"""

Levanter.EXAMPLES = [
    Example(title="a JAX job: recognised, and reported not sized with the reason",
            files={"config/llama2_7b.yaml": _CONFIG},
            command="python -m levanter.main.train_lm --config_path config/llama2_7b.yaml "
                    "--trainer.num_train_steps 10",
            facts={"params": (UNKNOWN, "config/llama2_7b.yaml:10"),
                   "model": (UNKNOWN, "config/llama2_7b.yaml:4"),
                   "seq_len": (4096, "config/llama2_7b.yaml:5"), "layers": (32, "config/llama2_7b.yaml:7"),
                   "param_dtype": ("fp32", "config/llama2_7b.yaml:10"),
                   "mixed_precision": ("bf16", "config/llama2_7b.yaml:10"),
                   "micro_batch": (4, "config/llama2_7b.yaml:12")}),
]
