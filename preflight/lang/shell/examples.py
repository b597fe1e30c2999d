"""What the shell language reads, as small launch scripts and the facts each must give, at
the file and line (and with the origin) where each is stated. tests/test_lang_shell.py runs
every example through `preflight check` with all its files: an example added is a test.

`facts` holds the facts of the job that has the most of them; `runs` (instead) the facts of
each job the script launches, in order; `reasons` a piece of text the reason of a fact must
hold (the alternatives of a value that is not one number)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional


class _Unknown:
    def __repr__(self) -> str:  # pragma: no cover - shown by a failing test
        return "UNKNOWN"


#: expected value of a fact that must be an explicit unknown
UNKNOWN = _Unknown()


@dataclass(frozen=True)
class ShellExample:
    title: str
    files: dict[str, str]
    facts: dict[str, tuple] = field(default_factory=dict)
    runs: Optional[list[dict[str, tuple]]] = None
    reasons: dict[str, str] = field(default_factory=dict)
    #: what `preflight check` is given (default: every file), the command after `--`
    paths: Optional[list[str]] = None
    command: Optional[str] = None


#: a Hugging Face Trainer script: its flags are read at the launch line that gives them
_SFT = """\
from transformers import HfArgumentParser, Trainer, TrainingArguments

(args,) = HfArgumentParser(TrainingArguments).parse_args_into_dataclasses()
Trainer(model=None, args=args).train()
"""

EXAMPLES = [
    ShellExample(
        title="settings `source`d from a file beside the script, found through the script's "
              "own folder (`$(dirname \"$0\")`, `$(cd \"$(dirname \"${BASH_SOURCE[0]}\")\" && pwd)`)",
        files={"sft.py": _SFT, "scripts/env.sh": "NNODES=2\nGPUS=8\nMBS=4\n",
               "scripts/more.sh": "GA=16\n",
               "scripts/run.sh": """\
#!/bin/bash
source "$(dirname "$0")/env.sh"
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/more.sh"
torchrun --nnodes $NNODES --nproc_per_node $GPUS sft.py \\
  --per_device_train_batch_size $MBS --gradient_accumulation_steps ${GA}
"""},
        paths=["scripts/run.sh"],
        facts={"nodes": (2, "scripts/run.sh:5", "config"),
               "gpus_per_node": (8, "scripts/run.sh:5", "config"),
               "micro_batch": (4, "scripts/run.sh:6", "cli"),
               "grad_accum": (16, "scripts/run.sh:6", "cli")}),
    ShellExample(
        title="variables, `${VAR:-default}`, `${VAR:=x}` and `$(( ))` on a multi-node torchrun line",
        files={"sft.py": _SFT, "run.sh": """\
#!/bin/bash
NNODES=${SLURM_NNODES:-2}
GPUS_PER_NODE=8
: ${MBS:=4}
torchrun --nnodes $NNODES --nproc_per_node $GPUS_PER_NODE sft.py \\
  --per_device_train_batch_size $((MBS / 2))
"""},
        facts={"nodes": (2, "run.sh:5", "config"), "gpus_per_node": (8, "run.sh:5", "config"),
               "world_size": (16, "run.sh:5", "derived"), "micro_batch": (2, "run.sh:6", "cli")}),
    ShellExample(
        title="a command built in a variable (`cmd=\"$cmd …\"`) from an array, run with `eval`",
        files={"sft.py": _SFT, "run.sh": """\
#!/bin/bash
ARGS=(--per_device_train_batch_size 2 --gradient_accumulation_steps 4)
cmd="torchrun --nproc_per_node 4"
cmd="$cmd sft.py ${ARGS[@]}"
eval "$cmd"
"""},
        facts={"micro_batch": (2, "run.sh:2", "cli"), "grad_accum": (4, "run.sh:2", "cli"),
               "gpus_per_node": (4, "run.sh:3", "config")}),
    ShellExample(
        title="a DeepSpeed config written by a here-document with `$VAR` inside, into a folder "
              "known only at run time",
        files={"sft.py": _SFT, "run.sh": """\
#!/bin/bash
ZERO=3
MBS=2
OUT=$(mktemp -d)
cat <<EOT > $OUT/ds.json
{
  "train_micro_batch_size_per_gpu": $MBS,
  "zero_optimization": {"stage": $ZERO},
  "bf16": {"enabled": true}
}
EOT
deepspeed --num_gpus 8 sft.py --deepspeed $OUT/ds.json
"""},
        facts={"zero_stage": (3, "run.sh:8", "config"), "micro_batch": (2, "run.sh:7", "config"),
               "mixed_precision": ("bf16", "run.sh:9", "config"),
               "gpus_per_node": (8, "run.sh:12", "config")}),
    ShellExample(
        title="a here-document value the script does not set is unknown, with its reason",
        files={"sft.py": _SFT, "run.sh": """\
#!/bin/bash
cat > ds.json <<EOF
{"train_micro_batch_size_per_gpu": 4,
 "zero_optimization": {"stage": $ZERO_STAGE}}
EOF
deepspeed --num_gpus 8 sft.py --deepspeed ds.json
"""},
        facts={"zero_stage": (UNKNOWN, "run.sh:4"), "micro_batch": (4, "run.sh:3", "config")},
        reasons={"zero_stage": "$ZERO_STAGE is not set in the script"}),
    ShellExample(
        title="a function is read where it is called, with the call's arguments",
        files={"sft.py": _SFT, "run.sh": """\
#!/bin/bash
launch() {
  local nodes=$1
  torchrun --nnodes "$nodes" --nproc_per_node 8 sft.py --per_device_train_batch_size "$2"
}
launch 2 16
"""},
        facts={"nodes": (2, "run.sh:4", "config"), "micro_batch": (16, "run.sh:4", "cli"),
               "world_size": (16, "run.sh:4", "derived")}),
    ShellExample(
        title="a `for` loop over values launches one run per value",
        files={"sft.py": _SFT, "sweep.sh": """\
#!/bin/bash
for mbs in 4 8; do
  torchrun --nproc_per_node 8 sft.py \\
    --per_device_train_batch_size $mbs
done
"""},
        runs=[{"micro_batch": (4, "sweep.sh:4", "cli"), "gpus_per_node": (8, "sweep.sh:3", "config")},
              {"micro_batch": (8, "sweep.sh:4", "cli"), "gpus_per_node": (8, "sweep.sh:3", "config")}]),
    ShellExample(
        title="a loop over values not known statically: one run, the value unknown",
        files={"sft.py": _SFT, "sweep.sh": """\
#!/bin/bash
for mbs in $(seq 1 4); do
  torchrun --nproc_per_node 8 sft.py --per_device_train_batch_size $mbs
done
"""},
        facts={"micro_batch": (UNKNOWN, "sweep.sh:3"), "gpus_per_node": (8, "sweep.sh:3", "config")},
        reasons={"micro_batch": "$mbs is each value of the loop at line 2"}),
    ShellExample(
        title="`if` on a variable the script sets takes its branch; one on the environment "
              "leaves the value unknown with its alternatives",
        files={"sft.py": _SFT, "run.sh": """\
#!/bin/bash
DEBUG_MODE=0
if [[ $DEBUG_MODE == 1 ]]; then
  NGPU=1
else
  NGPU=8
fi
if [ "$SIZE" = big ]; then MBS=8; else MBS=4; fi
torchrun --nproc_per_node $NGPU sft.py --per_device_train_batch_size $MBS
"""},
        facts={"gpus_per_node": (8, "run.sh:9", "config"), "micro_batch": (UNKNOWN, "run.sh:9")},
        reasons={"micro_batch": "'8' or '4'"}),
    ShellExample(
        title="`test && X=…` / `test || X=…`: the assignment counts only when the test is "
              "decided; commands on one line are expanded in turn",
        files={"sft.py": _SFT, "run.sh": """\
#!/bin/bash
NGPU=8
[ "$NGPU" -gt 4 ] || NGPU=1
MBS=4
[[ -n "$DEBUG" ]] && MBS=1
ACCUM=2; torchrun --nproc_per_node $NGPU sft.py --per_device_train_batch_size $MBS \\
  --gradient_accumulation_steps $ACCUM
"""},
        facts={"gpus_per_node": (8, "run.sh:6", "config"), "micro_batch": (UNKNOWN, "run.sh:6"),
               "grad_accum": (2, "run.sh:7", "cli")},
        reasons={"micro_batch": "'1' or '4'"}),
    ShellExample(
        title="a test runner's line is no job, and an option naming a .py file "
              "(`--ignore=tests/x.py`) is never the script a program runs",
        files={"sft.py": _SFT, "tests/test_data.py": "def test_ok():\n    assert True\n",
               "ci.sh": """\
pytest -v --durations=10 \\
  --ignore=tests/test_data.py \\
  tests/ --cov=pkg
python -m pytest tests/test_data.py
coverage-wrapper --include=tests/test_data.py sft.py --per_device_train_batch_size 4
torchrun --nproc_per_node 2 sft.py --per_device_train_batch_size 8
"""},
        runs=[{"micro_batch": (4, "ci.sh:5", "cli"), "world_size": (UNKNOWN, "ci.sh:5", "unknown")},
              {"micro_batch": (8, "ci.sh:6", "cli"), "gpus_per_node": (2, "ci.sh:6", "config")}]),
    ShellExample(
        title="a job submitter given the training command after `--` (`python submit.py "
              "--nodes 8 -- accelerate launch … sft.py`): the command is the job, and the "
              "layout a bare line would default to is unknown",
        files={"sft.py": _SFT,
               "submit.py": "import argparse, subprocess\np = argparse.ArgumentParser()\n"
                            "p.add_argument('--num_nodes', type=int)\n"
                            "a, cmd = p.parse_known_args()\nsubprocess.run(cmd[1:])\n",
               "run.sh": """\
python submit.py --cluster c1 --num_nodes 8 --gpus 8 -- accelerate launch \\
    --mixed_precision bf16 --num_processes 8 sft.py \\
    --per_device_train_batch_size 2
python submit.py --cluster c1 -- python sft.py --per_device_train_batch_size 4
python submit.py --gpus 1 -- source setup.sh \\&\\& python sft.py --per_device_train_batch_size 6
"""},
        paths=["run.sh"],
        runs=[{"micro_batch": (2, "run.sh:3", "cli"), "world_size": (8, "run.sh:2", "config"),
               "nodes": (UNKNOWN, "run.sh:1", "unknown")},
              {"micro_batch": (4, "run.sh:4", "cli"), "nodes": (UNKNOWN, "run.sh:4", "unknown"),
               "world_size": (UNKNOWN, "run.sh:4", "unknown")},
              {"micro_batch": (6, "run.sh:5", "cli")}],
        reasons={}),
    ShellExample(
        title="a Ray driver started by a bare `python` line: its workers take the GPUs, so the "
              "line's one process is no world size",
        files={"driver.py": "import ray\nimport torch\n\nray.init()\nmodel = torch.nn.Linear(8, 8)\n"
                            "opt = torch.optim.AdamW(model.parameters())\n"
                            "model(torch.randn(4, 8)).sum().backward()\nopt.step()\n",
               "run.sh": "python driver.py trainer.n_gpus_per_node=8\n"},
        paths=["run.sh"],
        facts={"nodes": (UNKNOWN, "run.sh:1", "unknown"),
               "world_size": (UNKNOWN, "run.sh:1", "unknown")},
        reasons={"world_size": "drives a Ray cluster"}),
    ShellExample(
        title="a loop written on one line launches one run per value too",
        files={"sft.py": _SFT, "sweep.sh": """\
for acc in 1 4; do torchrun --nproc_per_node 2 sft.py --gradient_accumulation_steps $acc; done
"""},
        runs=[{"grad_accum": (1, "sweep.sh:1", "cli")}, {"grad_accum": (4, "sweep.sh:1", "cli")}]),
    ShellExample(
        title="a `source`d env file and an argument-parsing loop: a script checked by name runs "
              "without arguments, so its defaults hold",
        files={"sft.py": _SFT, "env.sh": "export GPUS=4\nMBS=2\n", "run.sh": """\
#!/bin/bash
source ./env.sh
while [[ $# -gt 0 ]]; do
  case $1 in
    --mbs) MBS=$2; shift 2 ;;
    *) shift ;;
  esac
done
torchrun --nproc_per_node $GPUS sft.py --per_device_train_batch_size $MBS
"""},
        facts={"gpus_per_node": (4, "run.sh:9", "config"), "micro_batch": (2, "run.sh:9", "cli")}),
    ShellExample(
        title="positional arguments with fallbacks (`ZERO_STAGE=$2; if [ \"$ZERO_STAGE\" == \"\" ]`): "
              "an argument not given tests as empty; one used as a value stays unknown",
        files={"sft.py": _SFT, "run.sh": """\
#!/bin/bash
OUTPUT=$1
ZERO_STAGE=$2
if [ "$ZERO_STAGE" == "" ]; then
    ZERO_STAGE=3
fi
cat > ds.json <<EOF
{"zero_optimization": {"stage": $ZERO_STAGE}}
EOF
deepspeed --num_gpus $3 sft.py --deepspeed ds.json --output_dir $OUTPUT
"""},
        facts={"zero_stage": (3, "run.sh:8", "config"), "gpus_per_node": (UNKNOWN, "run.sh:10")},
        reasons={"gpus_per_node": "$3 is an argument of the script, not given"}),
    ShellExample(
        title="an sbatch script: `#SBATCH --nodes` gives `$SLURM_NNODES` on the torchrun line",
        files={"sft.py": _SFT, "job.slurm": """\
#!/bin/bash
#SBATCH --nodes=2
#SBATCH --gpus-per-node=8
srun torchrun --nnodes $SLURM_NNODES --nproc_per_node 8 sft.py
"""},
        facts={"nodes": (2, "job.slurm:4", "config"), "world_size": (16, "job.slurm:4", "derived")}),
    ShellExample(
        title="`deepspeed` without --num_gpus (or `torchrun --nproc_per_node gpu`) under a "
              "CUDA_VISIBLE_DEVICES the script sets: that many GPUs",
        files={"sft.py": _SFT, "run.sh": """\
#!/bin/bash
export CUDA_VISIBLE_DEVICES=0,1,2,3
deepspeed sft.py --per_device_train_batch_size 2
"""},
        facts={"gpus_per_node": (4, "run.sh:2", "config"), "world_size": (4, "run.sh:2", "derived")}),
    ShellExample(
        title="variables the script exports (or sets before the command) reach the training "
              "process: `os.environ` reads them",
        files={"run.sh": """\
#!/bin/bash
export MICRO_BATCH=4
SEQ_LEN=512 torchrun --nproc_per_node 2 train.py
""", "train.py": """\
import os
import torch
from transformers import AutoModelForCausalLM

model = AutoModelForCausalLM.from_pretrained("gpt2")
batch_size = int(os.environ.get("MICRO_BATCH", 1))
seq_len = int(os.environ["SEQ_LEN"])
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
for step in range(10):
    x = torch.randint(0, 50257, (batch_size, seq_len))
    model(x, labels=x).loss.backward()
    opt.step()
"""},
        facts={"micro_batch": (4, "train.py:6", "derived"), "seq_len": (512, "train.py:7", "derived"),
               "world_size": (2, "run.sh:3", "derived")},
        reasons={"micro_batch": "set by the launch script"}),
    ShellExample(
        title="`mpirun -np 16 -npernode 8`: two nodes, derived from the processes per node",
        files={"sft.py": _SFT, "run.sh": "mpirun -np 16 -npernode 8 python sft.py\n"},
        facts={"world_size": (16, "run.sh:1", "config"), "nodes": (2, "run.sh:1", "derived")}),
]
