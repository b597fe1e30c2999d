"""The published GPU memory measurements under bench/published/ keep the format that
bench/published/README.md describes: every row names what was measured, in a known unit,
and every configuration fact says whether the source states it or how it was inferred."""

from __future__ import annotations

import pathlib

import pytest
import yaml


ROOT = pathlib.Path(__file__).resolve().parents[1]
PUBLISHED = ROOT / "bench" / "published"
FILES = sorted(PUBLISHED.glob("*.yaml"))

SOURCE_KEYS = {"project", "title", "url", "where", "read"}
ROW_KEYS = {"id", "published", "measured", "measured_how", "value", "unit", "gpu", "config"}
MEASURED = {"allocated", "reserved", "nvidia-smi"}
UNITS = {"GB", "GiB", "MB", "MiB"}
# The facts `preflight estimate` cannot size a row without.
CONFIG_KEYS = {"model", "method", "precision", "micro_batch", "seq_len", "world_size"}
METHODS = {"full", "lora", "qlora", "frozen"}
# What a published figure spans (bench/published/README.md, "Scope"); `step` when absent.
SCOPES = {"step", "run-with-load", "run-with-save", "whole-process"}


def _load(path: pathlib.Path) -> dict:
    with path.open(encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def _rows() -> list[tuple[str, dict]]:
    return [(p.name, row) for p in FILES for row in _load(p)["rows"]]


def test_there_are_published_files() -> None:
    assert len(FILES) >= 3
    assert len(_rows()) >= 20


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_source_block(path: pathlib.Path) -> None:
    doc = _load(path)
    assert set(doc) >= {"source", "rows"}
    assert SOURCE_KEYS <= set(doc["source"]), SOURCE_KEYS - set(doc["source"])
    assert doc["source"]["url"].startswith("https://")
    assert doc["rows"], f"{path.name} has no rows"


def test_ids_are_unique_over_all_files() -> None:
    ids = [row["id"] for _, row in _rows()]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    assert dupes == []


@pytest.mark.parametrize("name,row", _rows(), ids=[r["id"] for _, r in _rows()])
def test_row_schema(name: str, row: dict) -> None:
    assert ROW_KEYS <= set(row), f"{name}:{row.get('id')} lacks {ROW_KEYS - set(row)}"
    assert row["measured"] in MEASURED
    assert row["unit"] in UNITS
    assert isinstance(row["value"], (int, float)) and not isinstance(row["value"], bool)
    assert row["value"] > 0
    assert isinstance(row["published"], str) and row["published"].strip()
    how = row["measured_how"]
    assert how.startswith("stated") or how.startswith("inferred:"), how
    assert isinstance(row["gpu"], str) and row["gpu"].strip()
    config = row["config"]
    assert CONFIG_KEYS <= set(config), f"{row['id']} lacks {CONFIG_KEYS - set(config)}"
    for key, fact in config.items():
        assert isinstance(fact, dict) and set(fact) == {"value", "how"}, f"{row['id']}.{key}: {fact!r}"
        assert fact["how"] == "stated" or (
            fact["how"].startswith("inferred:") and len(fact["how"]) > len("inferred:") + 3
        ), f"{row['id']}.{key}: {fact['how']!r}"
    assert config["method"]["value"] in METHODS
    assert isinstance(config["world_size"]["value"], int) and config["world_size"]["value"] >= 1
    assert isinstance(config["micro_batch"]["value"], int) and config["micro_batch"]["value"] >= 1
    assert isinstance(config["seq_len"]["value"], int) and config["seq_len"]["value"] >= 1
    assert isinstance(row.get("notes", ""), str)
    scope = row.get("scope", "step")
    assert scope in SCOPES, f"{row['id']}: scope {scope!r}"
    if scope != "step" or "scope_how" in row:
        # a figure that spans more than a step says where that was read
        how = row.get("scope_how")
        assert isinstance(how, str) and len(how.strip()) > 20, f"{row['id']}: scope_how {how!r}"
        assert "scope" in row, f"{row['id']}: scope_how without scope"
