"""The knob lexicon (preflight.lang.lexicon): its EXAMPLES, and documents no framework
adapter claims read through the real pipeline with origin `inferred`, located at their
keys, never over a framework's own reading."""

from __future__ import annotations

import os
import shlex
import time

import pytest

from preflight.lang import lexicon
from preflight.lang.positions import yaml_tree
from preflight.options import CheckOptions
from preflight.plan import Origin


@pytest.mark.parametrize("ex", lexicon.EXAMPLES, ids=[e["title"][:40] for e in lexicon.EXAMPLES])
def test_example(ex):
    cfg, _, _ = yaml_tree(ex["doc"])
    got = {r.fact: (r.value, ".".join(map(str, r.path))) for r in lexicon.read(cfg)}
    assert got == ex["expect"]


def _check(tmp_path, monkeypatch, files: dict[str, str], command: str):
    from preflight import pipeline
    from preflight.config import ProjectConfig

    for rel, text in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    monkeypatch.chdir(tmp_path)
    rep = pipeline.run([], CheckOptions(command=shlex.split(command), gpu="H100-80GB",
                                        config=ProjectConfig(), apply_rules=False, fixes=False))
    assert rep.jobs
    return rep.jobs[0]


_SCRIPT = ("import argparse, yaml\nfrom mylib import Trainer\np = argparse.ArgumentParser()\n"
           "p.add_argument('--config')\nargs = p.parse_args()\n"
           "Trainer(yaml.safe_load(open(args.config))).train()\n")
_CFG = ("model:\n  model_name_or_path: Qwen/Qwen2.5-0.5B\ntrain:\n  micro_batch_size: 4\n"
        "  gradient_accumulation_steps: 8\n  max_seq_len: 2048\n  optimizer: adamw\n")


def test_unknown_framework_is_sized_with_inferred_values(tmp_path, monkeypatch):
    jr = _check(tmp_path, monkeypatch, {"train.py": _SCRIPT, "cfg.yaml": _CFG},
                "torchrun --nproc_per_node 8 train.py --config cfg.yaml")
    plan = jr.job.plan
    for name, value, line in (("micro_batch", 4, 4), ("grad_accum", 8, 5), ("seq_len", 2048, 6),
                              ("optimizer", "adamw", 7), ("model", "Qwen/Qwen2.5-0.5B", 2)):
        f = plan.facts[name]
        assert (f.value, f.origin, f.source.path, f.source.line) == \
            (value, Origin.INFERRED, "cfg.yaml", line), name
        assert "no framework adapter reads this document" in (f.reason or "") or name == "model"
    # the model's size is the catalogue's, inferred like the name that gave it
    assert plan.facts["params"].origin is Origin.INFERRED
    assert jr.unsized is None
    # and the ledger says which values it took from a knob's name
    assert any(a.startswith("micro_batch 4 inferred") for a in jr.estimate.ledger.assumptions)


def test_a_framework_reading_wins_over_the_lexicon(tmp_path, monkeypatch):
    # an axolotl / LLaMA-Factory style recipe is claimed by its adapter: nothing is inferred
    jr = _check(tmp_path, monkeypatch,
                {"run.yaml": "base_model: Qwen/Qwen2.5-0.5B\nmicro_batch_size: 2\nsequence_len: 1024\n"
                             "gradient_accumulation_steps: 4\n"},
                "axolotl train run.yaml")
    assert all(f.origin is not Origin.INFERRED for f in jr.job.plan.facts.values())


def test_unclaimed_python_config_is_read_by_name(tmp_path, monkeypatch):
    jr = _check(tmp_path, monkeypatch,
                {"train.py": _SCRIPT.replace("yaml.safe_load(open(args.config))", "args.config"),
                 "configs/run.py": "trainer = dict(micro_batch_size=2, grad_accum_steps=16)\n"},
                "python train.py configs/run.py")
    f = jr.job.plan.facts["grad_accum"]
    assert (f.value, f.origin, f.source.path, f.source.line) == (16, Origin.INFERRED, "configs/run.py", 1)


def test_lexicon_is_linear_on_a_huge_document():
    doc = {f"k{i}": {"micro_batch_size": 4, "x": list(range(5))} for i in range(5_000)}
    out = lexicon.read(doc)
    assert [r.value for r in out if r.fact == "micro_batch"] == [4]      # one value, once
    big = {f"k{i}": {"micro_batch_size": 4} for i in range(500_000)}
    t = time.process_time()
    lexicon.read(big)                    # the key budget ends the walk
    assert time.process_time() - t < 1.0


def test_one_vocabulary_for_documents_and_scripts():
    """A script's own globals and flags are read by the names the document lexicon knows,
    plus the few a script settles and a document does not (`batch_size`, `max_length`)."""
    from preflight.lang.lexicon import KNOBS, SCRIPT_ONLY, script_fact

    for name, (fact, _) in KNOBS.items():
        if fact in ("micro_batch", "grad_accum", "seq_len"):
            assert script_fact(name) == fact
            assert script_fact(name.upper().replace("_", "-")) == fact
    assert script_fact("batch_size") == "micro_batch" and "batch_size" not in KNOBS
    assert script_fact("max_length") == "seq_len" and "max_length" not in KNOBS
    assert script_fact("optimizer") is None and script_fact("lr") is None
    assert set(SCRIPT_ONLY) <= {"micro_batch", "seq_len"}
