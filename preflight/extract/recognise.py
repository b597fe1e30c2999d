"""Cheap text signals that say, before anything is parsed, whether a file found by a
directory walk is part of training: a config file recognised by its content, a Python
script that runs a training step, a launcher that launches something.

Each is a plain function of the file's text, so the frameworks' own adapters can answer
instead of these tables.
"""

from __future__ import annotations

import re

#: DeepSpeed's own top-level keys (a quoted JSON key, or a YAML / TOML key)
_DEEPSPEED_KEYS = ("zero_optimization", "train_micro_batch_size_per_gpu", "train_batch_size",
                   "zero_allow_untested_optimizer")
_DEEPSPEED = re.compile(r"""\b(%s)\b["']?\s*[:=]""" % "|".join(_DEEPSPEED_KEYS))
# A line's indent is `[ \t]*`, never `\s*`: under re.M, `^\s*` tried at each line start
# runs on over all the blank lines that follow (quadratic in a run of blank lines).
#: accelerate's config file (`accelerate config` writes these)
_ACCELERATE = re.compile(r"^[ \t]*(compute_environment|distributed_type)\s*:", re.M)
#: training settings of recipe files (axolotl, LLaMA-Factory, torchtune, torchtitan,
#: litgpt, Hydra trainers, HF TrainingArguments as JSON / YAML)
_RECIPE = re.compile(
    r"""^[ \t]*["']?(base_model|model_name_or_path|micro_batch_size|sequence_len|"""
    r"""gradient_accumulation_steps|per_device_train_batch_size|global_batch_size|"""
    r"""local_batch_size|batch_size|seq_len|max_seq_length|max_seq_len|cutoff_len|"""
    r"""learning_rate|lr|num_train_epochs|max_steps|optimizer|mixed_precision|precision|"""
    r"""bf16|fp16|gradient_checkpointing|activation_checkpoint\w*|fsdp\w*|deepspeed|"""
    r"""zero_stage|tensor_parallel\w*|data_parallel\w*)["']?\s*[:=]""", re.M)
_TOML_TRAINING = re.compile(r"^[ \t]*\[(training|optimizer|parallelism|model|job)\]", re.M)
#: keys only the record of a finished run has (the Trainer's trainer_state.json and
#: all_results.json, a benchmark's results file): its settings describe a run that is over
_RUN_RECORD = re.compile(
    r"""^[ \t]*"(log_history|best_metric|best_model_checkpoint|train_runtime|"""
    r"""train_samples_per_second|train_steps_per_second|total_flos|train_info|"""
    r"""eval_results|train_metrics)"\s*:""", re.M)


def is_training_config(path: str, text: str) -> bool:
    """Is a JSON / YAML / TOML file a training config by its own content (a DeepSpeed
    config, an accelerate config, a recipe with at least two training settings)? A
    package.json, a docs site config, a CI workflow, a data file or the JSON record of a
    finished run (trainer_state.json, a benchmark's results with the settings it ran
    with beside what it measured) is not."""
    if path.lower().endswith(".json") and _RUN_RECORD.search(text):
        return False
    if any(k in text for k in _DEEPSPEED_KEYS) and _DEEPSPEED.search(text):
        return True
    if _ACCELERATE.search(text):
        return True
    if path.lower().endswith(".toml") and len(set(_TOML_TRAINING.findall(text))) >= 2:
        return True
    return len({m.group(1) for m in _RECIPE.finditer(text)}) >= 2


#: a training step, or a framework call that runs one (substrings: `in` is ~1000× faster
#: than a regex alternation over a whole file)
_TRAINS = (".backward(", ".step(", ".fit(", "train(", "Trainer(", "deepspeed.initialize(",
           "fabric.", "accelerator.prepare(")


def runs_training(text: str) -> bool:
    """Does a runnable Python file show a training step (`loss.backward()`,
    `optimizer.step()`, `trainer.train()`, `Trainer(`, `deepspeed.initialize(`, …)?"""
    return any(k in text for k in _TRAINS)


#: programs a launcher runs a training job with
_LAUNCHES = re.compile(r"\b(python[\d.]*|torchrun|accelerate|deepspeed|srun|sbatch|mpirun|"
                       r"tune|composer|axolotl|litgpt|llamafactory-cli|lightning|fabric|swift|oumi|"
                       r"torch\.distributed\.\w+)\b|\.py\b|\bbash\b|\bsource\b|\.sh\b")


def may_launch(text: str) -> bool:
    """Could a shell script or Makefile launch a training job (it names a launcher
    program, a Python file or another script)? Only those are parsed."""
    return _LAUNCHES.search(text) is not None


#: `python -m` modules that install, test, build or serve: a recipe running one of them
#: launches no training
TOOL_MODULES = frozenset({
    "venv", "virtualenv", "pip", "ensurepip", "pytest", "unittest", "doctest", "build",
    "twine", "setuptools", "wheel", "http.server", "json.tool", "black", "ruff", "isort",
    "mypy", "flake8", "pylint", "coverage", "tox", "nox", "sphinx", "mkdocs", "pre_commit",
    "jupyter", "notebook", "ipykernel", "pdb", "timeit", "cProfile", "compileall",
    "py_compile", "zipfile", "tarfile", "pydoc", "pip_audit", "uv",
})
#: Python files that configure packaging or tests, never a training entry
TOOL_SCRIPTS = frozenset({"setup.py", "conftest.py", "noxfile.py", "manage.py"})


def launches_training(module: str | None, script: str | None) -> bool:
    """Is a `python [-m module | script]` line a possible training launch, rather than
    `python -m venv`, `python -m pytest`, `python setup.py install`?"""
    if module:
        return module.split()[0] not in TOOL_MODULES
    if script:
        return script.replace("\\", "/").rsplit("/", 1)[-1] not in TOOL_SCRIPTS
    return True
