"""Inputs of the shapes that make a reader super-linear, for every language preflight reads:
thousands of blank or repeated lines, continuation lines, many keys, many list items, deep
nesting, long lines. Each shape is a function of a byte size that returns (file name, text)
no longer than that size: a valid job file of its language (so that discovery tests it and
the reader reads it) whose body is the shape repeated.

Shared by the CI suite (`tests/test_fuzz_shapes.py`: outcomes) and the timing bench
(`bench/fuzz.py --shapes`: seconds per language, shape and size).
"""

from __future__ import annotations

import json
from typing import Callable

#: the largest input the bench and the tests generate (the product's promise: any input
#: up to this size is checked in well under 2 s)
MAX_SIZE = 64 * 1024

_PY_HEAD = ("import argparse\nimport torch\nfrom transformers import AutoModelForCausalLM\n"
            "p = argparse.ArgumentParser()\np.add_argument('--batch_size', type=int, default=4)\n"
            "args = p.parse_args()\n"
            "model = AutoModelForCausalLM.from_pretrained('gpt2')\n"
            "opt = torch.optim.AdamW(model.parameters())\n")
_PY_TAIL = ("\nif __name__ == '__main__':\n    loss = model(torch.ones(args.batch_size, 128,"
            " dtype=torch.long)).logits.sum()\n    loss.backward()\n    opt.step()\n")
_SH_HEAD = "#!/bin/bash\nNPROC=8\ntorchrun --nproc_per_node=$NPROC train.py --batch_size 4\n"
_YAML_HEAD = "base_model: gpt2\nmicro_batch_size: 2\nsequence_len: 1024\n"
_TOML_HEAD = "[training]\nlocal_batch_size = 8\nseq_len = 2048\n\n[model]\nname = \"llama3\"\n"
_MAKE_HEAD = "NPROC = 8\n\ntrain:\n\ttorchrun --nproc_per_node=$(NPROC) train.py --batch_size 4\n"


def _fill(head: str, unit: str, tail: str, size: int) -> str:
    """`head`, then `unit` as many times as fits, then `tail`: at most `size` bytes."""
    room = size - len(head.encode()) - len(tail.encode())
    n = max(1, room // max(1, len(unit.encode())))
    return head + unit * n + tail


def _nest(open_: str, close: str, inner: str, size: int, head: str = "", tail: str = "") -> str:
    room = size - len(head) - len(tail) - len(inner)
    n = max(1, room // (len(open_) + len(close)))
    return head + open_ * n + inner + close * n + tail


# --------------------------------------------------------------------------- Python

def _py(unit: str, head: str = _PY_HEAD, tail: str = _PY_TAIL) -> Callable[[int], tuple[str, str]]:
    return lambda size: ("train.py", _fill(head, unit, tail, size))


def _py_long_line(size: int) -> tuple[str, str]:
    room = size - len(_PY_HEAD) - len(_PY_TAIL) - 20
    return "train.py", _PY_HEAD + "xs = [" + "1, " * (room // 3) + "]\n" + _PY_TAIL


def _py_deep(size: int) -> tuple[str, str]:
    # nested parentheses: a parser's recursion, not its loops
    return "train.py", _nest("(", ")", "1", min(size, 6000), _PY_HEAD + "x = ", "\n" + _PY_TAIL)


def _py_deep_blocks(size: int) -> tuple[str, str]:
    lines, depth = [], 0
    while sum(map(len, lines)) < min(size, 60 * 95) - 200 and depth < 95:
        lines.append("    " * depth + "if args.batch_size:\n")
        depth += 1
    body = "".join(lines) + "    " * depth + "pass\n"
    return "train.py", _PY_HEAD + body + _PY_TAIL


def _py_dict(size: int) -> tuple[str, str]:
    head = _PY_HEAD + "cfg = {\n"
    tail = "}\n" + _PY_TAIL
    room = size - len(head) - len(tail)
    keys = "".join(f"    'key_{i}': {i},\n" for i in range(room // 20))
    while len(head) + len(keys) + len(tail) > size:
        keys = keys[: keys.rfind("    '", 0, len(keys) - 1)]
    return "train.py", head + keys + tail


PYTHON = {
    "blank lines": _py("\n"),
    "repeated lines": _py("args.batch_size = 8\n"),
    "repeated calls": _py("opt.step()\n"),
    # one logical line of backslash-continued physical lines
    "continuation lines": _py("    1 + \\\n", head=_PY_HEAD + "x = \\\n", tail="    1\n" + _PY_TAIL),
    "bracket continuation": _py("    1,\n", head=_PY_HEAD + "xs = [\n", tail="]\n" + _PY_TAIL),
    "many keys": _py_dict,
    "many arguments": _py("p.add_argument('--x', type=int, default=1)\n"),
    "long line": _py_long_line,
    "deep nesting": _py_deep,
    "deep blocks": _py_deep_blocks,
    "comments": _py("# a comment line that says nothing at all\n"),
    # each function calls the one before twice: an evaluator that follows calls without
    # a memo or a budget doubles its work per line
    "call chain": lambda size: ("train.py", _PY_HEAD + "def f0():\n    return 1\n" + "".join(
        f"def f{i}():\n    return f{i - 1}() + f{i - 1}()\n" for i in range(1, min(size // 40, 1000)))
        + f"args.batch_size = f{min(size // 40, 1000) - 1}()\n" + _PY_TAIL),
    "assignment chain": lambda size: ("train.py", _PY_HEAD + "x0 = 1\n" + "".join(
        f"x{i} = x{i - 1} + x{i - 1}\n" for i in range(1, min(size // 22, 2000)))
        + f"args.batch_size = x{min(size // 22, 2000) - 1}\n" + _PY_TAIL),
}

# --------------------------------------------------------------------------- shell


def _sh(unit: str, head: str = _SH_HEAD, tail: str = "") -> Callable[[int], tuple[str, str]]:
    return lambda size: ("launch.sh", _fill(head, unit, tail, size))


def _sh_long_line(size: int) -> tuple[str, str]:
    room = size - len(_SH_HEAD) - 40
    return "launch.sh", _SH_HEAD + "torchrun train.py" + " --batch_size 4" * (room // 15) + "\n"


def _sh_deep(size: int) -> tuple[str, str]:
    n = min(size // 40, 400)
    body = "if [ -n \"$NPROC\" ]; then\n" * n + "torchrun train.py\n" + "fi\n" * n
    return "launch.sh", _SH_HEAD + body


SHELL = {
    "blank lines": _sh("\n"),
    # the torchrun line followed by thousands of repeated command lines (a mutated real
    # launcher): a 16 KB one of bare `torchrun` lines took 22 s
    "repeated launcher lines": _sh("torchrun\n"),
    "repeated command lines": _sh("echo done $NPROC\n"),
    "repeated launches": _sh("torchrun --nproc_per_node=$NPROC train.py --batch_size 4\n"),
    "continuation lines": _sh("  --batch_size 4 \\\n", head=_SH_HEAD + "torchrun train.py \\\n",
                              tail="  --lr 1\n"),
    "repeated assignments": _sh("NPROC=8\n"),
    "many variables": lambda size: ("launch.sh", _SH_HEAD + "".join(
        f"V{i}=$V{max(0, i - 1)}\n" for i in range(size // 14))[: size - len(_SH_HEAD)]),
    "long line": _sh_long_line,
    "deep nesting": _sh_deep,
    "comments": _sh("# a comment line that says nothing at all\n"),
    "variable doubling": lambda size: ("launch.sh", _SH_HEAD.replace("torchrun", "V0=ab\ntorchrun")
        + "".join(f'V{i}="$V{i - 1}$V{i - 1}"\n' for i in range(1, min(size // 20, 2000)))
        + f"torchrun train.py --batch_size 4 --name $V{min(size // 20, 2000) - 1}\n"),
    "array doubling": lambda size: ("launch.sh", _SH_HEAD.replace("torchrun", "A=(a b)\ntorchrun")
        + 'A=("${A[@]}" "${A[@]}")\n' * min((size - 150) // 24, 2000)
        + 'torchrun train.py --batch_size 4 "${A[@]}"\n'),
    "function chain": lambda size: ("launch.sh", _SH_HEAD + "f0() { echo 1; }\n" + "".join(
        f"f{i}() {{ f{i - 1}; f{i - 1}; }}\n" for i in range(1, min(size // 30, 1000)))
        + f"f{min(size // 30, 1000) - 1}\n"),
}

MAKEFILE = {
    "blank lines": lambda size: ("Makefile", _fill(_MAKE_HEAD, "\n", "", size)),
    "repeated recipe lines": lambda size: ("Makefile", _fill(_MAKE_HEAD, "\techo done\n", "", size)),
    "continuation lines": lambda size: ("Makefile", _fill(
        _MAKE_HEAD + "\ttorchrun train.py \\\n", "\t  --batch_size 4 \\\n", "\t  --lr 1\n", size)),
    "many targets": lambda size: ("Makefile", _MAKE_HEAD + "".join(
        f"t{i}:\n\ttorchrun train.py --batch_size {i}\n" for i in range(size // 40))[: size - len(_MAKE_HEAD)]),
}

# --------------------------------------------------------------------------- YAML


def _yaml(unit: str, head: str = _YAML_HEAD, tail: str = "") -> Callable[[int], tuple[str, str]]:
    return lambda size: ("recipe.yaml", _fill(head, unit, tail, size))


def _yaml_keys(size: int) -> tuple[str, str]:
    body = "".join(f"key_{i}: {i}\n" for i in range(size // 10))
    return "recipe.yaml", (_YAML_HEAD + body)[:size].rsplit("\n", 1)[0] + "\n"


def _yaml_deep_block(size: int) -> tuple[str, str]:
    lines, depth, used = [], 0, len(_YAML_HEAD) + 20
    while used + 4 * depth + 10 < size and depth < 300:
        lines.append("  " * depth + f"k{depth}:\n")
        used += len(lines[-1])
        depth += 1
    return "recipe.yaml", _YAML_HEAD + "".join(lines) + "  " * depth + "v: 1\n"


YAML = {
    # a 20 KB recipe with 20,000 blank lines: 0.8 s named, 15 s through a directory walk
    "blank lines": _yaml("\n", tail="learning_rate: 0.0001\n"),
    "blank lines between keys": _yaml("\n" * 50 + "lr: 1\n"),
    "whitespace lines": _yaml("      \n", tail="learning_rate: 0.0001\n"),
    "repeated lines": _yaml("# micro_batch_size: 2\n"),
    "duplicate keys": _yaml("micro_batch_size: 2\n"),
    "many keys": _yaml_keys,
    "many list items": _yaml("  - item\n", head=_YAML_HEAD + "datasets:\n"),
    "many flow items": _yaml("1, ", head=_YAML_HEAD + "xs: [", tail="1]\n"),
    "multi-line plain scalar": _yaml("  continued words\n", head=_YAML_HEAD + "note: first\n",
                                     tail="lr: 1\n"),
    "block scalar": _yaml("  a line of text\n", head=_YAML_HEAD + "note: |\n", tail="lr: 1\n"),
    "quoted multi-line scalar": _yaml("  continued\n", head=_YAML_HEAD + 'note: "first\n',
                                      tail='  end"\nlr: 1\n'),
    "deep block nesting": _yaml_deep_block,
    "deep flow nesting": lambda size: ("recipe.yaml", _nest("[", "]", "1", size, _YAML_HEAD + "x: ", "\n")),
    "long line": lambda size: ("recipe.yaml", _fill(_YAML_HEAD + "note: ", "word ", "\n", size)),
    "long key line": lambda size: ("recipe.yaml", _fill(_YAML_HEAD, "k", ": 1\n", size)),
    "anchors and aliases": lambda size: ("recipe.yaml", _YAML_HEAD + "a0: &a0 [1, 2]\n" + "".join(
        f"a{i}: &a{i} [*a{i - 1}, *a{i - 1}]\n" for i in range(1, min(size // 30, 400)))),
    "interpolations": _yaml("x: ${micro_batch_size}\n"),
    # each value twice the one before: a resolver without a budget doubles per line
    "interpolation chain": lambda size: ("recipe.yaml", _YAML_HEAD + "k0: ab\n" + "".join(
        f"k{i}: ${{k{i - 1}}}${{k{i - 1}}}\n" for i in range(1, min(size // 24, 2000)))),
    "documents": _yaml("---\nlr: 1\n"),
}

# --------------------------------------------------------------------------- JSON

_DS = '"train_micro_batch_size_per_gpu": 4, "zero_optimization": {"stage": 2}'


def _json_keys(size: int) -> tuple[str, str]:
    d: dict = {"train_micro_batch_size_per_gpu": 4, "zero_optimization": {"stage": 2}}
    used, i = len(json.dumps(d, indent=1)), 0
    while used + 40 < size:
        d[f"key_{i}"] = i
        used += len(f'\n "key_{i}": {i},')
        i += 1
    return "ds_config.json", json.dumps(d, indent=1)


def _json_fill(unit: str, head: str = "{" + _DS + ',\n "xs": [', tail: str = "1]}\n"):
    return lambda size: ("ds_config.json", _fill(head, unit, tail, size))


JSON = {
    "many keys": _json_keys,
    "many list items": _json_fill("1,\n"),
    "blank lines": _json_fill("\n", head="{" + _DS + ",\n", tail='"x": 1}\n'),
    "whitespace": _json_fill(" ", head="{" + _DS + ",", tail='"x": 1}\n'),
    "deep nesting": lambda size: ("ds_config.json", _nest('{"a": ', "}", "1", size, "{" + _DS + ', "n": ', "}\n")),
    "deep list nesting": lambda size: ("ds_config.json", _nest("[", "]", "1", size, "{" + _DS + ', "n": ', "}\n")),
    "long string": _json_fill("x", head="{" + _DS + ', "s": "', tail='"}\n'),
    "duplicate keys": _json_fill('"train_micro_batch_size_per_gpu": 4,\n', head="{" + _DS + ",\n",
                                 tail='"x": 1}\n'),
}

# --------------------------------------------------------------------------- TOML


def _toml(unit: str, head: str = _TOML_HEAD, tail: str = "") -> Callable[[int], tuple[str, str]]:
    return lambda size: ("train.toml", _fill(head, unit, tail, size))


TOML = {
    "blank lines": _toml("\n", tail="lr = 1\n"),
    "whitespace lines": _toml("    \n", tail="lr = 1\n"),
    "comments": _toml("# a comment line that says nothing at all\n"),
    "many keys": lambda size: ("train.toml", (_TOML_HEAD + "".join(
        f"key_{i} = {i}\n" for i in range(size // 10)))[:size].rsplit("\n", 1)[0] + "\n"),
    "many tables": lambda size: ("train.toml", (_TOML_HEAD + "".join(
        f"[t{i}]\nx = 1\n" for i in range(size // 10)))[:size].rsplit("\n[", 1)[0] + "\n"),
    "many array items": _toml("  1,\n", head=_TOML_HEAD + "xs = [\n", tail="]\n"),
    "array of tables": _toml("[[jobs]]\nx = 1\n"),
    "long line": _toml("1, ", head=_TOML_HEAD + "xs = [", tail="1]\n"),
    # a dotted table name with a long run of blanks before its dot (valid TOML)
    "long header line": _toml(" ", head=_TOML_HEAD + "[a", tail=".b]\nx = 1\n"),
    "unclosed header": _toml(" ", head=_TOML_HEAD + "[", tail="x\n"),
    "multi-line string": _toml("a line of text\n", head=_TOML_HEAD + 'note = """\n', tail='"""\n'),
    "deep inline tables": lambda size: ("train.toml", _nest("{a = ", "}", "1", min(size, 4000),
                                                             _TOML_HEAD + "x = ", "\n")),
}

#: language -> shape -> size -> (file name, text)
LANGUAGES: dict[str, dict[str, Callable[[int], tuple[str, str]]]] = {
    "python": PYTHON, "shell": SHELL, "makefile": MAKEFILE, "yaml": YAML, "json": JSON,
    "toml": TOML,
}

#: the companion script a launcher, recipe or config of a generated project runs
COMPANION = ("import argparse\nimport torch\np = argparse.ArgumentParser()\n"
             "p.add_argument('--batch_size', type=int, default=4)\nargs = p.parse_args()\n"
             "model = torch.nn.Linear(8, 8)\nopt = torch.optim.AdamW(model.parameters())\n"
             "if __name__ == '__main__':\n    model(torch.ones(args.batch_size, 8)).sum().backward()\n"
             "    opt.step()\n")


def shapes() -> list[tuple[str, str, Callable[[int], tuple[str, str]]]]:
    """(language, shape, generator) of every shape, in a fixed order."""
    return [(lang, shape, gen) for lang, table in LANGUAGES.items() for shape, gen in table.items()]
