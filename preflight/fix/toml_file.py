"""Edits of TOML configs (torchtitan jobs, `[tool.preflight]`) with tomlkit, which keeps
comments, order and layout. The key edited is the one at the fact's line, looked up in
the table whose header stands above it."""

from __future__ import annotations

import re
from typing import Any

from preflight.fix.edits import FactEdit, Unspellable
from preflight.fix.spelling import render

# no two repeats can match the same characters: linear on a long line that does not close
_HEADER = re.compile(r"[ \t]*\[\[?([^\]]+)\]\]?[ \t]*(?:#.*)?$")
_KEYLINE = re.compile(r"^\s*([A-Za-z0-9_.\"'-]+)\s*=")


def _path_at(lines: list[str], i: int) -> tuple[list[str], str]:
    m = _KEYLINE.match(lines[i])
    if m is None:
        raise Unspellable(f"no TOML key at line {i + 1}")
    key = m.group(1)
    table: list[str] = []
    for j in range(i, -1, -1):
        h = _HEADER.match(lines[j])
        if h:
            if lines[j].lstrip().startswith("[["):
                raise Unspellable("keys in arrays of tables are not edited")
            table = [p.strip().strip('"\'') for p in h.group(1).strip().split(".")]
            break
    return table + [p.strip().strip('"\'') for p in key.split(".")[:-1]], \
        key.split(".")[-1].strip('"\'')


def edit_toml(text: str, edits: list[FactEdit]) -> tuple[str, list[str]]:
    # here, not at the top: a check imports this module before its job workers fork
    # (pipeline._JOB_MODULES) and pays for tomlkit only when a TOML file is edited
    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    try:
        doc = tomlkit.parse(text)
    except TOMLKitError as e:
        raise Unspellable(f"the TOML does not parse: {e}") from None
    lines = text.splitlines()
    for e in edits:
        i = e.source.line - 1
        if not 0 <= i < len(lines):
            raise Unspellable(f"line {e.source.line} is not in the file")
        path, key = _path_at(lines, i)
        node: Any = doc
        for p in path:
            if p not in node:
                raise Unspellable(f"table {'.'.join(path)} not found")
            node = node[p]
        if key not in node:
            raise Unspellable(f"{key} not found in [{'.'.join(path)}]")
        old = node[key]
        plain = old.unwrap() if hasattr(old, "unwrap") else old
        v = render(e.fact, e.value, key, plain)
        if v is None:
            raise Unspellable(f"{key} at line {e.source.line} cannot say {e.fact} = {e.value}")
        node[key] = v
    return tomlkit.dumps(doc), []
