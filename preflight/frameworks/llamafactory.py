"""LLaMA-Factory: `llamafactory-cli train cfg.yaml` and its YAML (TrainingArguments keys
plus `finetuning_type`, `lora_rank`, `lora_target`, `cutoff_len`, `quantization_bit`).
"""

from __future__ import annotations

from preflight.facts import spellings
from preflight.frameworks import ConfigOut, Example, Framework, is_int
from preflight.plan import Origin


def _llamafactory(cfg: dict, o: ConfigOut) -> None:
    m = cfg.get("model_name_or_path")
    if isinstance(m, str):
        o.put("model", m, ("model_name_or_path",))
        o.model_refs.append({"kind": "hub", "name": m, "source": o.src(("model_name_or_path",))})
    for key, name in (("cutoff_len", "seq_len"), ("per_device_train_batch_size", "micro_batch"),
                      ("gradient_accumulation_steps", "grad_accum")):
        if is_int(cfg.get(key)):
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
        alpha = cfg.get("lora_alpha", r * 2 if is_int(r) else None)
        tgt = cfg.get("lora_target", "all")
        tgt = [t.strip() for t in tgt.split(",")] if isinstance(tgt, str) else tgt
        o.lora(r, alpha, tgt, bits, ("finetuning_type",) if "finetuning_type" in cfg else ("stage",),
               dropout=cfg.get("lora_dropout"))
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
        att = spellings.attention(cfg["flash_attn"])
        if att:
            o.put("attention", att, ("flash_attn",))
    _preference(cfg, o, ft)
    opt = cfg.get("optim")
    if isinstance(opt, str):
        o.put("optimizer", (spellings.optimizer_name(opt.lower()) or "other"), ("optim",))
    else:
        o.put("optimizer", "adamw", ("stage",), "TrainingArguments.optim defaults to adamw_torch", Origin.DEFAULT)


def _preference(cfg: dict, o: ConfigOut, ft: str) -> None:
    """`stage: dpo` (unless `pref_loss` is orpo or simpo) keeps a reference model: the
    `ref_model` it names (not sized), none for LoRA (the base with the adapter off), else
    the base loaded again, frozen, in the compute dtype; `stage: dpo` and `stage: rm` put
    each pair's chosen and rejected sequences through one forward."""
    stage = str(cfg.get("stage", "sft")).lower()
    if stage in ("dpo", "rm"):
        o.default("sequences_per_sample", 2, ("stage",),
                  f"stage: {stage} puts a pair's chosen and rejected sequences in one batch")
    if stage != "dpo" or str(cfg.get("pref_loss", "sigmoid")).lower() in ("orpo", "simpo"):
        return
    if isinstance(cfg.get("ref_model"), str):
        o.unknown("reference_copies", ("ref_model",),
                  f"ref_model: {cfg['ref_model']}: the reference model named is not sized")
    elif ft != "lora":
        o.default("reference_copies", 1, ("stage",),
                  "stage: dpo loads the model again, frozen, as the reference")
        dt = "bf16" if cfg.get("bf16") is True else "fp16" if cfg.get("fp16") is True else None
        if dt:
            o.default("reference_dtype", dt, ("bf16",) if dt == "bf16" else ("fp16",),
                      "the reference model is loaded in the compute dtype")


class LlamaFactory(Framework):
    name = "llamafactory"
    title = "LLaMA-Factory"
    programs = ("llamafactory-cli",)
    reads = (
        "`model_name_or_path`, `cutoff_len`, `per_device_train_batch_size`, "
        "`gradient_accumulation_steps`, `bf16` / `fp16`, `optim` (default adamw_torch)",
        "`finetuning_type` (default lora) with `lora_rank` (8), `lora_alpha` (2 × rank), "
        "`lora_target` (all); `quantization_bit`",
        "`deepspeed: ds.json`, `disable_gradient_checkpointing` (checkpointing on by default), "
        "`flash_attn`, `enable_liger_kernel` (a loss that keeps no full logits); "
        "`FORCE_TORCHRUN=1 NNODES=… llamafactory-cli train cfg.yaml`",
        "`stage: dpo`: the reference model it loads again for a full or freeze fine-tune (in "
        "the compute dtype; none with LoRA, none for `pref_loss: orpo | simpo`); `stage: dpo | "
        "rm`: a pair's chosen and rejected sequences in one forward",
    )
    not_read = (
        "`pure_bf16`, `use_unsloth`, `galore` / `badam` optimizers' own memory",
        "`stage: ppo | kto`'s reference, reward and value models; a `ref_model` named (its size)",
        "GPUs per node under `FORCE_TORCHRUN` (`NPROC_PER_NODE` defaults to every visible GPU)",
    )

    def claims(self, cfg: dict, path: str) -> bool:
        return "model_name_or_path" in cfg and any(k in cfg for k in ("finetuning_type", "stage",
                                                                      "cutoff_len", "template"))

    def read_config(self, cfg: dict, o: ConfigOut) -> None:
        _llamafactory(cfg, o)


ADAPTER = LlamaFactory()
_SFT = """\
model_name_or_path: Qwen/Qwen2.5-7B
stage: sft
do_train: true
finetuning_type: lora
lora_rank: 16
lora_target: q_proj,v_proj
template: qwen
cutoff_len: 4096
per_device_train_batch_size: 2
gradient_accumulation_steps: 8
bf16: true
"""

LlamaFactory.EXAMPLES = [
    Example(title="LoRA SFT recipe: lora_alpha and gradient checkpointing from the defaults",
            files={"sft.yaml": _SFT},
            command="llamafactory-cli train sft.yaml",
            facts={"model": ("Qwen/Qwen2.5-7B", "sft.yaml:1"),
                   "lora": ({"r": 16, "alpha": 32, "targets": ["q_proj", "v_proj"], "base_bits": 16},
                            "sft.yaml:4"),
                   "seq_len": (4096, "sft.yaml:8"),
                   "micro_batch": (2, "sft.yaml:9"),
                   "grad_accum": (8, "sft.yaml:10"),
                   "mixed_precision": ("bf16", "sft.yaml:11"),
                   "activation_checkpointing": ("full", "sft.yaml:2", "default"),
                   "optimizer": ("adamw", "sft.yaml:2", "default")}),
]

_DPO = """\
model_name_or_path: Qwen/Qwen2.5-7B
stage: dpo
do_train: true
finetuning_type: full
pref_beta: 0.1
template: qwen
cutoff_len: 2048
per_device_train_batch_size: 1
bf16: true
"""

LlamaFactory.EXAMPLES += [
    Example(title="full-parameter DPO: the reference model loaded again in the compute dtype, "
                  "and each pair's chosen and rejected in one forward",
            files={"dpo.yaml": _DPO},
            command="llamafactory-cli train dpo.yaml",
            facts={"reference_copies": (1, "dpo.yaml:2", "default"),
                   "reference_dtype": ("bf16", "dpo.yaml:9", "default"),
                   "sequences_per_sample": (2, "dpo.yaml:2", "default"),
                   "micro_batch": (1, "dpo.yaml:8")}),
    Example(title="LoRA DPO: the base with the adapter off is the reference (no copy)",
            files={"dpo.yaml": _DPO.replace("finetuning_type: full", "finetuning_type: lora")},
            command="llamafactory-cli train dpo.yaml",
            facts={"sequences_per_sample": (2, "dpo.yaml:2", "default"),
                   "lora": ({"r": 8, "alpha": 16, "targets": ["all"], "base_bits": 16},
                            "dpo.yaml:4")}),
]
