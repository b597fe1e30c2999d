"""Command-line overrides of a config document, as Hydra / OmegaConf apps and recipe CLIs
(torchtune, composer, NeMo, verl) take them: `key.sub=value` sets, `+key=value` adds,
`++key=value` adds or sets, `~key` (or `~key=value`) deletes; `group=option` selects a
config group's file (told apart by the composer, who knows the groups).

A value is read as YAML (`8`, `true`, `null`, `1e-5`, `[a,b]`, `'quoted text'`), never
evaluated; one that does not parse stays its text. A word the shell could not expand keeps
its marker (a control character), so the reader of the key can call it unknown.
Each override keeps the index of its word, so a fact can be placed at it on the line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Optional

#: a key as Hydra's override grammar writes one: dotted identifiers, `/` in group names,
#: `@package` after a group, dashes (`lora-rank`)
KEY = re.compile(r"[A-Za-z_][\w\-]*(?:[./][A-Za-z_0-9][\w\-]*)*(?:@[\w.\-]*)?")
#: values longer than this are not parsed as YAML (their text is kept)
MAX_VALUE_CHARS = 4096


@dataclass(frozen=True)
class Override:
    """One override word: `op` is "set" (`k=v`), "add" (`+k=v`), "force" (`++k=v`) or
    "delete" (`~k`); `value` is None for a delete without a value."""

    op: str
    key: str
    value: Any
    text: Optional[str]      # the value as written
    index: int               # of the word among the words given

    @property
    def path(self) -> tuple[str, ...]:
        """The key's parts: `trainer.devices` → ("trainer", "devices")."""
        return tuple(self.key.split("@", 1)[0].replace("/", ".").split("."))


_INT = re.compile(r"[-+]?\d[\d_]*")
_FLOAT = re.compile(r"[-+]?(?:\d[\d_]*\.\d*|\.\d+|\d[\d_]*)(?:[eE][-+]?\d+)?|[-+]?(?:inf|nan)", re.I)


def value_of(text: str) -> Any:
    """An override's value as Hydra's grammar reads it: integers, floats (`3e-4` too),
    `true` / `false` in any case, `null`, quoted strings, `[…]` / `{…}` (read as YAML flow);
    anything else is its text — so is a value holding an expansion the shell could not do."""
    import yaml

    if "\0" in text or len(text) > MAX_VALUE_CHARS:
        return text
    t = text.strip()
    if _INT.fullmatch(t):
        return int(t.replace("_", "")) if len(t) < 400 else t
    if _FLOAT.fullmatch(t):
        return float(t.replace("_", ""))
    if t.lower() in ("true", "false"):
        return t.lower() == "true"
    if t.lower() == "null":
        return None
    if len(t) >= 2 and t[0] == t[-1] and t[0] in "'\"":
        return t[1:-1]
    if t[:1] in "[{":
        try:
            v = yaml.safe_load(t)
        except (yaml.YAMLError, ValueError, RecursionError):
            return text
        return v if isinstance(v, (list, dict)) else text
    return text


def parse(words: list[str]) -> list[Override]:
    """The override words among `words` (options `--x` and other words are skipped)."""
    out: list[Override] = []
    for i, w in enumerate(words):
        if w.startswith("-") or not w:
            continue
        op = "set"
        body = w
        if body.startswith("++"):
            op, body = "force", body[2:]
        elif body.startswith("+"):
            op, body = "add", body[1:]
        elif body.startswith("~"):
            op, body = "delete", body[1:]
        key, eq, text = body.partition("=")
        if not KEY.fullmatch(key):
            continue
        if not eq and op != "delete":
            continue
        out.append(Override(op, key, value_of(text) if eq else None, text if eq else None, i))
    return out


#: the last part of an override key that names a config document (`config=c.yaml`,
#: `model.cfg=m.yaml`); `data.train=x.json` names data, not a config
_CONFIG_KEY = re.compile(r"(?:^|_)(?:config|cfg|conf)$", re.I)


def config_path(word: str) -> Optional[str]:
    """The path an override word names as a config document (`config=c.yaml` → c.yaml);
    None for any other word."""
    found = parse([word])
    if not found or found[0].op == "delete" or not found[0].text:
        return None
    last = found[0].path[-1]
    return found[0].text if _CONFIG_KEY.search(last) else None


def nested(overrides: list[Override], *, dashes_to_underscores: bool = True) -> dict:
    """The set / add overrides as one nested dict (later words win); deletes are left out."""
    out: dict = {}
    for o in overrides:
        if o.op == "delete":
            continue
        keys = [k.replace("-", "_") if dashes_to_underscores else k for k in o.path]
        cur = out
        for part in keys[:-1]:
            nxt = cur.get(part)
            if not isinstance(nxt, dict):
                nxt = cur[part] = {}
            cur = nxt
        cur[keys[-1]] = o.value
    return out


@dataclass
class LangExample:
    """What a language module's examples state: an input and what reading it must give.
    `files` (relative path → text) are written to a folder; `run` names the module's
    function the test calls; `given` its arguments; `expect` maps a dotted key to
    `(value, "path:line")` (or to a value alone, where no place is stated)."""

    title: str
    run: str
    given: dict
    expect: dict
    files: Optional[dict] = None


EXAMPLES = [
    LangExample(title="set, add, force-add and delete, with YAML-typed values and a quoted list",
                run="parse_nested",
                given={"words": ["trainer.devices=8", "+model.lora_rank=16", "++data.seq=2048",
                                 "~model.optim", "model.targets=[q_proj,'v_proj']", "--verbose",
                                 "name=run one"]},
                expect={"trainer.devices": 8, "model.lora_rank": 16, "data.seq": 2048,
                        "model.targets": ["q_proj", "v_proj"], "name": "run one"}),
    LangExample(title="values that stay text (a hub id, an unbalanced bracket); `3e-4` is a float",
                run="parse_nested",
                given={"words": ["model.path=Qwen/Qwen2.5-7B", "x=[1,2", "lr=3e-4"]},
                expect={"model.path": "Qwen/Qwen2.5-7B", "x": "[1,2", "lr": 3e-4}),
]
