"""Position-tracking readers for config formats: every value keyed by its path, with the
line and column of its key (JSON, YAML) — the stdlib parsers keep no positions.

`json_positions(text)` parses JSON with a tiny recursive-descent reader; it is only run after
`json.loads` accepted the text, so it can stay small. `yaml_tree(text)` composes YAML with
`yaml.SafeLoader` (composition builds nodes and never constructs objects, so a
`!!python/object` tag is just a tag) and converts nodes itself.
"""

from __future__ import annotations

import json
import re
from typing import Any, Optional

Path = tuple
Pos = tuple[int, int]            # 1-based line, 1-based column


# --------------------------------------------------------------------------- JSON

_WS = re.compile(r"[ \t\r\n]*")
_NUM = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?")


class _JsonPos:
    def __init__(self, text: str):
        self.s = text
        self.pos: dict[Path, Pos] = {}
        # line starts for offset → (line, col)
        self.starts = [0] + [m.end() for m in re.finditer(r"\n", text)]

    def lc(self, off: int) -> Pos:
        import bisect
        i = bisect.bisect_right(self.starts, off) - 1
        return i + 1, off - self.starts[i] + 1

    def ws(self, i: int) -> int:
        return _WS.match(self.s, i).end()

    def value(self, i: int, path: Path) -> tuple[Any, int]:
        i = self.ws(i)
        c = self.s[i]
        if c == "{":
            out: dict = {}
            i = self.ws(i + 1)
            if self.s[i] == "}":
                return out, i + 1
            while True:
                i = self.ws(i)
                kstart = i
                key, i = self.string(i)
                self.pos[path + (key,)] = self.lc(kstart)
                i = self.ws(i)
                i += 1                       # ':'
                val, i = self.value(i, path + (key,))
                out[key] = val
                i = self.ws(i)
                if self.s[i] == ",":
                    i += 1
                    continue
                return out, i + 1            # '}'
        if c == "[":
            arr: list = []
            i = self.ws(i + 1)
            if self.s[i] == "]":
                return arr, i + 1
            while True:
                i = self.ws(i)
                self.pos[path + (len(arr),)] = self.lc(i)
                val, i = self.value(i, path + (len(arr),))
                arr.append(val)
                i = self.ws(i)
                if self.s[i] == ",":
                    i += 1
                    continue
                return arr, i + 1
        if c == '"':
            return self.string(i)
        for lit, v in (("true", True), ("false", False), ("null", None)):
            if self.s.startswith(lit, i):
                return v, i + len(lit)
        m = _NUM.match(self.s, i)
        txt = m.group(0)
        return (float(txt) if any(ch in txt for ch in ".eE") else int(txt)), m.end()

    def string(self, i: int) -> tuple[str, int]:
        j = i + 1
        while self.s[j] != '"':
            j += 2 if self.s[j] == "\\" else 1
        return json.loads(self.s[i:j + 1]), j + 1


def json_positions(text: str, value: Any = None) -> tuple[Any, dict[Path, Pos]]:
    """(value, {path: (line, col)}). Raises json.JSONDecodeError on malformed input.
    Pass `value` when the text was already parsed."""
    if value is None:
        value = json.loads(text)
    p = _JsonPos(text)
    try:
        p.value(0, ())
    except (IndexError, AttributeError, ValueError):  # pragma: no cover - json.loads accepted it
        pass
    return value, p.pos


# --------------------------------------------------------------------------- long numbers

#: Python's int() refuses more digits than this (CVE-2020-10735), so do json and tomllib
INT_MAX_STR_DIGITS = 4300


def long_number_position(text: str) -> tuple[int, int]:
    """(line, col) of the first run of digits longer than Python converts to an integer —
    where a JSON or TOML reader gave up with a message that names no position."""
    import re as _re
    m = _re.search(r"\d{%d,}" % (INT_MAX_STR_DIGITS + 1), text)
    if m is None:
        return 1, 1
    line = text.count("\n", 0, m.start()) + 1
    return line, m.start() - (text.rfind("\n", 0, m.start()) + 1) + 1


def too_many_digits(e: BaseException) -> bool:
    """Is `e` Python's refusal to convert an over-long digit string?"""
    return isinstance(e, ValueError) and "Exceeds the limit" in str(e)


# --------------------------------------------------------------------------- YAML

#: YAML flow collections (`[…]`, `{…}`) nested deeper than this are not composed: PyYAML
#: recurses per level and its time grows with the square of the depth (1,800 levels: 40 s)
MAX_YAML_FLOW_DEPTH = 100


def flow_depth(text: str, limit: int = MAX_YAML_FLOW_DEPTH) -> Optional[tuple[int, int]]:
    """(line, col) where `[`/`{` nesting first passes `limit` (quotes and comments
    skipped roughly), or None."""
    depth, line, col0 = 0, 1, 0
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in "[{":
            depth += 1
            if depth > limit:
                return line, i - col0 + 1
        elif c in "]}":
            depth = max(depth - 1, 0)
        elif c == "\n":
            line, col0 = line + 1, i + 1
        elif c == "#" and (i == 0 or text[i - 1] in " \t\n"):
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        elif c in "'\"" and (i == 0 or text[i - 1] in " \t\n:,[{-"):
            j = text.find(c, i + 1)
            if j < 0:
                return None
            line += text.count("\n", i, j)
            if text.rfind("\n", i, j) >= 0:
                col0 = text.rfind("\n", i, j) + 1
            i = j + 1
            continue
        i += 1
    return None


def yaml_tree(text: str, tagged: Optional[dict] = None) -> tuple[Any, dict[Path, Pos], list[tuple[str, int, int]]]:
    """(value of the first document, {path: (line, col)}, the tags that were not
    constructed, each as (tag, line, col) where it is written). `tagged`, when given,
    receives {path: tag} of the values written with such a tag (`!include`).

    Raises yaml.YAMLError (with problem_mark) on malformed input."""
    import yaml

    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_node() if loader.check_node() else None
    finally:
        loader.dispose()
    pos: dict[Path, Pos] = {}
    odd_tags: list[tuple[str, int, int]] = []

    def odd(n: Any, path: Path = ()) -> None:
        odd_tags.append((n.tag, n.start_mark.line + 1, n.start_mark.column + 1))
        if tagged is not None:
            tagged[path] = n.tag

    ctor = yaml.SafeLoader("")
    std = ("tag:yaml.org,2002:str", "tag:yaml.org,2002:int", "tag:yaml.org,2002:float",
           "tag:yaml.org,2002:bool", "tag:yaml.org,2002:null", "tag:yaml.org,2002:timestamp")

    budget = [200_000]     # nodes converted: aliases must not expand without bound

    def conv(n: Any, path: Path, depth: int = 0) -> Any:
        budget[0] -= 1
        if depth > 50 or budget[0] < 0:
            return None
        if isinstance(n, yaml.MappingNode):
            out: dict = {}
            for k, v in n.value:
                if k.tag == "tag:yaml.org,2002:merge":
                    merged = conv(v, path, depth + 1)
                    if isinstance(merged, dict):
                        for mk, mv in merged.items():
                            out.setdefault(mk, mv)
                    continue
                key = conv(k, path, depth + 1)
                try:
                    hash(key)
                except TypeError:
                    key = str(key)
                pos[path + (key,)] = (k.start_mark.line + 1, k.start_mark.column + 1)
                out[key] = conv(v, path + (key,), depth + 1)
            if n.tag not in ("tag:yaml.org,2002:map",):
                odd(n)
            return out
        if isinstance(n, yaml.SequenceNode):
            if n.tag not in ("tag:yaml.org,2002:seq",):
                odd(n)
            res = []
            for idx, item in enumerate(n.value):
                pos[path + (idx,)] = (item.start_mark.line + 1, item.start_mark.column + 1)
                res.append(conv(item, path + (idx,), depth + 1))
            return res
        if isinstance(n, yaml.ScalarNode):
            if n.tag in std:
                try:
                    return ctor.construct_object(n, deep=True)
                except Exception:  # noqa: BLE001 - a bad scalar reads as its text
                    return n.value
            odd(n, path)
            return n.value
        return None

    value = conv(node, ()) if node is not None else None
    ctor.dispose()
    return value, pos, odd_tags


# TOML: tomllib keeps no positions, so a line scan maps `[table]` + `key =` to line and
# column (one key per line, which is how these files are written). No two repeats of the
# header pattern can match the same characters (a lazy name between `\s*`s did: cubic on
# a long header line that does not close); the name is stripped after
_HEADER = re.compile(r"[ \t]*\[\[?([^\]]+)\]\]?[ \t]*(?:#.*)?$")
_KEY = re.compile(r'^\s*("?[A-Za-z0-9_.\-"]+"?)\s*=')


def toml_positions(text: str) -> dict[tuple, tuple[int, int]]:
    """{(table…, key…): (line, col)} of a TOML text's headers and keys (first wins)."""
    pos: dict[tuple, tuple[int, int]] = {}
    table: tuple = ()
    for n, line in enumerate(text.splitlines(), 1):
        m = _HEADER.match(line)
        if m:
            table = tuple(p.strip().strip('"') for p in m.group(1).strip().split("."))
            pos.setdefault(table, (n, line.index("[") + 1))
            continue
        m = _KEY.match(line)
        if m:
            key = tuple(p.strip('"') for p in m.group(1).split("."))
            pos.setdefault(table + key, (n, m.start(1) + 1))
    return pos
