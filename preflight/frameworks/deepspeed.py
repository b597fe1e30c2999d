"""DeepSpeed: the `deepspeed` launcher and its config, wherever it is written.

A DeepSpeed config is read from a file of any extension (`.json`, `.conf`, none) named by
`--deepspeed` / `--deepspeed_config` / `deepspeed_config_file`, a JSON written by a heredoc
in the launch script, a dict built in the Python script (passed to `TrainingArguments(
deepspeed=…)` or `deepspeed.initialize(config=…)`), or YAML. Keys: ZeRO stage, offload
devices, micro-batch, accumulation, `bf16` / `fp16` sections, optimizer type; `"auto"`
values are unknowns the Hugging Face Trainer fills from its own arguments. This adapter
claims a document last: formats that embed DeepSpeed keys (GPT-NeoX, accelerate) or have
look-alike keys (torchtune's `dtype`) are claimed first.
"""

from __future__ import annotations

import os
import re
from typing import Any, Optional

from preflight import safe_read
from preflight.extract.json_file import deepspeed_facts, is_deepspeed
from preflight.frameworks import ConfigOut, Example, Framework
from preflight.frameworks._common import LaunchLine, option_at, program_invocation
from preflight.lang.shell.values import MARK, as_int, readable, reason_of
from preflight.plan import Diagnostic, Fact, Invocation, Origin


def read_deepspeed(cfg: dict, o: ConfigOut, *, defaults: bool = True) -> None:
    """DeepSpeed facts of a config dict into `o` (`defaults=False`: only what the document
    states — for a file that is one of several forming the config)."""
    c = cfg
    if isinstance(c.get("fp16"), dict) and c["fp16"].get("enabled") is True and \
            str(c["fp16"].get("type", "")).lower() == "bfloat16":
        # GPT-NeoX's spelling of bf16: an fp16 section of type bfloat16
        c = dict(c, fp16={"enabled": False}, bf16={"enabled": True})
        o.pos.setdefault(("bf16", "enabled"), o.pos.get(("fp16", "type"), (1, 1)))
    facts, extras = deepspeed_facts(c, o.src, o.origin)
    if not defaults:
        facts = [(n, f) for n, f in facts if f.origin is not Origin.DEFAULT]
    o.facts.extend(facts)
    o.extras.update(extras)


_DEEPSPEED_VALUE = {"--num_gpus", "--num-gpus", "--num_nodes", "--num-nodes", "--hostfile", "-H",
                    "--include", "-i", "--exclude", "-e", "--master_port", "--master_addr",
                    "--launcher", "--launcher_args", "--node_rank", "--min_elastic_nodes",
                    "--max_elastic_nodes", "--ssh_port", "--venv_script", "--comment", "--account"}


def read_hostfile(path: str) -> Optional[list[tuple[str, Optional[int]]]]:
    try:
        text = safe_read.read_text(path, 1 << 20, truncate=True)
    except OSError:
        return None
    hosts = []
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        m = re.search(r"slots\s*=\s*(\d+)", line)
        hosts.append((line.split()[0], int(m.group(1)) if m else None))
    return hosts


def parse_deepspeed(rest: list[str], ln: LaunchLine, cwd: str, diags: list) -> Invocation:
    """A `deepspeed` launcher line after the program's name; `cwd` is where a hostfile
    is looked for, a missing one is reported in `diags`."""
    i = 0
    module = False
    hostfile: Optional[str] = None
    include: Optional[str] = None
    while i < len(rest) and rest[i].startswith("-"):
        k, v, j = option_at(rest, i)
        if k in ("--module",):
            module = True
            i = j
            continue
        if v is None and k in _DEEPSPEED_VALUE:
            v, j = (rest[j] if j < len(rest) else None), j + 1
        key = k.lstrip("-").replace("-", "_")
        if key == "num_gpus":
            ln.fact("gpus_per_node", v, as_int, k)
        elif key == "num_nodes":
            ln.fact("nodes", v, as_int, k)
        elif key in ("hostfile", "H"):
            hostfile = v
        elif key in ("include", "i"):
            include = v
        i = j
    if include and include not in ln.unknown:
        groups = [g for g in include.split("@") if g]
        slots = [len(g.split(":", 1)[1].split(",")) if ":" in g else None for g in groups]
        ln.facts.append(("nodes", Fact(value=len(groups), origin=ln.origin, source=ln.source,
                                       reason=f"--include {include}")))
        if slots and all(s is not None for s in slots) and len(set(slots)) == 1:
            ln.facts.append(("gpus_per_node", Fact(value=slots[0], origin=ln.origin,
                                                   source=ln.source, reason=f"--include {include}")))
    elif hostfile and hostfile not in ln.unknown and MARK in hostfile:
        ln.facts.append(("nodes", Fact.unknown(
            f"hostfile {readable(hostfile)!r}: {reason_of(hostfile) or 'set at run time'}",
            source=ln.source)))
    elif hostfile and hostfile not in ln.unknown:
        hp = hostfile if os.path.isabs(hostfile) else os.path.join(cwd or ".", hostfile)
        hosts = read_hostfile(hp)
        if hosts is None:
            diags.append(Diagnostic.at(
                "PF006", f"hostfile {hostfile!r} does not exist; node and GPU counts unknown",
                ln.source, name="missing-file", severity="warning",
                fix="commit the hostfile or pass --num_nodes/--num_gpus"))
            ln.facts.append(("nodes", Fact.unknown(f"hostfile {hostfile} not found", source=ln.source)))
        elif hosts:
            ln.facts.append(("nodes", Fact(value=len(hosts), origin=ln.origin, source=ln.source,
                                           reason=f"{len(hosts)} host(s) in {hostfile}")))
            slots = {s for _, s in hosts}
            if len(slots) == 1 and None not in slots:
                ln.facts.append(("gpus_per_node", Fact(value=slots.pop(), origin=ln.origin,
                                                       source=ln.source, reason=f"slots= in {hostfile}")))
    else:
        if not any(n == "gpus_per_node" for n, _ in ln.facts):
            ln.facts.append(("gpus_per_node", Fact.unknown(
                "deepspeed without --num_gpus/--include uses every visible GPU", source=ln.source)))
        if not any(n == "nodes" for n, _ in ln.facts):
            ln.facts.append(("nodes", Fact(value=1, origin=Origin.DEFAULT, source=ln.source,
                                           reason="deepspeed without a hostfile runs on this node")))
    return program_invocation(rest, i, ln, module)


class DeepSpeed(Framework):
    name = "deepspeed"
    title = "DeepSpeed"
    programs = ("deepspeed",)
    reads = (
        "config files of any extension named by `--deepspeed`, `--deepspeed_config`, "
        "`deepspeed_config_file`, a recipe's `deepspeed:` key; JSON written by a heredoc "
        "(`cat > ds.json <<EOF`) in the launch script",
        "dicts built in Python: `TrainingArguments(deepspeed=dict)`, "
        "`deepspeed.initialize(config=…)`, `ds_config = {…}`",
        "`zero_optimization.stage`, `offload_optimizer` / `offload_param` devices, "
        "`train_micro_batch_size_per_gpu`, `gradient_accumulation_steps`, `train_batch_size`, "
        "`bf16` / `fp16`, `optimizer.type`; `\"auto\"` → filled from the Trainer's flags",
        "`zero_optimization` buffer settings: `reduce_bucket_size`, `allgather_bucket_size`, "
        "`stage3_prefetch_bucket_size`, `stage3_max_live_parameters`, `contiguous_gradients`, "
        "`overlap_comm`, `sub_group_size`",
        "`deepspeed` launcher: `--num_gpus`, `--num_nodes`, `--include`, `--hostfile` slots, "
        "`--module`",
    )
    not_read = (
        "`pipeline` / `tensor_parallel` sections of DeepSpeed-Megatron configs",
    )

    def claims(self, cfg: dict, path: str) -> bool:
        return is_deepspeed(cfg)

    def read_config(self, cfg: dict, o: ConfigOut) -> None:
        read_deepspeed(cfg, o)

    def launch(self, prog: str, rest: list[str], line: Any, cwd: str = "") -> Optional[Invocation]:
        return parse_deepspeed(rest, line, cwd, [])


_DS = """\
{
  "train_micro_batch_size_per_gpu": 4,
  "gradient_accumulation_steps": 2,
  "bf16": {"enabled": true},
  "zero_optimization": {
    "stage": 3,
    "offload_optimizer": {"device": "cpu"}
  }
}
"""
_SCRIPT = """\
import argparse
import deepspeed
import torch
from transformers import AutoModelForCausalLM

parser = argparse.ArgumentParser()
parser.add_argument("--local_rank", type=int, default=-1)
parser = deepspeed.add_config_arguments(parser)
args = parser.parse_args()
model = AutoModelForCausalLM.from_pretrained("gpt2-large")
engine, optimizer, _, _ = deepspeed.initialize(args=args, model=model,
                                               model_parameters=model.parameters())
"""
_HEREDOC = """\
#!/bin/bash
cat > ds_config.json <<EOF
{
  "train_micro_batch_size_per_gpu": 2,
  "gradient_accumulation_steps": 8,
  "fp16": {"enabled": true},
  "zero_optimization": {"stage": 2}
}
EOF
deepspeed --num_gpus 8 train.py --deepspeed --deepspeed_config ds_config.json
"""
_PYDICT = """\
import deepspeed
import torch
from transformers import AutoModelForCausalLM

ds_config = {
    "train_micro_batch_size_per_gpu": 8,
    "gradient_accumulation_steps": 1,
    "bf16": {"enabled": True},
    "zero_optimization": {"stage": 2},
}
model = AutoModelForCausalLM.from_pretrained("gpt2-medium")
engine, optimizer, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(),
                                               config=ds_config)
"""

ADAPTER = DeepSpeed()
DeepSpeed.EXAMPLES = [
    Example(title="a config with a .conf extension named by --deepspeed_config",
            files={"ds.conf": _DS, "train.py": _SCRIPT},
            command="deepspeed --num_gpus 4 train.py --deepspeed --deepspeed_config ds.conf",
            facts={"micro_batch": (4, "ds.conf:2"), "grad_accum": (2, "ds.conf:3"),
                   "mixed_precision": ("bf16", "ds.conf:4"), "zero_stage": (3, "ds.conf:6"),
                   "offload": ("optimizer", "ds.conf:7"), "gpus_per_node": (4, "<command>:1", "cli"),
                   "model": ("gpt2-large", "train.py:10")}),
    Example(title="a config without an extension",
            files={"ds_zero3": _DS, "train.py": _SCRIPT},
            command="deepspeed --num_gpus 4 train.py --deepspeed_config ds_zero3",
            facts={"zero_stage": (3, "ds_zero3:6"), "micro_batch": (4, "ds_zero3:2")}),
    Example(title="a config written by a heredoc in the launch script",
            files={"run.sh": _HEREDOC, "train.py": _SCRIPT},
            paths=["run.sh"],
            facts={"micro_batch": (2, "run.sh:4"), "grad_accum": (8, "run.sh:5"),
                   "mixed_precision": ("fp16", "run.sh:6"), "zero_stage": (2, "run.sh:7"),
                   "gpus_per_node": (8, "run.sh:10")}),
    Example(title="a dict in the script passed to deepspeed.initialize(config=...)",
            files={"train.py": _PYDICT},
            command="deepspeed --num_gpus 2 train.py",
            facts={"micro_batch": (8, "train.py:6"), "zero_stage": (2, "train.py:9"),
                   "mixed_precision": ("bf16", "train.py:8")}),
]
