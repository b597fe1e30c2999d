"""mmengine / mmcv (OpenMMLab toolkits: mmpretrain, mmdet, mmseg, mmpose …):
`python tools/train.py CONFIG [--amp] [--cfg-options a.b=1 …]`, `tools/dist_train.sh CONFIG 8`,
`mim train PACKAGE CONFIG --gpus 8`, and its Python config files (read by
`preflight.lang.pyconfig`: `_base_` inheritance merged, `{{_base_.x}}` substituted).

mmengine (2.x toolkits): `train_dataloader.batch_size` is the batch of one GPU;
`optim_wrapper` wraps the optimizer (`optimizer.type`), `type='AmpOptimWrapper'` autocasts
(`dtype`, float16 when unset) over fp32 weights, `accumulative_counts` accumulates.
mmcv 1.x: `data.samples_per_gpu`, `optimizer.type`, `fp16 = dict(...)` for fp16 autocast,
`optimizer_config.cumulative_iters` with the cumulative hook. A backbone's `with_cp=True`
checkpoints its blocks. `tools/train.py --amp` turns the wrapper into AmpOptimWrapper;
`--cfg-options key.sub=value` sets single keys.
"""

from __future__ import annotations

from typing import Any, Optional

from preflight.facts import spellings
from preflight.frameworks import (UNKNOWN, ConfigOut, Example, Framework, dotted_overrides, get,
                                  get_path, is_int)
from preflight.lang.pyconfig import opaque_reason
from preflight.plan import Invocation, Origin

#: top-level variables only an mmengine / mmcv config holds
_MARKERS = ("optim_wrapper", "train_dataloader", "train_cfg", "default_scope",
            "param_scheduler", "optimizer_config", "runner", "auto_scale_lr")

#: mmengine's `type` of the optimizer wrapper that autocasts
_AMP_WRAPPERS = ("AmpOptimWrapper", "ApexOptimWrapper")


def _why(cfg: dict, p: tuple) -> Optional[str]:
    return opaque_reason(get_path(cfg, *p))


#: a registry dict's `type` that loads a checkpoint by name, and the classes that load no
#: trained network (tokenizers, processors, configs)
_NOT_A_NETWORK = ("Tokenizer", "Processor", "FeatureExtractor", "Config")


def _parts(d: dict, p: tuple, depth: int = 0) -> list[tuple[tuple, dict]]:
    """The registry dicts (`dict(type=...)`) under `d`, with their key paths; a few levels
    deep, as the model dicts of the toolkits nest them."""
    out: list[tuple[tuple, dict]] = []
    if depth > 4:
        return out
    for k, v in list(d.items())[:200]:
        if isinstance(v, dict):
            if isinstance(v.get("type"), str):
                out.append((p + (k,), v))
            out += _parts(v, p + (k,), depth + 1)
    return out


def _hub_loads(m: dict) -> list[tuple[tuple, dict]]:
    """The networks a model dict loads by name: `llm=dict(type=AutoModelForCausalLM
    .from_pretrained, pretrained_model_name_or_path=...)`."""
    out = []
    for p, d in _parts(m, ("model",)):
        t = d["type"]
        if not t.endswith(".from_pretrained"):
            continue
        cls = t.rsplit(".", 2)[-2] if t.count(".") >= 1 else ""
        if any(x in cls for x in _NOT_A_NETWORK):
            continue
        out.append((p, d))
    return out


def _adapters(m: dict) -> list[tuple[tuple, dict]]:
    """The LoRA adapters a model dict configures (`dict(type=LoraConfig, r=...)`)."""
    return [(p, d) for p, d in _parts(m, ("model",)) if d["type"].rsplit(".", 1)[-1] == "LoraConfig"]


def _quant_bits(d: dict) -> Optional[int]:
    return spellings.load_bits(d.get("quantization_config"))


def _load_dtype(d: dict) -> Optional[str]:
    """The weights' dtype a load fixes: its quantisation, else its `torch_dtype`."""
    bits = _quant_bits(d)
    if bits:
        return f"int{bits}"
    t = d.get("torch_dtype")
    return spellings.dtype(str(t).rsplit(".", 1)[-1]) if isinstance(t, str) else None


def _read_hub_parts(m: dict, loads: list[tuple[tuple, dict]], o: ConfigOut) -> None:
    """A model dict that loads its networks by name: one load is the model (its name, its
    weights' dtype, its adapter); several (a language model beside a vision encoder) are a
    composite no single checkpoint sizes — said unknown, with the parts."""
    names = [(p, d.get("pretrained_model_name_or_path")) for p, d in loads]
    adapters = _adapters(m)
    if len(loads) == 1 and isinstance(names[0][1], str):
        p, d = loads[0]
        o.hub_model(names[0][1], p + ("pretrained_model_name_or_path",),
                    why=f"{'.'.join(p)}: {d['type'].rsplit('.', 2)[-2]}.from_pretrained")
        dt = _load_dtype(d)
        if dt and dt.startswith("int"):
            o.quant(int(dt[3:]), p + ("quantization_config",), f"{'.'.join(p)}.quantization_config: "
                                                            f"{dt[3:]}-bit weights")
        elif dt:
            o.put("param_dtype", dt, p + ("torch_dtype",))
    elif loads:
        parts = ", ".join(f"{'.'.join(p[1:])}={n if isinstance(n, str) else '?'}" for p, n in names)
        o.unknown("model", ("model", "type"),
                  f"model type={m.get('type')} is built from several networks loaded by name "
                  f"({parts}): no single checkpoint is the model")
    if len(adapters) == 1:
        p, a = adapters[0]
        base = _quant_bits(loads[0][1]) if len(loads) == 1 else None
        o.lora(a.get("r"), a.get("lora_alpha"), a.get("target_modules"), base or 16, p,
               f"{'.'.join(p)}: LoraConfig r={a.get('r')}")
    elif adapters:
        shown = ", ".join(f"{'.'.join(p[1:])} r={a.get('r')}" for p, a in adapters)
        o.unknown("lora", adapters[0][0], f"several LoRA adapters ({shown}): no single "
                                          "adapter describes the job")


class MMEngine(Framework):
    name = "mmengine"
    title = "mmengine / mmcv"
    programs = ("mim",)
    reads = (
        "Python config files with `_base_` inheritance (dicts merged key by key, `_delete_=True` "
        "replacing), `{{_base_.x}}` and `_base_.x` references, `with read_base():` imports",
        "`train_dataloader.batch_size` (per GPU), `optim_wrapper` (`optimizer.type`, "
        "`AmpOptimWrapper` and its `dtype`, `accumulative_counts`), mmcv 1.x `data.samples_per_gpu`, "
        "`optimizer`, `fp16`, `optimizer_config.cumulative_iters`, a backbone's `with_cp`",
        "`tools/train.py CONFIG --amp --cfg-options a.b=1` and `mim train PKG CONFIG --gpus N`",
        "a model dict's networks loaded by name (`type=X.from_pretrained`): one is the model "
        "(its `quantization_config` / `torch_dtype`, its `LoraConfig` adapter); several (a "
        "language model beside a vision encoder) are a composite, said unknown; with one, "
        "`train_dataloader.dataset.max_length` is the sequence length",
        "FlexibleRunner `strategy`: `DeepSpeedStrategy` (its keys read as a DeepSpeed config), "
        "`FSDPStrategy` / an FSDP `model_wrapper_cfg` (`sharding_strategy`); else DDP",
    )
    not_read = ("the model's size: a registry type (`ImageClassifier`, `ResNet`) is built by the "
                "toolkit at run time; `model` is unknown, never the class name",
                "`auto_scale_lr`; ColossalAI strategies",
                "values computed by functions in the config (read as unknown)")

    def claims(self, cfg: dict, path: str) -> bool:
        if not path.endswith(".py"):
            return False            # its configs are Python; a YAML `runner:` is another's
        if any(k in cfg for k in _MARKERS):
            return True
        m, data = cfg.get("model"), cfg.get("data")
        return isinstance(m, dict) and "type" in m and isinstance(data, dict) and \
            "samples_per_gpu" in data

    def read_config(self, cfg: dict, o: ConfigOut) -> None:
        self._batch(cfg, o)
        self._optimizer(cfg, o)
        loads = _hub_loads(cfg.get("model")) if isinstance(cfg.get("model"), dict) else []
        self._precision(cfg, o, weights_set=any(_load_dtype(d) for _, d in loads))
        self._sharding(cfg, o)
        m = cfg.get("model")
        if isinstance(m, dict) and not o.partial and (loads or _adapters(m)):
            _read_hub_parts(m, loads, o)
            ml = get_path(cfg, "train_dataloader", "dataset", "max_length")
            if len(loads) == 1 and is_int(ml):
                # a language model's text dataset: the tokens of one sample, at most (with
                # a vision encoder beside it, its image tokens add to the sequence: not read)
                o.put("seq_len", ml, ("train_dataloader", "dataset", "max_length"),
                      f"train_dataloader.dataset.max_length = {ml}")
        elif isinstance(m, dict) and not o.partial:
            kind = m.get("type")
            bb = m.get("backbone") if isinstance(m.get("backbone"), dict) else {}
            what = f"{kind}" + (f" with backbone {bb.get('type')}" if bb.get("type") else "")
            o.unknown("model", ("model", "type"),
                      f"model type={what} is built from the toolkit's registry when the job runs; "
                      "its size is not read from the config")
            if bb.get("with_cp") is True:
                o.put("activation_checkpointing", "full", ("model", "backbone", "with_cp"))
            elif bb.get("with_cp") is False or ("backbone" in m and "with_cp" not in bb):
                o.default("activation_checkpointing", "none", ("model", "backbone"),
                          "the backbone's with_cp is off (the toolkits' default)")

    @staticmethod
    def _sharding(cfg: dict, o: ConfigOut) -> None:
        """FlexibleRunner strategies (`strategy = dict(type='DeepSpeedStrategy',
        zero_optimization=...)` — the DeepSpeed adapter reads the rest as a DeepSpeed config —
        or `'FSDPStrategy'`), and `model_wrapper_cfg` of an FSDP wrapper; else DDP."""
        st = cfg.get("strategy") if isinstance(cfg.get("strategy"), dict) else None
        kind = str(st.get("type", "")).rsplit(".", 1)[-1] if st else ""
        mw = cfg.get("model_wrapper_cfg") if isinstance(cfg.get("model_wrapper_cfg"), dict) else None
        mkind = str(mw.get("type", "")).rsplit(".", 1)[-1] if mw else ""
        if kind == "DeepSpeedStrategy":
            sub = ConfigOut(o.path, {}, origin=o.origin, partial=o.partial,
                            where=lambda p: o.src(("strategy",) + p))
            get("deepspeed").read_embedded({k: v for k, v in st.items() if k != "type"}, sub)
            o.facts.extend(sub.facts)
            o.extras["deepspeed"] = True
            if not any(n == "zero_stage" for n, _ in sub.facts) and not o.partial:
                o.default("zero_stage", 0, ("strategy",), "DeepSpeedStrategy without zero_optimization")
            return
        fsdp = (st, ("strategy", "model_wrapper")) if kind == "FSDPStrategy" else \
            (mw, ("model_wrapper_cfg",)) if "FullyShardedDataParallel" in mkind else (None, ())
        if fsdp[0] is not None:
            wrapper = get_path(cfg, *fsdp[1]) if kind == "FSDPStrategy" else mw
            raw = wrapper.get("sharding_strategy") if isinstance(wrapper, dict) else None
            val = spellings.fsdp_strategy(raw) if raw is not None else "full_shard"
            key = fsdp[1] + ("sharding_strategy",) if raw is not None else fsdp[1][:1]
            o.put("fsdp", val or "full_shard", key,
                  f"{kind or mkind}" + (f" sharding_strategy={raw}" if raw is not None
                                        else ": torch's FULL_SHARD by default"))
            return
        if not o.partial and not st and not mw:
            o.default("fsdp", None, ("optim_wrapper",) if "optim_wrapper" in cfg else (),
                      "mmengine wraps the model in DDP unless a strategy or model_wrapper_cfg "
                      "says otherwise")

    def _batch(self, cfg: dict, o: ConfigOut) -> None:
        for p in (("train_dataloader", "batch_size"), ("data", "samples_per_gpu")):
            v = get_path(cfg, *p)
            if is_int(v):
                o.put("micro_batch", v, p, f"{'.'.join(p)} = {v} (per GPU)")
                return
            if _why(cfg, p):
                o.unknown("micro_batch", p, f"{'.'.join(p)}: {_why(cfg, p)}")
                return

    def _optimizer(self, cfg: dict, o: ConfigOut) -> None:
        ow = cfg.get("optim_wrapper") if isinstance(cfg.get("optim_wrapper"), dict) else None
        p = ("optim_wrapper", "optimizer", "type") if ow is not None else ("optimizer", "type")
        t = get_path(cfg, *p)
        if isinstance(t, str):
            name = spellings.optimizer_class(t.rsplit(".", 1)[-1]) or spellings.optimizer_name(t)
            if name:
                o.put("optimizer", name, p, f"{'.'.join(p)} = {t!r}")
            else:
                o.put("optimizer", "other", p, f"{'.'.join(p)} = {t!r}: an optimizer preflight "
                                               "does not know the state of")
        acc = get_path(cfg, "optim_wrapper", "accumulative_counts") if ow is not None else \
            get_path(cfg, "optimizer_config", "cumulative_iters")
        ap = ("optim_wrapper", "accumulative_counts") if ow is not None else \
            ("optimizer_config", "cumulative_iters")
        if is_int(acc):
            o.put("grad_accum", acc, ap)
        elif ow is not None and not o.partial and "optimizer" in ow:
            o.default("grad_accum", 1, ("optim_wrapper",),
                      "optim_wrapper without accumulative_counts updates every iteration")

    def _precision(self, cfg: dict, o: ConfigOut, weights_set: bool = False) -> None:
        ow = cfg.get("optim_wrapper")
        if isinstance(ow, dict) and isinstance(ow.get("type", "OptimWrapper"), str):
            t = ow.get("type", "OptimWrapper").rsplit(".", 1)[-1]
            if t in _AMP_WRAPPERS:
                d = ow.get("dtype")
                mp = spellings.autocast_dtype(d) if d is not None else "fp16"
                why = f"optim_wrapper type={t}" + (f", dtype={d!r}" if d is not None
                                                   else " (autocast to float16 by default)")
                if mp:
                    o.put("mixed_precision", mp, ("optim_wrapper", "dtype") if d is not None
                          else ("optim_wrapper", "type"), why)
                    if not weights_set:     # else the load's dtype / quantisation says
                        o.put("param_dtype", "fp32", ("optim_wrapper", "type"),
                              f"{why}: the weights stay fp32", Origin.DEFAULT)
                return
            if not o.partial:
                # `tools/train.py --amp` turns this wrapper into AmpOptimWrapper: a default,
                # weaker than the command line
                o.default("mixed_precision", "none", ("optim_wrapper", "type"),
                          f"optim_wrapper type={t}: no autocast unless the launch gives --amp")
            return
        fp16 = cfg.get("fp16")
        if isinstance(fp16, dict):
            o.put("mixed_precision", "fp16", ("fp16",), "fp16 = dict(...): mmcv's fp16 hook")

    # -- the command line of the toolkit's train script, applied to its config
    def config_overrides(self, cfg: dict, args: list[str]) -> list[tuple[tuple, Any, str]]:
        """(key path, value, why) that `tools/train.py` arguments set in the config:
        `--amp`, `--cfg-options a.b=1 c=[1,2]` (several words after the flag)."""
        out: list[tuple[tuple, Any, str]] = []
        words: list[str] = []
        i = 0
        while i < len(args):
            a = args[i]
            if a in ("--cfg-options", "--cfg_options", "--options"):
                i += 1
                while i < len(args) and not args[i].startswith("--"):
                    words.append(args[i])
                    i += 1
                continue
            if a == "--amp" and isinstance(cfg.get("optim_wrapper"), dict):
                t = str(cfg["optim_wrapper"].get("type", "OptimWrapper")).rsplit(".", 1)[-1]
                if t not in _AMP_WRAPPERS:
                    out.append((("optim_wrapper", "type"), "AmpOptimWrapper",
                                "--amp on the command line: AmpOptimWrapper"))
            i += 1

        def flat(d: dict, p: tuple) -> None:
            for k, v in d.items():
                if isinstance(v, dict):
                    flat(v, p + (k,))
                else:
                    out.append((p + (k,), v, f"--cfg-options {'.'.join(p + (k,))}={v}"))
        flat(dotted_overrides(words), ())
        return out

    def launch(self, prog: str, rest: list[str], line: Any, cwd: str = "") -> Optional[Invocation]:
        """`mim train PACKAGE CONFIG [--gpus N] [--launcher pytorch] [...]`: the config is
        the job's entry (the toolkit's own train script is installed, not in the project)."""
        if rest[:1] != ["train"] or len(rest) < 3:
            return None
        cfg, args = rest[2], rest[3:]
        for j, a in enumerate(args):
            if a in ("--gpus", "-G") and j + 1 < len(args):
                line.fact("gpus_per_node", args[j + 1], _int, a)
        if not any(a in ("--gpus", "-G") for a in args):
            line.facts.append(("gpus_per_node", _default_one(line)))
        return Invocation(script=cfg, args=args, source=line.source, facts=line.facts,
                          configs=[cfg])


def _int(s: str) -> Optional[int]:
    try:
        return int(s)
    except (TypeError, ValueError):
        return None


def _default_one(line: Any) -> Any:
    from preflight.plan import Fact    # noqa: PLC0415 - here: only `mim train` lines need it
    return Fact(value=1, origin=Origin.DEFAULT, source=line.source,
                reason="mim train without --gpus runs one process")


_BASE_MODEL = """\
model = dict(
    type='ImageClassifier',
    backbone=dict(type='ResNet', depth=50, with_cp=False),
    head=dict(type='LinearClsHead', num_classes=1000, in_channels=2048),
)
"""
_BASE_SCHEDULE = """\
optim_wrapper = dict(optimizer=dict(type='SGD', lr=0.1, momentum=0.9, weight_decay=1e-4))
train_cfg = dict(by_epoch=True, max_epochs=100)
"""
_BASE_DATA = """\
train_dataloader = dict(batch_size=32, num_workers=5, dataset=dict(type='ImageNet'))
val_dataloader = dict(batch_size=256, num_workers=5)
"""
_CONFIG = """\
_base_ = [
    '../_base_/models/resnet50.py', '../_base_/datasets/imagenet.py',
    '../_base_/schedules/sgd.py',
]
model = dict(backbone=dict(with_cp=True))
train_dataloader = dict(batch_size=64)
optim_wrapper = dict(
    type='AmpOptimWrapper', dtype='bfloat16', accumulative_counts=2,
    optimizer=dict(_delete_=True, type='AdamW', lr=1e-3, weight_decay=0.05))
"""
_TRAIN = """\
import argparse
from mmengine.config import Config, DictAction
from mmengine.runner import Runner

parser = argparse.ArgumentParser()
parser.add_argument('config')
parser.add_argument('--amp', action='store_true')
parser.add_argument('--cfg-options', nargs='+', action=DictAction)
args = parser.parse_args()
cfg = Config.fromfile(args.config)
Runner.from_cfg(cfg).train()
"""
_DEEPSPEED = """\
_base_ = ['./_base_/models/resnet50.py', './_base_/datasets/imagenet.py']
runner_type = 'FlexibleRunner'
strategy = dict(
    type='DeepSpeedStrategy',
    bf16=dict(enabled=True),
    zero_optimization=dict(stage=3, overlap_comm=True),
)
optim_wrapper = dict(type='DeepSpeedOptimWrapper', optimizer=dict(type='AdamW', lr=1e-3))
"""
_MMCV1 = """\
_base_ = './base.py'
data = dict(samples_per_gpu=4, workers_per_gpu=2)
optimizer = dict(type='AdamW', lr=6e-5)
optimizer_config = dict(type='GradientCumulativeOptimizerHook', cumulative_iters=4)
fp16 = dict(loss_scale=512.0)
"""
_MMCV1_BASE = """\
model = dict(type='EncoderDecoder', backbone=dict(type='MixVisionTransformer'))
"""
_QLORA = """\
from mmengine.optim import AmpOptimWrapper
from peft import LoraConfig
from torch.optim import AdamW
from transformers import AutoModelForCausalLM, AutoTokenizer, BitsAndBytesConfig
from mypkg.model import Finetuner

base = 'org/chat-7b'
batch_size = 2
warmup_ratio = 0.03
save_total_limit = 2
tokenizer = dict(type=AutoTokenizer.from_pretrained, pretrained_model_name_or_path=base)
model = dict(
    type=Finetuner,
    llm=dict(type=AutoModelForCausalLM.from_pretrained, pretrained_model_name_or_path=base,
             quantization_config=dict(type=BitsAndBytesConfig, load_in_4bit=True)),
    lora=dict(type=LoraConfig, r=32, lora_alpha=64, target_modules=['q_proj', 'v_proj']))
train_dataloader = dict(batch_size=batch_size, dataset=dict(type='TextSet', max_length=1024))
optim_wrapper = dict(type=AmpOptimWrapper, optimizer=dict(type=AdamW, lr=2e-4),
                     accumulative_counts=8, dtype='float16')
"""
_COMPOSITE = """\
from transformers import AutoModelForCausalLM, CLIPVisionModel
from mypkg.model import VisionChat

model = dict(
    type=VisionChat,
    llm=dict(type=AutoModelForCausalLM.from_pretrained, pretrained_model_name_or_path='org/lm-7b',
             torch_dtype='torch.float16'),
    visual_encoder=dict(type=CLIPVisionModel.from_pretrained,
                        pretrained_model_name_or_path='org/vision-encoder'))
train_dataloader = dict(batch_size=16)
optim_wrapper = dict(type='AmpOptimWrapper', optimizer=dict(type='AdamW', lr=1e-3))
"""
_FILES = {"configs/_base_/models/resnet50.py": _BASE_MODEL,
          "configs/_base_/schedules/sgd.py": _BASE_SCHEDULE,
          "configs/_base_/datasets/imagenet.py": _BASE_DATA,
          "configs/resnet/r50_amp.py": _CONFIG, "tools/train.py": _TRAIN}

ADAPTER = MMEngine()
MMEngine.EXAMPLES = [
    Example(title="a config over three _base_ files: the batch per GPU, AdamW replacing the "
                  "base's SGD (_delete_), bf16 autocast, accumulation, checkpointed backbone",
            files=_FILES, command="python tools/train.py configs/resnet/r50_amp.py",
            facts={"micro_batch": (64, "configs/resnet/r50_amp.py:6", "config"),
                   "optimizer": ("adamw", "configs/resnet/r50_amp.py:9", "config"),
                   "mixed_precision": ("bf16", "configs/resnet/r50_amp.py:8", "config"),
                   "grad_accum": (2, "configs/resnet/r50_amp.py:8", "config"),
                   "activation_checkpointing": ("full", "configs/resnet/r50_amp.py:5"),
                   "model": (UNKNOWN, "configs/_base_/models/resnet50.py:2")}),
    Example(title="a base's keys are read at the base file's lines; --amp and --cfg-options "
                  "on the command line",
            files={**_FILES, "configs/resnet/r50.py": "_base_ = ['../_base_/models/resnet50.py', "
                   "'../_base_/datasets/imagenet.py', '../_base_/schedules/sgd.py']\n"},
            command="python tools/train.py configs/resnet/r50.py --amp "
                    "--cfg-options train_dataloader.batch_size=128",
            facts={"micro_batch": (128, "configs/_base_/datasets/imagenet.py:1", "cli"),
                   "optimizer": ("sgd", "configs/_base_/schedules/sgd.py:1", "config"),
                   "mixed_precision": ("fp16", "configs/_base_/schedules/sgd.py:1", "cli"),
                   "grad_accum": (1, "configs/_base_/schedules/sgd.py:1", "default")}),
    Example(title="no --amp: a plain OptimWrapper is no autocast, said as a default",
            files={**_FILES, "configs/resnet/r50.py": "_base_ = ['../_base_/models/resnet50.py', "
                   "'../_base_/datasets/imagenet.py', '../_base_/schedules/sgd.py']\n"},
            command="python tools/train.py configs/resnet/r50.py",
            facts={"micro_batch": (32, "configs/_base_/datasets/imagenet.py:1", "config"),
                   "mixed_precision": ("none", "configs/_base_/schedules/sgd.py:1", "default")}),
    Example(title="FlexibleRunner with DeepSpeedStrategy: ZeRO-3 and bf16 from the strategy's keys",
            files={"configs/_base_/models/resnet50.py": _BASE_MODEL,
                   "configs/_base_/datasets/imagenet.py": _BASE_DATA,
                   "configs/ds.py": _DEEPSPEED, "tools/train.py": _TRAIN},
            command="python tools/train.py configs/ds.py",
            facts={"zero_stage": (3, "configs/ds.py:6", "config"),
                   "mixed_precision": ("bf16", "configs/ds.py:5", "config"),
                   "optimizer": ("adamw", "configs/ds.py:8", "config")}),
    Example(title="mmcv 1.x: samples_per_gpu, the cumulative hook, fp16 = dict(...); "
                  "`mim train` on 8 GPUs",
            files={"configs/seg/base.py": _MMCV1_BASE, "configs/seg/segformer.py": _MMCV1},
            command="mim train mmseg configs/seg/segformer.py --gpus 8 --launcher pytorch",
            facts={"micro_batch": (4, "configs/seg/segformer.py:2"),
                   "optimizer": ("adamw", "configs/seg/segformer.py:3"),
                   "grad_accum": (4, "configs/seg/segformer.py:4"),
                   "mixed_precision": ("fp16", "configs/seg/segformer.py:5"),
                   "gpus_per_node": (8, "<command>:1", "cli")}),
    Example(title="a model dict that loads its network by name (`type=X.from_pretrained`) "
                  "in 4 bits with a LoRA adapter: the model, int4 weights, the adapter",
            files={"configs/qlora.py": _QLORA}, paths=["configs/qlora.py"],
            facts={"model": ("org/chat-7b", "configs/qlora.py:14", "config"),
                   "param_dtype": ("int4", "configs/qlora.py:15", "config"),
                   "lora": ({"r": 32, "alpha": 64, "targets": ["q_proj", "v_proj"], "base_bits": 4},
                            "configs/qlora.py:16", "config"),
                   "micro_batch": (2, "configs/qlora.py:17", "config"),
                   "seq_len": (1024, "configs/qlora.py:17", "config"),
                   "grad_accum": (8, "configs/qlora.py:19", "config"),
                   "mixed_precision": ("fp16", "configs/qlora.py:19", "config")}),
    Example(title="a language model and a vision encoder loaded by name: a composite no "
                  "single checkpoint sizes, and no fp32 weights claimed over the fp16 load",
            files={"configs/vlm.py": _COMPOSITE}, paths=["configs/vlm.py"],
            facts={"model": (UNKNOWN, "configs/vlm.py:5"),
                   "micro_batch": (16, "configs/vlm.py:10", "config"),
                   "mixed_precision": ("fp16", "configs/vlm.py:11", "config")}),
]
