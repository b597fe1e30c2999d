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

import json
import os
import re
from typing import Any, Callable, Optional

from preflight import safe_read
from preflight.facts import spellings
from preflight.frameworks import NO_MATCH, Call, ConfigOut, Example, Framework, answers
from preflight.frameworks._common import EVERY_VISIBLE_GPU, LaunchLine, option_at, program_invocation
from preflight.lang.python import UNK, Evaluator, V, unk
from preflight.lang.shell.values import MARK, as_int, readable, reason_of
from preflight.plan import Diagnostic, Fact, Invocation, Origin, Source

# --- the config's keys: every fact at the line and column of its key. `"auto"` values
# (filled by the Hugging Face Trainer from its own arguments) become unknowns listed in
# `extras["auto"]`; assembly resolves them from the command-line flags of the job.
# `deepspeed_facts` works on any dict, so a DeepSpeed config built as a Python dict in a
# script is read the same way.

DS_KEYS = ("zero_optimization", "train_micro_batch_size_per_gpu", "train_batch_size",
           "gradient_accumulation_steps", "fp16", "bf16", "zero_allow_untested_optimizer",
           "steps_per_print", "gradient_clipping", "wall_clock_breakdown")

#: zero_optimization keys that size DeepSpeed's own buffers (preflight.physics.zero)
ZERO_BUFFER_KEYS = ("reduce_bucket_size", "allgather_bucket_size", "stage3_prefetch_bucket_size",
                    "stage3_max_live_parameters", "contiguous_gradients", "overlap_comm",
                    "sub_group_size")

#: DeepSpeed key path → the HF Trainer argument that fills it when it is "auto"
AUTO_FROM = {
    "micro_batch": "per_device_train_batch_size",
    "grad_accum": "gradient_accumulation_steps",
    "mixed_precision": "bf16/fp16",
    "train_batch_size": "per_device_train_batch_size × gradient_accumulation_steps × world size",
}


def is_deepspeed(cfg: Any) -> bool:
    return isinstance(cfg, dict) and any(k in cfg for k in DS_KEYS)


def deepspeed_facts(cfg: dict, where: Callable[[tuple], Optional[Source]],
                    origin: Origin = Origin.CONFIG) -> tuple[list[tuple[str, Fact]], dict[str, Any]]:
    """Facts of a DeepSpeed config dict; `where(path)` gives the Source of a key path."""
    facts: list[tuple[str, Fact]] = []
    extras: dict[str, Any] = {"auto": {}}

    def put(name: str, value: Any, path: tuple, why: str = "") -> None:
        src = where(path)
        if value == "auto":
            facts.append((name, Fact.unknown(
                f'"auto" in the DeepSpeed config ({".".join(map(str, path))}): filled in by the '
                "Hugging Face Trainer from its arguments", source=src)))
            extras["auto"][name] = src
            return
        facts.append((name, Fact(value=value, origin=origin, source=src,
                                 reason=why or f'{".".join(map(str, path))} = {json.dumps(value)}')))

    if is_deepspeed(cfg):
        facts.append(("fsdp", Fact(value=None, origin=origin, source=where(("zero_optimization",)) or where(()),
                                   reason="DeepSpeed shards with ZeRO, not FSDP")))
    zero = cfg.get("zero_optimization")
    if isinstance(zero, dict):
        st = zero.get("stage", 0)
        if st == "auto" or (isinstance(st, int) and not isinstance(st, bool)):
            put("zero_stage", st, ("zero_optimization", "stage") if "stage" in zero else ("zero_optimization",))
        elif _unknown_piece(st):
            facts.append(("zero_stage", Fact.unknown(f"zero_optimization.stage: {reason_of(st)}",
                                                     source=where(("zero_optimization", "stage")))))
        def dev(key: str) -> Optional[str]:
            o = zero.get(key)
            if isinstance(o, dict):
                d = o.get("device")
                return d if isinstance(d, str) and d.lower() in ("cpu", "nvme") else None
            return None
        opt_dev, par_dev = dev("offload_optimizer"), dev("offload_param")
        if zero.get("cpu_offload") is True:
            opt_dev = opt_dev or "cpu"
        if par_dev:
            put("offload", "optimizer+params", ("zero_optimization", "offload_param", "device"),
                f"offload_param.device = {par_dev}" + (f", offload_optimizer.device = {opt_dev}" if opt_dev else ""))
        elif opt_dev:
            path = ("zero_optimization", "offload_optimizer", "device") if "offload_optimizer" in zero \
                else ("zero_optimization", "cpu_offload")
            put("offload", "optimizer", path, f"offload_optimizer.device = {opt_dev}")
        else:
            put("offload", "none", ("zero_optimization",), "no offload_optimizer / offload_param device")
        buffers = {k: zero[k] for k in ZERO_BUFFER_KEYS if k in zero}
        if buffers:
            facts.append(("zero_buffers", Fact(
                value=buffers, origin=origin, source=where(("zero_optimization",)),
                reason="zero_optimization: " + ", ".join(
                    f"{k} = {json.dumps(v)}" for k, v in buffers.items()))))
    elif is_deepspeed(cfg):
        facts.append(("zero_stage", Fact(value=0, origin=Origin.DEFAULT, source=where(()),
                                         reason="no zero_optimization section: ZeRO disabled")))

    precision_seen = False
    for key in ("bf16", "fp16"):
        sec = cfg.get(key)
        if isinstance(sec, dict) and "enabled" in sec:
            en = sec["enabled"]
            if en == "auto":
                put("mixed_precision", "auto", (key, "enabled"))
                extras["auto_precision_key"] = key
                precision_seen = True
            elif _unknown_piece(en):
                facts.append(("mixed_precision", Fact.unknown(f"{key}.enabled: {reason_of(en)}",
                                                              source=where((key, "enabled")))))
                precision_seen = True
            elif en is True:
                put("mixed_precision", key, (key, "enabled"), f"{key}.enabled = true")
                put("param_dtype", key, (key, "enabled"),
                    f"DeepSpeed holds the model in {key} when {key}.enabled (fp32 master copy in the optimizer)")
                precision_seen = True
    if cfg.get("amp", {}).get("enabled") is True if isinstance(cfg.get("amp"), dict) else False:
        put("mixed_precision", "fp16", ("amp", "enabled"), "amp.enabled = true")
        precision_seen = True
    if not precision_seen and is_deepspeed(cfg):
        src = where(("bf16",)) or where(("fp16",)) or where(())
        facts.append(("mixed_precision", Fact(value="none", origin=Origin.DEFAULT, source=src,
                                              reason="neither bf16 nor fp16 enabled in the DeepSpeed config: fp32")))

    for key, name in (("train_micro_batch_size_per_gpu", "micro_batch"),
                      ("gradient_accumulation_steps", "grad_accum")):
        v = cfg.get(key)
        if v == "auto" or (isinstance(v, int) and not isinstance(v, bool)):
            put(name, v, (key,))
        elif _unknown_piece(v):
            facts.append((name, Fact.unknown(f"{key}: {reason_of(v)}", source=where((key,)))))
    if "gradient_accumulation_steps" not in cfg and "train_batch_size" not in cfg and is_deepspeed(cfg):
        facts.append(("grad_accum", Fact(value=1, origin=Origin.DEFAULT, source=where(()),
                                         reason="DeepSpeed default gradient_accumulation_steps = 1")))
    tb = cfg.get("train_batch_size")
    if tb == "auto":
        extras["auto"]["train_batch_size"] = where(("train_batch_size",))
    elif isinstance(tb, int) and not isinstance(tb, bool):
        extras["train_batch_size"] = {"value": tb, "source": where(("train_batch_size",))}

    opt = cfg.get("optimizer")
    if isinstance(opt, dict) and isinstance(opt.get("type"), str):
        t = opt["type"]
        name = spellings.deepspeed_optimizer(t, opt.get("params")) or "other"
        put("optimizer", name, ("optimizer", "type"), f'optimizer.type = "{t}"')

    ac = cfg.get("activation_checkpointing")
    if isinstance(ac, dict):
        extras["activation_checkpointing_config"] = where(("activation_checkpointing",))
    if not extras["auto"]:
        extras.pop("auto")
    return facts, extras


def _unknown_piece(v: Any) -> bool:
    """A value a launch script writes into the config that is known only at run time
    (`"stage": $ZERO_STAGE` in a here-document, the variable not set in the script)."""
    return isinstance(v, str) and reason_of(v) is not None


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
                f"deepspeed without --num_gpus/--include {EVERY_VISIBLE_GPU}", source=ln.source)))
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
        "`bf16` / `fp16`, `optimizer.type`; `\"auto\"` → filled from the Trainer's flags; "
        "without `gradient_accumulation_steps`, the steps DeepSpeed derives: "
        "`train_batch_size` / (micro-batch × data-parallel size)",
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

    def read_embedded(self, cfg: dict, o: ConfigOut) -> None:
        """The DeepSpeed keys another framework's config embeds (GPT-NeoX's): only what
        the document states, no DeepSpeed defaults — it may be one file of several."""
        read_deepspeed(cfg, o, defaults=False)

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
    Example(title="train_batch_size and the micro-batch without gradient_accumulation_steps: "
                  "DeepSpeed derives the steps (64 / (4 × 8 GPUs) = 2)",
            files={"ds.json": '{\n  "train_batch_size": 64,\n  "train_micro_batch_size_per_gpu": 4,'
                              '\n  "zero_optimization": {"stage": 2}\n}\n', "train.py": _SCRIPT},
            command="deepspeed --num_gpus 8 train.py --deepspeed --deepspeed_config ds.json",
            facts={"micro_batch": (4, "ds.json:3"), "grad_accum": (2, "ds.json:2", "derived")}),
]


# --------------------------------------------------------------------------- in a script
# `pats` is the script's fact collector, `ev` the evaluator (see `preflight.frameworks.Call`)


def deepspeed_dict(pats: Any, c: V) -> None:
    """A DeepSpeed config built as a dict in the script (given to `deepspeed.initialize` or
    `TrainingArguments(deepspeed=...)`): its facts at their keys."""
    d = c.value

    def get(*keys: str) -> Optional[V]:
        cur: Any = d
        for k in keys:
            if isinstance(cur, V):
                cur = cur.value
            if not isinstance(cur, dict) or k not in cur:
                return None
            cur = cur[k]
        return cur if isinstance(cur, V) else V(cur, c.origin, c.line, c.col)

    def fact(name: str, v: Optional[V], value: Any = UNK) -> None:
        if v is None:
            return
        if v.known and v.value == "auto":
            pats.emit(name, unk("DeepSpeed \"auto\": filled in by the HF Trainer at run time",
                                v.line, v.col))
        else:
            pats.emit(name, v, value=value)

    st = get("zero_optimization", "stage")
    fact("zero_stage", st)
    if get("zero_optimization") is not None and st is None:
        pats.emit("zero_stage", V(0, "default", c.line, c.col, "zero_optimization without "
                                                               "a stage (DeepSpeed default 0)"))
    if get("zero_optimization") is None:
        pats.emit("zero_stage", V(0, "default", c.line, c.col, "no zero_optimization section"))
    offp = get("zero_optimization", "offload_param", "device")
    offo = get("zero_optimization", "offload_optimizer", "device")
    if offp is not None and offp.known and offp.value in ("cpu", "nvme"):
        pats.emit("offload", offp, value="optimizer+params")
    elif offo is not None and offo.known and offo.value in ("cpu", "nvme"):
        pats.emit("offload", offo, value="optimizer")
    elif offo is not None or offp is not None:
        pats.emit("offload", (offo or offp), value="none")
    fact("micro_batch", get("train_micro_batch_size_per_gpu"))
    fact("grad_accum", get("gradient_accumulation_steps"))
    for sec, mp in (("bf16", "bf16"), ("fp16", "fp16")):
        e = get(sec, "enabled")
        if e is not None and e.known and e.value is True:
            pats.saw_precision = True
            kv = getattr(d, "key_v", {}).get(sec) if isinstance(d, dict) else None
            if kv is not None and kv.known:
                # the section's name is itself a value (a parameter default, a flag)
                why = f'{sec}.enabled = true, the key "{sec}" from {kv.reason or kv.origin}'
                pats.emit("mixed_precision", kv, value=mp, reason=why)
            else:
                pats.emit("mixed_precision", e, value=mp)
            pats.emit("param_dtype", kv if kv is not None and kv.known else e, value=mp, origin="derived",
                      reason=f"DeepSpeed {sec}: the model runs in {mp} (fp32 master "
                             "weights in the optimizer)")
        elif e is not None and not e.known:
            pats.emit("mixed_precision", e)
    t = get("optimizer", "type")
    if t is not None and t.known and isinstance(t.value, str):
        params = {k: v.value for k in ("adam_w_mode", "torch_adam")
                  if (v := get("optimizer", "params", k)) is not None and v.known}
        pats.emit("optimizer", t, value=spellings.deepspeed_optimizer(t.value, params) or "other")


@answers("initialize")
def initialize_call(pats: Any, ev: Evaluator, c: Call) -> Any:
    """`deepspeed.initialize(config=...)`: a dict read here, a file named for reading."""
    name, qual, kw, line, col = c.name, c.qual, c.kw, c.line, c.col
    if name == "initialize" and "deepspeed" in qual:
        pats.seen_training_api = True
        cfg = kw("config") or kw("config_params")
        if cfg is not None and cfg.known:
            if isinstance(cfg.value, dict):
                deepspeed_dict(pats, cfg)
            elif isinstance(cfg.value, str):
                ev.references.append(cfg.value)
        elif cfg is not None:
            pats.emit("zero_stage", unk(f"DeepSpeed config: {cfg.reason}", line, col))
        return None
    return NO_MATCH
