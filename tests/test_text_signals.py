"""Cheap scans that skip most of a text: `numel_times_four` walks only the statements that
say `numel`, discovery's `runnable` matches only lines holding a word; each finds what the whole scan finds."""

import ast
import glob
import os

import pytest

from preflight.extract.numel import numel_times_four

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CASES = {
    "one line": "n = sum(p.numel() for p in m.parameters()) * 4\n",
    "four first": "x = 1\ny = 4 * t.numel()\n",
    "broken over lines": "def f(m):\n    return (\n        sum(p.numel()\n            for p in m.parameters())\n        * 4\n    )\n",
    "in a class": "class A:\n    def b(self):\n        if True:\n            return [4 * q.numel() for q in self.p]\n",
    "crlf": "a = 1\r\nb = (t\r\n  .numel()) * 4\r\n",
    "lone cr": "a = 1\rb = t.numel() * 4\r",
    "form feed": "a = 1\x0c\nb = t.numel() * 4\n",
    "string only": "s = 'numel'\nb = t.size() * 4\n",
    "element size": "b = t.numel() * t.element_size()\n",
    "nested calls": "print(f'{sum(p.numel() for p in m.parameters()) * 4 / 2**30:.1f} GiB')\n",
}


def _whole(tree: ast.AST) -> list[tuple[int, int]]:
    return numel_times_four(tree)          # no text: the whole tree is walked


@pytest.mark.parametrize("name", sorted(CASES))
def test_pruned_walk_finds_what_the_whole_walk_finds(name):
    text = CASES[name]
    tree = ast.parse(text)
    assert numel_times_four(tree, text) == _whole(tree)


def test_the_cases_find_what_they_should():
    found = {k: numel_times_four(ast.parse(v), v) for k, v in CASES.items()}
    assert found["one line"] == [(1, 11)]
    assert found["four first"] == [(2, 11)]
    assert found["broken over lines"] == [(3, 15)]
    assert found["crlf"] == [(3, 4)]
    assert found["lone cr"] == [(2, 7)]
    assert found["string only"] == [] and found["element size"] == []


def test_same_on_every_python_file_of_the_project():
    files = [p for p in glob.glob(os.path.join(ROOT, "**", "*.py"), recursive=True)
             if ".venv" not in p and "numel" in open(p, encoding="utf-8", errors="replace").read()]
    assert len(files) > 10
    for p in files:
        text = open(p, encoding="utf-8", errors="replace").read()
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        assert numel_times_four(tree, text) == _whole(tree), p


# ---------------------------------------------------------------- runnable scripts
# (discovery's test of a walked Python file matches only the lines where a word occurs)

RUNNABLE = {
    "if __name__ == '__main__':\n    main()\n": True,
    "import logging\nlog = logging.getLogger(__name__)\n": False,
    "log = get(__name__)\nif __name__ == '__main__':\n    main()\n": True,
    "def f():\n    if __name__ == '__main__':\n        pass\n": False,     # not at module level
    "import fire\nfire.Fire(main)\n": True,
    "cli = LightningCLI(Model)\n": True,
    "from jsonargparse import auto_cli\nauto_cli(main)\n": True,
    "import typer\ntyper.run(main)\n": True,
    "# Fire and CLI and typer, in words only\nx = 1\n": False,
    "x = 1": False,
    "": False,
}


@pytest.mark.parametrize("text", sorted(RUNNABLE))
def test_runnable(text):
    from preflight.discover.signals import ENTRY, runnable
    assert runnable(text) is RUNNABLE[text]
    assert (ENTRY.search(text) is not None) is RUNNABLE[text]     # the whole-text pattern agrees
