"""NVIDIA NeMo (the Megatron-based Hydra apps of NeMo 1.x: `megatron_gpt_pretraining.py`,
`megatron_gpt_finetuning.py`, … with `conf/megatron_*_config.yaml`): a config of a
Lightning `trainer:` section and a Megatron `model:` section, composed by Hydra
(`preflight.lang.hydra`) and overridden on the command line
(`python megatron_gpt_pretraining.py trainer.devices=8 model.micro_batch_size=4`).

The keys: `trainer.devices` (processes per node: NeMo's Lightning trainer starts them),
`trainer.num_nodes`, `trainer.precision` with `model.megatron_amp_O2` (O2: the weights in
the half type, fp32 main weights in the optimizer; otherwise fp32 weights under
autocast), `model.micro_batch_size`, `model.tensor_model_parallel_size`,
`model.pipeline_model_parallel_size`, `model.sequence_parallel`,
`model.encoder_seq_length` (fine-tuning: `model.data.train_ds.max_seq_length`), the
architecture (`num_layers`, `hidden_size`, `ffn_hidden_size`, `num_attention_heads`,
`num_query_groups`), `activations_checkpoint_granularity`, `model.optim.name`
(`distributed_fused_adam` shards the optimizer states over data-parallel ranks, like
ZeRO-1), `model.fsdp` with `fsdp_sharding_strategy`, and PEFT (`model.peft.peft_scheme:
lora` with `lora_tuning.adapter_dim` / `alpha` / `target_modules`).
NeMo's own resolvers (`${multiply:…}`, `${sum:…}`) are computed; a value Hydra cannot
resolve statically is unknown at its key.
"""

from __future__ import annotations

from typing import Any, Optional

from preflight.facts import spellings
from preflight.frameworks import (UNKNOWN, ConfigOut, Example, Framework, get_path, is_int,
                                  read_overrides)
from preflight.lang.hydra import Unresolved
from preflight.plan import Invocation, Origin

#: NeMo's LoRA target names (fused QKV, dense, MLP fc1 / fc2) → the Hugging Face module
#: names the LoRA counter knows
_LORA_TARGETS = {"attention_qkv": ["q_proj", "k_proj", "v_proj"], "attention_dense": ["o_proj"],
                 "mlp_fc1": ["gate_proj", "up_proj"], "mlp_fc2": ["down_proj"]}
_LORA_GROUPS = {"attention": ["attention_qkv", "attention_dense"], "mlp": ["mlp_fc1", "mlp_fc2"],
                "all": ["attention_qkv", "attention_dense", "mlp_fc1", "mlp_fc2"]}
#: NeMo optimizer names → the `optimizer` value (fused_adam is apex FusedAdam, AdamW mode)
_OPTIMIZERS = {"fused_adam": "adamw", "distributed_fused_adam": "adamw", "mcore_distributed_optim": "adamw",
               "adamw": "adamw", "adam": "adam", "sgd": "sgd", "novograd": "other", "adafactor": "adafactor"}
_FSDP = {"full": "full_shard", "hybrid": "hybrid_shard", "grad": "shard_grad_op"}
_MARKERS = ("megatron_amp_O2", "tensor_model_parallel_size", "mcore_gpt", "encoder_seq_length",
            "restore_from_path", "pipeline_model_parallel_size")


class _Reader:
    """The facts of one NeMo config (or its overrides): each value at its key, an
    unresolved one unknown there."""

    def __init__(self, cfg: dict, o: ConfigOut):
        self.cfg, self.o = cfg, o

    def val(self, *p: str) -> Any:
        v = get_path(self.cfg, *p)
        if isinstance(v, Unresolved):
            return v
        return v

    def put(self, name: str, p: tuple, conv=lambda v: v) -> None:
        v = get_path(self.cfg, *p)
        if v is None:
            return
        if isinstance(v, Unresolved):
            self.o.unknown(name, p, f"{'.'.join(p)}: {v.reason}")
            return
        x = conv(v)
        if x is not None:
            self.o.put(name, x, p)


def _int(v: Any) -> Optional[int]:
    return v if is_int(v) else None


class NeMo(Framework):
    name = "nemo"
    title = "NVIDIA NeMo"
    entry_points = (r"(^|/)megatron_\w+_(pretraining|finetuning|sft|peft|tuning|training)\.py$",)
    launched_by = ("python megatron_*_pretraining.py", "torchrun megatron_*_finetuning.py")
    reads = (
        "Hydra apps (`@hydra_runner(config_path=…, config_name=…)`) composed with their "
        "`conf/` folder and the line's overrides (`trainer.devices=8`, `+model.x=…`, "
        "`--config-name`); the overrides alone when the script is not in the repository",
        "`trainer.devices`, `trainer.num_nodes`, `trainer.precision` with "
        "`model.megatron_amp_O2`, `model.micro_batch_size`, `model.tensor_model_parallel_size`, "
        "`model.pipeline_model_parallel_size`, `model.sequence_parallel`, "
        "`model.encoder_seq_length` / `model.data.train_ds.max_seq_length`",
        "`num_layers`, `hidden_size`, `ffn_hidden_size`, `num_attention_heads`, "
        "`num_query_groups`, `activations_checkpoint_granularity`, `optim.name` "
        "(`distributed_fused_adam`: ZeRO-1-like), `model.fsdp` / `fsdp_sharding_strategy`, "
        "`model.peft.peft_scheme: lora` with `lora_tuning.*`",
    )
    not_read = (
        "NeMo 2.0 Python recipes (`nemo.collections.llm` `recipe.*`, `nemo llm finetune`)",
        "the model inside a `.nemo` checkpoint (`restore_from_path`): unknown",
        "`global_batch_size` (the accumulation NeMo derives from it), context / expert "
        "parallelism, PEFT schemes other than LoRA (adapter, p-tuning, IA3: unknown)",
    )

    def claims(self, cfg: dict, path: str) -> bool:
        t, m = cfg.get("trainer"), cfg.get("model")
        return isinstance(t, dict) and isinstance(m, dict) and sum(k in m for k in _MARKERS) >= 2

    def read_config(self, cfg: dict, o: ConfigOut) -> None:
        r = _Reader(cfg, o)
        dev = r.val("trainer", "devices")
        if is_int(dev) and dev > 0:
            o.put("gpus_per_node", dev, ("trainer", "devices"))
        elif dev is not None:
            o.unknown("gpus_per_node", ("trainer", "devices"), f"trainer.devices: {dev} (every visible GPU, "
                                                               "or not known statically)")
        r.put("nodes", ("trainer", "num_nodes"), _int)
        self._precision(cfg, o)
        r.put("micro_batch", ("model", "micro_batch_size"), _int)
        r.put("tp", ("model", "tensor_model_parallel_size"), _int)
        r.put("pp", ("model", "pipeline_model_parallel_size"), _int)
        r.put("sp", ("model", "sequence_parallel"), lambda v: v if isinstance(v, bool) else None)
        if get_path(cfg, "model", "encoder_seq_length") is not None:
            r.put("seq_len", ("model", "encoder_seq_length"), _int)
        else:
            r.put("seq_len", ("model", "data", "train_ds", "max_seq_length"), _int)
        if not get_path(cfg, "model", "restore_from_path"):
            for key, fact in (("num_layers", "layers"), ("hidden_size", "hidden"),
                              ("ffn_hidden_size", "ffn_hidden"), ("num_attention_heads", "heads"),
                              ("num_query_groups", "kv_heads")):
                r.put(fact, ("model", key), _int)
        else:
            rp = get_path(cfg, "model", "restore_from_path")
            o.unknown("model", ("model", "restore_from_path"),
                      f"model.restore_from_path: {rp} — the model inside a .nemo checkpoint is not read")
        m = get_path(cfg, "model")
        if isinstance(m, dict) and "activations_checkpoint_granularity" in m:
            g = m["activations_checkpoint_granularity"]
            r.put("activation_checkpointing", ("model", "activations_checkpoint_granularity"),
                  lambda v: v if v in ("full", "selective") else None)
            if g is None:
                o.put("activation_checkpointing", "none", ("model", "activations_checkpoint_granularity"),
                      "activations_checkpoint_granularity: null")
        opt = get_path(cfg, "model", "optim", "name")
        if isinstance(opt, Unresolved):
            o.unknown("optimizer", ("model", "optim", "name"), opt.reason)
        elif isinstance(opt, str):
            o.put("optimizer", _OPTIMIZERS.get(opt.lower()) or spellings.optimizer_name(opt) or "other",
                  ("model", "optim", "name"), f"model.optim.name: {opt}")
            if not o.partial:
                o.put("zero_stage", 1 if "distributed" in opt.lower() else 0, ("model", "optim", "name"),
                      f"optim.name: {opt}" + (" shards the optimizer states over data-parallel ranks"
                                              if "distributed" in opt.lower() else ": no ZeRO"))
        fsdp = get_path(cfg, "model", "fsdp")
        if fsdp is True:
            st = get_path(cfg, "model", "fsdp_sharding_strategy") or "full"
            o.put("fsdp", _FSDP.get(str(st)), ("model", "fsdp"), f"model.fsdp: true, {st}")
        elif fsdp is False:
            o.put("fsdp", None, ("model", "fsdp"), "model.fsdp: false")
        self._peft(cfg, o)

    def _precision(self, cfg: dict, o: ConfigOut) -> None:
        prec = get_path(cfg, "trainer", "precision")
        if isinstance(prec, Unresolved):
            o.unknown("mixed_precision", ("trainer", "precision"), prec.reason)
            return
        mp = spellings.precision(prec) if prec is not None else None
        if not mp:
            return
        o.put("mixed_precision", mp[0], ("trainer", "precision"), f"trainer.precision: {prec}")
        o2 = get_path(cfg, "model", "megatron_amp_O2")
        if mp[0] in ("bf16", "fp16") and isinstance(o2, bool):
            if o2:
                o.put("param_dtype", mp[0], ("model", "megatron_amp_O2"),
                      f"megatron_amp_O2: true — weights in {mp[0]}, fp32 main weights in the optimizer")
                o.put("master_weights", True, ("model", "megatron_amp_O2"), "megatron_amp_O2: fp32 main weights")
            else:
                o.put("param_dtype", "fp32", ("model", "megatron_amp_O2"),
                      "megatron_amp_O2: false — fp32 weights, half-precision compute")
        elif mp[1]:
            o.put("param_dtype", mp[1], ("trainer", "precision"), f"trainer.precision: {prec}")

    def _peft(self, cfg: dict, o: ConfigOut) -> None:
        peft = get_path(cfg, "model", "peft")
        if not isinstance(peft, dict) or "peft_scheme" not in peft:
            return
        scheme = peft.get("peft_scheme")
        p = ("model", "peft", "peft_scheme")
        if isinstance(scheme, Unresolved):
            o.unknown("lora", p, scheme.reason)
        elif scheme in (None, "none", "null"):
            o.put("lora", False, p, "peft_scheme: none (full fine-tune)")
        elif str(scheme).lower() == "lora":
            lt = peft.get("lora_tuning") if isinstance(peft.get("lora_tuning"), dict) else {}
            targets: list[str] = []
            raw = lt.get("target_modules") or ["attention_qkv"]
            for t in raw if isinstance(raw, list) else [raw]:
                for name in _LORA_GROUPS.get(str(t), [str(t)]):
                    targets += _LORA_TARGETS.get(name, [name])
            at = ("model", "peft", "lora_tuning", "adapter_dim") if "adapter_dim" in lt else p
            o.lora(lt.get("adapter_dim"), lt.get("alpha"), targets, 16, at, f"peft_scheme: lora, "
                   f"adapter_dim {lt.get('adapter_dim')}")
        else:
            o.unknown("lora", p, f"peft_scheme: {scheme} — a PEFT method other than LoRA, not counted")

    def launch_python(self, inv: Invocation, origin: Origin) -> Invocation:
        words = [a for a in inv.args if not a.startswith("-")]
        if not words:
            return inv
        facts = read_overrides(self.read_config, words, inv.source, origin)
        return inv.model_copy(update={"facts": list(inv.facts) + facts})


_CONF = """\
defaults:
  - _self_
  - optional tp_overlap@model.ub_tp_comm_overlap_cfg:

name: megatron_gpt
trainer:
  devices: 1
  num_nodes: 1
  precision: bf16
exp_manager:
  explicit_log_dir: null
model:
  mcore_gpt: True
  micro_batch_size: 4
  global_batch_size: 8
  tensor_model_parallel_size: 1
  pipeline_model_parallel_size: 1
  encoder_seq_length: 2048
  max_position_embeddings: ${.encoder_seq_length}
  num_layers: 24
  hidden_size: 2048
  ffn_hidden_size: ${multiply:4,${.hidden_size}}
  num_attention_heads: 16
  megatron_amp_O2: True
  sequence_parallel: False
  activations_checkpoint_granularity: null
  optim:
    name: distributed_fused_adam
    lr: 2e-4
"""

_SCRIPT = """\
from nemo.core.config import hydra_runner


@hydra_runner(config_path="conf", config_name="megatron_gpt_config")
def main(cfg) -> None:
    pass
"""

_FT = """\
trainer:
  devices: 1
  num_nodes: 1
  precision: bf16-mixed
model:
  restore_from_path: ???
  tensor_model_parallel_size: 1
  micro_batch_size: 1
  megatron_amp_O2: False
  peft:
    peft_scheme: "lora"
    lora_tuning:
      target_modules: ['attention_qkv', 'mlp']
      adapter_dim: 32
      alpha: ${model.peft.lora_tuning.adapter_dim}
  data:
    train_ds:
      max_seq_length: 4096
"""

ADAPTER = NeMo()
NeMo.EXAMPLES = [
    Example(title="pre-training: the Hydra app's config composed, NeMo's resolvers computed, "
                  "overrides on the line over it",
            files={"examples/megatron_gpt_pretraining.py": _SCRIPT,
                   "examples/conf/megatron_gpt_config.yaml": _CONF,
                   "train.sh": "#!/bin/bash\npython examples/megatron_gpt_pretraining.py \\\n"
                               "    trainer.devices=8 trainer.num_nodes=2 \\\n"
                               "    model.micro_batch_size=2 model.tensor_model_parallel_size=2 \\\n"
                               "    +model.sequence_parallel=True\n"},
            paths=["train.sh"],
            facts={"gpus_per_node": (8, "train.sh:3", "config"), "nodes": (2, "train.sh:3"),
                   "micro_batch": (2, "train.sh:4"), "tp": (2, "train.sh:4"),
                   "seq_len": (2048, "examples/conf/megatron_gpt_config.yaml:18"),
                   "layers": (24, "examples/conf/megatron_gpt_config.yaml:20"),
                   "ffn_hidden": (8192, "examples/conf/megatron_gpt_config.yaml:22"),
                   "mixed_precision": ("bf16", "examples/conf/megatron_gpt_config.yaml:9"),
                   "param_dtype": ("bf16", "examples/conf/megatron_gpt_config.yaml:24"),
                   "zero_stage": (1, "examples/conf/megatron_gpt_config.yaml:28"),
                   "activation_checkpointing": ("none", "examples/conf/megatron_gpt_config.yaml:26")}),
    Example(title="LoRA fine-tuning config read alone: the .nemo model is unknown, the adapter's "
                  "alpha comes through an interpolation",
            files={"conf/megatron_gpt_finetuning_config.yaml": _FT},
            facts={"micro_batch": (1, "conf/megatron_gpt_finetuning_config.yaml:8"),
                   "seq_len": (4096, "conf/megatron_gpt_finetuning_config.yaml:18"),
                   "param_dtype": ("fp32", "conf/megatron_gpt_finetuning_config.yaml:9"),
                   "model": (UNKNOWN, "conf/megatron_gpt_finetuning_config.yaml:6"),
                   "lora": ({"r": 32, "alpha": 32, "targets": ["q_proj", "k_proj", "v_proj", "gate_proj",
                                                              "up_proj", "down_proj"], "base_bits": 16},
                            "conf/megatron_gpt_finetuning_config.yaml:14")}),
    Example(title="the script is not in the repository: the overrides on the line alone",
            files={"run.sh": "torchrun --nproc_per_node=8 /opt/NeMo/examples/nlp/language_modeling/"
                             "megatron_gpt_pretraining.py model.micro_batch_size=1 "
                             "model.encoder_seq_length=8192 trainer.precision=bf16\n"},
            paths=["run.sh"],
            facts={"micro_batch": (1, "run.sh:1", "config"), "seq_len": (8192, "run.sh:1"),
                   "gpus_per_node": (8, "run.sh:1"), "mixed_precision": ("bf16", "run.sh:1")}),
]
