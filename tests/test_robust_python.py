"""Python files that used to crash, hang or exhaust preflight: deep nesting handed to
libcst's native parser (a segmentation fault), quadratic re-parses of nested calls, and
static evaluation without budgets (gigabyte strings, exponent towers, huge ranges)."""

import ast
import os
import subprocess
import sys
import time

from preflight.extract import cst_parse
from preflight.extract.python import extract
from tests.conftest import run_cli

HEAD = "import torch\n"


def _codes(ext):
    return [(d.code, d.line) for d in ext.diagnostics]


def test_a_long_boolean_chain_is_analysed(tmp_path):
    # 10,000 terms: valid Python; libcst's native parser overflowed its stack on it (SIGSEGV).
    # Only `ast` reads a file that parses
    src = HEAD + "x = " + " and ".join(["a"] * 10_000) + "\nbatch_size = 8\n"
    ext = extract("chain.py", src)
    assert any(n == "micro_batch" and f.value == 8 for n, f in ext.facts)


def test_deep_brackets_and_the_segfault_shape_end_in_a_finding_through_the_cli(tmp_path):
    (tmp_path / "chain.py").write_text(HEAD + "x = " + " and ".join(["a"] * 10_000) + "\n")
    (tmp_path / "brackets.py").write_text(HEAD + "x = " + "[" * 1400 + "]" * 1400 + "\n")
    (tmp_path / "ok.py").write_text(HEAD + "batch_size = 8\n")
    r = run_cli("check", "--format", "json", "chain.py", "brackets.py", "ok.py",
                cwd=str(tmp_path))
    assert r.returncode == 1, r.stderr          # not -11: the process survives
    import json
    rep = json.loads(r.stdout)
    by_entry = {j["entry"]: j for j in rep["jobs"]}
    assert set(by_entry) == {"chain.py", "brackets.py", "ok.py"}   # no file is lost
    br = by_entry["brackets.py"]["diagnostics"]
    assert [(d["code"], d["line"]) for d in br] == [("PF002", 2)]
    assert "no Python version parses it" in br[0]["message"]


def test_nested_calls_are_a_syntax_error_at_once_not_a_newer_syntax_note():
    # 1,000 nested calls: no Python parses it (200 nested parentheses at most); libcst took
    # 5.5 s and 2.3 GB to accept it and the file was reported as "newer syntax" (info)
    src = HEAD + "x = " + "f(" * 1000 + ")" * 1000 + "\n"
    t = time.perf_counter()
    ext = extract("calls.py", src)
    assert time.perf_counter() - t < 2.0
    assert _codes(ext) == [("PF002", 2)]
    assert ext.diagnostics[0].severity == "error"


def test_a_file_ast_rejects_goes_to_libcst_only_when_shallow():
    # newer syntax than the running Python would be tried with libcst; a file that is also
    # deeply nested is refused before the native parser sees it
    deep = HEAD + "x = (" + "-" * 3000 + "1)\nmatch = 1 +\n"
    ext = extract("deep.py", deep)
    assert [d.code for d in ext.diagnostics] == ["PF002"]
    assert "not parsed with libcst" not in ext.diagnostics[0].message
    assert "tokens" in ext.diagnostics[0].message


def test_cst_parse_measures_nesting_as_libcst_builds_it():
    assert cst_parse.ast_nesting(ast.parse("x = a and b and c")) < 10
    assert cst_parse.ast_nesting(ast.parse("x = " + " and ".join("a" * 300))) > 100
    assert cst_parse.text_nesting("x = [1, '((((', 3]  # ((((\ny = 2\n") == (1, 26, 9)
    assert cst_parse.refusal("x = 1\n") is None
    tree = ast.parse("d = {" + ", ".join(f"'k{i}': {i}" for i in range(400)) + "}\n")
    # a long but flat literal is measured exactly on the tree, and accepted
    assert cst_parse.refusal(ast.unparse(tree), tree) is None


def test_libcst_runs_on_a_large_stack_thread():
    # the guard's second line: a parse that recurses deeply runs where the stack is large
    m = cst_parse.parse_module("x = " + "(" * 60 + "1" + ")" * 60 + "\n")
    assert m.code.startswith("x = ((")


# --------------------------------------------------------------------------- budgets

BOMBS = {
    "repeat": 'v = 1000000000 * "a"',
    "augmented": 's = "x"\ns *= 10**9\nv = s',
    "percent": 'v = "%01000000000d" % 1',
    "fstring": 'v = f"{1:>1000000000}"',
    "format": 'v = "{:>1000000000}".format(1)',
    "tower": "v = ((10**255)**255)**255",
    "shift": "v = 1 << 10**9",
    "replace": 'v = ("a" * 10000).replace("a", "a" * 10000)',
}


def test_each_bomb_is_an_unknown_with_its_reason_in_well_under_a_second():
    from preflight.lang import python as E
    from preflight.extract.py_patterns import Patterns

    for name, body in BOMBS.items():
        src = HEAD + body + "\n"
        tree = ast.parse(src)
        ev = E.Evaluator("b.py", tree, [], Patterns("b.py"), lines=src.splitlines())
        t = time.perf_counter()
        ev.run()
        took = time.perf_counter() - t
        v = ev.globals["v"]
        assert not v.known, name
        assert "not computed" in v.reason or "over" in v.reason, (name, v.reason)
        assert took < 0.5, (name, took)


def test_a_bomb_file_is_checked_in_bounded_time_and_memory(tmp_path):
    src = HEAD + "\n".join(BOMBS.values()) + "\nbatch_size = 4\n"
    (tmp_path / "bomb.py").write_text(src)
    code = ("import resource, sys\n"
            "resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))\n"
            "from preflight.cli import main\n"
            "sys.argv = ['preflight', 'check', '--format', 'json', 'bomb.py']\n"
            "main()\n")
    t = time.perf_counter()
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                       text=True, timeout=120,
                       env={**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(
                           os.path.abspath(__file__)))})
    assert time.perf_counter() - t < 60
    assert r.returncode == 0, r.stderr[-2000:]      # within a 1 GiB address space
    import json
    facts = json.loads(r.stdout)["jobs"][0]["facts"]
    assert facts["micro_batch"]["value"] == 4


def test_the_module_counter_has_budgets_too(tmp_path):
    (tmp_path / "model.py").write_text(
        "import torch\nfrom torch import nn\n\nN = 10 ** 10 ** 10\n\n\n"
        "class Net(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        k = sum(range(10**12))\n"
        "        self.fc = nn.Linear(N, k)\n\n\n"
        "model = Net()\nopt = torch.optim.AdamW(model.parameters())\n")
    t = time.perf_counter()
    r = run_cli("check", "--format", "json", "model.py", cwd=str(tmp_path))
    assert time.perf_counter() - t < 60
    import json
    params = json.loads(r.stdout)["jobs"][0]["facts"]["params"]
    assert params["value"] is None
    assert "bits (over 4,096)" in params["reason"]
    assert "a range of over 100,000 items" in params["reason"]


def test_a_huge_module_list_is_not_unrolled(tmp_path):
    # found by the fuzz campaign: 31,555 layers built one by one took over 50 s
    (tmp_path / "model.py").write_text(
        "import torch\nfrom torch import nn\n\n\n"
        "class Net(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.layers = nn.ModuleList([nn.Linear(8, 8) for _ in range(31555)])\n\n\n"
        "model = Net()\nopt = torch.optim.AdamW(model.parameters())\n")
    t = time.perf_counter()
    r = run_cli("check", "--format", "json", "model.py", cwd=str(tmp_path))
    assert time.perf_counter() - t < 30
    import json
    params = json.loads(r.stdout)["jobs"][0]["facts"]["params"]
    assert params["value"] is None and params["origin"] == "unknown"
