"""Jupyter notebooks (`.ipynb`), and the files their `%%writefile` cells write.

A notebook is read as two views of its code cells (`preflight.lang.notebook`): the
script view by the Python extractor — the training the notebook runs in its own kernel —
and the shell view by the shell launcher reader — the launch lines its `!` and `%run`
lines run. One extraction holds both: the script's facts and the launch lines'
invocations. A launch line that names a file a `%%writefile` cell writes launches that
cell (`nb.ipynb#train.py`), whether or not the file exists on disk yet; `extract_written`
reads such a file from its cell.

Every location found is a line of a view; `extras["notebook"]` keeps how the view's lines
map to cells, which the report uses to say `nb.ipynb:cell 4:12:5`
(`preflight.report.cells`).
"""

from __future__ import annotations

import os
from typing import Callable, Optional

from preflight.extract.reading import read_text
from preflight.extract.recognise import runs_training
from preflight.lang import notebook
from preflight.lang.shell.values import Unknown
from preflight.lazy import lazy
from preflight.plan import Diagnostic, Extraction

python_extractor = lazy("preflight.extract.python")
shell_file = lazy("preflight.extract.shell_file")


def _mapping(path: str, spans: list) -> dict:
    return {"path": path, "spans": [s.to_json() for s in spans]}


def _to_written(nb: notebook.Notebook, word: str) -> str:
    """A launch line's word, as the virtual path of the written file it names."""
    name = notebook.written_name(word)
    return notebook.virtual(nb.path, name) if name in nb.written else word


def extract(path: str, text: str, args: Optional[list[str]] = None,
            env: Optional[dict] = None) -> Extraction:
    nb = notebook.parse(path, text)
    if nb.failed:
        return Extraction(path=path, kind="notebook", diagnostics=nb.diagnostics)
    return _views(nb, path, args, env, cells=True)


def extract_databricks(path: str, text: str, args: Optional[list[str]] = None,
                       env: Optional[dict] = None) -> Extraction:
    """A Databricks notebook exported as source (`# Databricks notebook source`): its
    cells read as a notebook's, located at the file's own lines."""
    ext = _views(notebook.parse_databricks(path, text), path, args, env, cells=False)
    ext.kind = "python"
    return ext


def _views(nb: notebook.Notebook, path: str, args: Optional[list[str]],
           env: Optional[dict], cells: bool) -> Extraction:
    ext = python_extractor.extract(path, nb.script, args=args, env=env)
    ext.diagnostics = nb.diagnostics + ext.diagnostics
    if nb.shell.strip():
        # `{expr}` / `$name` in a `!` line are the notebook's Python values
        names = {**notebook.literal_names(nb.script), **(ext.extras.get("names") or {})}
        for k in ext.extras.get("names_unknown") or ():
            names.pop(k, None)
        unknown: dict[str, str] = {}
        lines = nb.shell.split("\n")
        for n in nb.expanded:
            lines[n - 1] = notebook.expand(lines[n - 1], names, unknown, str(n))
        sh = shell_file.extract(path, "\n".join(lines),
                                env={k: Unknown(why) for k, why in unknown.items()})
        for inv in [j for i in sh.invocations for j in i.jobs()]:
            inv.script = _to_written(nb, inv.script) if inv.script else inv.script
            inv.configs = [_to_written(nb, c) for c in inv.configs]
        ext.invocations = sh.invocations
        ext.diagnostics += sh.diagnostics
        ext.references += [r for r in sh.references if r not in ext.references]
    if cells:
        ext.extras["notebook"] = _mapping(path, nb.spans)
        ext.extras["notebook_files"] = sorted(nb.written)
    ext.extras["trains"] = runs_training(nb.script)
    return ext


def extract_written(path: str, dispatch: Callable[..., Extraction],
                    args: Optional[list[str]] = None, env: Optional[dict] = None) -> Extraction:
    """The file a notebook's `%%writefile` cell writes (`nb.ipynb#train.py`), read from
    that cell by `dispatch` (the extractor of its kind, `preflight.extract.extract_text`)."""
    nb_path, name = notebook.split_virtual(path) or (path, "")
    text, diag = read_text(nb_path)
    if diag is not None:
        return Extraction(path=path, kind="unreadable", diagnostics=[diag])
    nb = notebook.parse(nb_path, text or "")
    w = nb.written.get(name)
    if w is None:
        why = nb.diagnostics[0].message if nb.failed and nb.diagnostics else \
            f"no %%writefile cell writes {name!r}"
        return Extraction(path=path, kind="unreadable", diagnostics=[Diagnostic(
            code="PF006", name="missing-file", severity="warning", message=why,
            path=nb_path, line=1, col=1)])
    ext = dispatch(path, w.text, args=args, env=env)
    ext.extras["notebook"] = _mapping(nb_path, w.spans)
    return ext


def is_notebook(path: str) -> bool:
    return os.path.splitext(path)[1].lower() == ".ipynb"
