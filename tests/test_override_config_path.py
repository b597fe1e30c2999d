"""`config=path.yaml` on the command line of an OmegaConf / Hydra app: the override names
the job's config document; the program is the repository's module it runs."""
import json

from preflight.frameworks._common import script_configs
from preflight.lang.overrides import config_path
from tests.conftest import run_cli


def test_an_override_naming_a_config_gives_its_path():
    assert config_path("config=apps/configs/run.yaml") == "apps/configs/run.yaml"
    assert config_path("+model.cfg=m.yaml") == "m.yaml"
    assert config_path("train_config=t.json") == "t.json"


def test_other_overrides_name_no_config():
    assert config_path("optim.lr=3e-4") is None
    assert config_path("data.train=x.json") is None      # a data file, not a config
    assert config_path("~config") is None
    assert config_path("--config=c.yaml") is None          # an option, read as before


def test_script_configs_take_the_value_not_the_word():
    assert script_configs(["config=c.yaml", "steps=10", "data.path=d.json"], ".") == ["c.yaml"]
    assert script_configs(["--config", "c.yaml"], ".") == ["c.yaml"]


def test_a_file_an_option_reads_as_data_or_writes_is_no_config():
    args = ["--in-files", "raw/a.json", "raw/b.json", "--out-file", "split.json", "--save_path=stats.json",
            "--train_file", "d.jsonl", "--dataset_config", "ds.yaml", "--deepspeed", "z3.json",
            "--args", "run.yaml", "pos.yaml"]
    assert script_configs(args, ".") == ["ds.yaml", "z3.json", "run.yaml", "pos.yaml"]


CONFIG = """\
distributed:
  tp_size: 2
data:
  seq_len: 1024
"""

TRAIN = """\
import torch
from omegaconf import OmegaConf

def main():
    cli = OmegaConf.from_cli()
    cfg = OmegaConf.load(cli.config)
    model = torch.nn.Linear(8, 8)
    opt = torch.optim.AdamW(model.parameters())

if __name__ == "__main__":
    main()
"""


def test_a_module_of_the_repository_with_a_config_override_is_the_program(tmp_path):
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "__init__.py").write_text("")
    (tmp_path / "app" / "train.py").write_text(TRAIN)
    (tmp_path / "app" / "run.yaml").write_text(CONFIG)
    r = run_cli("check", "--format", "json", "--exit-zero", "--no-cache", "--", "torchrun",
                "--nproc-per-node", "4", "-m", "app.train", "config=app/run.yaml",
                cwd=str(tmp_path))
    assert "Traceback" not in r.stderr, r.stderr
    out = json.loads(r.stdout)
    job = out["jobs"][0]
    assert job["entry"] == "app/train.py"
    assert "app/run.yaml" in job["files"]
    assert job["facts"]["optimizer"]["value"] == "adamw"
    assert job["facts"]["seq_len"] == {**job["facts"]["seq_len"], "value": 1024,
                                       "origin": "inferred", "source": "app/run.yaml:4:3"}
    # the word `config=app/run.yaml` is no missing file
    assert not any(d["code"] == "PF006" for d in out["diagnostics"] + job["diagnostics"])
