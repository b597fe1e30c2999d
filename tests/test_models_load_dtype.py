"""The dtype `from_pretrained` loads a model in, by the transformers version the job pins.

transformers ≥ 5 defaults to `dtype="auto"` (the checkpoint's dtype); 4.x loaded float32
unless `torch_dtype` was given. The version is read from the project files nearest to the
script; without one the current major is assumed and the fact's reason says so.
"""

import json

import pytest

from preflight.extract.pins import find_pin
from preflight.models import catalog
from tests.conftest import run_cli

SCRIPT = """\
import torch
from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
model = AutoModelForCausalLM.from_pretrained({name!r}{kw})
args = TrainingArguments(output_dir="o", per_device_train_batch_size=2, bf16=True,
                         optim="adamw_torch")
Trainer(model=model, args=args).train()
"""


def param_dtype(tmp_path, name="Qwen/Qwen2.5-0.5B", kw="", files=None):
    (tmp_path / "train.py").write_text(SCRIPT.format(name=name, kw=kw))
    for rel, text in (files or {}).items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    r = run_cli("check", "train.py", "--gpu", "h100", "--no-cache", "--format", "json",
                cwd=str(tmp_path))
    return json.loads(r.stdout)["jobs"][0]["facts"]["param_dtype"]


# ------------------------------------------------------------------ the pins


@pytest.mark.parametrize("name,text,major,line", [
    ("requirements.txt", "torch\n# pinned\ntransformers==4.44.2  # for peft\n", 4, 3),
    ("requirements-train.txt", "transformers>=4.40,<5\n", 4, 1),
    # a lower bound alone: the major the project was written against
    ("requirements.txt", "transformers>=4.40\n", 4, 1),
    ("requirements.txt", "transformers>=4.40,<6\n", 5, 1),
    ("requirements.txt", "transformers\n", 5, 1),
    ("pyproject.toml", '[project]\nname = "x"\ndependencies = [\n  "torch",\n'
                       '  "transformers~=4.46",\n]\n', 4, 5),
    ("pyproject.toml", '[tool.poetry.dependencies]\npython = "^3.10"\n'
                       'transformers = "^4.38"\n', 4, 3),
    ("setup.py", "from setuptools import setup\nsetup(name='x', install_requires=[\n"
                 "    'accelerate', 'transformers>=5.0'])\n", 5, 3),
    ("environment.yml", "dependencies:\n  - python=3.11\n  - pip:\n"
                        "    - transformers==4.41.2\n", 4, 4),
    ("uv.lock", 'version = 1\n\n[[package]]\nname = "transformers"\nversion = "4.57.1"\n', 4, 4),
    ("poetry.lock", '[[package]]\nname = "transformers"\nversion = "5.1.0"\n', 5, 2),
    ("Pipfile.lock", json.dumps({"default": {"transformers": {"version": "==4.45.0"}}}), 4, 1),
])
def test_pins_in_every_kind_of_project_file(tmp_path, name, text, major, line):
    (tmp_path / name).write_text(text)
    pin = find_pin("transformers", str(tmp_path))
    assert pin is not None and (pin.major, pin.line) == (major, line)
    assert pin.where == f"{name}:{line}"


def test_the_nearest_pin_wins_and_the_walk_stops_at_the_repository(tmp_path):
    (tmp_path / "requirements.txt").write_text("transformers==4.44.0\n")
    sub = tmp_path / "repo" / "train"
    sub.mkdir(parents=True)
    (tmp_path / "repo" / ".git").mkdir()
    assert find_pin("transformers", str(sub)) is None        # above the repository: not read
    (tmp_path / "repo" / "pyproject.toml").write_text(
        '[project]\nname = "x"\ndependencies = ["transformers==5.2.0"]\n')
    (sub / "requirements.txt").write_text("transformers==4.46.1\n")
    assert find_pin("transformers", str(sub)).major == 4      # the script's own directory
    (sub / "requirements.txt").write_text("datasets\n")
    assert find_pin("transformers", str(sub)).major == 5      # then the repository root


def test_a_lock_file_comes_before_the_requirements_beside_it(tmp_path):
    (tmp_path / "requirements.txt").write_text("transformers\n")
    (tmp_path / "uv.lock").write_text('[[package]]\nname = "transformers"\nversion = "4.50.0"\n')
    assert find_pin("transformers", str(tmp_path)).major == 4


def test_broken_project_files_pin_nothing(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project\n")
    (tmp_path / "setup.py").write_text("setup(install_requires=[\n")
    (tmp_path / "requirements.txt").write_text("transformers @@@ ==\n")
    (tmp_path / ".git").mkdir()
    assert find_pin("transformers", str(tmp_path)) is None


# ------------------------------------------------------------------ the fact


def test_transformers_5_loads_the_checkpoints_dtype_and_says_the_version_was_assumed(tmp_path):
    f = param_dtype(tmp_path)
    assert f["value"] == "bf16" and f["origin"] == "default"
    assert f["reason"] == (
        "from_pretrained without dtype loads the checkpoint's dtype in transformers ≥ 5 "
        "(dtype=\"auto\"): bfloat16, the checkpoint's dtype (catalogue entry "
        "Qwen/Qwen2.5-0.5B); no transformers version pinned near the script: the current "
        "major, 5, assumed")


def test_a_4x_pin_loads_float32(tmp_path):
    f = param_dtype(tmp_path, files={"requirements.txt": "transformers==4.44.2\n"})
    assert f["value"] == "fp32"
    assert f["reason"] == ("from_pretrained without torch_dtype loads float32 weights in "
                           "transformers 4.x; transformers 4.x (transformers==4.44.2 in "
                           "requirements.txt:1)")


def test_a_5x_pin_is_named(tmp_path):
    f = param_dtype(tmp_path, name="meta-llama/Llama-2-7b-hf",
                    files={"pyproject.toml": '[project]\nname = "x"\n'
                                             'dependencies = ["transformers>=5"]\n'})
    assert f["value"] == "fp16"
    assert f["reason"].endswith("transformers 5.x (transformers>=5 in pyproject.toml:3)")


def test_dtype_auto_is_the_checkpoints_under_any_version(tmp_path):
    f = param_dtype(tmp_path, kw=', torch_dtype="auto"',
                    files={"requirements.txt": "transformers==4.40.0\n"})
    assert f["value"] == "bf16" and f["reason"].startswith('dtype="auto": bfloat16')


def test_an_explicit_dtype_is_the_scripts(tmp_path):
    f = param_dtype(tmp_path, kw=", dtype=torch.float32")
    assert f["value"] == "fp32" and f["origin"] == "literal"


def test_an_unrecorded_checkpoint_dtype_is_unknown_under_5(tmp_path):
    # a fine-tune borrows its base model's shape, not its dtype
    f = param_dtype(tmp_path, name="meta-llama/Llama-2-7b-chat-hf")
    assert f["value"] is None and f["origin"] == "unknown"
    assert "meta-llama/Llama-2-7b-chat-hf's is not known" in f["reason"]


def test_catalogue_dtypes_are_dtypes():
    for m in catalog.entries():
        assert m.get("checkpoint_dtype") in (None, "bf16", "fp16", "fp32"), m["name"]
    assert catalog.checkpoint_dtype("gpt2") == ("fp32", "gpt2")
    assert catalog.checkpoint_dtype("mistralai/Mistral-7B-v0.1")[0] == "bf16"
    assert catalog.checkpoint_dtype("meta-llama/Llama-2-7b-chat-hf") is None


def test_transformers_itself_loads_a_saved_bf16_checkpoint_in_bf16(tmp_path):
    """The instrument: the installed transformers (5.x) on a tiny checkpoint saved in
    bf16, loaded without a dtype; preflight reads the same from its config.json."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    assert int(transformers.__version__.split(".")[0]) >= 5
    cfg = transformers.GPT2Config(n_layer=1, n_embd=32, n_head=2, vocab_size=64, n_positions=16)
    transformers.GPT2LMHeadModel(cfg).to(torch.bfloat16).save_pretrained(tmp_path / "tiny")
    loaded = transformers.AutoModelForCausalLM.from_pretrained(str(tmp_path / "tiny"))
    assert next(loaded.parameters()).dtype == torch.bfloat16
    f = param_dtype(tmp_path, name="./tiny",
                    files={"requirements.txt": f"transformers=={transformers.__version__}\n"})
    assert f["value"] == "bf16" and "config.json" in f["reason"]


def test_a_config_read_first_then_the_load_with_config_follows_the_pin(tmp_path):
    """`AutoConfig.from_pretrained(name)` then `from_pretrained(name, config=config)`: the
    weights are loaded by the second call, whose dtype the pinned version decides."""
    (tmp_path / "requirements.txt").write_text("transformers>=4.31\n")
    (tmp_path / "train.py").write_text(
        "import transformers\n"
        "name = 'meta-llama/Llama-2-7b-hf'\n"
        "config = transformers.AutoConfig.from_pretrained(name)\n"
        "config.use_cache = False\n"
        "model = transformers.AutoModelForCausalLM.from_pretrained(name, config=config)\n"
        "args = transformers.TrainingArguments(output_dir='o', per_device_train_batch_size=2)\n"
        "transformers.Trainer(model=model, args=args).train()\n")
    r = run_cli("check", "train.py", "--gpu", "h100", "--no-cache", "--format", "json",
                cwd=str(tmp_path))
    f = json.loads(r.stdout)["jobs"][0]["facts"]["param_dtype"]
    assert (f["value"], f["origin"]) == ("fp32", "default")
    assert f["source"].startswith("train.py:5:")
    assert "transformers 4.x" in f["reason"] and "requirements.txt:1" in f["reason"]
