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

from typing import Any, Optional

from preflight.extract.json_file import deepspeed_facts, is_deepspeed
from preflight.frameworks import ConfigOut, Example, Framework
from preflight.plan import Invocation, Origin


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
        from preflight.extract.shell_file import _deepspeed
        return _deepspeed(rest, line, cwd, [])


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


# --------------------------------------------------------------------------- in a script
# `pats` is the script's fact collector, `ev` the evaluator (see `preflight.frameworks.Call`)

from preflight.extract.evaluator import UNK, Evaluator, V, unk  # noqa: E402
from preflight.facts import spellings  # noqa: E402
from preflight.frameworks import NO_MATCH, Call  # noqa: E402


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
