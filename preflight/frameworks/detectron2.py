"""detectron2: `tools/train_net.py --config-file x.yaml --num-gpus 8` (yacs YAML with
`_BASE_` inheritance) and `tools/lazyconfig_train_net.py --config-file x.py --num-gpus 8
a.b=c` (LazyConfig Python files, read by `preflight.lang.pyconfig`).

Both give the batch over all GPUs (`SOLVER.IMS_PER_BATCH`, `dataloader.train.total_batch_size`):
the batch of one GPU is that divided by the world size, which the line's `--num-gpus` ×
`--num-machines` gives (`--num-gpus` defaults to 1). `SOLVER.AMP.ENABLED` / `train.amp.enabled`
autocast to float16 over fp32 weights. The YAML solver is SGD with momentum
(`SOLVER.MOMENTUM`, 0.9 by default); a lazy config names its optimizer class
(`L(torch.optim.AdamW)(...)`).
"""

from __future__ import annotations

import os
from typing import Any, Optional

from preflight import safe_read
from preflight.facts import spellings
from preflight.frameworks import (UNKNOWN, ConfigOut, Example, Framework, dotted_overrides,
                                  flag_int, get_path, is_int, locate_word)
from preflight.lang.positions import yaml_tree
from preflight.plan import Fact, Origin, Source

#: `_BASE_` files followed per YAML config
_MAX_BASES = 8


def _merge(into: dict, new: dict) -> None:
    for k, v in new.items():
        if isinstance(v, dict) and isinstance(into.get(k), dict):
            _merge(into[k], v)
        else:
            into[k] = v


def _with_bases(cfg: dict, o: ConfigOut) -> tuple[dict, dict[tuple, Source]]:
    """The YAML merged over its `_BASE_` chain (yacs: the base first, the file's keys over
    it), and the file each key was written in."""
    where: dict[tuple, Source] = {}
    chain: list[tuple[dict, Any]] = [(cfg, o.src)]
    path, cur = o.path, cfg
    for _ in range(_MAX_BASES):
        base = cur.get("_BASE_")
        if not isinstance(base, str):
            break
        bpath = os.path.normpath(os.path.join(os.path.dirname(path), base))
        try:
            text = safe_read.read_text(bpath, 1 << 20, truncate=False)
            bcfg, bpos, _ = yaml_tree(text)
        except Exception:  # noqa: BLE001 - a missing or malformed base leaves its keys unread
            break
        if not isinstance(bcfg, dict):
            break
        src = ConfigOut(bpath, bpos).src
        chain.append((bcfg, src))
        o.configs.append(bpath)
        path, cur = bpath, bcfg
    merged: dict = {}
    for d, src in reversed(chain):
        _merge(merged, d)

        def mark(x: dict, p: tuple, src: Any = src) -> None:
            for k, v in x.items():
                where[p + (k,)] = src(p + (k,))
                if isinstance(v, dict):
                    mark(v, p + (k,))
        mark(d, ())
    return merged, where


class Detectron2(Framework):
    name = "detectron2"
    title = "detectron2"
    FLAGS = {"num_gpus": ("gpus_per_node", flag_int), "num_machines": ("nodes", flag_int)}
    reads = (
        "yacs YAML with `_BASE_` inheritance: `SOLVER.IMS_PER_BATCH` (over all GPUs, divided by "
        "the world size), `SOLVER.AMP.ENABLED`, the SGD solver's `SOLVER.MOMENTUM`",
        "LazyConfig Python files: `dataloader.train.total_batch_size`, `train.amp.enabled`, "
        "`optimizer` (`L(torch.optim.X)(...)`), relative imports of other config files, "
        "`a.b=c` overrides on the command line",
        "`--num-gpus` / `--num-machines` of `train_net.py` / `lazyconfig_train_net.py`",
        "`SOLVER.AMP.ENABLED True` after the flags",
    )
    not_read = ("yacs `KEY VALUE` overrides other than `SOLVER.IMS_PER_BATCH` (which makes the "
                "batch per GPU unknown: it is not divided by the world size yet) and "
                "`SOLVER.AMP.ENABLED`",
                "the model's size: a meta-architecture built from the registry at run time",
                "`model_zoo.get_config(...)` of configs outside the project")

    def claims(self, cfg: dict, path: str) -> bool:
        if path.endswith(".py"):
            return isinstance(get_path(cfg, "dataloader", "train"), dict) and (
                "train" in cfg or "optimizer" in cfg)
        return any(k in cfg for k in ("SOLVER", "_BASE_")) and (
            "MODEL" in cfg or "_BASE_" in cfg or "INPUT" in cfg)

    def reads_flags(self, flags: dict[str, Any], script: str) -> bool:
        return "config-file" in flags and ("num-gpus" in flags or script.endswith("train_net.py"))

    def line_facts(self, args: list[str], source: Optional[Source]) -> list[tuple[str, Fact]]:
        """`train_net.py --config-file x.yaml SOLVER.IMS_PER_BATCH 32 SOLVER.AMP.ENABLED True`:
        yacs `KEY VALUE` pairs after the flags, over the YAML's values."""
        out: list[tuple[str, Fact]] = []
        for i, a in enumerate(args[:-1]):
            if not a.isupper() or "." not in a or a.startswith("-"):
                continue
            v = args[i + 1]
            where = locate_word(source, a) if source is not None else None
            if a == "SOLVER.IMS_PER_BATCH":
                out.append(("micro_batch", Fact.unknown(
                    f"{a} {v} on the command line is the batch over all GPUs: per GPU it is "
                    f"{v} / the world size", source=where).model_copy(update={"over": Origin.CLI})))
            elif a == "SOLVER.AMP.ENABLED" and v.lower() in ("true", "false"):
                out.append(("mixed_precision", Fact(
                    value="fp16" if v.lower() == "true" else "none", origin=Origin.CLI,
                    source=where, reason=f"{a} {v} on the command line")))
        return out

    def flag_defaults(self, flags: dict[str, Any], script: str = "") -> list[tuple[str, Any, str]]:
        out = []
        if "num-gpus" not in flags:
            out.append(("gpus_per_node", 1, "detectron2's --num-gpus defaults to 1"))
        if "num-machines" not in flags:
            out.append(("nodes", 1, "detectron2's --num-machines defaults to 1"))
        return out

    def read_config(self, cfg: dict, o: ConfigOut) -> None:
        if "dataloader" in cfg or "train" in cfg or o.path.endswith(".py"):
            self._lazy(cfg, o)
        else:
            self._yacs(cfg, o)

    @staticmethod
    def _global(o: ConfigOut, key: str, value: Any, src: Source) -> None:
        """A batch over all GPUs: per GPU once the launch's world size is known."""
        if not is_int(value):
            return
        o.facts.append(("micro_batch", Fact.unknown(
            f"{key} = {value} is the batch over all GPUs: per GPU it is {value} / the world size",
            source=src)))
        o.extras.setdefault("world_size_dependent", {})[key] = {
            "fact": "micro_batch", "env": "WORLD_SIZE", "value": value, "op": "/",
            "path": src.path, "line": src.line, "col": src.col}

    def _yacs(self, cfg: dict, o: ConfigOut) -> None:
        merged, where = _with_bases(cfg, o)

        def at(*p: str) -> Source:
            return where.get(p) or o.src(p)

        def put(name: str, value: Any, *p: str, why: str = "", default: bool = False) -> None:
            origin = Origin.DEFAULT if default else o.origin
            o.facts.append((name, Fact(value=value, origin=origin, source=at(*p),
                                       reason=why or f"{'.'.join(p)}: {value}")))

        ims = get_path(merged, "SOLVER", "IMS_PER_BATCH")
        if ims is not None:
            self._global(o, "SOLVER.IMS_PER_BATCH", ims, at("SOLVER", "IMS_PER_BATCH"))
        if o.partial:
            return
        amp = get_path(merged, "SOLVER", "AMP", "ENABLED")
        if amp is True:
            put("mixed_precision", "fp16", "SOLVER", "AMP", "ENABLED",
                why="SOLVER.AMP.ENABLED: autocast to float16")
        else:
            put("mixed_precision", "none", *(("SOLVER", "AMP", "ENABLED") if amp is False else ("SOLVER",)),
                why="SOLVER.AMP.ENABLED is off (detectron2's default)", default=amp is None)
        mom = get_path(merged, "SOLVER", "MOMENTUM")
        mom = 0.9 if mom is None else mom
        put("optimizer", "sgd_momentum" if mom else "sgd", "SOLVER",
            why=f"detectron2's solver is SGD (SOLVER.MOMENTUM {mom})", default=True)
        put("grad_accum", 1, "SOLVER", why="detectron2's trainers do not accumulate", default=True)
        arch = get_path(merged, "MODEL", "META_ARCHITECTURE")
        o.facts.append(("model", Fact.unknown(
            f"MODEL.META_ARCHITECTURE {arch or 'GeneralizedRCNN'} is built from the registry when "
            "the job runs; its size is not read from the config", source=at("MODEL"))))

    def _lazy(self, cfg: dict, o: ConfigOut) -> None:
        p = ("dataloader", "train", "total_batch_size")
        tb = get_path(cfg, *p)
        if tb is not None:
            self._global(o, "dataloader.train.total_batch_size", tb, o.src(p))
        amp = get_path(cfg, "train", "amp", "enabled")
        if amp is True:
            o.put("mixed_precision", "fp16", ("train", "amp", "enabled"),
                  "train.amp.enabled: autocast to float16")
        elif amp is False:
            o.put("mixed_precision", "none", ("train", "amp", "enabled"), "train.amp.enabled: False")
        t = get_path(cfg, "optimizer", "_target_")
        if isinstance(t, str):
            cls = t.rsplit(".", 1)[-1]
            name = spellings.optimizer_class(cls)
            if cls == "SGD":
                mom = get_path(cfg, "optimizer", "momentum")
                name = "sgd_momentum" if isinstance(mom, (int, float)) and mom else "sgd"
            o.put("optimizer", name or "other", ("optimizer", "_target_"), f"optimizer = L({t})(...)")
        if not o.partial:
            o.default("grad_accum", 1, ("train",), "detectron2's trainers do not accumulate")
        if not o.partial and isinstance(cfg.get("model"), dict):
            o.unknown("model", ("model",), "the model is built from its LazyCall when the job runs; "
                                          "its size is not read from the config")

    def config_overrides(self, cfg: dict, args: list[str]) -> list[tuple[tuple, Any, str]]:
        """`lazyconfig_train_net.py --config-file x.py a.b=c …`: the `key=value` words."""
        words = [a for a in args if "=" in a and not a.startswith("-")]
        out: list[tuple[tuple, Any, str]] = []

        def flat(d: dict, p: tuple) -> None:
            for k, v in d.items():
                if isinstance(v, dict):
                    flat(v, p + (k,))
                else:
                    out.append((p + (k,), v, f"{'.'.join(p + (k,))}={v}"))
        flat(dotted_overrides(words), ())
        return out


_BASE_YAML = """\
MODEL:
  META_ARCHITECTURE: "GeneralizedRCNN"
  RESNETS:
    DEPTH: 50
SOLVER:
  IMS_PER_BATCH: 16
  BASE_LR: 0.02
INPUT:
  MIN_SIZE_TRAIN: (640, 672, 704, 736, 768, 800)
"""
_YAML = """\
_BASE_: "../Base-RCNN-FPN.yaml"
MODEL:
  WEIGHTS: "detectron2://ImageNetPretrained/MSRA/R-50.pkl"
SOLVER:
  STEPS: (210000, 250000)
  MAX_ITER: 270000
  AMP:
    ENABLED: True
"""
_COMMON_TRAIN = """\
train = dict(output_dir="./output", max_iter=90000, amp=dict(enabled=False), checkpointer=dict(period=5000))
"""
_COMMON_OPTIM = """\
import torch
from detectron2.config import LazyCall as L
from detectron2.solver.build import get_default_optimizer_params

SGD = L(torch.optim.SGD)(
    params=L(get_default_optimizer_params)(weight_decay_norm=0.0),
    lr=0.02,
    momentum=0.9,
    weight_decay=1e-4,
)
AdamW = L(torch.optim.AdamW)(params=L(get_default_optimizer_params)(), lr=1e-4, weight_decay=0.1)
"""
_COMMON_DATA = """\
from detectron2.config import LazyCall as L
from detectron2.data import build_detection_train_loader, get_detection_dataset_dicts

dataloader = dict(
    train=L(build_detection_train_loader)(
        dataset=L(get_detection_dataset_dicts)(names="coco_2017_train"),
        total_batch_size=16,
        num_workers=4,
    ),
)
"""
_LAZY = """\
from ..common.data.coco import dataloader
from ..common.optim import AdamW as optimizer
from ..common.train import train
from detectron2.config import LazyCall as L
from detectron2.modeling import GeneralizedRCNN

model = L(GeneralizedRCNN)(backbone=None)
dataloader.train.total_batch_size = 64
train.amp.enabled = True
optimizer.lr = 1e-4
"""
_TRAIN_NET = "from detectron2.engine import default_argument_parser, launch\n"

ADAPTER = Detectron2()
Detectron2.EXAMPLES = [
    Example(title="yacs YAML over its _BASE_: the global batch over 8 GPUs, AMP, the SGD solver",
            files={"configs/Base-RCNN-FPN.yaml": _BASE_YAML,
                   "configs/COCO/mask_rcnn_R_50_FPN_3x.yaml": _YAML, "tools/train_net.py": _TRAIN_NET},
            command="python tools/train_net.py --config-file configs/COCO/mask_rcnn_R_50_FPN_3x.yaml "
                    "--num-gpus 8",
            facts={"micro_batch": (2, "configs/Base-RCNN-FPN.yaml:6", "derived"),
                   "mixed_precision": ("fp16", "configs/COCO/mask_rcnn_R_50_FPN_3x.yaml:8", "config"),
                   "optimizer": ("sgd_momentum", "configs/COCO/mask_rcnn_R_50_FPN_3x.yaml:4", "default"),
                   "gpus_per_node": (8, "<command>:1", "cli"),
                   "model": (UNKNOWN, "configs/COCO/mask_rcnn_R_50_FPN_3x.yaml:2")}),
    Example(title="yacs overrides after the flags: AMP off; a global batch the line changes is "
                  "unknown per GPU",
            files={"configs/Base-RCNN-FPN.yaml": _BASE_YAML,
                   "configs/COCO/mask_rcnn_R_50_FPN_3x.yaml": _YAML, "tools/train_net.py": _TRAIN_NET},
            command="python tools/train_net.py --config-file configs/COCO/mask_rcnn_R_50_FPN_3x.yaml "
                    "--num-gpus 8 SOLVER.IMS_PER_BATCH 32 SOLVER.AMP.ENABLED False",
            facts={"micro_batch": (UNKNOWN, "<command>:1"),
                   "mixed_precision": ("none", "<command>:1", "cli")}),
    Example(title="a LazyConfig importing its parts from common/ files; an override on the line",
            files={"configs/common/train.py": _COMMON_TRAIN, "configs/common/optim.py": _COMMON_OPTIM,
                   "configs/common/data/coco.py": _COMMON_DATA,
                   "configs/new_baselines/mask_rcnn.py": _LAZY,
                   "tools/lazyconfig_train_net.py": _TRAIN_NET},
            command="python tools/lazyconfig_train_net.py --config-file "
                    "configs/new_baselines/mask_rcnn.py --num-gpus 4 dataloader.train.total_batch_size=32",
            facts={"micro_batch": (8, "configs/new_baselines/mask_rcnn.py:8", "derived"),
                   "mixed_precision": ("fp16", "configs/new_baselines/mask_rcnn.py:9", "config"),
                   "optimizer": ("adamw", "configs/common/optim.py:11", "config")}),
]
