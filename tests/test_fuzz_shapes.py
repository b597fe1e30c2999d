"""Inputs of the shapes that make a reader super-linear (`tests/fuzz_shapes.py`: thousands
of blank or repeated lines, continuation lines, many keys and list items, deep nesting,
long lines; Python, shell, Makefile, YAML, JSON, TOML), each at the largest size the
product promises to check quickly (64 KB): every one is checked to the end, named and in
a directory, with located findings and no exception. The seconds are `bench/fuzz.py
--shapes`'s business; the two shapes that once took 15-24 s are timed here in CPU seconds,
which a loaded machine does not inflate."""

import json
import os
import subprocess
import sys

import pytest

from preflight import pipeline
from preflight.options import CheckOptions
from tests.conftest import ROOT, run_cli
from tests.fuzz_shapes import COMPANION, LANGUAGES, MAX_SIZE, shapes

SHAPES = [(lang, shape) for lang, shape, _ in shapes()]


def _project(d, lang: str, shape: str, size: int = MAX_SIZE) -> str:
    name, text = LANGUAGES[lang][shape](size)
    assert len(text.encode()) <= size
    (d / ".git").mkdir(parents=True, exist_ok=True)
    if name != "train.py":
        (d / "train.py").write_text(COMPANION)
    (d / name).write_text(text)
    return name


def _located(diags: list[dict]) -> None:
    """Every finding about the input names its file, and one about a place in it the line."""
    for x in diags:
        if x["code"] < "PF007":
            assert x["path"], x
        if x["code"] in ("PF002", "PF003", "PF005"):
            assert x["line"] and x["line"] >= 1, x


@pytest.mark.parametrize("lang,shape", SHAPES, ids=[f"{a}-{b}".replace(" ", "_") for a, b in SHAPES])
def test_each_shape_is_checked_to_the_end(tmp_path, monkeypatch, lang, shape):
    name = _project(tmp_path, lang, shape)
    monkeypatch.chdir(tmp_path)
    rep = pipeline.run([name], CheckOptions(fixes=False)).to_json()
    assert rep["jobs"], rep["diagnostics"]
    _located(rep["diagnostics"] + [d for j in rep["jobs"] for d in j["diagnostics"]])


def test_a_directory_of_every_shape_through_the_cli(tmp_path):
    (tmp_path / ".git").mkdir()
    for i, (lang, shape) in enumerate(SHAPES):
        _project(tmp_path / f"{i:02d}-{lang}", lang, shape, MAX_SIZE // 4)
    r = run_cli("check", "--no-cache", "--format", "json", ".", cwd=str(tmp_path))
    assert r.returncode in (0, 1), r.stderr[-2000:]
    assert "internal error" not in r.stderr and "Traceback" not in r.stderr
    rep = json.loads(r.stdout)
    _located(rep["diagnostics"] + [d for j in rep["jobs"] for d in j["diagnostics"]])
    # every folder's file is read: a job names it, or a finding does
    named = {p.split(os.sep)[0] for j in rep["jobs"] for p in j["files"]} | \
            {(d["path"] or "").split(os.sep)[0] for d in rep["diagnostics"]}
    assert {f"{i:02d}-{lang}" for i, (lang, _) in enumerate(SHAPES)} <= named


def _cpu_seconds(args: list[str], cwd: str) -> tuple[float, subprocess.CompletedProcess]:
    env = {**os.environ, "NO_COLOR": "1"}
    env.pop("PREFLIGHT_DEBUG", None)
    before = os.times()
    r = subprocess.run([sys.executable, "-m", "preflight", "check", "--no-cache", *args],
                       cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    after = os.times()
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    return cpu, r


def test_the_blank_line_recipe_through_a_directory_walk_is_fast(tmp_path):
    # a recipe of 20,000 blank lines: 0.8 s named, 15 s through `check .` (the walk's
    # text tests rescanned every blank line from each line start)
    (tmp_path / ".git").mkdir()
    (tmp_path / "recipe.yaml").write_text("base_model: gpt2\nmicro_batch_size: 2\n" + "\n" * 20000
                                          + "sequence_len: 2048\n")
    cpu, r = _cpu_seconds(["--format", "json", "."], str(tmp_path))
    assert r.returncode in (0, 1), r.stderr
    rep = json.loads(r.stdout)
    assert [j["files"] for j in rep["jobs"]] == [["recipe.yaml"]]
    assert cpu < 2.0, f"{cpu:.2f} CPU seconds"


def test_a_launcher_of_thousands_of_launch_lines_is_fast(tmp_path):
    # the torchrun line followed by 2,000 repeated command lines: 22 s, each job formed
    # compared with every job before it
    (tmp_path / ".git").mkdir()
    (tmp_path / "train.py").write_text(COMPANION)
    for name, lines in (("repeated.sh", "torchrun\n" * 2000),
                        ("sweep.sh", "".join(f"torchrun train.py --batch_size {i}\n" for i in range(2000)))):
        (tmp_path / name).write_text("#!/bin/bash\ntorchrun --nproc_per_node=8 train.py "
                                     "--batch_size 4\n" + lines)
        cpu, r = _cpu_seconds(["--format", "json", name], str(tmp_path))
        assert r.returncode in (0, 1), r.stderr
        rep = json.loads(r.stdout)
        assert rep["jobs"] and any(j["files"][:1] == ["train.py"] for j in rep["jobs"]), name
        assert cpu < 2.0, f"{name}: {cpu:.2f} CPU seconds"


def test_the_bench_writes_its_table(tmp_path):
    out = tmp_path / "fuzz.txt"
    r = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "fuzz.py"), "--shapes",
                        "--languages", "json", "--match", "many keys", "--limit", "1000",
                        "--out", str(out)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    text = out.read_text()
    assert "slowest input per language" in text
    rows = [ln.split() for ln in text.splitlines() if ln.startswith("json ")]
    assert [r[:4] for r in rows] == [["json", "many", "keys", r[3]] for r in rows] and len(rows) == 2
    assert all(r[-1] == "ok" for r in rows)
