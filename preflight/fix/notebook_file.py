"""Edits in a Jupyter notebook: each fact edited in the source of the cell it came from,
the notebook's JSON layout kept.

A fact of a notebook sits at a line of one of its views (`preflight.lang.notebook`): the
script view of its code cells, or the file a `%%writefile` cell writes. Each edit is made
in its cell alone: the cell's source with its magics masked (a `pass` carrying a marker
comment, so the edited text still parses and the magic comes back at its place) is
edited by the editor of its kind — Python for code cells and written `.py` files, YAML,
JSON or TOML for written configs — and the result becomes the cell's `source`.

The notebook is written back as it was laid out: nbformat's writer would sort the keys
and indent by one space, re-spelling a notebook written by another tool (Colab, VS Code)
in every line. So the JSON is loaded in order, only the edited cells' `source` fields are
replaced (a list of lines stays a list, a string a string), and it is dumped with the
file's own indentation, ASCII escaping and final newline — after checking that this
dumping reproduces the original text exactly; a notebook whose layout it does not
reproduce is not edited (the fix says so). Outputs, metadata and every other cell are
untouched.
"""

from __future__ import annotations

import json
import re
from typing import Any, Optional

from preflight.fix.edits import FactEdit, Unspellable
from preflight.lang import notebook
from preflight.lang.notebook import line_views, locate, split_virtual
from preflight.lazy import lazy

json_file = lazy("preflight.fix.json_file")
python_file = lazy("preflight.fix.python_file")
toml_file = lazy("preflight.fix.toml_file")
yaml_file = lazy("preflight.fix.yaml_file")

_MARK = "# preflight: magic "
_MARKED = re.compile(r"^[ \t]*(?:pass  )?# preflight: magic (\d+)$")


def layout(text: str) -> Optional[dict[str, Any]]:
    """The `json.dumps` settings that write `text` back byte for byte; None when none
    does."""
    try:
        raw = json.loads(text)
    except ValueError:
        return None
    for indent in (1, 2, 4, 0, None):
        for ascii_ in (False, True):
            out = json.dumps(raw, indent=indent, ensure_ascii=ascii_)
            for end in ("\n", ""):
                if out + end == text:
                    return {"indent": indent, "ensure_ascii": ascii_, "end": end}
    return None


def _mask(src: str) -> tuple[str, dict[int, str]]:
    """A code cell's source with each magic and shell line a marked `pass`."""
    lines = src.split("\n")
    kept: dict[int, str] = {}
    start = 0
    if lines and lines[0].lstrip().startswith("%%"):
        words = lines[0].strip()[2:].split()
        if not words or words[0] not in notebook.PYTHON_BODY:
            raise Unspellable("the cell is not Python (a cell magic runs it)")
        kept[0], lines[0] = lines[0], "pass  " + _MARK + "0"
        start = 1
    continued = False
    for i in range(start, len(lines)):
        py, sh = line_views(lines[i], continued)
        if continued:
            kept[i], lines[i] = lines[i], _MARK + str(i)   # a comment: any indentation
        elif py != lines[i]:
            indent = lines[i][: len(lines[i]) - len(lines[i].lstrip())]
            kept[i], lines[i] = lines[i], indent + "pass  " + _MARK + str(i)
        continued = sh.rstrip().endswith("\\")
    return "\n".join(lines), kept


def _unmask(text: str, kept: dict[int, str]) -> str:
    return "\n".join(kept.get(int(m.group(1)), ln) if (m := _MARKED.match(ln)) else ln
                     for ln in text.split("\n"))


def _edit_kind(name: str, text: str, edits: list[FactEdit]) -> tuple[str, list[str]]:
    low = name.lower()
    if low.endswith(".py"):
        new, notes, later = python_file.edit_python(text, edits)
        if later:
            raise Unspellable("the script reads its settings from its command line, and "
                              "launch lines inside a notebook are not edited")
        return new, notes
    if low.endswith((".yaml", ".yml")):
        return yaml_file.edit_yaml(text, edits)
    if low.endswith(".json"):
        return json_file.edit_json(text, edits)
    if low.endswith(".toml"):
        return toml_file.edit_toml(text, edits)
    raise Unspellable(f"{name}: files of this kind are not edited")


def _moved(e: FactEdit, line: int) -> FactEdit:
    return FactEdit(fact=e.fact, value=e.value, old=e.old, new_key=e.new_key,
                    source=e.source.model_copy(update={"line": line, "cell": None}))


def edit_notebook(path: str, text: str, edits: list[FactEdit]) -> tuple[str, list[str]]:
    """(the notebook's new JSON text, notes). `edits` are at lines of its views: the
    notebook's own path (its code cells) or `path#name` (a written file)."""
    how = layout(text)
    if how is None:
        raise Unspellable("the notebook's JSON layout cannot be written back unchanged; "
                          "edit the cell by hand")
    raw = json.loads(text)
    if raw.get("nbformat") != 4 or not isinstance(raw.get("cells"), list):
        raise Unspellable("only nbformat 4 notebooks are edited")
    nb = notebook.parse(path, text)
    per_cell: dict[int, list[FactEdit]] = {}
    names: dict[int, str] = {}
    for e in edits:
        written = split_virtual(e.source.path)
        spans = nb.spans if written is None else (
            nb.written[written[1]].spans if written[1] in nb.written else [])
        at = locate(spans, e.source.line)
        if at is None:
            raise Unspellable(f"line {e.source.line} is in no cell of the notebook")
        cell, line = at
        per_cell.setdefault(cell, []).append(_moved(e, line if written is None else line - 1))
        names[cell] = "cell.py" if written is None else written[1]
    notes: list[str] = []
    for cell, cell_edits in sorted(per_cell.items()):
        node = raw["cells"][cell - 1]
        src = node.get("source", "")
        src_text = src if isinstance(src, str) else "".join(src)
        if names[cell] == "cell.py":
            masked, kept = _mask(src_text)
            new, more = _edit_kind("cell.py", masked, cell_edits)
            new = _unmask(new, kept)
        else:
            first, _, body = src_text.partition("\n")
            new, more = _edit_kind(names[cell], body, cell_edits)
            new = first + "\n" + new
        node["source"] = new if isinstance(src, str) else new.splitlines(keepends=True)
        notes += [f"cell {cell}: {n}" for n in more]
    out = json.dumps(raw, indent=how["indent"], ensure_ascii=how["ensure_ascii"]) + how["end"]
    return out, notes
