"""accelerate: `accelerate launch` and its config YAML (`accelerate config`).

The YAML sets processes, machines, mixed precision and the distributed type: FSDP (its
sharding strategy, FSDP2 `fsdp_reshard_after_forward`, parameter offload, activation
checkpointing) or DeepSpeed (ZeRO stage, offload devices, a `deepspeed_config_file`). Flags
of `accelerate launch` (`--num_processes`, `--mixed_precision`, …) are documented overrides
of the file.
"""

from __future__ import annotations

from typing import Any

from preflight.facts import spellings
from preflight.frameworks import (NO_MATCH, UNKNOWN, Call, ConfigOut, Example, Framework,
                                  answers, is_int, truthy)
from preflight.frameworks._common import LaunchLine, option_at, program_invocation
from preflight.lang.python import Evaluator, Obj, V, unk
from preflight.lang.shell.values import as_int
from preflight.plan import Fact, Invocation, Origin


def _accelerate(cfg: dict, o: ConfigOut) -> None:
    dt = str(cfg.get("distributed_type", "")).upper()
    if is_int(cfg.get("num_processes")):
        o.put("world_size", cfg["num_processes"], ("num_processes",))
    if is_int(cfg.get("num_machines")):
        o.put("nodes", cfg["num_machines"], ("num_machines",))
    mp = cfg.get("mixed_precision")
    if isinstance(mp, str) or mp is False:
        v = spellings.mixed_precision(mp if mp is not False else "no")
        if v:
            o.put("mixed_precision", v, ("mixed_precision",), f"mixed_precision: {mp}")
    if dt == "FSDP":
        fc = cfg.get("fsdp_config") if isinstance(cfg.get("fsdp_config"), dict) else {}
        strat = fc.get("fsdp_sharding_strategy")
        if strat is not None and spellings.fsdp_strategy(strat):
            o.put("fsdp", spellings.fsdp_strategy(strat), ("fsdp_config", "fsdp_sharding_strategy"))
        elif fc.get("fsdp_version") == 2 or "fsdp_reshard_after_forward" in fc:
            r = fc.get("fsdp_reshard_after_forward", True)
            o.put("fsdp", "full_shard" if r is not False else "shard_grad_op",
                  ("fsdp_config", "fsdp_reshard_after_forward") if "fsdp_reshard_after_forward" in fc else ("distributed_type",),
                  f"FSDP2 reshard_after_forward: {r}")
        else:
            o.put("fsdp", "full_shard", ("distributed_type",), "distributed_type: FSDP (default FULL_SHARD)")
        if "fsdp_offload_params" in fc:
            o.put("offload", "optimizer+params" if truthy(fc["fsdp_offload_params"]) else "none",
                  ("fsdp_config", "fsdp_offload_params"))
        if "fsdp_activation_checkpointing" in fc:
            o.put("activation_checkpointing", "full" if truthy(fc["fsdp_activation_checkpointing"]) else "none",
                  ("fsdp_config", "fsdp_activation_checkpointing"))
        o.put("zero_stage", 0, ("distributed_type",), "distributed_type: FSDP (no ZeRO)", Origin.DEFAULT)
        if mp in ("bf16", "fp16"):
            o.put("param_dtype", "fp32", ("mixed_precision",),
                  "FSDP mixed precision keeps fp32 parameters", Origin.DEFAULT)
    elif dt == "DEEPSPEED":
        dc = cfg.get("deepspeed_config") if isinstance(cfg.get("deepspeed_config"), dict) else {}
        o.put("fsdp", None, ("distributed_type",), "distributed_type: DEEPSPEED")
        if isinstance(dc.get("deepspeed_config_file"), str):
            o.configs.append(dc["deepspeed_config_file"])
        if is_int(dc.get("zero_stage")):
            o.put("zero_stage", dc["zero_stage"], ("deepspeed_config", "zero_stage"))
        od = str(dc.get("offload_optimizer_device", "none")).lower()
        pd = str(dc.get("offload_param_device", "none")).lower()
        if "offload_param_device" in dc or "offload_optimizer_device" in dc:
            val = "optimizer+params" if pd in ("cpu", "nvme") else ("optimizer" if od in ("cpu", "nvme") else "none")
            key = "offload_param_device" if pd in ("cpu", "nvme") else "offload_optimizer_device"
            o.put("offload", val, ("deepspeed_config", key if key in dc else "offload_param_device"))
        if is_int(dc.get("gradient_accumulation_steps")):
            o.put("grad_accum", dc["gradient_accumulation_steps"], ("deepspeed_config", "gradient_accumulation_steps"))
        # DeepSpeed's bf16 / fp16 engine casts the module to the job's precision (fp32 master
        # copies sit in the optimizer): assembly derives the weights' dtype once the precision
        # is settled (a --mixed_precision flag overrides the file)
        o.extras["deepspeed_engine"] = True
    elif dt in ("MULTI_GPU", "NO", "MULTI_CPU"):
        o.put("fsdp", None, ("distributed_type",), f"distributed_type: {dt}")
        o.put("zero_stage", 0, ("distributed_type",), f"distributed_type: {dt}", Origin.DEFAULT)
    if dt == "NO" and not is_int(cfg.get("num_processes")):
        o.put("world_size", 1, ("distributed_type",), "distributed_type: NO (one process)")
    o.extras["accelerate"] = True


#: `accelerate launch` options that take no value
_ACCEL_FLAGS = {"--multi_gpu", "--use_deepspeed", "--use_fsdp", "--use_megatron_lm", "--use_xpu",
                "--cpu", "--mps", "--no_python", "--same_network", "--debug", "-q", "--quiet",
                "--tpu", "--tpu_use_cluster", "--tpu_use_sudo", "--downcast_bf16",
                "--enable_cpu_affinity"}


def parse_accelerate(rest: list[str], ln: LaunchLine) -> Invocation:
    """An `accelerate launch` line after `launch` (or after `python -m accelerate.commands.launch`)."""
    i = 0
    module = False
    use_ds = use_fsdp = False
    while i < len(rest) and rest[i].startswith("-"):
        k, v, j = option_at(rest, i)
        if k in ("-m", "--module"):
            module = True
            i = j
            continue
        if v is None and k not in _ACCEL_FLAGS:
            nxt = rest[j] if j < len(rest) else None
            if nxt is not None and not nxt.startswith("-"):
                v, j = nxt, j + 1
        key = k.lstrip("-").replace("-", "_")
        if key == "num_processes":
            ln.fact("world_size", v, as_int, k)
        elif key == "num_machines":
            ln.fact("nodes", v, as_int, k)
        elif key == "mixed_precision":
            ln.fact("mixed_precision", v, spellings.mixed_precision, k)
        elif key in ("config_file", "deepspeed_config_file") and v:
            ln.configs.append(v)
        elif key == "use_deepspeed":
            use_ds = True
        elif key == "use_fsdp":
            use_fsdp = True
        elif key == "zero_stage":
            ln.fact("zero_stage", v, as_int, k)
        elif key == "gradient_accumulation_steps":
            ln.fact("grad_accum", v, as_int, k)
        elif key == "fsdp_sharding_strategy":
            ln.fact("fsdp", v, spellings.fsdp_strategy, k)
        elif key == "fsdp_offload_params" and v and v.lower() == "true":
            ln.facts.append(("offload", Fact(value="optimizer+params", origin=ln.origin,
                                             source=ln.source, reason=f"{k} {v}")))
        elif key == "fsdp_activation_checkpointing" and v:
            ln.facts.append(("activation_checkpointing", Fact(
                value="full" if v.lower() == "true" else "none", origin=ln.origin,
                source=ln.source, reason=f"{k} {v}")))
        elif key == "multi_gpu":
            pass
        i = j
    if not ln.configs and not any(n == "world_size" for n, _ in ln.facts):
        # no --num_processes and no --config_file: accelerate takes the count from the
        # default config of the machine that runs it, which the repository does not hold
        ln.facts.append(("world_size", Fact.unknown(
            "accelerate launch without --num_processes or --config_file: the process count "
            "comes from the default config of the machine that runs it (`accelerate config`, "
            "~/.cache/huggingface/accelerate/default_config.yaml)"
            + (", else one process per visible GPU (--multi_gpu)" if "--multi_gpu" in rest[:i]
               else ", else one process"), source=ln.source)))
    if use_fsdp and not any(n == "fsdp" for n, _ in ln.facts):
        ln.facts.append(("fsdp", Fact(value="full_shard", origin=ln.origin, source=ln.source,
                                      reason="--use_fsdp (accelerate's default strategy FULL_SHARD)")))
    if use_ds:
        ln.facts.append(("fsdp", Fact(value=None, origin=ln.origin, source=ln.source,
                                      reason="--use_deepspeed")))
    return program_invocation(rest, i, ln, module)


class Accelerate(Framework):
    name = "accelerate"
    title = "accelerate"
    programs = ("accelerate",)
    reads = (
        "config YAML: `num_processes`, `num_machines`, `mixed_precision`, `distributed_type` "
        "(FSDP: `fsdp_sharding_strategy`, FSDP2 `fsdp_reshard_after_forward`, "
        "`fsdp_offload_params`, `fsdp_activation_checkpointing`; DeepSpeed: `zero_stage`, "
        "offload devices, `gradient_accumulation_steps`, `deepspeed_config_file`)",
        "`accelerate launch` flags over the file: `--num_processes`, `--num_machines`, "
        "`--mixed_precision`, `--use_fsdp`, `--fsdp_sharding_strategy`, `--fsdp_offload_params`, "
        "`--use_deepspeed`, `--zero_stage`, `--gradient_accumulation_steps`, `--config_file`, `-m`",
        "`Accelerator(mixed_precision=, gradient_accumulation_steps=)` in the script",
    )
    not_read = (
        "the default config (`~/.cache/huggingface/accelerate/default_config.yaml`) when no "
        "`--config_file` is given: world size then comes from the flags or is unknown, and the "
        "reason says so",
        "`fsdp_auto_wrap_policy`, `fsdp_state_dict_type`, Megatron-LM plugin settings",
    )

    def claims(self, cfg: dict, path: str) -> bool:
        return "compute_environment" in cfg or ("distributed_type" in cfg and any(
            k in cfg for k in ("num_processes", "mixed_precision", "fsdp_config", "deepspeed_config",
                               "machine_rank")))

    def read_config(self, cfg: dict, o: ConfigOut) -> None:
        _accelerate(cfg, o)


ADAPTER = Accelerate()
_FSDP_YAML = """\
compute_environment: LOCAL_MACHINE
distributed_type: FSDP
fsdp_config:
  fsdp_activation_checkpointing: true
  fsdp_offload_params: false
  fsdp_sharding_strategy: SHARD_GRAD_OP
machine_rank: 0
mixed_precision: bf16
num_machines: 1
num_processes: 8
"""
_DS_YAML = """\
compute_environment: LOCAL_MACHINE
distributed_type: DEEPSPEED
deepspeed_config:
  zero_stage: 3
  offload_optimizer_device: cpu
  offload_param_device: none
  gradient_accumulation_steps: 4
mixed_precision: bf16
num_machines: 1
num_processes: 8
"""
_SCRIPT = """\
from accelerate import Accelerator
from transformers import AutoModelForCausalLM
import torch

accelerator = Accelerator()
model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf")
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)
model, optimizer = accelerator.prepare(model, optimizer)
"""

Accelerate.EXAMPLES = [
    Example(title="FSDP config YAML; --num_processes on the line overrides the file",
            files={"fsdp.yaml": _FSDP_YAML, "train.py": _SCRIPT},
            command="accelerate launch --config_file fsdp.yaml --num_processes 4 train.py",
            facts={"fsdp": ("shard_grad_op", "fsdp.yaml:6"),
                   "activation_checkpointing": ("full", "fsdp.yaml:4"),
                   "offload": ("none", "fsdp.yaml:5"),
                   "mixed_precision": ("bf16", "fsdp.yaml:8"),
                   "nodes": (1, "fsdp.yaml:9"),
                   "world_size": (4, "<command>:1", "cli"),
                   "zero_stage": (0, "fsdp.yaml:2", "default"),
                   "model": ("meta-llama/Llama-2-7b-hf", "train.py:6"),
                   "optimizer": ("adamw", "train.py:7")}),
    Example(title="DeepSpeed plugin config; --mixed_precision on the line overrides the file",
            files={"ds.yaml": _DS_YAML, "train.py": _SCRIPT},
            command="accelerate launch --config_file ds.yaml --mixed_precision fp16 train.py",
            facts={"zero_stage": (3, "ds.yaml:4"),
                   "offload": ("optimizer", "ds.yaml:5"),
                   "grad_accum": (4, "ds.yaml:7"),
                   "fsdp": (None, "ds.yaml:2"),
                   "mixed_precision": ("fp16", "<command>:1", "cli"),
                   "param_dtype": ("fp16", "<command>:1", "derived"),
                   "world_size": (8, "ds.yaml:10")}),
    Example(title="no --num_processes and no --config_file: the count is the machine's default "
                  "config's, unknown",
            files={"train.py": _SCRIPT},
            command="accelerate launch --multi_gpu train.py",
            facts={"world_size": (UNKNOWN, "<command>:1"),
                   "model": ("meta-llama/Llama-2-7b-hf", "train.py:6")}),
]


# --------------------------------------------------------------------------- in a script
# `pats` is the script's fact collector, `ev` the evaluator (see `preflight.frameworks.Call`)


@answers("Accelerator")
def accelerator_call(pats: Any, ev: Evaluator, c: Call) -> Any:
    """`Accelerator(mixed_precision=, gradient_accumulation_steps=)` in a script."""
    name, kw = c.name, c.kw
    if name in ("Accelerator",):
        pats.seen_training_api = True
        mp = kw("mixed_precision")
        if mp is not None:
            pats.saw_precision = True
            if mp.known and isinstance(mp.value, str):
                val = spellings.mixed_precision(mp.value)
                if val:
                    pats.emit("mixed_precision", mp, value=val)
            elif not mp.known:
                pats.emit("mixed_precision", mp)
        ga = kw("gradient_accumulation_steps")
        if ga is not None and (not ga.known or ga.value is not None):
            pats.emit("grad_accum", ga)
        o = Obj(c.qual, c.args, c.kwargs, c.line, c.col)
        if mp is None or (mp.known and mp.value is None):
            # `Accelerator(mixed_precision=None)` takes `accelerate launch`'s setting (its
            # --mixed_precision, its config file): `accelerator.mixed_precision` is not the
            # argument the script passed
            o.attrs["mixed_precision"] = unk(
                "accelerator.mixed_precision: `accelerate launch`'s setting (--mixed_precision "
                "or its config) when the script passes none", c.line, c.col)
        return V(o, "derived", c.line, c.col, "Accelerator(...)")
    return NO_MATCH
