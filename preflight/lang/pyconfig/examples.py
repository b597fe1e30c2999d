"""The examples of `preflight.lang.pyconfig`, each a test (tests/test_pyconfig.py): `files`
written to a folder, `read` the config read, `expect` key path (dotted) → (value,
"file:line") — `Opaque` values expected as `UNREAD`."""

from __future__ import annotations

#: expected value of a key read as an `Opaque`
UNREAD = "<unread>"

EXAMPLES: list[dict] = [
    {"title": "`_base_` files merged key by key; `_delete_=True` replaces; a base's key keeps "
              "its file and line",
     "files": {"_base_/model.py": "model = dict(type='Net', backbone=dict(depth=50, frozen=1))\n",
               "_base_/sched.py": "optim_wrapper = dict(optimizer=dict(type='SGD', lr=0.1, momentum=0.9))\n",
               "cfg.py": "_base_ = ['./_base_/model.py', './_base_/sched.py']\n"
                         "model = dict(backbone=dict(depth=101))\n"
                         "optim_wrapper = dict(optimizer=dict(_delete_=True, type='AdamW', lr=1e-3))\n"},
     "read": "cfg.py",
     "expect": {"model.type": ("Net", "_base_/model.py:1"),
                "model.backbone.depth": (101, "cfg.py:2"),
                "model.backbone.frozen": (1, "_base_/model.py:1"),
                "optim_wrapper.optimizer.type": ("AdamW", "cfg.py:3"),
                "optim_wrapper.optimizer.momentum": (None, None)}},
    {"title": "`{{_base_.x}}` quoted or not, and `_base_.x` in code",
     "files": {"base.py": "depth = 18\nmodel = dict(type='Net', depth=depth)\n",
               "cfg.py": "_base_ = 'base.py'\nbackbone = {{_base_.model}}\n"
                         "width = '{{_base_.depth}}'\nhead = dict(in_channels=_base_.depth * 32)\n"},
     "read": "cfg.py",
     "expect": {"backbone.depth": (18, "base.py:2"), "width": (18, "cfg.py:3"),
                "head.in_channels": (576, "cfg.py:4"), "depth": (18, "base.py:1")}},
    {"title": "pure-Python style: `with read_base()` star imports and `.update(...)`",
     "files": {"_base_/data.py": "train_dataloader = dict(batch_size=32, num_workers=4)\n",
               "cfgs/x.py": "from mmengine.config import read_base\n"
                            "with read_base():\n    from .._base_.data import *\n"
                            "train_dataloader.update(batch_size=8)\n"},
     "read": "cfgs/x.py",
     "expect": {"train_dataloader.batch_size": (8, "cfgs/x.py:4"),
                "train_dataloader.num_workers": (4, "_base_/data.py:1")}},
    {"title": "LazyConfig: imported variables, LazyCall dicts, attribute assignments",
     "files": {"common/train.py": "train = dict(amp=dict(enabled=False), max_iter=100)\n",
               "cfgs/m.py": "from detectron2.config import LazyCall as L\n"
                            "from ..common.train import train\nimport torch\n"
                            "optimizer = L(torch.optim.AdamW)(lr=1e-4)\n"
                            "train.amp.enabled = True\n"},
     "read": "cfgs/m.py",
     "expect": {"train.amp.enabled": (True, "cfgs/m.py:5"), "train.max_iter": (100, "common/train.py:1"),
                "optimizer._target_": ("torch.optim.AdamW", "cfgs/m.py:4")}},
    {"title": "`OmegaConf.create()` as an empty dict filled by attribute assignments; `del`",
     "files": {"data.py": "from omegaconf import OmegaConf\nfrom detectron2.config import LazyCall as L\n"
                          "dataloader = OmegaConf.create()\n"
                          "dataloader.train = L(build_loader)(total_batch_size=16, workers=4)\n"
                          "del dataloader.train.workers\n"},
     "read": "data.py",
     "expect": {"dataloader.train.total_batch_size": (16, "data.py:4"),
                "dataloader.train.workers": (None, None)}},
    {"title": "what the file computes at load time, or under a condition, is not read",
     "files": {"cfg.py": "import os\nbs = int(os.environ.get('BS', 8))\nif os.environ.get('BIG'):\n"
                         "    depth = 101\nelse:\n    depth = 50\nmodel = dict(depth=depth, bs=bs)\n"},
     "read": "cfg.py",
     "expect": {"model.depth": (UNREAD, "cfg.py:7"), "model.bs": (UNREAD, "cfg.py:7")}},
]
