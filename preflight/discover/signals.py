"""The cheap text tests of a file discovery asks (no parsing): is a Python file runnable,
does it use a training API and show a training step, which modules does it import, does a
YAML / TOML carry training settings or configure a script, does a launcher launch — each
over the start of the file, read once per run.
"""

from __future__ import annotations

import ast
import functools
import os
import re
from typing import Any

from preflight import safe_read
from preflight.discover.paths import MAX_SCAN_BYTES, absolute
from preflight.lang.notebook import is_databricks
# the walked files' tests run thousands of times a run: imported once, not per call
from preflight.extract.python import mentions_training_api
from preflight.extract.recognise import is_training_config, may_launch, runs_training


def parses(path: str) -> bool:
    """A module that does not parse is reported as its own job, not hidden in another."""
    try:
        ast.parse(head(path))
        return True
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False


def head(path: str) -> str:
    """The start of a file, read once per run (the memo is emptied as a run's walked
    files are tested, `WalkTests`, and as `discover` starts): placing the given files asks
    the same scripts' text once per file placed, and the walk's test of a file
    (`cache.signal`) has just looked at its size and time."""
    return read_head(path)


@functools.lru_cache(maxsize=512)
def read_head(path: str) -> str:
    try:
        return safe_read.read_text(path, MAX_SCAN_BYTES, truncate=True)
    except OSError:
        return ""


def training(path: str) -> bool:
    """Does a Python file mention a training API at all (the extractor's own pre-check)?"""
    return mentions_training_api(head(path))


def module_name(path: str) -> str:
    """The name a module file is imported by (its package's for an `__init__.py`)."""
    name = os.path.splitext(os.path.basename(path))[0]
    if name == "__init__":
        name = os.path.basename(os.path.dirname(absolute(path)))
    return name


_IMPORT_LINE = re.compile(r"^[ \t]*(?:from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]+\(?([\w \t,]*)|"
                          r"import[ \t]+([\w. \t,]+))", re.M)


def imported_modules(text: str) -> list[tuple[int, tuple[str, ...]]]:
    """(relative level, dotted parts) of every module the import statements of `text` may
    load: `from a.b import c` may load a.b or a.b.c; `from . import m` loads m beside."""
    out: list[tuple[int, tuple[str, ...]]] = []
    for m in _IMPORT_LINE.finditer(text):
        dots, mod, names, plain = m.groups()
        if plain is not None:
            for item in plain.split(","):
                words = item.split()
                if words:
                    out.append((0, tuple(words[0].split("."))))
            continue
        level = len(dots or "")
        base = tuple(x for x in (mod or "").split(".") if x)
        if base:
            out.append((level, base))
        for item in (names or "").split(","):
            words = item.split()
            if words and words[0].isidentifier():
                out.append((level, base + (words[0],)))
    return out


def is_module(path: str, level: int, parts: tuple[str, ...], importer: str, root: str) -> bool:
    """Is the file `path` the module `parts` imported (at relative `level`) by `importer`?
    An absolute import matches a file whose trailing folders spell the dotted name; a
    relative one, the file at that place beside the importer."""
    a = os.path.splitext(absolute(path))[0]
    if a.endswith(os.sep + "__init__"):
        a = a[: -len("__init__") - 1]
    if level:
        base = os.path.dirname(absolute(importer))
        for _ in range(level - 1):
            base = os.path.dirname(base)
        return a == os.path.join(base, *parts)
    return a.endswith(os.sep + os.path.join(*parts))


def imports(text: str, path: str) -> bool:
    """Does `text` import the module file `path` (`import m`, `from m import`, `from .m`,
    `from pkg.m import`, `import pkg.m`)? A cheap text test."""
    name = os.path.splitext(os.path.basename(path))[0]
    if name == "__init__":
        name = os.path.basename(os.path.dirname(os.path.abspath(path)))
    n = re.escape(name)
    return re.search(rf"^[ \t]*(?:from[ \t]+\.*(?:[\w.]*\.)?{n}(?:\.[\w.]+)?[ \t]+import\b|"
                     rf"from[ \t]+[\w.]+[ \t]+import[ \t]+\(?[ \t]*(?:[\w \t,]*,[ \t]*)?{n}\b|"
                     rf"import[ \t]+(?:[\w. \t]*,[ \t]*)?(?:[\w.]*\.)?{n}\b)", text, re.M) is not None


#: (`[ \t]*`, not `\s*`: a `\s*` run over thousands of blank lines backtracks per line)
_RECIPE_KEYS = re.compile(
    r"^[ \t]*\[?(base_model|model_name(_or_path)?|checkpoint_dir|micro_batch_size|sequence_len|"
    r"gradient_accumulation_steps|per_device_train_batch_size|learning_rate|global_batch_size|"
    r"train_micro_batch_size_per_gpu|seq_len|max_seq_length|cutoff_len|lr)\b", re.M)


def recipe(path: str) -> bool:
    """Does a YAML / TOML file carry training settings (a recipe), by its keys? A cheap text test."""
    return _RECIPE_KEYS.search(head(path)) is not None


_CLI_MARKERS = ("CLI(", "jsonargparse", "LightningCLI", "fire.Fire", "--config")


def configures(text: str, path: str) -> bool:
    """Is the YAML `path` a config for the script `text`: the script takes a config file on a
    command line (jsonargparse, LightningCLI, fire, `--config`) and most of the YAML's
    top-level keys are names in the script? A cheap text test."""
    if not path.lower().endswith((".yaml", ".yml")) or not any(m in text for m in _CLI_MARKERS):
        return False
    keys = set(re.findall(r"^([A-Za-z_]\w*):", head(path), re.M))
    if len(keys) < 3:
        return False
    # a key is a name in the script when it is one of the script's words (`\bkey\b`): one
    # pass over the script, not one search per key (thousands of keys, each a scan)
    hits = len(keys & _words(text))
    return hits >= max(3, (len(keys) + 1) // 2)


@functools.lru_cache(maxsize=64)
def _words(text: str) -> frozenset[str]:
    return frozenset(re.findall(r"\w+", text))


_HYDRA_PATH = re.compile(r"""\bconfig_path\s*=\s*(?:f?["']([^"'{}]+)["'])""")


def hydra_config(text: str, script: str, path: str) -> bool:
    """Is the config `path` under a Hydra config directory of the script `script` (whose
    text is `text`): `@hydra.main(config_path="conf")` / `initialize(config_path=…)`, the
    directory relative to the script? Its config groups (`conf/trainer/default.yaml`) are
    composed into the script's job, not jobs of their own. A cheap text test."""
    if "hydra" not in text or not path.lower().endswith((".yaml", ".yml")):
        return False
    target = os.path.abspath(path)
    for m in _HYDRA_PATH.finditer(text):
        base = os.path.abspath(os.path.join(os.path.dirname(script), m.group(1)))
        if target.startswith(base.rstrip(os.sep) + os.sep):
            return True
    return False


def names_file(text: str, path: str) -> bool:
    """Does `text` name the config file `path` (its file name, in any string)?"""
    return os.path.basename(path) in text


def is_entry(path: str) -> bool:
    """Does a Python file look runnable (a `__main__` guard, fire / CLI entry) rather than a
    module that only defines things? A cheap text test."""
    if not os.path.exists(path):
        return True
    return runnable(head(path))


#: what `training_entry` says of a Databricks notebook exported as source
DATABRICKS_NOTEBOOK = "databricks notebook"


def training_entry(path: str) -> Any:
    """Is a walked Python file the entry of a training job: runnable, using a training API
    and showing a training step? `DATABRICKS_NOTEBOOK` for a Databricks notebook exported
    as source whose cells may train or launch (read as a notebook). One read of the file."""
    text = head(path)
    if is_databricks(text):
        return DATABRICKS_NOTEBOOK if any(w in text for w in _NOTEBOOK_LAUNCH + (
            "backward(", ".train(", "Trainer(")) else False
    return runnable(text) and mentions_training_api(text) and runs_training(text)


#: what a notebook's JSON shows when a cell launches a training program
_NOTEBOOK_LAUNCH = ("accelerate launch", "torchrun", "deepspeed", "%run ", "!python", "%%writefile")


def notebook_may_train(path: str) -> bool:
    """Could a walked notebook train, in its own kernel or through a launch line? (Its
    raw JSON: a training step or a launcher word; only those are parsed.) The whole file is
    looked at, not its head: a cell's outputs (a plot, a long log) may come before the
    training code."""
    try:
        text = safe_read.read_text(path, safe_read.MAX_BYTES, truncate=True)
    except OSError:
        return False
    return runs_training(text) or any(w in text for w in _NOTEBOOK_LAUNCH)


def training_config(path: str) -> bool:
    return is_training_config(path, head(path))


def may_launch_file(path: str) -> bool:
    return may_launch(head(path))


def runnable(text: str) -> bool:
    # a `__main__` guard, or a module-level CLI call (not one inside a helper function).
    # Every such line holds one of the words: only the lines where a word occurs are
    # matched — most files of a repository have none, and the rest one or two (a
    # `getLogger(__name__)`), where the multi-line pattern over the whole text is slow
    for w in _ENTRY_WORDS:
        i = text.find(w)
        while i != -1:
            if ENTRY.match(text, text.rfind("\n", 0, i) + 1):
                return True
            i = text.find(w, text.find("\n", i) + 1 or len(text))
    return False


_ENTRY_WORDS = ("__name__", "Fire", "CLI", "auto_cli", "typer")
ENTRY = re.compile(r"^(?:if\s+__name__\s*==|(?:\w+\s*=\s*)?(?:fire\.Fire|(?:\w+\.)?(?:Lightning)?CLI|"
                   r"auto_cli|typer\.run)\s*\()", re.M)
