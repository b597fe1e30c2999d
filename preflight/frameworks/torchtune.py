"""torchtune: `tune run [torchrun flags] RECIPE --config CFG key=value …` and its recipe YAML.

A torchtune config names its builders with `_component_`: the model builder
(`torchtune.models.llama3_1.lora_llama3_1_8b`) gives the model and, for `lora_` / `qlora_`
builders, the adapter (`lora_rank`, `lora_alpha`, `lora_attn_modules`, `apply_lora_to_mlp`,
`apply_lora_to_output`; QLoRA quantises the base to NF4). The recipe trains in `dtype`
throughout (no fp32 master copy), `batch_size` per device, `gradient_accumulation_steps`,
`tokenizer.max_seq_len`, `enable_activation_checkpointing`; the distributed recipes shard
with FSDP2 (`fsdp_reshard_after_forward`, `fsdp_cpu_offload`, `tensor_parallel_dim`).
A torchtune YAML is claimed before DeepSpeed's reader: its `dtype` key is not a DeepSpeed
precision section.
"""

from __future__ import annotations

import re
from typing import Any, Optional

from preflight.facts import spellings
from preflight.frameworks import (UNKNOWN, ConfigOut, Example, Framework, get, get_path,
                                  is_int, read_overrides)
from preflight.models import catalog
from preflight.plan import Fact, Invocation, Origin

#: torchtune model families (the builder's module) → the catalogue's spelling of the family
_FAMILY = {"llama2": "llama-2", "llama3": "llama-3", "llama3_1": "llama-3.1",
           "llama3_2": "llama-3.2", "llama3_3": "llama-3.3", "code_llama2": "codellama",
           "qwen2": "qwen2", "qwen2_5": "qwen2.5", "qwen3": "qwen3", "mistral": "mistral",
           "mixtral": "mixtral", "gemma": "gemma", "gemma2": "gemma2", "phi3": "phi-3",
           "phi4": "phi-4", "llama4": "llama-4"}
#: builders whose checkpoint the hub names without the builder's size (`phi4_14b` builds
#: microsoft/phi-4)
_HUB_NAMES = {"phi-4-14b": "phi-4"}
#: torchtune's LoRA layer names → the Hugging Face module names the LoRA counter knows
_LORA_NAMES = {"q_proj": "q_proj", "k_proj": "k_proj", "v_proj": "v_proj", "output_proj": "o_proj"}
_MLP = ["gate_proj", "up_proj", "down_proj"]


def catalog_name(builder: str) -> Optional[str]:
    """`torchtune.models.llama3_1.lora_llama3_1_8b` → `llama-3.1-8b` (None when the builder
    is not a family-and-size builder)."""
    parts = builder.split(".")
    fn = re.sub(r"^(q?lora_)", "", parts[-1])
    fam = parts[-2] if len(parts) >= 2 and parts[-2] != "models" else None
    if fam is None or not fn.startswith(fam + "_"):
        m = re.match(r"([a-z0-9_]+?)_(\d+(?:_\d+)?[bm]|mini|medium)(?:_instruct)?$", fn)
        if not m:
            return None
        fam, size = m.group(1), m.group(2)
    else:
        size = fn[len(fam) + 1:]
    size = re.sub(r"_instruct$|_base$", "", size)
    # `0_5b` → 0.5b (a decimal), `scout_17b_16e` → scout-17b-16e (words of the name)
    size = re.sub(r"(?<=\d)_(?=\d)", ".", size).replace("_", "-")
    name = f"{_FAMILY.get(fam, fam)}-{size}"
    return _HUB_NAMES.get(name, name)


def lookup_builder(builder: str) -> Optional[tuple]:
    """The catalogue entry a family-and-size builder builds. A builder builds the
    architecture that a base and an instruct checkpoint share; a family published only as
    instruct (Llama 3.3) has that shape under its instruct name."""
    name = catalog_name(builder)
    if name is None:
        return None
    return catalog.lookup_entry(name) or catalog.lookup_entry(name + "-instruct")


def _builder(cfg: dict) -> Optional[str]:
    m = cfg.get("model")
    c = m.get("_component_") if isinstance(m, dict) else None
    return c if isinstance(c, str) else None


class Torchtune(Framework):
    name = "torchtune"
    title = "torchtune"
    programs = ("tune",)
    reads = (
        "`tune run [torchrun flags] RECIPE --config CFG key=value …`: nodes, GPUs per node, "
        "the recipe YAML, `key=value` overrides (over the file's values)",
        "`model._component_` family-and-size builders → model (catalogue name: `llama3_1_8b` → "
        "Llama-3.1-8B, `llama3_3_70b` → Llama-3.3-70B-Instruct, `phi4_14b` → phi-4, "
        "`llama4_scout_17b_16e` → Llama-4-Scout-17B-16E); `lora_*` / `qlora_*` builders → "
        "LoRA rank, alpha, `lora_attn_modules`, `apply_lora_to_mlp` / `_output`, NF4 base",
        "`batch_size`, `gradient_accumulation_steps`, `tokenizer.max_seq_len`, `dtype`, "
        "`enable_activation_checkpointing`, `optimizer._component_`",
        "distributed recipes: FSDP2 (`fsdp_reshard_after_forward`), `fsdp_cpu_offload`, "
        "`tensor_parallel_dim`; `*_single_device` recipes: one GPU",
        "built-in configs named without a file (`--config llama3_1/8B_lora`) where the "
        "checkout ships them (`recipes/configs/llama3_1/8B_lora.yaml`)",
    )
    not_read = (
        "built-in configs of the installed package when the repository does not hold them: "
        "copy one with `tune cp` to have it read",
        "`enable_activation_offloading`, `optimizer_in_bwd`, `compile` (no memory effect counted)",
        "custom model builders of the repository's own (`my_pkg.models.tiny`), reward and "
        "vision builders (`llama2_reward_7b`, `llama3_2_vision_11b`): named, size unknown",
    )

    def claims(self, cfg: dict, path: str) -> bool:
        return _builder(cfg) is not None and any(
            k in cfg for k in ("batch_size", "tokenizer", "checkpointer", "optimizer", "epochs", "dtype"))

    def read_config(self, cfg: dict, o: ConfigOut) -> None:
        b = _builder(cfg)
        model = cfg.get("model") if isinstance(cfg.get("model"), dict) else {}
        if b:
            hit = lookup_builder(b)
            o.put("model", hit[0] if hit else b, ("model", "_component_"), f"model builder {b}")
            if hit:
                o.model_refs.append({"kind": "hub", "name": hit[0], "source": o.src(("model", "_component_"))})
            else:
                # a builder of torchtune's own (a reward head, a vision model) or of the
                # repository's: named, not sized
                o.unknown("params", ("model", "_component_"),
                          f"the model builder {b} is not one of the family-and-size builders "
                          f"preflight maps to a checkpoint of its catalogue")
            fn = b.rsplit(".", 1)[-1]
            if fn.startswith(("lora_", "qlora_")):
                bits = 4 if fn.startswith("qlora_") or model.get("quantize_base") is True else 16
                attn = model.get("lora_attn_modules") or []
                targets = [_LORA_NAMES.get(str(t), str(t)) for t in attn] if isinstance(attn, list) else []
                if model.get("apply_lora_to_mlp") is True:
                    targets += _MLP
                if model.get("apply_lora_to_output") is True:
                    targets.append("lm_head")
                o.lora(model.get("lora_rank"), model.get("lora_alpha"), targets, bits,
                       ("model", "lora_rank") if "lora_rank" in model else ("model", "_component_"),
                       f"{fn}: rank {model.get('lora_rank')}", dropout=model.get("lora_dropout"))
                if bits == 4:
                    o.quant(4, ("model", "_component_"), f"{fn}: NF4 base weights")
            elif not o.partial:
                o.put("lora", None, ("model", "_component_"), f"{fn}: full fine-tune (no LoRA builder)")
        for key, fact in (("batch_size", "micro_batch"), ("gradient_accumulation_steps", "grad_accum")):
            if is_int(cfg.get(key)):
                o.put(fact, cfg[key], (key,))
        msl = get_path(cfg, "tokenizer", "max_seq_len")
        if is_int(msl):
            o.put("seq_len", msl, ("tokenizer", "max_seq_len"))
        elif "max_seq_len" in (cfg.get("tokenizer") or {}) and msl is None and not o.partial:
            o.unknown("seq_len", ("tokenizer", "max_seq_len"),
                      "tokenizer.max_seq_len: null — samples are as long as the dataset's longest")
        dt = cfg.get("dtype")
        quantized = any(n == "param_dtype" for n, _ in o.facts)
        if isinstance(dt, str) and spellings.dtype(dt) and not quantized:
            pd = spellings.dtype(dt)
            o.put("param_dtype", pd, ("dtype",), f"dtype: {dt} (weights, gradients and optimizer "
                                                 "states all in this dtype)")
            o.put("mixed_precision", "none", ("dtype",), f"dtype: {dt}: no autocast, no fp32 master copy")
        if "enable_activation_checkpointing" in cfg:
            o.put("activation_checkpointing",
                  "full" if cfg["enable_activation_checkpointing"] is True else "none",
                  ("enable_activation_checkpointing",))
        elif not o.partial and b:
            o.default("activation_checkpointing", "none", ("model", "_component_"),
                      "torchtune recipes: enable_activation_checkpointing defaults to False")
        opt = get_path(cfg, "optimizer", "_component_")
        if isinstance(opt, str):
            o.put("optimizer", spellings.optimizer_class(opt.rsplit(".", 1)[-1]) or "other", ("optimizer", "_component_"))
        dist = any(k in cfg for k in ("fsdp_cpu_offload", "fsdp_reshard_after_forward",
                                      "tensor_parallel_dim", "data_parallel_shard_dim"))
        if dist:
            r = cfg.get("fsdp_reshard_after_forward", True)
            if "fsdp_reshard_after_forward" in cfg:
                o.put("fsdp", "full_shard" if r is not False else "shard_grad_op", ("fsdp_reshard_after_forward",))
            else:
                o.default("fsdp", "full_shard", ("fsdp_cpu_offload",) if "fsdp_cpu_offload" in cfg
                          else ("tensor_parallel_dim",),
                          "torchtune distributed recipes: FSDP2, fsdp_reshard_after_forward defaults to True")
            if "fsdp_cpu_offload" in cfg:
                o.put("offload", "optimizer+params" if cfg["fsdp_cpu_offload"] is True else "none",
                      ("fsdp_cpu_offload",))
        if is_int(cfg.get("tensor_parallel_dim")):
            o.put("tp", cfg["tensor_parallel_dim"], ("tensor_parallel_dim",))
        if not o.partial and b:
            o.default("zero_stage", 0, ("model", "_component_"), "torchtune does not use DeepSpeed")
            o.default("attention", "sdpa", ("model", "_component_"),
                      "torchtune's attention calls scaled_dot_product_attention")

    # `tune run [torchrun options] RECIPE --config CFG [key=value …]`
    def launch(self, prog: str, rest: list[str], line: Any, cwd: str = "") -> Optional[Invocation]:
        if rest[:1] != ["run"]:
            return None
        words = rest[1:]
        torchrun_opts = any(w.startswith(("--nproc", "--nnodes")) for w in words[:_first_plain(words)])
        # `tune run` takes torchrun's options before the recipe: the torchrun adapter reads them
        inv = get("torchrun").launch("torchrun", words, line)
        recipe = inv.script
        args = list(inv.args)
        cfg: Optional[str] = None
        over: list[str] = []
        i = 0
        while i < len(args):
            a = args[i]
            if a in ("--config", "-c") and i + 1 < len(args):
                cfg = args[i + 1]
                i += 2
                continue
            if a.startswith("--config="):
                cfg = a.split("=", 1)[1]
            elif "=" in a and not a.startswith("-"):
                over.append(a)
            i += 1
        facts = [(n, f) for n, f in inv.facts if torchrun_opts or n not in ("nodes", "gpus_per_node")]
        if not torchrun_opts:
            why = "`tune run` without --nproc_per_node runs the recipe in one process"
            facts += [("nodes", Fact(value=1, origin=Origin.DEFAULT, source=line.source, reason=why)),
                      ("gpus_per_node", Fact(value=1, origin=Origin.DEFAULT, source=line.source, reason=why))]
        if recipe.endswith("_single_device"):
            facts.append(("fsdp", Fact(value=None, origin=line.origin, source=line.source,
                                       reason=f"{recipe}: one device, no FSDP")))
        elif recipe.endswith("_distributed"):
            # weaker than what the config says of its FSDP settings
            facts.append(("fsdp", Fact(value="full_shard", origin=Origin.ASSUMED, source=line.source,
                                       reason=f"{recipe}: torchtune's distributed recipes shard with "
                                              "FSDP2, resharding after forward by default")))
        if over:
            facts += read_overrides(self.read_config, over, line.source, line.origin)
        configs = [cfg] if cfg and cfg.lower().endswith((".yaml", ".yml")) else []
        if cfg and not configs:
            # a built-in config is read where the checkout holds it (torchtune itself or a fork:
            # `tune run` finds `llama3_1/8B_full` in the package's recipes/configs/)
            # — from the launcher's folder, a folder above it (a script in recipes/ run from
            # the checkout's top), or the folder preflight runs in
            import os
            bases = [cwd or "."]
            for _ in range(3):
                bases.append(os.path.join(bases[-1], os.pardir))
            for base in bases + [os.getcwd()]:
                shipped = os.path.join(base, "recipes", "configs", cfg + ".yaml")
                if os.path.isfile(shipped):
                    configs = [os.path.relpath(shipped)]
                    break
        if cfg and not configs:
            facts.append(("model", Fact.unknown(
                f"--config {cfg} is one of torchtune's built-in configs (not a file in the "
                "repository); copy it with `tune cp` to have it read", source=line.source)))
        return Invocation(script=configs[0] if configs else (cfg or recipe), args=args, source=line.source,
                          module=f"tune run {recipe}", facts=facts, configs=configs)


def _first_plain(words: list[str]) -> int:
    """Index of the first word that is neither an option nor an option's value (the recipe)."""
    i = 0
    while i < len(words) and words[i].startswith("-"):
        i += 1 if "=" in words[i] else 2
    return i


_LORA_YAML = """\
model:
  _component_: torchtune.models.llama3_1.lora_llama3_1_8b
  lora_attn_modules: ['q_proj', 'v_proj', 'output_proj']
  apply_lora_to_mlp: True
  apply_lora_to_output: False
  lora_rank: 8
  lora_alpha: 16

tokenizer:
  _component_: torchtune.models.llama3.llama3_tokenizer
  path: /tmp/Meta-Llama-3.1-8B-Instruct/original/tokenizer.model
  max_seq_len: 2048

dataset:
  _component_: torchtune.datasets.alpaca_cleaned_dataset
batch_size: 2
optimizer:
  _component_: torch.optim.AdamW
  fused: True
  lr: 3e-4
gradient_accumulation_steps: 8
enable_activation_checkpointing: True
dtype: bf16
fsdp_cpu_offload: False
"""

_FULL_YAML = """\
model:
  _component_: torchtune.models.llama3_1.llama3_1_8b
tokenizer:
  _component_: torchtune.models.llama3.llama3_tokenizer
  path: /tmp/tok.model
  max_seq_len: null
batch_size: 4
epochs: 1
optimizer:
  _component_: bitsandbytes.optim.PagedAdamW8bit
  lr: 1e-5
gradient_accumulation_steps: 1
dtype: bf16
bf16: true
"""

_QLORA_YAML = """\
model:
  _component_: torchtune.models.qwen2_5.qlora_qwen2_5_7b_instruct
  lora_attn_modules: ['q_proj', 'k_proj', 'v_proj']
  lora_rank: 16
  lora_alpha: 32
batch_size: 1
dtype: bf16
"""

ADAPTER = Torchtune()
Torchtune.EXAMPLES = [
    Example(title="LoRA, distributed recipe with torchrun flags and a key=value override",
            files={"configs/8B_lora.yaml": _LORA_YAML},
            command="tune run --nnodes 1 --nproc_per_node 4 lora_finetune_distributed "
                    "--config configs/8B_lora.yaml batch_size=4",
            facts={"model": ("meta-llama/Llama-3.1-8B", "configs/8B_lora.yaml:2"),
                   "lora": ({"r": 8, "alpha": 16, "targets": ["q_proj", "v_proj", "o_proj", "gate_proj",
                                                               "up_proj", "down_proj"], "base_bits": 16},
                            "configs/8B_lora.yaml:6"),
                   "micro_batch": (4, "<command>:1", "cli"),
                   "grad_accum": (8, "configs/8B_lora.yaml:21"),
                   "seq_len": (2048, "configs/8B_lora.yaml:12"),
                   "param_dtype": ("bf16", "configs/8B_lora.yaml:23"),
                   "mixed_precision": ("none", "configs/8B_lora.yaml:23"),
                   "activation_checkpointing": ("full", "configs/8B_lora.yaml:22"),
                   "optimizer": ("adamw", "configs/8B_lora.yaml:18"),
                   "fsdp": ("full_shard", "configs/8B_lora.yaml:24", "default"),
                   "offload": ("none", "configs/8B_lora.yaml:24"),
                   "gpus_per_node": (4, "<command>:1", "cli"),
                   "nodes": (1, "<command>:1", "cli")}),
    Example(title="full fine-tune on one device: a YAML with `dtype` and `bf16` keys is not DeepSpeed's",
            files={"8B_full_single_device.yaml": _FULL_YAML},
            command="tune run full_finetune_single_device --config 8B_full_single_device.yaml",
            facts={"model": ("meta-llama/Llama-3.1-8B", "8B_full_single_device.yaml:2"),
                   "lora": (False, "8B_full_single_device.yaml:2"),
                   "micro_batch": (4, "8B_full_single_device.yaml:7"),
                   "seq_len": (UNKNOWN, "8B_full_single_device.yaml:6"),
                   "optimizer": ("paged_adamw_8bit", "8B_full_single_device.yaml:10"),
                   "param_dtype": ("bf16", "8B_full_single_device.yaml:13"),
                   "zero_stage": (0, "8B_full_single_device.yaml:2", "default"),
                   "gpus_per_node": (1, "<command>:1", "default"),
                   "fsdp": (None, "<command>:1", "cli")}),
    Example(title="QLoRA builder: NF4 base weights",
            files={"qlora.yaml": _QLORA_YAML},
            command="tune run lora_finetune_single_device --config qlora.yaml",
            facts={"model": ("Qwen/Qwen2.5-7B", "qlora.yaml:2"),
                   "lora": ({"r": 16, "alpha": 32, "targets": ["q_proj", "k_proj", "v_proj"], "base_bits": 4},
                            "qlora.yaml:4"),
                   "param_dtype": ("int4", "qlora.yaml:2")}),
    Example(title="a built-in config named without a file, read where the checkout ships it "
                  "(recipes/configs/); a distributed recipe shards with FSDP2",
            files={"recipes/configs/llama3_1/8B_full.yaml": _FULL_YAML.replace("bf16: true\n", "")},
            command="tune run --nproc_per_node 8 full_finetune_distributed --config llama3_1/8B_full",
            facts={"model": ("meta-llama/Llama-3.1-8B", "recipes/configs/llama3_1/8B_full.yaml:2"),
                   "micro_batch": (4, "recipes/configs/llama3_1/8B_full.yaml:7"),
                   "param_dtype": ("bf16", "recipes/configs/llama3_1/8B_full.yaml:13"),
                   "fsdp": ("full_shard", "<command>:1", "assumed"),
                   "gpus_per_node": (8, "<command>:1", "cli")}),
    Example(title="a builder of a family published only as instruct (Llama 3.3) resolves to "
                  "that checkpoint's shape",
            files={"70B_full.yaml": _FULL_YAML.replace("llama3_1.llama3_1_8b",
                                                       "llama3_3.llama3_3_70b")},
            command="tune run --nproc_per_node 8 full_finetune_distributed --config 70B_full.yaml",
            facts={"model": ("meta-llama/Llama-3.3-70B-Instruct", "70B_full.yaml:2"),
                   "params": (70_553_706_496, "70B_full.yaml:2", "catalog")}),
    Example(title="builders whose hub name differs: phi4_14b is microsoft/phi-4, "
                  "llama4_scout_17b_16e is Llama 4 Scout",
            files={"phi4.yaml": _FULL_YAML.replace("llama3_1.llama3_1_8b", "phi4.phi4_14b"),
                   "scout.yaml": _FULL_YAML.replace("llama3_1.llama3_1_8b",
                                                    "llama4.llama4_scout_17b_16e")},
            command="tune run full_finetune_single_device --config phi4.yaml",
            facts={"model": ("microsoft/phi-4", "phi4.yaml:2")}),
    Example(title="a builder of a model the catalogue does not hold stays the builder's name, "
                  "its size unknown",
            files={"reward.yaml": _FULL_YAML.replace("llama3_1.llama3_1_8b",
                                                     "llama2.llama2_reward_7b")},
            command="tune run full_finetune_single_device --config reward.yaml",
            facts={"model": ("torchtune.models.llama2.llama2_reward_7b", "reward.yaml:2"),
                   "params": (UNKNOWN, "reward.yaml:2")}),
]
