"""Oumi: `oumi train -c config.yaml [--training.key value …]`, `oumi distributed torchrun -m
oumi train -c config.yaml`, and its training YAML (`model:`, `training:`, `peft:`, `fsdp:`,
`deepspeed:` sections of a `TrainingConfig`).

`model.torch_dtype_str` is the dtype the weights are loaded and trained in (`auto`, the
default, is the checkpoint's own); `training.mixed_precision_dtype` (`none` by default)
adds autocast over fp32 weights. `training.use_peft` turns on the `peft:` adapter (rank 8,
alpha 8 by default); `peft.q_lora` quantises the base to `q_lora_bits` (4). Gradient
checkpointing is off unless `training.enable_gradient_checkpointing`; the optimizer is the
Trainer's `adamw_torch` unless `training.optimizer` says otherwise.
`oumi distributed torchrun` starts one process per visible GPU of each node: the count is
the machine's, not the file's.
"""

from __future__ import annotations

from typing import Any, Optional

from preflight.facts import spellings
from preflight.frameworks import UNKNOWN, ConfigOut, Example, Framework, is_int, read_overrides
from preflight.plan import Fact, Invocation, Origin


def _sec(cfg: dict, name: str) -> dict:
    v = cfg.get(name)
    return v if isinstance(v, dict) else {}


def _read(cfg: dict, o: ConfigOut) -> None:
    model, training, peft = _sec(cfg, "model"), _sec(cfg, "training"), _sec(cfg, "peft")
    fsdp, ds = _sec(cfg, "fsdp"), _sec(cfg, "deepspeed")
    if isinstance(model.get("model_name"), str):
        o.hub_model(model["model_name"], ("model", "model_name"))
    if is_int(model.get("model_max_length")):
        o.put("seq_len", model["model_max_length"], ("model", "model_max_length"))
    for key, fact in (("per_device_train_batch_size", "micro_batch"),
                      ("gradient_accumulation_steps", "grad_accum")):
        if is_int(training.get(key)):
            o.put(fact, training[key], ("training", key))
        elif training and not o.partial:
            o.default(fact, 8 if fact == "micro_batch" else 1, ("training",),
                      f"Oumi's training.{key} defaults to {8 if fact == 'micro_batch' else 1}")
    q = peft.get("q_lora") is True
    bits = peft.get("q_lora_bits", 4) if q else 16
    if q and bits not in (4, 8):
        bits = 4
    dt = model.get("torch_dtype_str")
    mp = training.get("mixed_precision_dtype")
    if q:
        o.quant(bits, ("peft", "q_lora"), f"peft.q_lora: {bits}-bit base weights")
    elif isinstance(dt, str) and spellings.dtype(dt):
        o.put("param_dtype", spellings.dtype(dt), ("model", "torch_dtype_str"))
    elif model and not o.partial and "torch_dtype_str" not in model:
        o.unknown("param_dtype", ("model",), "model.torch_dtype_str defaults to auto: the checkpoint's dtype")
    if isinstance(mp, str) and spellings.mixed_precision(mp) in ("bf16", "fp16"):
        o.put("mixed_precision", spellings.mixed_precision(mp), ("training", "mixed_precision_dtype"))
    elif isinstance(dt, str) and spellings.dtype(dt) in ("bf16", "fp16") and (mp is None or str(mp).lower() == "none"):
        # no autocast: the whole step runs in the weights' half dtype
        o.put("mixed_precision", spellings.dtype(dt), ("model", "torch_dtype_str"),
              f"torch_dtype_str {dt} with no mixed_precision_dtype: the step runs in {spellings.dtype(dt)}",
              Origin.DERIVED)
    elif isinstance(dt, str) and spellings.dtype(dt) == "fp32" and not o.partial:
        o.put("mixed_precision", "none", ("model", "torch_dtype_str"), "float32 weights, no autocast",
              Origin.DERIVED)
    ai = model.get("attn_implementation")
    if isinstance(ai, str) and spellings.attention(ai):
        o.put("attention", spellings.attention(ai), ("model", "attn_implementation"))
    gc = training.get("enable_gradient_checkpointing")
    if isinstance(gc, bool):
        o.put("activation_checkpointing", "full" if gc else "none",
              ("training", "enable_gradient_checkpointing"))
    elif training and not o.partial:
        o.default("activation_checkpointing", "none", ("training",),
                  "training.enable_gradient_checkpointing defaults to False")
    opt = training.get("optimizer")
    if isinstance(opt, str):
        o.put("optimizer", spellings.optimizer_name(opt.lower()) or "other", ("training", "optimizer"))
    elif training and not o.partial:
        o.default("optimizer", "adamw", ("training",), "training.optimizer defaults to adamw_torch")
    use = training.get("use_peft")
    if use is True:
        r = peft.get("lora_r", 8)
        o.lora(r, peft.get("lora_alpha", 8), peft.get("lora_target_modules") or ["all-linear"],
               bits, ("training", "use_peft"))
    elif use is False:
        o.put("lora", False, ("training", "use_peft"), "training.use_peft: false")
    if fsdp.get("enable_fsdp") is True:
        s = spellings.fsdp_strategy(fsdp.get("sharding_strategy", "FULL_SHARD"))
        o.put("fsdp", s or "full_shard", ("fsdp", "sharding_strategy") if "sharding_strategy" in fsdp
              else ("fsdp", "enable_fsdp"))
        if fsdp.get("cpu_offload") is True:
            o.put("offload", "optimizer+params", ("fsdp", "cpu_offload"))
        if fsdp.get("enable_activation_checkpointing") is True:
            o.put("activation_checkpointing", "full", ("fsdp", "enable_activation_checkpointing"))
    elif "enable_fsdp" in fsdp or (cfg and not o.partial and not ds.get("enable_deepspeed")):
        o.put("fsdp", None, ("fsdp", "enable_fsdp") if "enable_fsdp" in fsdp else ("training",),
              "fsdp.enable_fsdp is off", Origin.CONFIG if "enable_fsdp" in fsdp else Origin.DEFAULT)
    if ds.get("enable_deepspeed") is True:
        st = str(ds.get("zero_stage", "0"))
        if st.isdigit():
            o.put("zero_stage", int(st), ("deepspeed", "zero_stage") if "zero_stage" in ds
                  else ("deepspeed", "enable_deepspeed"))
        if isinstance(ds.get("deepspeed_config_path"), str):
            o.configs.append(ds["deepspeed_config_path"])
    elif cfg and not o.partial:
        o.default("zero_stage", 0, ("training",) if training else ("model",), "deepspeed.enable_deepspeed is off")


def _config_arg(words: list[str]) -> tuple[Optional[str], list[str]]:
    """The `-c / --config` file of an `oumi train` line and the words after it."""
    cfg, rest, i = None, [], 0
    while i < len(words):
        w = words[i]
        if w in ("-c", "--config") and i + 1 < len(words):
            cfg = words[i + 1]
            i += 2
            continue
        if w.startswith("--config="):
            cfg = w.split("=", 1)[1]
        else:
            rest.append(w)
        i += 1
    return cfg, rest


class Oumi(Framework):
    name = "oumi"
    title = "Oumi"
    programs = ("oumi",)
    reads = (
        "`oumi train -c config.yaml [--training.key value …]` (dotted overrides over the file); "
        "`oumi distributed torchrun|accelerate … -m oumi train -c config.yaml`",
        "`model.model_name`, `model.model_max_length`, `model.torch_dtype_str` (`auto`: the "
        "checkpoint's dtype, unknown), `model.attn_implementation`",
        "`training.per_device_train_batch_size` (8), `gradient_accumulation_steps` (1), "
        "`mixed_precision_dtype`, `enable_gradient_checkpointing` (off), `optimizer` "
        "(adamw_torch), `use_peft`",
        "`peft.lora_r` (8), `lora_alpha` (8), `lora_target_modules`, `q_lora` / `q_lora_bits`; "
        "`fsdp.enable_fsdp`, `sharding_strategy`, `cpu_offload`; `deepspeed.enable_deepspeed`, "
        "`zero_stage`",
    )
    not_read = (
        "the GPUs per node of `oumi distributed` (every visible GPU: unknown), "
        "`oumi launch up` cloud jobs",
        "GRPO / GKD trainers' generation and teacher models (`training.grpo`, `training.gkd`)",
        "config aliases (`oumi train -c llama3.1-8b-sft`) naming a recipe outside the checkout",
    )

    def claims(self, cfg: dict, path: str) -> bool:
        model, training = cfg.get("model"), cfg.get("training")
        return isinstance(model, dict) and "model_name" in model and isinstance(training, dict) and (
            any(k in training for k in ("trainer_type", "enable_gradient_checkpointing", "use_peft",
                                        "mixed_precision_dtype"))
            or any(k in model for k in ("torch_dtype_str", "model_max_length")))

    def read_config(self, cfg: dict, o: ConfigOut) -> None:
        _read(cfg, o)

    def launch(self, prog: str, rest: list[str], line: Any, cwd: str = "") -> Optional[Invocation]:
        words = list(rest)
        distributed = words[:1] == ["distributed"]
        if distributed:
            # `oumi distributed torchrun [opts] -m oumi train -c cfg`: the launcher's own
            # options are not read; the process count is the machine's
            k = next((j for j in range(len(words) - 1) if words[j] == "train"), None)
            if k is None:
                return None
            words = words[k:]
        if words[:1] != ["train"]:
            return None
        cfg, over = _config_arg(words[1:])
        facts = list(line.facts)
        if distributed:
            why = "`oumi distributed` starts one process per visible GPU of each node"
            facts.append(("gpus_per_node", Fact.unknown(why, source=line.source)))
        else:
            why = "`oumi train` runs one process"
            facts += [("nodes", Fact(value=1, origin=Origin.DEFAULT, source=line.source, reason=why)),
                      ("gpus_per_node", Fact(value=1, origin=Origin.DEFAULT, source=line.source, reason=why))]
        facts += read_overrides(self.read_config, over, line.source, line.origin, dashes=True)
        configs = [cfg] if cfg and cfg.lower().endswith((".yaml", ".yml")) else []
        return Invocation(script=cfg or "oumi train", args=over, source=line.source, module="oumi train",
                          facts=facts, configs=configs)


ADAPTER = Oumi()

_LORA = """\
model:
  model_name: "meta-llama/Llama-3.1-8B-Instruct"
  model_max_length: 4096
  torch_dtype_str: "bfloat16"
  attn_implementation: "sdpa"

data:
  train:
    datasets:
      - dataset_name: "yahma/alpaca-cleaned"

training:
  trainer_type: "TRL_SFT"
  use_peft: True
  per_device_train_batch_size: 4
  gradient_accumulation_steps: 8
  enable_gradient_checkpointing: True
  optimizer: "adamw_torch_fused"
  output_dir: "output/llama8b.lora"

peft:
  lora_r: 16
  lora_alpha: 32
  lora_target_modules:
    - "q_proj"
    - "v_proj"

fsdp:
  enable_fsdp: True
  sharding_strategy: "HYBRID_SHARD"
"""

_FULL = """\
model:
  model_name: "Qwen/Qwen2.5-1.5B-Instruct"
  torch_dtype_str: "float32"

training:
  trainer_type: "TRL_SFT"
  mixed_precision_dtype: "bf16"
  output_dir: "output/qwen.fft"
"""

Oumi.EXAMPLES = [
    Example(title="LoRA recipe under FSDP, run by `oumi distributed torchrun`",
            files={"train.yaml": _LORA},
            command="oumi distributed torchrun -m oumi train -c train.yaml "
                    "--training.per_device_train_batch_size 2",
            facts={"model": ("meta-llama/Llama-3.1-8B-Instruct", "train.yaml:2"),
                   "seq_len": (4096, "train.yaml:3"), "param_dtype": ("bf16", "train.yaml:4"),
                   "mixed_precision": ("bf16", "train.yaml:4", "derived"),
                   "attention": ("sdpa", "train.yaml:5"),
                   "micro_batch": (2, "<command>:1", "cli"), "grad_accum": (8, "train.yaml:16"),
                   "activation_checkpointing": ("full", "train.yaml:17"),
                   "optimizer": ("adamw", "train.yaml:18"),
                   "lora": ({"r": 16, "alpha": 32, "targets": ["q_proj", "v_proj"], "base_bits": 16},
                            "train.yaml:14"),
                   "fsdp": ("hybrid_shard", "train.yaml:30"),
                   "gpus_per_node": (UNKNOWN, "<command>:1")}),
    Example(title="full fine-tune with autocast over fp32 weights; Oumi's defaults fill the rest",
            files={"fft.yaml": _FULL},
            command="oumi train -c fft.yaml",
            facts={"param_dtype": ("fp32", "fft.yaml:3"), "mixed_precision": ("bf16", "fft.yaml:7"),
                   "micro_batch": (8, "fft.yaml:5", "default"), "grad_accum": (1, "fft.yaml:5", "default"),
                   "activation_checkpointing": ("none", "fft.yaml:5", "default"),
                   "optimizer": ("adamw", "fft.yaml:5", "default"),
                   "lora": (False, "fft.yaml:2", "default"), "gpus_per_node": (1, "<command>:1", "default")}),
]
