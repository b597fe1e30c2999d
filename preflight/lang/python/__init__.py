"""A small static evaluator for Python training scripts.

It interprets the script's syntax tree abstractly — never importing or running it — and
knows just enough Python to follow configuration values: module constants, arithmetic,
string formatting, dict/list literals, function calls inside the file (inlined, with their
arguments bound), `argparse` arguments, `HfArgumentParser`/`TrlParser` dataclasses, library
defaults, `os.environ`, and nanoGPT's `exec(open(configurator).read())` pattern.

Every value is a `V`: the value, how it was known (origin) and where it was written
(line, col). What cannot be known statically is a `V` with value `UNK` and a reason.
Recognising training APIs (optimizers, precision, parallelism…) is the hook object's job
(`preflight.extract.py_patterns.Patterns`, handed in by the extractor that creates the
`Evaluator`); the evaluator calls its `on_call` for every call whose target it could name,
and takes the library dataclasses' defaults and the shared parse from its `Hooks`.

The tree is the standard library's `ast` (C parser, exact positions for free); the libcst
Module for later stages is parsed once by `preflight.extract.python`.

The modules, one part of the language each: `values` (V, UNK and the evaluator's objects),
`budgets`, `source` (a node's text), `cli` (the command line as text), `scopes`,
`statements` (and control flow), `expressions`, `calls`, `builtin_calls` (builtins, str
and dict methods), `arguments` (argparse, arguments dataclasses, function CLIs' flags and
the updaters that copy them onto config dataclasses), `dataclass_cli` (tyro,
simple_parsing, draccus / pyrallis), `config_files` (YAML / JSON documents the script
loads itself), `modules` (other modules of the repository followed into) and `evaluator`
(the class composed of them). `cli_examples` holds the command-line languages' examples,
which the tests run.
"""

from preflight.lang.python.calls import SPAWN_CALLS
from preflight.lang.python.cli import literal_or_str, parse_cli
from preflight.lang.python.evaluator import Evaluator, Hooks
from preflight.lang.python.modules import resolve_path
from preflight.lang.python.source import source_text
from preflight.lang.python.values import (SPLAT, UNK, ArgsNS, ClassVal, DCInst, Dotted, FuncVal,
                                          KDict, Obj, V, current_path, plain, splat_fields, unk)

__all__ = ["SPAWN_CALLS", "SPLAT", "UNK", "ArgsNS", "ClassVal", "DCInst", "Dotted", "Evaluator", "FuncVal",
           "Hooks", "KDict", "Obj", "V", "current_path", "literal_or_str", "parse_cli", "plain",
           "resolve_path", "source_text", "splat_fields", "unk"]
