"""Launcher files: facts at exact lines, variables, arrays, sourced files, #SBATCH."""

import os

import pytest

from preflight.extract import extract_file
from preflight.extract.launchers import parse_command
from preflight.plan import Origin

REPO = os.path.join(os.path.dirname(__file__), "fixtures", "launch", "repo")


@pytest.fixture(autouse=True)
def in_repo(monkeypatch):
    monkeypatch.chdir(REPO)


def facts(pairs):
    return {n: f for n, f in pairs}


def test_torchrun_with_sourced_vars_arrays_arithmetic_and_continuations():
    e = extract_file("launch/train.sh")
    assert e.kind == "shell" and e.diagnostics == []
    assert e.references[0] == "launch/env.sh"
    (inv,) = e.invocations
    assert inv.script == "train.py"
    assert str(inv.source) == "launch/train.sh:8:1"
    # ${NNODES:-2} from the sourced file, $((NNODES * GPUS_PER_NODE)), the array with a comment
    assert inv.args[:4] == ["--batch_size", "4", "--world", "16"]
    f = facts(inv.facts)
    assert (f["nodes"].value, f["nodes"].origin) == (2, Origin.CONFIG)
    assert (f["gpus_per_node"].value, f["gpus_per_node"].reason) == (8, "--nproc_per_node 8")


def test_unset_variable_is_unknown_with_the_reason(monkeypatch):
    monkeypatch.delenv("NUM_GPUS", raising=False)
    (inv,) = extract_file("launch/unknown.sh").invocations
    f = facts(inv.facts)["gpus_per_node"]
    assert not f.known
    assert f.reason == "--nproc_per_node: $NUM_GPUS is not set in the script (comes from the environment)"
    assert str(f.source) == "launch/unknown.sh:2:10"


def test_sbatch_header_gres_gpu_model_and_slurm_variables():
    e = extract_file("slurm/job.sbatch")
    f = facts(e.facts)
    assert (f["nodes"].value, str(f["nodes"].source)) == (2, "slurm/job.sbatch:3:9")
    assert (f["gpus_per_node"].value, str(f["gpus_per_node"].source)) == (8, "slurm/job.sbatch:4:9")
    assert f["gpu"].value == "H100-SXM5-80GB"
    (inv,) = e.invocations
    # $SLURM_NNODES is taken from the #SBATCH --nodes header
    assert facts(inv.facts)["nodes"].value == 2
    assert inv.args == ["--batch_size", "2"]


def test_missing_hostfile_is_pf006_and_nodes_unknown():
    e = extract_file("launch/multi.sh")
    (d,) = e.diagnostics
    assert (d.code, d.path, d.line) == ("PF006", "launch/multi.sh", 2)
    assert "missing_hostfile" in d.message
    assert not facts(e.invocations[0].facts)["nodes"].known


def test_a_lines_findings_go_to_its_own_call():
    words = ["deepspeed", "--hostfile", "no_such_hostfile", "train.py"]
    first: list = []
    parse_command(words, cwd=".", diagnostics=first)
    assert [d.code for d in first] == ["PF006"]
    second: list = []
    parse_command(["torchrun", "--nproc_per_node", "2", "train.py"], cwd=".", diagnostics=second)
    parse_command(words, cwd=".")           # no list given: its finding is dropped, not kept
    assert second == [] and len(first) == 1


@pytest.mark.parametrize("prefix,nodes", [
    (["env", "-u", "X", "A=1"], 1),
    (["srun", "-N", "2", "--ntasks-per-node", "1"], 2),
    (["mpirun", "-np", "4", "-x", "NCCL_DEBUG"], 1),
    (["nohup", "B=2", "time"], 1),
])
def test_launch_prefixes_are_skipped_alike(prefix, nodes):
    # the launcher found after the prefix and the facts the prefix's options fix
    inv = parse_command(prefix + ["torchrun", "--nproc_per_node", "2", "train.py", "--bs", "4"])
    assert inv is not None and inv.script == "train.py" and inv.args == ["--bs", "4"]
    assert inv.launcher == "torchrun"
    assert (facts(inv.facts)["nodes"].value, facts(inv.facts)["gpus_per_node"].value) == (nodes, 2)


def test_hostfile_slots_give_nodes_and_gpus(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "hosts").write_text("worker-1 slots=4\nworker-2 slots=4\n# comment\n")
    (tmp_path / "run.sh").write_text("deepspeed --hostfile hosts train.py --deepspeed ds.json\n")
    (inv,) = extract_file("run.sh").invocations
    f = facts(inv.facts)
    assert (f["nodes"].value, f["gpus_per_node"].value) == (2, 4)
    assert inv.configs == ["ds.json"]


def test_accelerate_flags_and_if_branch_taken_statically(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "run.sh").write_text(
        'SIZE=small\n'
        'if [ "$SIZE" == "big" ]; then\n'
        '  NP=64\n'
        'elif [ "$SIZE" == "small" ]; then\n'
        '  NP=4\n'
        'else\n'
        '  NP=1\n'
        'fi\n'
        'CMD="accelerate launch --num_processes $NP --mixed_precision bf16 --use_fsdp"\n'
        '$CMD -m pkg.train --lr 1e-4\n')
    (inv,) = extract_file("run.sh").invocations
    f = facts(inv.facts)
    assert f["world_size"].value == 4
    assert f["mixed_precision"].value == "bf16"
    assert f["fsdp"].value == "full_shard"
    assert (inv.module, inv.script, inv.args) == ("pkg.train", "pkg.train", ["--lr", "1e-4"])
    assert str(inv.source) == "run.sh:10:1"


def test_srun_plain_python_takes_tasks_per_node(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "job.sh").write_text(
        "#!/bin/bash\n#SBATCH -N 4 --ntasks-per-node=8\n"
        'srun sh -c "python -u pretrain.py --micro-batch-size 2"\n')
    e = extract_file("job.sh")
    assert facts(e.facts)["nodes"].value == 4
    (inv,) = e.invocations
    assert facts(inv.facts)["gpus_per_node"].value == 8
    assert inv.script == "pretrain.py"


def test_parse_command_is_the_launcher_line_parser():
    words = ["torchrun", "--nproc_per_node=8", "--nnodes", "1", "train.py", "--batch_size", "4"]
    inv = parse_command(words, origin=Origin.CLI)
    f = facts(inv.facts)
    assert (f["gpus_per_node"].value, f["gpus_per_node"].origin) == (8, Origin.CLI)
    assert f["nodes"].value == 1
    assert (inv.script, inv.args) == ("train.py", ["--batch_size", "4"])


def test_python_dash_m_torch_distributed_run_and_standalone():
    inv = parse_command(["python", "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
                         "train.py"])
    f = facts(inv.facts)
    assert (f["nodes"].value, f["gpus_per_node"].value) == (1, 2)


def test_makefile_recipe_line(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "Makefile").write_text(
        "NGPU ?= 4\nCONFIG := configs/ds.json\n\ntrain:\n\t@torchrun --nproc_per_node $(NGPU) train.py --deepspeed $(CONFIG)\n")
    (inv,) = extract_file("Makefile").invocations
    assert str(inv.source) == "Makefile:5:1"
    assert facts(inv.facts)["gpus_per_node"].value == 4
    assert inv.configs == ["configs/ds.json"]


def test_sbatch_constraint_and_gpus_per_node(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "job.sh").write_text(
        "#!/bin/bash\n"
        "#SBATCH --nodes 3\n"
        "#SBATCH --gpus-per-node=4 --exclusive\n"
        "#SBATCH --constraint=a100_80gb\n"
        "srun python train.py\n")
    f = facts(extract_file("job.sh").facts)
    assert (f["nodes"].value, str(f["nodes"].source)) == (3, "job.sh:2:9")
    assert (f["gpus_per_node"].value, str(f["gpus_per_node"].source)) == (4, "job.sh:3:9")
    assert (f["gpu"].value, str(f["gpu"].source)) == ("A100-SXM4-80GB", "job.sh:4:9")


def test_sbatch_of_a_repository_file_with_options(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "submit.sh").write_text("NN=4\nsbatch --nodes $NN -p gpu job.sh\n")
    (tmp_path / "job.sh").write_text("#!/bin/bash\n#SBATCH --gres=gpu:8\nsrun torchrun --nnodes 4 --nproc_per_node 8 train.py\n")
    e = extract_file("submit.sh")
    f = facts(e.facts)
    assert (f["nodes"].value, str(f["nodes"].source)) == (4, "submit.sh:2:8")
    assert (f["gpus_per_node"].value, str(f["gpus_per_node"].source)) == (8, "job.sh:2:9")
    (inv,) = e.invocations
    assert str(inv.source) == "job.sh:3:1"
    assert e.references == ["job.sh"]


def test_undecidable_branches_make_differing_values_unknown(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MODEL", raising=False)
    (tmp_path / "run.sh").write_text(
        'NP=8\n'
        'if [ "$MODEL" == "7b" ]; then\n'
        '  NN=1\n'
        'else\n'
        '  NN=4\n'
        'fi\n'
        'torchrun --nnodes $NN --nproc_per_node $NP train.py\n')
    (inv,) = extract_file("run.sh").invocations
    f = facts(inv.facts)
    assert f["gpus_per_node"].value == 8              # the same in every branch
    assert not f["nodes"].known
    assert "set differently in the branches of `if [ " in f["nodes"].reason


def test_case_on_a_known_value_takes_its_branch(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "run.sh").write_text(
        'SIZE=${SIZE:-70b}\n'
        'case $SIZE in\n'
        '  7b|8b) NN=1 ;;\n'
        '  70b)\n'
        '    NN=4\n'
        '    ;;\n'
        '  *) NN=16 ;;\n'
        'esac\n'
        'for i in 1 2; do echo $i; done\n'
        'torchrun --nnodes $NN --nproc_per_node 8 train.py\n')
    monkeypatch.delenv("SIZE", raising=False)
    (inv,) = extract_file("run.sh").invocations
    assert facts(inv.facts)["nodes"].value == 4


def test_an_unknown_piece_carries_its_own_reason():
    from preflight.lang.shell.values import mark, readable, reason_of

    s = "torchrun --nproc_per_node " + mark("$NGPU is set when the job is launched") + " train.py"
    assert len(s.split()) == 4                  # word splitting keeps the marker whole
    assert reason_of(s) == "$NGPU is set when the job is launched"
    assert readable(s) == "torchrun --nproc_per_node <?> train.py"
    assert reason_of("torchrun train.py") is None
