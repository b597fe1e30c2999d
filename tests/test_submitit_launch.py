"""A script that submits itself to a Slurm cluster through submitit: started by a plain
`python submit.py`, it runs `nodes` × `tasks_per_node` processes."""
import json

from tests.conftest import run_cli

_SUBMIT = """\
import argparse
import submitit
import trainer

def parse():
    p = argparse.ArgumentParser(parents=[trainer.parser()])
    p.add_argument("--ngpus", default=4, type=int)
    p.add_argument("--nodes", default=1, type=int)
    return p.parse_args()

def main():
    args = parse()
    ex = submitit.AutoExecutor(folder="jobs")
    ex.update_parameters(gpus_per_node=args.ngpus, tasks_per_node=args.ngpus,
                         nodes=args.nodes, timeout_min=600)
    ex.submit(trainer.Task(args))

if __name__ == "__main__":
    main()
"""

_TRAINER = """\
import argparse
import torch

def parser():
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument("--batch_size", default=32, type=int)
    p.add_argument("--accum_iter", default=1, type=int)
    return p

class Task:
    def __init__(self, args):
        self.args = args

    def __call__(self):
        model = torch.nn.Linear(8, 8)
        opt = torch.optim.AdamW(model.parameters())
        loader = torch.utils.data.DataLoader([], batch_size=self.args.batch_size)
        for i, x in enumerate(loader):
            loss = model(x).sum() / self.args.accum_iter
            loss.backward()
            if (i + 1) % self.args.accum_iter == 0:
                opt.step()
"""


def _facts(tmp_path, *line):
    (tmp_path / "submit.py").write_text(_SUBMIT)
    (tmp_path / "trainer.py").write_text(_TRAINER)
    r = run_cli("check", "--format", "json", "--exit-zero", "--", "python", "submit.py", *line,
                cwd=str(tmp_path))
    assert "Traceback" not in r.stderr, r.stderr
    return json.loads(r.stdout)["jobs"][0]["facts"]


def test_the_executors_nodes_and_tasks_are_the_jobs_processes(tmp_path):
    f = _facts(tmp_path, "--nodes", "2")
    assert (f["nodes"]["value"], f["nodes"]["origin"], f["nodes"]["source"]) == (2, "cli", "submit.py:8:5")
    # the flag's default is what the submitted job runs with
    assert (f["gpus_per_node"]["value"], f["gpus_per_node"]["origin"]) == (4, "derived")
    assert f["gpus_per_node"]["source"] == "submit.py:7:5"
    assert f["world_size"]["value"] == 8


def test_an_executor_size_not_known_statically_is_unknown_not_one_process(tmp_path):
    (tmp_path / "submit.py").write_text(_SUBMIT.replace("nodes=args.nodes", "nodes=int(input())"))
    (tmp_path / "trainer.py").write_text(_TRAINER)
    r = run_cli("check", "--format", "json", "--exit-zero", "--", "python", "submit.py",
                cwd=str(tmp_path))
    f = json.loads(r.stdout)["jobs"][0]["facts"]
    assert f["nodes"]["value"] is None and f["nodes"]["origin"] == "unknown"
    assert f["nodes"]["source"] == "submit.py:14:5"


_DIST = """\
#!/usr/bin/env bash
CONFIG=$1
GPUS=$2
NNODES=${NNODES:-1}
python -m torch.distributed.launch --nnodes=$NNODES --nproc_per_node=$GPUS \\
    $(dirname "$0")/train.py $CONFIG --launcher pytorch ${@:3}
"""


def test_a_checkout_launch_script_on_the_command_line_gets_its_arguments(tmp_path):
    # `bash tools/dist.sh CONFIG 8`: the script's `$2` is the process count per node
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "dist.sh").write_text(_DIST)
    (tmp_path / "tools" / "train.py").write_text(
        "import torch\nfrom mmengine.runner import Runner\nRunner.from_cfg(None).train()\n")
    (tmp_path / "cfg.py").write_text(
        "train_dataloader = dict(batch_size=16)\n"
        "optim_wrapper = dict(type='OptimWrapper', optimizer=dict(type='SGD', lr=0.1))\n")
    r = run_cli("check", "--format", "json", "--exit-zero", "--", "bash", "tools/dist.sh",
                "cfg.py", "8", cwd=str(tmp_path))
    assert "Traceback" not in r.stderr, r.stderr
    f = json.loads(r.stdout)["jobs"][0]["facts"]
    assert (f["gpus_per_node"]["value"], f["gpus_per_node"]["source"]) == (8, "tools/dist.sh:5:53")
    assert f["world_size"]["value"] == 8
    assert (f["micro_batch"]["value"], f["micro_batch"]["origin"]) == (16, "config")
