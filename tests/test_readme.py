"""The README shows real output: the demo and the JSON excerpt must match what the CLI prints."""

import json
import os
import re

from tests.conftest import ROOT, run_cli

README = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
DEMO = "examples/7b-full-finetune-ddp"


def test_readme_demo_is_the_real_output():
    m = re.search(r"^\$ preflight check " + re.escape(DEMO) + r"\n(.*?)^```$", README, re.M | re.S)
    assert m, "the README has no demo block"
    r = run_cli("check", DEMO)
    assert r.returncode == 1
    assert r.stdout == m.group(1)


def test_readme_json_excerpt_matches_the_real_ledger():
    m = re.search(r'"per_gpu_bytes": (\{.*?\})', README, re.S)
    assert m, "the README has no JSON ledger excerpt"
    shown = json.loads(m.group(1))
    r = run_cli("check", "--format", "json", DEMO)
    job = json.loads(r.stdout)["jobs"][0]
    assert job["ledger"]["per_gpu_bytes"] == shown
    assert job["facts"]["params"]["value"] == 6_738_415_616


def test_makefile_demo_checks_the_readme_example():
    makefile = open(os.path.join(ROOT, "Makefile"), encoding="utf-8").read()
    assert f"preflight check {DEMO}" in makefile
