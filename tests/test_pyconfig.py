"""Python config files read statically (preflight.lang.pyconfig): its EXAMPLES, the
recognition of config modules against scripts, budgets, and bad input."""

from __future__ import annotations

import os
import time

import pytest

from preflight.lang import pyconfig


def _write(root, files: dict[str, str]) -> None:
    for rel, text in files.items():
        p = os.path.join(str(root), rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w", encoding="utf-8") as fh:
            fh.write(text)


def _reader(p: str):
    try:
        with open(p, encoding="utf-8") as fh:
            return fh.read()
    except OSError:
        return None


def _get(cfg, dotted):
    cur = cfg
    for k in dotted.split("."):
        if not isinstance(cur, dict) or k not in cur:
            return None
        cur = cur[k]
    return pyconfig.UNREAD if isinstance(cur, pyconfig.Opaque) else cur


@pytest.mark.parametrize("ex", pyconfig.EXAMPLES, ids=[e["title"][:40] for e in pyconfig.EXAMPLES])
def test_example(ex, tmp_path, monkeypatch):
    _write(tmp_path, ex["files"])
    monkeypatch.chdir(tmp_path)
    doc = pyconfig.read(ex["read"], ex["files"][ex["read"]], _reader)
    for dotted, (value, where) in ex["expect"].items():
        assert _get(doc.cfg, dotted) == value, dotted
        if where is not None:
            p = tuple(dotted.split("."))
            got = f"{os.path.normpath(doc.where[p])}:{doc.pos[p][0]}"
            assert got == os.path.normpath(where.split(":")[0]) + ":" + where.split(":")[1], dotted


@pytest.mark.parametrize("text,is_config", [
    ("model = dict(type='X')\ntrain_cfg = dict(max_epochs=3)\n", True),
    ("_base_ = ['a.py']\n", True),
    ("model = {{_base_.model}}\n_base_ = 'a.py'\n", True),
    ("batch_size = 12\nblock_size = 1024\n", False),          # constants a script exec's
    ("model = dict(type='X')\ndef main():\n    pass\n", False),  # a script
    ("import torch\nmodel = dict(a=1)\nfor i in range(3):\n    pass\n", False),
    ("model = dict(\n", False),                                  # a syntax error
])
def test_is_config_module(text, is_config):
    assert pyconfig.is_config_module(text) is is_config


def test_missing_base_is_a_note(tmp_path):
    p = tmp_path / "cfg.py"
    p.write_text("_base_ = ['./nowhere.py']\nmodel = dict(depth=50)\n")
    doc = pyconfig.read(str(p), p.read_text(), _reader)
    assert doc.cfg["model"]["depth"] == 50
    assert any("nowhere.py" in msg and line == 1 for _, line, _, msg in doc.notes)


def test_circular_bases_end(tmp_path):
    (tmp_path / "a.py").write_text("_base_ = './b.py'\nx = dict(a=1)\n")
    (tmp_path / "b.py").write_text("_base_ = './a.py'\ny = dict(b=2)\n")
    doc = pyconfig.read(str(tmp_path / "a.py"), (tmp_path / "a.py").read_text(), _reader)
    assert doc.cfg["x"]["a"] == 1 and doc.notes


def test_large_config_is_linear(tmp_path):
    body = "".join(f"k{i} = dict(batch_size={i}, lr=0.1 * {i}, name='n' * 3)\n" for i in range(1200))
    t = time.process_time()
    doc = pyconfig.read(str(tmp_path / "big.py"), body, _reader)
    assert time.process_time() - t < 2.0
    assert doc.cfg["k1199"]["batch_size"] == 1199


def test_huge_values_are_unread(tmp_path):
    doc = pyconfig.read(str(tmp_path / "c.py"), "x = dict(a='a' * 10**9, b=10 ** 10 ** 10)\n", _reader)
    assert isinstance(doc.cfg["x"]["a"], pyconfig.Opaque)
    assert isinstance(doc.cfg["x"]["b"], pyconfig.Opaque)


def test_deep_nesting_is_bounded(tmp_path):
    text = "x = " + "dict(a=" * 90 + "1" + ")" * 90 + "\n"
    doc = pyconfig.read(str(tmp_path / "c.py"), text, _reader)
    assert "x" in doc.cfg


def test_a_module_of_constants_star_imported_by_the_script(tmp_path, monkeypatch):
    """`from configs.base import *`: not a config document, the script's own names, each at
    its line in the module."""
    from preflight.extract import python

    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "base.py").write_text("batch_size = 16\nlr = 3e-4\nseed = int('1')\n")
    script = ("import torch\nfrom torch.utils.data import DataLoader\nfrom configs.base import *\n"
              "model = torch.nn.Linear(4, 4)\nopt = torch.optim.AdamW(model.parameters(), lr=lr)\n"
              "dl = DataLoader(range(8), batch_size=batch_size)\n")
    (tmp_path / "train.py").write_text(script)
    monkeypatch.chdir(tmp_path)
    assert not pyconfig.is_config_module((tmp_path / "configs" / "base.py").read_text())
    ext = python.extract("train.py", script)
    mb = dict(ext.facts)["micro_batch"]
    assert (mb.value, mb.origin.value, os.path.normpath(mb.source.path), mb.source.line) == \
        (16, "literal", os.path.join("configs", "base.py"), 1)


@pytest.mark.parametrize("text", [
    "train_dataloader = dict(batch_size=2)\n" * 1700,                        # ~64 KB repeated
    "train_dataloader = dict(batch_size=2)\n" + "\n" * 64_000 + "optim_wrapper = dict()\n",
    "train = dict(a=dict())\n" + "train.a.b = 1\n" * 4500,
    "_base_ = './cfg.py'\n" + "model = dict(a=1)\n" * 3500,                  # inherits itself
])
def test_64_kb_configs_check_in_under_2_s(text, tmp_path, monkeypatch):
    # CPU time: the other processes of a loaded machine do not count
    from preflight import pipeline
    from preflight.config import ProjectConfig
    from preflight.options import CheckOptions

    (tmp_path / "cfg.py").write_text(text)
    monkeypatch.chdir(tmp_path)
    t = time.process_time()
    pipeline.run(["cfg.py"], CheckOptions(gpu="H100-80GB", config=ProjectConfig(), fixes=False))
    assert time.process_time() - t < 2.0
