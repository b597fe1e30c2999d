"""Files given together that belong together stay one job (a launcher or a recipe with the
modules and documents of the framework it runs; a YAML that configures a CLI script)."""

import json
import subprocess

import pytest

from tests.conftest import run_cli

LAUNCHER = "#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --gpus-per-node=8\nsrun torchrun --nproc_per_node 8 -m pkg.train --job.config_file cfg.toml\n"
REGISTRY = "import torch\n\ndef llama_debug():\n    return dict(lr=3e-4, steps=10)\n"
RECIPE = "base_model: meta-llama/Llama-2-7b-hf\nmicro_batch_size: 2\nsequence_len: 4096\ngradient_accumulation_steps: 4\nbf16: true\n"
LOADER = "import torch\nfrom transformers import AutoModelForCausalLM\n\ndef load(cfg):\n    return AutoModelForCausalLM.from_pretrained(cfg.base_model)\n"
CLI_SCRIPT = ("import torch\nfrom jsonargparse import CLI\n\n"
              "def setup(checkpoint_dir, out_dir='out', precision='bf16-true', devices=1, micro_batch_size=4):\n"
              "    optimizer = torch.optim.AdamW([torch.zeros(1)])\n\n"
              "if __name__ == '__main__':\n    CLI(setup)\n")
CLI_YAML = ("checkpoint_dir: checkpoints/meta-llama/Meta-Llama-3-8B\nout_dir: out/full\n"
            "precision: bf16-true\ndevices: 4\ntrain:\n  micro_batch_size: 1\n")


@pytest.fixture
def repo(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    for name, text in {"run.slurm": LAUNCHER, "registry.py": REGISTRY, "README.md": "# how to run\n",
                       "recipe.yml": RECIPE, "loader.py": LOADER,
                       "full.py": CLI_SCRIPT, "full.yaml": CLI_YAML}.items():
        (tmp_path / name).write_text(text)
    return tmp_path


def jobs(*files, cwd):
    r = run_cli("check", "--format", "json", "--exit-zero", *files, cwd=str(cwd))
    assert r.returncode == 0, r.stderr
    return {j["entry"]: j["files"] for j in json.loads(r.stdout)["jobs"]}


def test_a_launcher_claims_the_modules_and_documents_given_with_it(repo):
    got = jobs("run.slurm", "registry.py", "README.md", cwd=repo)
    assert len(got) == 1
    (files,) = got.values()
    assert {"run.slurm", "registry.py", "README.md"} <= set(files)


def test_a_recipe_claims_the_framework_modules_given_with_it(repo):
    got = jobs("recipe.yml", "loader.py", "README.md", cwd=repo)
    assert got == {"recipe.yml": ["recipe.yml", "loader.py", "README.md"]}


def test_a_yaml_whose_keys_are_the_cli_parameters_configures_that_script(repo):
    got = jobs("full.yaml", "full.py", cwd=repo)
    assert got == {"full.py": ["full.py", "full.yaml"]}
    r = run_cli("check", "--format", "json", "--exit-zero", "full.yaml", "full.py", cwd=str(repo))
    facts = json.loads(r.stdout)["jobs"][0]["facts"]
    assert facts["micro_batch"]["value"] == 1 and facts["micro_batch"]["source"].startswith("full.yaml:6")
