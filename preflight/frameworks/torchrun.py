"""torchrun / `python -m torch.distributed.run`, however the launch script assembles the line.

`--nproc_per_node` (a number; `gpu` / `auto`: every visible GPU, unknown), `--nnodes`
(`N`, or elastic `MIN:MAX`), `--standalone`, `-m module`. The line itself may be built in the
script: variables (`CMD="torchrun …"; $CMD`), arrays (`ARGS=(…)`, `"${ARGS[@]}"`,
`"${ARGS[*]}"`), `$((…))` arithmetic, `eval $CMD` / `eval "…"`, here-documents read into a
variable (`read -r -d '' CMD <<EOF`), files pulled in with `source`, and `sbatch` / `bash`
wrappers; `if` / `case` branches are taken when their condition is known.
"""

from __future__ import annotations

from typing import Any, Optional

from preflight.frameworks import UNKNOWN, Example, Framework
from preflight.frameworks._common import EVERY_VISIBLE_GPU, LaunchLine, option_at, program_invocation
from preflight.lang.shell.values import as_int
from preflight.plan import Fact, Invocation, Origin

#: torchrun options that take a value
_TORCHRUN_VALUE = {"--nproc_per_node", "--nproc-per-node", "--nnodes", "--node_rank", "--node-rank",
                   "--master_addr", "--master-addr", "--master_port", "--master-port",
                   "--rdzv_backend", "--rdzv-backend", "--rdzv_endpoint", "--rdzv-endpoint",
                   "--rdzv_id", "--rdzv-id", "--rdzv_conf", "--rdzv-conf", "--max_restarts",
                   "--max-restarts", "--monitor_interval", "--monitor-interval", "--start_method",
                   "--start-method", "--role", "--log_dir", "--log-dir", "-r", "--redirects",
                   "-t", "--tee", "--local_addr", "--local-addr", "--logs_specs", "--logs-specs",
                   "--local_ranks_filter", "--local-ranks-filter", "--run_path", "--run-path"}


def parse_torchrun(rest: list[str], ln: LaunchLine) -> Invocation:
    """A torchrun line after the program's name (or after `python -m torch.distributed.run`)."""
    i = 0
    module = False
    while i < len(rest) and rest[i].startswith("-"):
        k, v, j = option_at(rest, i)
        k = k.replace("-", "_").lstrip("_")
        if k in ("m", "module"):
            module = True
            i = j
            continue
        if k in ("standalone", "no_python"):
            if k == "standalone":
                ln.facts.append(("nodes", Fact(value=1, origin=ln.origin, source=ln.source,
                                               reason="--standalone runs on one node")))
            i = j
            continue
        if v is None and rest[i] in _TORCHRUN_VALUE:
            v, j = (rest[j] if j < len(rest) else None), j + 1
        if k == "nproc_per_node":
            if v in ("gpu", "auto"):
                ln.facts.append(("gpus_per_node", Fact.unknown(
                    f"--nproc_per_node {v} {EVERY_VISIBLE_GPU} of the machine", source=ln.source)))
            else:
                ln.fact("gpus_per_node", v, as_int, "--nproc_per_node")
        elif k == "nnodes":
            if v and ":" in v and v not in ln.unknown:
                lo, hi = v.split(":", 1)
                if lo == hi:
                    ln.fact("nodes", lo, as_int, "--nnodes")
                else:
                    ln.facts.append(("nodes", Fact.unknown(
                        f"--nnodes {v} is elastic (between {lo} and {hi} nodes)", source=ln.source)))
            else:
                ln.fact("nodes", v, as_int, "--nnodes")
        i = j
    if not any(n == "nodes" for n, _ in ln.facts):
        ln.facts.append(("nodes", Fact(value=1, origin=Origin.DEFAULT, source=ln.source,
                                       reason="torchrun without --nnodes runs on one node")))
    return program_invocation(rest, i, ln, module)


class Torchrun(Framework):
    name = "torchrun"
    title = "torchrun and shell launch scripts"
    programs = ("torchrun",)
    reads = (
        "`torchrun` / `python -m torch.distributed.run|launch`: `--nproc_per_node`, "
        "`--nnodes` (fixed or elastic), `--standalone`, `-m`",
        "lines built in shell variables, arrays (`[@]`, `[*]`), `$((…))`, `eval`, here-documents "
        "read into variables, `source`d files, `sbatch` / `bash` wrappers, `srun`, `#SBATCH` "
        "headers; `if` / `case` on known values",
        "a script that starts its own processes (`mp.spawn(main_worker, nprocs=N)`): N per node; "
        "a script flag whose help says it is the number of nodes (`--world-size`); module-level "
        "numbers a comment names (`B = 64  # micro batch size`, `# sequence length`)",
        "torchvision classification builders (`models.resnet50()`, "
        "`models.__dict__[args.arch]()`): torchvision's parameter counts",
    )
    not_read = ("functions defined in the script and called with arguments",
                "values computed by other programs (`$(nvidia-smi …)`, `$(python -c …)`)")

    def launch(self, prog: str, rest: list[str], line: Any, cwd: str = "") -> Optional[Invocation]:
        return parse_torchrun(rest, line)


_TRAIN = """\
from transformers import AutoModelForCausalLM, HfArgumentParser, Trainer, TrainingArguments

(args,) = HfArgumentParser(TrainingArguments).parse_args_into_dataclasses()
model = AutoModelForCausalLM.from_pretrained("gpt2")
Trainer(model=model, args=args).train()
"""
_EVAL = """\
#!/bin/bash
NGPU=4
CMD="torchrun --nproc_per_node $NGPU train.py --per_device_train_batch_size 2 --bf16"
eval $CMD
"""
_ARRAY = """\
#!/bin/bash
DIST=(--nnodes 2 --nproc_per_node 8)
LAUNCH="torchrun ${DIST[*]}"
$LAUNCH train.py --gradient_accumulation_steps $((16 / 4))
"""
_SPAWN = """\
import argparse

import torch
import torch.multiprocessing as mp
import torchvision.models as models

parser = argparse.ArgumentParser()
parser.add_argument("-a", "--arch", default="resnet18")
parser.add_argument("--world-size", default=-1, type=int,
                    help="number of nodes for distributed training")
parser.add_argument("--batch-size", default=256, type=int)


def main_worker(gpu, ngpus, args):
    model = models.__dict__[args.arch]()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)


def main():
    args = parser.parse_args()
    ngpus = torch.cuda.device_count()
    mp.spawn(main_worker, nprocs=ngpus, args=(ngpus, args))


main()
"""
_LOOP = """\
import torch
import torch.nn as nn

B = 16  # micro batch size
T = 512  # sequence length
model = nn.Transformer(d_model=256)
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
for step in range(100):
    x = torch.randint(0, 50257, (B, T))
    optimizer.zero_grad()
    optimizer.step()
"""
_CNN = """\
import torch
import torch.nn.functional as F
from torch import nn


class Net(nn.Module):
    def __init__(self, classes=100):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(inplace=True),
            nn.MaxPool2d(2),
            nn.Conv2d(64, 128, 3, padding=1), nn.BatchNorm2d(128), nn.ReLU(inplace=True),
            nn.AdaptiveAvgPool2d(1))
        self.head = nn.Linear(128, classes)

    def forward(self, x):
        x = self.features(x)
        return self.head(x.view(x.size(0), -1))


model = Net().cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
batch_size = 128
for step in range(1000):
    images = torch.randn(batch_size, 3, 32, 32, device="cuda")
    labels = torch.randint(0, 100, (batch_size,), device="cuda")
    loss = F.cross_entropy(model(images), labels)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
"""
_CNN_RUN = """\
#!/bin/bash
torchrun --nproc_per_node 2 train_cnn.py
"""

ADAPTER = Torchrun()
Torchrun.EXAMPLES = [
    Example(title="a command kept in a variable and run through eval",
            files={"run.sh": _EVAL, "train.py": _TRAIN}, paths=["run.sh"],
            facts={"gpus_per_node": (4, "run.sh:3"), "micro_batch": (2, "run.sh:3"),
                   "mixed_precision": ("bf16", "run.sh:3")}),
    Example(title="flags in an array joined with [*], arithmetic in an argument",
            files={"run.sh": _ARRAY, "train.py": _TRAIN}, paths=["run.sh"],
            facts={"gpus_per_node": (8, "run.sh:2"), "nodes": (2, "run.sh:2"),
                   "grad_accum": (4, "run.sh:4"), "world_size": (16, "run.sh:2", "derived")}),
    Example(title="a script spawning one process per GPU itself; --world-size documented as "
                  "its nodes; a torchvision model picked by name",
            files={"main.py": _SPAWN},
            command="python main.py -a resnet50 --world-size 2",
            facts={"nodes": (2, "main.py:9", "cli"), "gpus_per_node": (UNKNOWN, "main.py:22"),
                   "model": ("torchvision.models.resnet50", "main.py:15"),
                   "params": (25_557_032, "main.py:15", "catalog")}),
    Example(title="short names a plain loop documents in comments (`B = 16  # micro batch size`)",
            files={"train.py": _LOOP},
            command="torchrun --standalone --nproc_per_node 8 train.py",
            facts={"micro_batch": (16, "train.py:4", "literal"), "seq_len": (512, "train.py:5", "literal")}),
    Example(title="a custom CNN module: its layers and the input it is given size the "
                  "activations",
            files={"run.sh": _CNN_RUN, "train_cnn.py": _CNN}, paths=["run.sh"],
            facts={"gpus_per_node": (2, "run.sh:2"), "micro_batch": (128, "train_cnn.py:23"),
                   "params": (88_932, "train_cnn.py:21"),
                   "layer_stack": ({"class": "Net", "input_shape": [3, 32, 32]},
                                   "train_cnn.py:21")}),
]
