"""Which config folder and primary config a Hydra app composes: its `@hydra.main(…)`
arguments and the `--config-path` / `--config-name` of its command line."""

from __future__ import annotations

import re
from typing import Optional

_MAIN = re.compile(r"@(?:hydra\.main|hydra_runner|main)\s*\(([^)]*)\)", re.S)
_KW = re.compile(r"(config_path|config_name)\s*=\s*(?:f?['\"]([^'\"]*)['\"]|None)")


def app_config(script_text: str) -> tuple[Optional[str], Optional[str]]:
    """(config_path, config_name) of a Hydra app's `@hydra.main(…)` (NeMo's
    `@hydra_runner(…)`) when written as literals; (None, None) otherwise."""
    m = _MAIN.search(script_text[:200_000])
    if not m:
        return None, None
    kw = {k: v for k, v in _KW.findall(m.group(1))}
    return kw.get("config_path"), kw.get("config_name")


def cli_config(words: list[str]) -> tuple[Optional[str], Optional[str], list[str]]:
    """`--config-path` / `-cp`, `--config-name` / `-cn` of a Hydra command line, and the
    other words (the overrides)."""
    path = name = None
    rest: list[str] = []
    i = 0
    while i < len(words):
        w = words[i]
        for flags, slot in ((("--config-path", "--config_path", "-cp"), "path"),
                            (("--config-name", "--config_name", "-cn"), "name")):
            hit = next((f for f in flags if w == f or w.startswith(f + "=")), None)
            if hit:
                if w == hit and i + 1 < len(words):
                    v = words[i + 1]
                    i += 1
                else:
                    v = w[len(hit) + 1:]
                if slot == "path":
                    path = v
                else:
                    name = v
                break
        else:
            rest.append(w)
        i += 1
    return path, name, rest
