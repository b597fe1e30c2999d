"""torchtitan model names (`[model] name/flavor`, `--model.name/--model.flavor`) reach the
model resolver; `[tool.preflight.models]` entries apply to any model name."""

import json

import pytest

from preflight.engine import load_rules
from preflight.resolve.entry import facts_for_name
from tests.conftest import run_cli
from preflight.testing import check_example


def titan(flavor: str, name: str = "llama3") -> str:
    return ("[job]\ndump_folder = \"./outputs\"\n\n"
            f"[model]\nname = \"{name}\"\nflavor = \"{flavor}\"\n\n"
            "[training]\nlocal_batch_size = 1\nseq_len = 8192\nmixed_precision_param = \"bfloat16\"\n\n"
            "[parallelism]\ndata_parallel_shard_degree = -1\ntensor_parallel_degree = 8\n")


def catalogue_params(hub_name: str) -> int:
    return dict(facts_for_name(hub_name))["params"].value


def facts(r) -> dict:
    assert r.returncode in (0, 1), r.stdout + r.stderr
    assert "Traceback" not in r.stderr
    (job,) = json.loads(r.stdout)["jobs"]
    return job["facts"]


@pytest.mark.parametrize("flavor,hub,billions", [
    ("8B", "meta-llama/Meta-Llama-3-8B", 8.0),
    ("70B", "meta-llama/Meta-Llama-3-70B", 70.6),
    ("405B", "meta-llama/Llama-3.1-405B", 405.9)])
def test_torchtitan_toml_flavor_resolves_to_a_parameter_count(tmp_path, flavor, hub, billions):
    (tmp_path / ".git").mkdir()
    (tmp_path / "job.toml").write_text(titan(flavor))
    f = facts(run_cli("check", "--format", "json", "job.toml", cwd=str(tmp_path)))
    assert f["model"]["value"] == f"llama3:{flavor}"
    assert f["params"]["origin"] == "catalog"
    assert f["params"]["value"] == catalogue_params(hub)
    assert round(f["params"]["value"] / 1e9, 1) == billions
    assert f"torchtitan llama3 flavor {flavor}" in f["params"]["reason"]


def test_command_line_model_flags_override_the_toml(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / "job.toml").write_text(titan("8B"))
    f = facts(run_cli("check", "--format", "json", "--", "torchrun", "--nproc_per_node", "8",
                      "-m", "torchtitan.train", "--job.config_file", "job.toml",
                      "--model.flavor", "70B", cwd=str(tmp_path)))
    assert f["model"]["value"] == "llama3:70B" and f["model"]["origin"] == "cli"
    assert f["params"]["value"] == catalogue_params("meta-llama/Meta-Llama-3-70B")

    g = facts(run_cli("check", "--format", "json", "--", "torchrun", "--nproc_per_node", "8",
                      "-m", "torchtitan.train", "--model.name", "llama3", "--model.flavor", "8B",
                      cwd=str(tmp_path)))
    assert g["params"]["value"] == catalogue_params("meta-llama/Meta-Llama-3-8B")


def test_project_models_entry_applies_to_torchtitan_and_catalogue_names(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        "[tool.preflight.models]\n"
        "\"llama3:debugmodel\" = 123456789\n"
        "\"llama3:8B\" = 7000000000\n"
        "\"meta-llama/Llama-2-7b-hf\" = 6500000000\n")
    (tmp_path / "debug.toml").write_text(titan("debugmodel"))
    (tmp_path / "big.toml").write_text(titan("8B"))
    from preflight.rules._common import hf_script
    (tmp_path / "train.py").write_text(hf_script("meta-llama/Llama-2-7b-hf"))
    for path, want in (("debug.toml", 123456789), ("big.toml", 7000000000), ("train.py", 6500000000)):
        f = facts(run_cli("check", "--format", "json", path, cwd=str(tmp_path)))
        assert (f["params"]["value"], f["params"]["origin"]) == (want, "project"), path
        assert "[tool.preflight.models]" in f["params"]["reason"]


PF108 = next(r for r in load_rules(entry_points=False) if r.code == "PF108")


@pytest.mark.parametrize("kind,ex", [("INVALID", e) for e in PF108.INVALID]
                         + [("VALID", e) for e in PF108.VALID])
def test_pf108_examples_resolve_params_and_fire_where_expected(kind, ex, tmp_path, monkeypatch):
    res = check_example(ex, tmp_path)
    diags, missing = res.diagnostics, res.missing
    assert missing == []                 # params resolved: the example is not skipped
    got = {(d.code, d.path, d.line) for d in diags if d.code == "PF108"}
    assert got == (set(ex.expect) if kind == "INVALID" else set())
    if kind == "INVALID":
        assert got                       # it fires
