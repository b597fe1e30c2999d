"""The script's command line as text: `--key value` options split out of the argument
list, and a value given as text converted to the type an argument declares (argparse's
`type=`, a dataclass field's annotation) or read as a Python literal.
"""

from __future__ import annotations

import ast
from typing import Any, Optional


def convert(text: str, typ: Optional[str]) -> Any:
    if typ == "int":
        try:
            return int(text)
        except ValueError:
            return int(float(text))
    if typ == "float":
        return float(text)
    if typ == "bool":
        low = text.lower()
        if low in ("true", "1", "yes", "y", "t"):
            return True
        if low in ("false", "0", "no", "n", "f"):
            return False
        raise ValueError(text)
    if typ == "str":
        return text
    # no type: argparse gives str; nanoGPT's configurator uses literal_eval
    return text


def literal_or_str(text: str) -> Any:
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return text


def parse_cli(args: list[str]) -> tuple[dict[str, list[Optional[str]]], list[str]]:
    """`--a 1 --b=2 --flag pos` → ({'a': ['1'], 'b': ['2'], 'flag': [None]}, ['pos'])

    A flag's value is the next token unless that starts with `--`. Values are kept as
    strings and converted per the argument's declared type when looked up."""
    opts: dict[str, list[Optional[str]]] = {}
    pos: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        if a.startswith("--") and len(a) > 2:
            body = a[2:]
            if "=" in body:
                k, val = body.split("=", 1)
                opts.setdefault(k, []).append(val)
            elif i + 1 < len(args) and not (args[i + 1].startswith("--") and len(args[i + 1]) > 2):
                opts.setdefault(body, []).append(args[i + 1])
                i += 1
            else:
                opts.setdefault(body, []).append(None)
        elif a.startswith("-") and len(a) == 2 and not a[1].isdigit():
            if i + 1 < len(args) and not args[i + 1].startswith("-"):
                opts.setdefault(a, []).append(args[i + 1])
                i += 1
            else:
                opts.setdefault(a, []).append(None)
        else:
            pos.append(a)
        i += 1
    return opts, pos


def safe_convert(x: str, typ: Optional[str]) -> Any:
    try:
        return convert(x, typ if typ in ("int", "float", "str", "bool") else None)
    except (ValueError, OverflowError):
        return x
