"""PyTorch Lightning and Fabric: `Trainer(...)` / `Fabric(...)` in a script, the LightningCLI
YAML (`python main.py fit --config cfg.yaml --trainer.devices 4`), and the Fabric launcher
(`lightning run model` / `fabric run`).

`precision` spells both the autocast and the weights' dtype (`bf16-mixed`: autocast with
fp32 weights; `bf16-true`: bf16 weights, no autocast); `strategy` names the sharding
(`fsdp`, `deepspeed_stage_3_offload`, `ddp`, or a `FSDPStrategy` / `DeepSpeedStrategy`
class with its arguments); `devices`, `num_nodes`, `accumulate_grad_batches`.
"""

from __future__ import annotations

import re
from typing import Any, Optional

from preflight.lang.python import Evaluator, Obj, V
from preflight.facts import spellings
from preflight.frameworks import (NO_MATCH, Call, ConfigOut, Example, Framework, answers, flag_int,
                                  get_path, is_int, read_overrides)
from preflight.plan import Fact, Invocation, Origin


def strategy_facts(s: str) -> list[tuple[str, Any]]:
    """A strategy name → its facts: `deepspeed_stage_3_offload` → ZeRO 3 with parameters
    offloaded; `fsdp` → FULL_SHARD; `ddp*` → no sharding."""
    s = s.strip().lower()
    out: list[tuple[str, Any]] = []
    if s.startswith("deepspeed"):
        m = re.search(r"stage_(\d)", s)
        if m:
            out.append(("zero_stage", int(m.group(1))))
        if "offload" in s:
            out.append(("offload", "optimizer+params" if s.endswith("offload") and "3" in s else "optimizer"))
        out.append(("fsdp", None))
    elif s.startswith("fsdp"):
        out.append(("fsdp", "full_shard"))
    elif s.startswith("ddp") or s in ("auto", "single_device"):
        out.append(("fsdp", None))
    return out


def _strategy(o: ConfigOut, s: Any, p: tuple) -> None:
    if isinstance(s, str):
        for fact, v in strategy_facts(s):
            o.put(fact, v, p, f"strategy: {s}")
    elif isinstance(s, dict) and isinstance(s.get("class_path"), str):
        cls = s["class_path"].rsplit(".", 1)[-1]
        args = s.get("init_args") if isinstance(s.get("init_args"), dict) else {}
        if cls == "FSDPStrategy":
            st = args.get("sharding_strategy")
            v = spellings.fsdp_strategy(st) if st is not None else "full_shard"
            if v:
                o.put("fsdp", v, p + (("init_args", "sharding_strategy") if st is not None else ("class_path",)),
                      f"FSDPStrategy sharding_strategy={st or 'FULL_SHARD (default)'}")
            if args.get("cpu_offload") is True:
                o.put("offload", "optimizer+params", p + ("init_args", "cpu_offload"))
            if args.get("activation_checkpointing_policy") or args.get("activation_checkpointing"):
                o.put("activation_checkpointing", "full", p + ("init_args",))
        elif cls == "DeepSpeedStrategy":
            st = args.get("stage", 2)
            if is_int(st):
                o.put("zero_stage", st, p + (("init_args", "stage") if "stage" in args else ("class_path",)),
                      "" if "stage" in args else "DeepSpeedStrategy default stage 2")
            if args.get("offload_parameters") is True:
                o.put("offload", "optimizer+params", p + ("init_args", "offload_parameters"))
            elif args.get("offload_optimizer") is True:
                o.put("offload", "optimizer", p + ("init_args", "offload_optimizer"))
            o.put("fsdp", None, p + ("class_path",), "DeepSpeedStrategy: ZeRO, not FSDP")
        elif cls.startswith("DDP"):
            o.put("fsdp", None, p + ("class_path",), f"{cls}: no sharding")


def read_trainer(t: dict, o: ConfigOut, p: tuple) -> None:
    """The keyword arguments of a Lightning `Trainer` / `Fabric` (a YAML section or flags)."""
    prec = t.get("precision")
    if prec is not None:
        mp = spellings.precision(prec)
        if mp:
            o.put("mixed_precision", mp[0], p + ("precision",), f"precision: {prec}")
            if mp[1]:
                o.put("param_dtype", mp[1], p + ("precision",), f"precision: {prec}")
    dev = t.get("devices")
    if is_int(dev) and dev > 0:
        o.put("gpus_per_node", dev, p + ("devices",))
    elif isinstance(dev, list):
        o.put("gpus_per_node", len(dev), p + ("devices",), f"devices: {dev}")
    elif dev is not None and str(dev) in ("auto", "-1"):
        o.unknown("gpus_per_node", p + ("devices",), f"devices: {dev} uses every visible GPU")
    if is_int(t.get("num_nodes")):
        o.put("nodes", t["num_nodes"], p + ("num_nodes",))
    if is_int(t.get("accumulate_grad_batches")):
        o.put("grad_accum", t["accumulate_grad_batches"], p + ("accumulate_grad_batches",))
    if "strategy" in t:
        _strategy(o, t["strategy"], p + ("strategy",))


#: the keys of a LightningModule's / DataModule's init arguments that name the checkpoint
#: and the sequence length (the knob lexicon's spellings)
_MODEL_KEYS = ("model_name_or_path", "pretrained_model_name_or_path", "model_name", "model_id",
               "base_model", "checkpoint")
_SEQ_KEYS = ("max_seq_length", "max_seq_len", "seq_len", "seq_length", "block_size",
             "max_length", "context_length", "sequence_length")


def _section_key(cfg: dict, section: str, keys: tuple) -> tuple[Any, tuple]:
    """A key of `section` (or of its `init_args`) among `keys`: (value, its path)."""
    for k in keys:
        for p in ((section, "init_args", k), (section, k)):
            v = get_path(cfg, *p)
            if v is not None:
                return v, p
    return None, ()


def _batch(cfg: dict) -> tuple[Any, tuple]:
    for p in (("data", "init_args", "batch_size"), ("data", "batch_size"),
              ("data", "init_args", "micro_batch_size"), ("data", "micro_batch_size")):
        v = get_path(cfg, *p)
        if v is not None:
            return v, p
    return None, ()


#: LightningCLI's command-line overrides of the YAML
FLAGS = {
    "trainer.devices": ("gpus_per_node", lambda s: flag_int(s) if (flag_int(s) or 0) > 0 else None),
    "trainer.num_nodes": ("nodes", flag_int),
    "trainer.accumulate_grad_batches": ("grad_accum", flag_int),
    "trainer.precision": ("mixed_precision", lambda s: (spellings.precision(s) or (None,))[0]),
    "data.batch_size": ("micro_batch", flag_int),
    "data.init_args.batch_size": ("micro_batch", flag_int),
    **{f"model.{a}{k}": ("model", lambda s: s or None) for k in _MODEL_KEYS
       for a in ("", "init_args.")},
    **{f"data.{a}{k}": ("seq_len", flag_int) for k in _SEQ_KEYS for a in ("", "init_args.")},
}


class Lightning(Framework):
    name = "lightning"
    title = "PyTorch Lightning / Fabric"
    programs = ("lightning", "fabric")
    FLAGS = FLAGS
    reads = (
        "`Trainer(strategy=, precision=, devices=, num_nodes=, accumulate_grad_batches=)` and "
        "`Fabric(...)` in a script; `FSDPStrategy(sharding_strategy=, cpu_offload=, "
        "activation_checkpointing_policy=)`, `DeepSpeedStrategy(stage=, offload_*=)`",
        "LightningCLI YAML (`trainer:` section, `strategy` as a name or `class_path` / "
        "`init_args`, `data.batch_size` / `data.init_args.batch_size`, the checkpoint the "
        "`model:` init arguments name (`model_name_or_path`, `model_name`, …), the data's "
        "`max_seq_length` / `seq_len` / `block_size`) and its `--trainer.devices 4`-style "
        "overrides",
        "`lightning run model` / `fabric run` flags: `--devices`, `--num-nodes`, "
        "`--precision`, `--strategy`",
    )
    not_read = (
        "`devices='auto'` / `-1` (every visible GPU: unknown until a GPU count is given)",
        "the model built in `LightningModule.configure_model` when its size depends on "
        "`model.init_args` the CLI fills",
    )

    def reads_flags(self, flags: dict[str, Any], script: str) -> bool:
        return any(k.startswith(("trainer.", "data.", "model.")) for k in flags)

    def claims(self, cfg: dict, path: str) -> bool:
        t = cfg.get("trainer")
        return isinstance(t, dict) and any(k in t for k in ("precision", "devices", "strategy", "accelerator",
                                                          "num_nodes", "accumulate_grad_batches",
                                                          "max_epochs", "max_steps"))

    def read_config(self, cfg: dict, o: ConfigOut) -> None:
        t = cfg.get("trainer")
        if isinstance(t, dict):
            read_trainer(t, o, ("trainer",))
        bs, p = _batch(cfg)
        if is_int(bs):
            o.put("micro_batch", bs, p)
        # the CLI passes `model:` and `data:` as the classes' init arguments: the checkpoint
        # the LightningModule loads, the sequence length the DataModule cuts to
        name, p = _section_key(cfg, "model", _MODEL_KEYS)
        if isinstance(name, str) and name.strip():
            o.put("model", name, p)
            o.model_refs.append({"kind": "hub", "name": name, "source": o.src(p)})
        sl, p = _section_key(cfg, "data", _SEQ_KEYS)
        if is_int(sl):
            o.put("seq_len", sl, p)

    # lightning run model [flags] script.py [args] / fabric run [model] [flags] script.py
    def launch(self, prog: str, rest: list[str], line: Any, cwd: str = "") -> Optional[Invocation]:
        words = list(rest)
        if words[:1] == ["run"]:
            words = words[1:]
        elif prog == "lightning":
            return None
        if words[:1] == ["model"]:
            words = words[1:]
        i = 0
        flags: list[str] = []
        while i < len(words) and words[i].startswith("-"):
            flags.append(words[i])
            if "=" not in words[i] and i + 1 < len(words) and not words[i + 1].startswith("-") and \
                    not words[i + 1].endswith(".py"):
                flags.append(words[i + 1])
                i += 1
            i += 1
        if i >= len(words):
            return None
        facts = line.facts + read_overrides(lambda d, o: read_trainer(d, o, ()), flags, line.source,
                                            line.origin, dashes=True)
        if not any(f.replace("-", "_").startswith("--num_nodes") for f in flags):
            facts.append(("nodes", Fact(value=1, origin=Origin.DEFAULT, source=line.source,
                                        reason=f"`{prog} run` without --num-nodes runs on one node")))
        script, args = words[i], words[i + 1:]
        return Invocation(script=script, args=args, source=line.source, facts=facts,
                          configs=line.configs + [a for a in args if a.lower().endswith((".yaml", ".yml"))][:1])


_CLI_YAML = """\
trainer:
  accelerator: gpu
  devices: 4
  num_nodes: 2
  precision: bf16-mixed
  accumulate_grad_batches: 8
  strategy:
    class_path: lightning.pytorch.strategies.FSDPStrategy
    init_args:
      sharding_strategy: SHARD_GRAD_OP
data:
  class_path: mypkg.data.TextData
  init_args:
    batch_size: 6
"""
_CLI_MAIN = """\
from lightning.pytorch.cli import LightningCLI

if __name__ == "__main__":
    LightningCLI()
"""
_SCRIPT = """\
import lightning as L
import torch
from transformers import AutoModelForCausalLM


class LitModel(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.model = AutoModelForCausalLM.from_pretrained("EleutherAI/pythia-410m")

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-4)


trainer = L.Trainer(accelerator="cuda", devices=8, num_nodes=1, precision="16-mixed",
                    strategy="deepspeed_stage_2", accumulate_grad_batches=4)
"""
_FABRIC = """\
import lightning as L
import torch
from transformers import AutoModelForCausalLM

fabric = L.Fabric()
fabric.launch()
model = AutoModelForCausalLM.from_pretrained("gpt2-medium")
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
model, optimizer = fabric.setup(model, optimizer)
"""

_CLI_MODULE = """\
import lightning as L
import torch
from lightning.pytorch.cli import LightningCLI
from transformers import AutoModelForCausalLM


class LitLM(L.LightningModule):
    def __init__(self, model_name: str = "gpt2"):
        super().__init__()
        self.model = AutoModelForCausalLM.from_pretrained(model_name)

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-4)


if __name__ == "__main__":
    LightningCLI(LitLM)
"""
_CLI_MODEL_YAML = """\
trainer:
  devices: 4
model:
  model_name: gpt2-medium
data:
  init_args:
    batch_size: 2
    max_seq_length: 1024
"""

ADAPTER = Lightning()
Lightning.EXAMPLES = [
    Example(title="LightningCLI: the checkpoint the `model:` init arguments name, not the "
                  "LightningModule's default (the size of that one)",
            files={"main.py": _CLI_MODULE, "config.yaml": _CLI_MODEL_YAML},
            command="python main.py fit --config config.yaml",
            facts={"model": ("gpt2-medium", "config.yaml:4"),
                   "params": (354_823_168, "config.yaml:4", "catalog"),
                   "seq_len": (1024, "config.yaml:8"), "micro_batch": (2, "config.yaml:7")}),
    Example(title="LightningCLI: --model.model_name over the YAML's",
            files={"main.py": _CLI_MODULE, "config.yaml": _CLI_MODEL_YAML},
            command="python main.py fit --config config.yaml --model.model_name gpt2-large",
            facts={"model": ("gpt2-large", "<command>:1", "cli"),
                   "params": (774_030_080, "<command>:1", "catalog")}),
    Example(title="LightningCLI YAML with an FSDPStrategy class and a --trainer.devices override",
            files={"main.py": _CLI_MAIN, "config.yaml": _CLI_YAML},
            command="python main.py fit --config config.yaml --trainer.devices 8",
            facts={"gpus_per_node": (8, "<command>:1", "cli"), "nodes": (2, "config.yaml:4"),
                   "mixed_precision": ("bf16", "config.yaml:5"), "grad_accum": (8, "config.yaml:6"),
                   "fsdp": ("shard_grad_op", "config.yaml:10"), "micro_batch": (6, "config.yaml:14")}),
    Example(title="Trainer keywords in the script",
            files={"train.py": _SCRIPT},
            command="python train.py",
            facts={"gpus_per_node": (8, "train.py:15"), "nodes": (1, "train.py:15"),
                   "mixed_precision": ("fp16", "train.py:15"), "zero_stage": (2, "train.py:16"),
                   "grad_accum": (4, "train.py:16"), "model": ("EleutherAI/pythia-410m", "train.py:9")}),
    Example(title="Fabric launched by `lightning run model` with its flags",
            files={"fabric_train.py": _FABRIC},
            command="lightning run model --accelerator=cuda --devices=4 --precision=bf16-true "
                    "--strategy=fsdp fabric_train.py",
            facts={"gpus_per_node": (4, "<command>:1", "cli"), "nodes": (1, "<command>:1", "default"),
                   "param_dtype": ("bf16", "<command>:1", "cli"),
                   "fsdp": ("full_shard", "<command>:1", "cli"),
                   "model": ("gpt2-medium", "fabric_train.py:7")}),
]


# --------------------------------------------------------------------------- in a script
# `pats` is the script's fact collector, `ev` the evaluator (see `preflight.frameworks.Call`)


@answers("Trainer", "Fabric")
def trainer_call(pats: Any, ev: Evaluator, c: Call) -> Any:
    """Lightning's `Trainer(...)` / `Fabric(...)` (named from lightning, or with its keywords)."""
    name, qual, top, kwargs, node = c.name, c.qual, c.top, c.kwargs, c.node
    if name in ("Trainer", "Fabric") and (top in ("lightning", "pytorch_lightning", "L", "pl")
                                         or "lightning" in qual or
                                         any(k in kwargs for k in ("precision", "devices",
                                                                   "accumulate_grad_batches",
                                                                   "strategy", "num_nodes"))):
        pats.seen_training_api = True
        trainer_settings(pats, ev, kwargs, node)
        return None
    return NO_MATCH


@answers("DeepSpeedStrategy", "FSDPStrategy", "DDPStrategy", "ModelParallelStrategy")
def strategy_call(pats: Any, ev: Evaluator, c: Call) -> Any:
    """A strategy object (`FSDPStrategy(...)`, `DeepSpeedStrategy(...)`, …) given to a
    Trainer: its facts now, the object for the Trainer's `strategy=`."""
    name, qual, args, kwargs, node, line, col = c.name, c.qual, c.args, c.kwargs, c.node, c.line, c.col
    if name in ("DeepSpeedStrategy", "FSDPStrategy", "DDPStrategy", "ModelParallelStrategy"):
        strategy_obj(pats, name, kwargs, node)
        return V(Obj(qual, args, kwargs, line, col), "derived", line, col)
    return NO_MATCH


def trainer_settings(pats: Any, ev: Evaluator, kwargs: dict, node: Any) -> None:
    """The keywords of a Lightning `Trainer` / `Fabric`: precision, accumulation, nodes,
    devices, a strategy named by its string."""
    p = kwargs.get("precision")
    if p is not None:
        pats.saw_precision = True
        if p.known:
            mp = spellings.precision(p.value)
            if mp:
                pats.emit("mixed_precision", p, value=mp[0])
                if mp[1]:
                    pats.emit("param_dtype", p, value=mp[1])
        else:
            pats.emit("mixed_precision", p)
    ga = kwargs.get("accumulate_grad_batches")
    if ga is not None:
        pats.emit("grad_accum", ga)
    nn = kwargs.get("num_nodes")
    if nn is not None and (not nn.known or isinstance(nn.value, int)):
        pats.emit("nodes", nn)
    dv = kwargs.get("devices")
    if dv is not None and dv.known and isinstance(dv.value, int) and dv.value > 0:
        pats.emit("gpus_per_node", dv)
    s = kwargs.get("strategy")
    if s is not None and s.known:
        if isinstance(s.value, str):
            sv = s.value
            if sv.startswith("deepspeed"):
                m = re.search(r"stage_(\d)", sv)
                if m:
                    pats.emit("zero_stage", s, value=int(m.group(1)))
                if "offload" in sv:
                    pats.emit("offload", s, value="optimizer+params" if sv.endswith(
                        "offload") and "3" in sv else "optimizer")
            elif sv.startswith("fsdp"):
                pats.emit("fsdp", s, value="full_shard")
            elif sv.startswith("ddp"):
                pats.emit("fsdp", s, value=None, tier="hint")


def strategy_obj(pats: Any, name: str, kwargs: dict, node: Any) -> None:
    """The facts of a `DeepSpeedStrategy(...)` / `FSDPStrategy(...)` object's keywords."""
    line, col = node.lineno, node.col_offset + 1
    if name == "DeepSpeedStrategy":
        st = kwargs.get("stage")
        pats.emit("zero_stage", st if st is not None else
                  V(2, "default", line, col, "DeepSpeedStrategy default stage 2"))
        oo, op = kwargs.get("offload_optimizer"), kwargs.get("offload_parameters")
        if op is not None and op.known and op.value:
            pats.emit("offload", op, value="optimizer+params")
        elif oo is not None and oo.known and oo.value:
            pats.emit("offload", oo, value="optimizer")
    elif name == "FSDPStrategy":
        pats.fsdp_strategy(kwargs.get("sharding_strategy"), line, col,
                           "FSDPStrategy default FULL_SHARD")
        ac = kwargs.get("activation_checkpointing_policy") or kwargs.get("activation_checkpointing")
        if ac is not None and ac.known and ac.value:
            pats.emit("activation_checkpointing", ac, value="full")
        elif ac is not None and ac.known and ac.value is None:
            # `activation_checkpointing_policy=None`: the strategy checkpoints nothing (a
            # hint: a checkpointing call elsewhere in the script says more)
            pats.emit("activation_checkpointing", ac, value="none", tier="hint")
        off = kwargs.get("cpu_offload")
        if off is not None and off.known and off.value is True:
            pats.emit("offload", off, value="optimizer+params")
