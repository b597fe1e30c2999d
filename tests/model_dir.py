"""`preflight estimate --model DIR` on a model directory holding only a config.json (a real
CLI run), and the ledger's line for the layers' saved activations."""

from __future__ import annotations

import json

from tests.conftest import run_cli


def estimate_model_dir(tmp_path, name: str, config: dict, *args: str) -> dict:
    """The first job of `estimate --model <tmp_path/name> --optimizer adamw <args>`, the
    directory holding `config` as its config.json."""
    d = tmp_path / name
    d.mkdir(exist_ok=True)
    (d / "config.json").write_text(json.dumps(config))
    r = run_cli("estimate", "--model", str(d), "--optimizer", "adamw", "--format", "json",
                *args)
    assert r.returncode in (0, 1), r.stderr
    return json.loads(r.stdout)["jobs"][0]


def layers_lines(job: dict) -> list:
    """The activation lines of the transformer layers (sized or said unknown)."""
    return [ln for ln in job["ledger"]["lines"] if ln["key"] == "activations"
            and ("layers' saved" in ln["label"] or ln["label"].startswith("transformer layers"))]
