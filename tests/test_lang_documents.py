"""The document languages' EXAMPLES (Hydra / OmegaConf composition, documents with
includes, command-line overrides), each value at its file and line; and their budgets."""

from __future__ import annotations

import os
import time

import pytest

from preflight.lang import hydra, includes, overrides
from preflight.plan import Source

CASES = [pytest.param(m, ex, id=f"{m.__name__.rsplit('.', 1)[-1]}-{i}")
         for m in (overrides, includes, hydra) for i, ex in enumerate(m.EXAMPLES)]


def _write(files: dict, root) -> None:
    for rel, text in (files or {}).items():
        p = os.path.join(str(root), rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w", encoding="utf-8") as fh:
            fh.write(text)


def _lookup(cfg, key: str):
    d = cfg
    for k in key.split("."):
        if not isinstance(d, dict) or k not in d:
            return KeyError
        d = d[k]
    return d


def _run(ex):
    g = ex.given
    if ex.run == "parse_nested":
        return overrides.nested(overrides.parse(g["words"])), None, []
    if ex.run == "resolve":
        doc = includes.resolve(g["path"])
        return doc.value, doc.src, doc.diagnostics
    if ex.run == "compose":
        out = hydra.compose(g["folder"], g["name"], g.get("words"),
                            locate=lambda o: Source(path="<command>", line=1, col=1))
        return out.cfg, out.src, out.diagnostics
    raise AssertionError(ex.run)


@pytest.mark.parametrize("module,ex", CASES)
def test_language_example(module, ex, tmp_path, monkeypatch):
    _write(ex.files, tmp_path)
    monkeypatch.chdir(tmp_path)
    cfg, src, diags = _run(ex)
    for key, want in ex.expect.items():
        if key in ("!diagnostics", "!no_diagnostics"):
            msgs = " | ".join(d.message for d in diags)
            for w in want:
                assert (w in msgs) == (key == "!diagnostics"), (ex.title, msgs)
            continue
        value, place = want if isinstance(want, tuple) else (want, "")
        got = _lookup(cfg, key)
        if value is hydra.Unresolved:
            assert isinstance(got, hydra.Unresolved), (ex.title, key, got)
        elif place is None:
            assert got is KeyError, (ex.title, key, got)
            continue
        else:
            assert got == value, (ex.title, key, got)
        if place:
            s = src(tuple(key.split(".")))
            assert s is not None and f"{s.path}:{s.line}" == place, (ex.title, key, s)
