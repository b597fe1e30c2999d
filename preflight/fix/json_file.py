"""Edits of JSON configs (DeepSpeed): JSON keeps no comments, so a value is replaced where
it stands and a new member is inserted at the head of the object it belongs to, with the
indentation of that object's members — the rest of the file is untouched byte for byte.

The standard `json` module has no positions and a round trip through it would rewrite
the whole layout; the edits here touch one token or add one line."""

from __future__ import annotations

import json
import re

from preflight.fix.edits import FactEdit, Unspellable
from preflight.fix.spelling import render

_KEY = re.compile(r'"(?P<key>(?:[^"\\]|\\.)*)"\s*:\s*')
_VALUE = re.compile(r'"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null')

#: a fact whose key is absent → (the object key the extractor points at, new member)
NEW_MEMBERS = {("offload", "zero_optimization"): ("offload_optimizer", {"device": "cpu"})}


def edit_json(text: str, edits: list[FactEdit]) -> tuple[str, list[str]]:
    lines = text.splitlines(keepends=True)
    notes: list[str] = []
    for e in edits:
        i = e.source.line - 1
        if not 0 <= i < len(lines):
            raise Unspellable(f"line {e.source.line} is not in the file")
        line = lines[i]
        m = _KEY.match(line, max(0, e.source.col - 1))
        if m is None:
            raise Unspellable(f"no JSON key at line {e.source.line}, column {e.source.col}")
        key = m.group("key")
        if line[m.end():m.end() + 1] == "{":
            member = NEW_MEMBERS.get((e.fact, key))
            if member is None or e.value == "none":
                raise Unspellable(f'"{key}" at line {e.source.line} has no member for {e.fact}')
            name, val = member
            nxt = lines[i + 1] if i + 1 < len(lines) else ""
            indent = nxt[:len(nxt) - len(nxt.lstrip())] or "  "
            ins = f'\n{indent}"{name}": {json.dumps(val)},'
            at = m.end() + 1
            lines[i] = line[:at] + ins + line[at:]
            notes.append(f'"{name}": {json.dumps(val)} added to "{key}" at line {e.source.line}: '
                         f"DeepSpeed reads it there; without it nothing is offloaded")
            continue
        v = _VALUE.match(line, m.end())
        if v is None:
            raise Unspellable(f'"{key}" at line {e.source.line} holds no plain value')
        old = json.loads(v.group(0))
        new = render(e.fact, e.value, key, old)
        if new is None:
            raise Unspellable(f'"{key}" cannot say {e.fact} = {e.value}')
        lines[i] = line[:v.start()] + json.dumps(new) + line[v.end():]
    return "".join(lines), notes
