"""axolotl: `axolotl train cfg.yml` / `accelerate launch -m axolotl.cli.train cfg.yml` and
its YAML (base model, adapter, batch, sequence length, precision, quantisation, FSDP or
DeepSpeed).
"""

from __future__ import annotations

from preflight.facts import spellings
from preflight.frameworks import ConfigOut, Example, Framework, is_int
from preflight.plan import Origin


#: axolotl's `rl:` trainers that score a pair's chosen and rejected in one forward, and
#: those that keep a reference model (loaded again unless an adapter serves as one)
_PAIRED_RL = ("dpo", "ipo", "orpo", "simpo", "gdpo")
_REFERENCE_RL = ("dpo", "ipo", "kto", "gdpo")


def _preference(cfg: dict, o: ConfigOut) -> None:
    rl = str(cfg.get("rl") or "").lower()
    if rl in _PAIRED_RL:
        o.default("sequences_per_sample", 2, ("rl",),
                  f"rl: {rl} puts a pair's chosen and rejected sequences in one batch")
    if rl in _REFERENCE_RL and (not cfg.get("adapter") or cfg.get("rl_adapter_ref_model")):
        o.default("reference_copies", 1, ("rl",),
                  f"rl: {rl} without an adapter loads the model again as the frozen reference")


def _axolotl(cfg: dict, o: ConfigOut) -> None:
    _preference(cfg, o)
    bm = cfg.get("base_model")
    if isinstance(bm, str):
        o.put("model", bm, ("base_model",))
        o.model_refs.append({"kind": "hub", "name": bm, "source": o.src(("base_model",))})
    for key, name in (("sequence_len", "seq_len"), ("micro_batch_size", "micro_batch"),
                      ("gradient_accumulation_steps", "grad_accum")):
        if is_int(cfg.get(key)):
            o.put(name, cfg[key], (key,))
    if cfg.get("bf16") in (True, "true", "auto", "True"):
        org = Origin.CONFIG if cfg.get("bf16") is True or cfg.get("bf16") == "true" else Origin.ASSUMED
        o.put("mixed_precision", "bf16", ("bf16",), f"bf16: {cfg['bf16']}" + (
            " (bf16 where the GPU supports it)" if org is Origin.ASSUMED else ""), org)
    elif cfg.get("fp16") is True:
        o.put("mixed_precision", "fp16", ("fp16",))
    bits = 4 if cfg.get("load_in_4bit") is True else (8 if cfg.get("load_in_8bit") is True else 16)
    if bits != 16:
        key = "load_in_4bit" if bits == 4 else "load_in_8bit"
        o.put("param_dtype", "int4" if bits == 4 else "int8", (key,))
        o.model_refs.append({"kind": "quant", "bits": bits, "source": o.src((key,))})
    if bits == 16 and cfg.get("bf16") is True or cfg.get("bf16") == "true":
        # axolotl loads the model in the training dtype (torch_dtype bfloat16 with bf16: true)
        o.put("param_dtype", "bf16", ("bf16",), "bf16: true loads the weights in bfloat16", Origin.DERIVED)
    ad = cfg.get("adapter")
    if isinstance(ad, str) and ad.lower() in ("lora", "qlora"):
        targets = cfg.get("lora_target_modules")
        if cfg.get("lora_target_linear") is True:
            targets = ["all-linear"]
        if ad.lower() == "qlora" and bits == 16:
            bits = 4
        o.lora(cfg.get("lora_r"), cfg.get("lora_alpha"), targets, bits, ("adapter",),
               dropout=cfg.get("lora_dropout"))
    elif "adapter" in cfg or "base_model" in cfg:
        o.put("lora", None, ("adapter",) if "adapter" in cfg else ("base_model",), "no adapter: full fine-tune",
              Origin.CONFIG if "adapter" in cfg else Origin.DEFAULT)
    if isinstance(cfg.get("deepspeed"), str):
        o.configs.append(cfg["deepspeed"])
    fs = cfg.get("fsdp")
    fcfg = cfg.get("fsdp_config") if isinstance(cfg.get("fsdp_config"), dict) else None
    if fs or fcfg:
        val = "full_shard"
        if isinstance(fs, list) and any(str(x).lower() == "shard_grad_op" for x in fs):
            val = "shard_grad_op"
        if fcfg and fcfg.get("reshard_after_forward") is False:
            val = "shard_grad_op"
        rep = cfg.get("dp_replicate_size")
        if is_int(rep) and rep > 1:
            o.put("fsdp", "hybrid_shard", ("dp_replicate_size",),
                  f"dp_replicate_size {rep}: FSDP shards within a replica group, replicates across")
        else:
            o.put("fsdp", val, ("fsdp",) if fs else ("fsdp_config",))
        if fcfg and (fcfg.get("offload_params") is True or fcfg.get("fsdp_offload_params") is True):
            o.put("offload", "optimizer+params", ("fsdp_config",))
    elif not cfg.get("deepspeed"):
        o.put("fsdp", None, ("base_model",), "no fsdp / deepspeed setting", Origin.DEFAULT)
    if not cfg.get("deepspeed"):
        o.put("zero_stage", 0, ("base_model",), "no deepspeed setting", Origin.DEFAULT)
    # N-D parallelism: the world is the product of the degrees when all are given
    tp = cfg.get("tensor_parallel_size")
    if is_int(tp) and tp >= 1:
        o.put("tp", tp, ("tensor_parallel_size",))
    degrees = [cfg.get(k, 1) for k in ("dp_shard_size", "dp_replicate_size", "tensor_parallel_size",
                                       "context_parallel_size")]
    if "dp_shard_size" in cfg and all(is_int(d) and d >= 1 for d in degrees):
        w = degrees[0] * degrees[1] * degrees[2] * degrees[3]
        o.put("world_size", w, ("dp_shard_size",), "dp_shard_size × dp_replicate_size × "
              f"tensor_parallel_size × context_parallel_size = {w}", Origin.DERIVED)
    if "gradient_checkpointing" in cfg:
        gc = cfg["gradient_checkpointing"]
        o.put("activation_checkpointing", "full" if gc in (True, "true") else (
            "selective" if gc == "offload" else "none"), ("gradient_checkpointing",))
    elif "base_model" in cfg:
        o.put("activation_checkpointing", "none", ("base_model",),
              "gradient_checkpointing unset (axolotl default: off)", Origin.DEFAULT)
    for key in ("attn_implementation", "flash_attention", "sdp_attention", "xformers_attention", "eager_attention"):
        if key in cfg:
            v = cfg[key]
            att = spellings.attention(v) if key == "attn_implementation" else (
                spellings.ATTENTION_SWITCHES.get(key)
                if v is True else None)
            if att:
                o.put("attention", att, (key,))
                break
    opt = cfg.get("optimizer")
    if isinstance(opt, str):
        o.put("optimizer", (spellings.optimizer_name(opt.lower()) or "other"), ("optimizer",))


class Axolotl(Framework):
    name = "axolotl"
    title = "axolotl"
    programs = ("axolotl",)
    reads = (
        "`base_model`, `sequence_len`, `micro_batch_size`, `gradient_accumulation_steps`, "
        "`bf16` / `fp16` (`auto` is an assumption), `load_in_4bit` / `load_in_8bit`",
        "`adapter: lora|qlora` with `lora_r`, `lora_alpha`, `lora_target_modules` / "
        "`lora_target_linear`",
        "`deepspeed: ds.json` (read as its own config), `fsdp` / `fsdp_config` "
        "(`reshard_after_forward`, `offload_params`), `gradient_checkpointing`, attention "
        "switches (`flash_attention`, `sdp_attention`, `attn_implementation`), `optimizer`",
        "`liger_fused_linear_cross_entropy: true` (Liger's fused loss, with the layer kernels "
        "of `liger_rms_norm`, `liger_glu_activation`, `liger_rope`) / `cut_cross_entropy: "
        "true`: a loss that keeps no full logits",
        "`axolotl train cfg.yml`, `accelerate launch -m axolotl.cli.train cfg.yml`",
        "N-D parallelism: `tensor_parallel_size`, `dp_replicate_size` (> 1: HSDP), world size "
        "= `dp_shard_size` × `dp_replicate_size` × `tensor_parallel_size` × `context_parallel_size`",
        "`rl: dpo | ipo | kto` without an `adapter`: the model loaded again as the frozen "
        "reference; `rl: dpo | ipo | orpo | simpo`: a pair's chosen and rejected in one forward",
    )
    not_read = (
        "`context_parallel_size`'s split of activations; nodes of an N-D layout (only its world size)",
        "`sample_packing` efficiency, `base_model_config` overrides",
    )

    def claims(self, cfg: dict, path: str) -> bool:
        return "base_model" in cfg and any(k in cfg for k in ("micro_batch_size", "sequence_len",
                                                              "datasets", "adapter"))

    def read_config(self, cfg: dict, o: ConfigOut) -> None:
        _axolotl(cfg, o)


ADAPTER = Axolotl()
_QLORA = """\
base_model: NousResearch/Llama-2-7b-hf
load_in_4bit: true
adapter: qlora
lora_r: 16
lora_alpha: 32
lora_target_linear: true
sequence_len: 2048
micro_batch_size: 2
gradient_accumulation_steps: 4
optimizer: paged_adamw_8bit
bf16: true
gradient_checkpointing: true
flash_attention: true
"""

_HSDP_TP = """\
base_model: meta-llama/Llama-3.1-8B
dp_shard_size: 4
dp_replicate_size: 2
tensor_parallel_size: 2
fsdp_version: 2
fsdp_config:
  reshard_after_forward: true
sequence_len: 2048
micro_batch_size: 1
bf16: true
"""

_LIGER = """\
base_model: Qwen/Qwen2.5-7B
plugins:
  - axolotl.integrations.liger.LigerPlugin
liger_rope: true
liger_rms_norm: true
liger_glu_activation: true
liger_fused_linear_cross_entropy: true
sequence_len: 4096
micro_batch_size: 2
bf16: true
"""

Axolotl.EXAMPLES = [
    Example(title="the Liger plugin: its fused loss and the layer kernels its keys switch on",
            files={"liger.yaml": _LIGER},
            command="axolotl train liger.yaml",
            facts={"loss_kernel": ("liger", "liger.yaml:7"),
                   "liger": ({"layers": ["rms_norm", "rope", "swiglu"]}, "liger.yaml:7")}),
    Example(title="HSDP with tensor parallelism: the layout's degrees give the world size",
            files={"hsdp_tp.yaml": _HSDP_TP},
            command="axolotl train hsdp_tp.yaml",
            facts={"fsdp": ("hybrid_shard", "hsdp_tp.yaml:3"), "tp": (2, "hsdp_tp.yaml:4"),
                   "world_size": (16, "hsdp_tp.yaml:2", "derived"),
                   "param_dtype": ("bf16", "hsdp_tp.yaml:10", "derived"),
                   "activation_checkpointing": ("none", "hsdp_tp.yaml:1", "default"),
                   "zero_stage": (0, "hsdp_tp.yaml:1", "default")}),
    Example(title="QLoRA recipe run by the axolotl CLI",
            files={"qlora.yml": _QLORA},
            command="axolotl train qlora.yml",
            facts={"model": ("NousResearch/Llama-2-7b-hf", "qlora.yml:1"),
                   "param_dtype": ("int4", "qlora.yml:2"),
                   "lora": ({"r": 16, "alpha": 32, "targets": ["all-linear"], "base_bits": 4}, "qlora.yml:3"),
                   "seq_len": (2048, "qlora.yml:7"),
                   "micro_batch": (2, "qlora.yml:8"),
                   "grad_accum": (4, "qlora.yml:9"),
                   "optimizer": ("paged_adamw_8bit", "qlora.yml:10"),
                   "mixed_precision": ("bf16", "qlora.yml:11"),
                   "activation_checkpointing": ("full", "qlora.yml:12"),
                   "attention": ("flash", "qlora.yml:13")}),
]

_DPO = """\
base_model: Qwen/Qwen2.5-0.5B
rl: dpo
sequence_len: 2048
micro_batch_size: 2
bf16: true
"""

Axolotl.EXAMPLES += [
    Example(title="`rl: dpo` without an adapter: the reference model loaded again, and each "
                  "pair's chosen and rejected in one forward",
            files={"dpo.yml": _DPO},
            command="axolotl train dpo.yml",
            facts={"reference_copies": (1, "dpo.yml:2", "default"),
                   "sequences_per_sample": (2, "dpo.yml:2", "default"),
                   "micro_batch": (2, "dpo.yml:4")}),
]
