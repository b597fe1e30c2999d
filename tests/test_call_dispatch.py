"""The collector offers a call only to the recognisers whose declaration admits its name
(`frameworks.answers`): every Python script the suite and the examples hold, and every
adapter example's script, extracts to the same facts and diagnostics with that filter on
and off (every call offered to all of `_CALLS`, in order)."""
import glob
import os

import pytest

from preflight import frameworks
from preflight.extract import extract_file
from preflight.extract.py_patterns import collector

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPTS = sorted(glob.glob(os.path.join(ROOT, "tests", "fixtures", "**", "*.py"), recursive=True)
                 + glob.glob(os.path.join(ROOT, "examples", "**", "*.py"), recursive=True))


def both_ways(monkeypatch, path):
    """(filtered, unfiltered) extraction of one file, as comparable dicts."""
    got = []
    for on in (True, False):
        monkeypatch.setattr(collector, "FILTER", on)
        collector._filtered.cache_clear()
        ex = extract_file(path)
        got.append(ex.model_dump(include={"kind", "facts", "diagnostics", "invocations",
                                          "references", "extras"}))
    return got


def test_there_are_scripts_to_compare():
    assert len(SCRIPTS) > 20


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: os.path.relpath(p, ROOT))
def test_filtered_dispatch_is_the_full_dispatch(monkeypatch, path):
    filtered, full = both_ways(monkeypatch, path)
    assert filtered == full


def test_adapter_examples_dispatch_alike(monkeypatch, tmp_path):
    n = 0
    for a in frameworks.adapters():
        for i, ex in enumerate(a.EXAMPLES):
            for rel, text in ex.files.items():
                if not rel.endswith(".py"):
                    continue
                path = tmp_path / a.name / str(i) / rel
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text, encoding="utf-8")
                filtered, full = both_ways(monkeypatch, str(path))
                assert filtered == full, (a.name, i, rel)
                n += 1
    assert n > 10


def test_declared_recognisers_keep_their_order():
    """The candidates of a name are `_CALLS` filtered, in `_CALLS` order; a recogniser
    without a declaration is offered every call."""
    for name in ("Trainer", "from_pretrained", "LlamaConfig", "to", "zzz_unknown", "?Trainer"):
        got = collector.candidates(name)
        assert got == tuple(r for r in collector._CALLS if frameworks.may_answer(r, name))
        assert all(r in got for r in collector._CALLS if not hasattr(r, "answers"))
