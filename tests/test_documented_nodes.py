"""The node count of a multi-GPU job no launcher states, read from the comment right above
the command the repository's README documents (`preflight.resolve.documented`)."""

import textwrap

import pytest

import preflight
from preflight.plan import Origin

#: a config that sets 16 processes (FSDP 4 × replicas 2 × TP 2) and no launcher
CONFIG = """\
base_model: meta-llama/Llama-3.1-8B
dp_shard_size: 4
dp_replicate_size: 2
tensor_parallel_size: 2
micro_batch_size: 1
gradient_accumulation_steps: 1
sequence_len: 2048
"""

README = """\
# Parallelism examples

```bash
# Train on a single 8-GPU node
axolotl train examples/small.yaml

# Train Llama 3.1 8B with HSDP + TP on 2 nodes (16 GPUs total)
axolotl train examples/{name}
```
"""


def _plan(tmp_path, readme, name="big.yaml", config=CONFIG):
    (tmp_path / "examples").mkdir()
    (tmp_path / "examples" / name).write_text(config)
    (tmp_path / "examples" / "small.yaml").write_text(config.replace("dp_replicate_size: 2",
                                                                     "dp_replicate_size: 1"))
    if readme is not None:
        (tmp_path / "examples" / "README.md").write_text(textwrap.dedent(readme))
    r = preflight.check([str(tmp_path / "examples" / name)], cache=False)
    assert r.jobs
    return next(j for j in r.jobs if j.job.entry.endswith(name)).job.plan


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)


def test_the_comment_above_the_documented_command_gives_the_nodes(tmp_path):
    plan = _plan(tmp_path, README.format(name="big.yaml"))
    assert plan.value("world_size") == 16
    n = plan.fact("nodes")
    assert (n.value, n.origin) == (2, Origin.INFERRED)
    assert (n.source.path, n.source.line) == ("examples/README.md", 7)
    assert n.reason == ('examples/README.md:7 documents the command that runs big.yaml as: '
                        '"Train Llama 3.1 8B with HSDP + TP on 2 nodes (16 GPUs total)"')
    g = plan.fact("gpus_per_node")
    assert (g.value, g.origin) == (8, Origin.INFERRED)


def test_a_single_node_in_words(tmp_path):
    plan = _plan(tmp_path, README.format(name="big.yaml"), name="small.yaml",
                 config=CONFIG.replace("dp_replicate_size: 2", "dp_replicate_size: 1"))
    assert plan.value("world_size") == 8
    assert (plan.value("nodes"), plan.fact("nodes").origin) == (1, Origin.INFERRED)
    assert plan.value("gpus_per_node") == 8


@pytest.mark.parametrize("readme,why", [
    (None, "no README"),
    (README.format(name="big.yaml").replace("(16 GPUs total)", "(32 GPUs total)"),
     "a stated total that is not the job's world size"),
    (README.format(name="big.yaml").replace("on 2 nodes", "on 3 nodes"),
     "a count that does not divide the world size"),
    (README.format(name="big.yaml") + "\n```bash\n# or on 4 nodes\naxolotl train examples/big.yaml\n```\n",
     "two documented commands that disagree"),
    (README.format(name="other.yaml"), "a command of another file"),
])
def test_nothing_documented_or_disagreeing_keeps_the_assumption(tmp_path, readme, why):
    plan = _plan(tmp_path, readme)
    n = plan.fact("nodes")
    assert (n.value, n.origin) == (1, Origin.ASSUMED), why
    assert not plan.known("gpus_per_node"), why


def test_a_launcher_that_states_the_nodes_wins(tmp_path):
    (tmp_path / "examples").mkdir()
    (tmp_path / "examples" / "big.yaml").write_text(CONFIG)
    (tmp_path / "examples" / "README.md").write_text(README.format(name="big.yaml"))
    r = preflight.check([str(tmp_path / "examples" / "big.yaml")], cache=False,
                        command=["torchrun", "--nnodes", "4", "--nproc_per_node", "4", "-m",
                                 "axolotl.cli.train", "examples/big.yaml"])
    plan = r.jobs[0].job.plan
    assert (plan.value("nodes"), plan.fact("nodes").origin) == (4, Origin.CLI)
