"""Jupyter notebooks, read as the kernel runs them (never executed).

A notebook's code cells, in order, are one Python script: the *script view*. IPython's
own syntax is read as what it is, each line kept at its place so every line of the view
is a line of one cell:

* `!cmd` (continued on the next lines after a `\\`), `var = !cmd`, `%sx cmd`, `%system
  cmd` and the body of a `%%bash` / `%%sh` / `%%script bash` cell are shell lines: they go
  to the *shell view*, numbered as the script view, where the shell reader finds the
  launch lines (`!accelerate launch train.py …`, `!torchrun …`, `!deepspeed …`, `!python
  train.py …`); `{expr}` and `$name` in them are the notebook's Python values (`expand`);
* `%run [-m] x args` is `python [-m] x args` in the shell view; `%env A=1` an `export`;
  `%cd d` a `cd`;
* a `%%writefile name` (or `%%file name`, `-a` appends) cell is a file the notebook
  writes: `name` as written in the cell, reachable as the virtual path
  `notebook.ipynb#name` (`virtual`), so a later launch line that names it launches it;
* `%pip`, `%conda`, `%matplotlib`, `obj?` and every other magic are skipped (a `pass` in
  the script view: a magic is a statement, as IPython runs it), never breaking the line
  numbering; `%%time` / `%%capture` cells run their body as Python; other cell magics
  (`%%html`, `%%javascript`) are skipped.

A cell that is not valid Python (after its magics are masked) is a located PF002 and is
left out of the script view, so the other cells are still read. Lines of a view map back
to (cell, line in that cell) through its `Span`s; cells are numbered from 1 over all
cells of the notebook, markdown included (as Jupyter shows them, and as ruff reports
`nb.ipynb:cell 4:12:5`).

nbformat reads the file (any version it converts to 4, with its validation warnings
silenced); nothing here writes a notebook (`preflight.fix.notebook_file` does).
"""

from __future__ import annotations

import ast
import json
import os
import re
import shlex
import warnings
from dataclasses import dataclass, field
from typing import Optional

from preflight.plan import Diagnostic

#: a file a notebook writes is reached as `<notebook>.ipynb#<name>`
VIRTUAL = ".ipynb#"
#: cell magics whose body runs as Python
PYTHON_BODY = {"time", "timeit", "capture", "prun", "debug", "py", "python", "python3"}
#: cell magics whose body is a shell script
_SHELL_BODY = {"bash", "sh", "script"}
_WRITE = {"writefile", "file"}
#: `var = !cmd` / `var = %sx cmd`
_ASSIGN_SHELL = re.compile(r"^[\w.,\s\[\]()]+?=\s*(!|%sx\b|%system\b)(.*)$")
#: `obj?`, `obj??`, `?obj`: help
_HELP = re.compile(r"^(\?\??[\w.]+|[\w.]+\?\??)$")


@dataclass(frozen=True)
class Span:
    """Lines `view_line … view_line+count-1` of a view are lines `cell_line …` of `cell`."""

    view_line: int
    cell: int
    cell_line: int
    count: int

    def to_json(self) -> list[int]:
        return [self.view_line, self.cell, self.cell_line, self.count]


@dataclass
class Written:
    """A file a `%%writefile` cell writes (appended to by `%%writefile -a`)."""

    lines: list[str] = field(default_factory=list)
    spans: list[Span] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "".join(ln + "\n" for ln in self.lines)


@dataclass
class Notebook:
    path: str
    script: str = ""
    shell: str = ""
    spans: list[Span] = field(default_factory=list)
    written: dict[str, Written] = field(default_factory=dict)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    #: lines of the shell view IPython expands `{expr}` / `$name` in (`!` lines, line
    #: magics; not the body of a `%%bash` cell)
    expanded: list[int] = field(default_factory=list)
    #: the notebook could not be read at all (not JSON, an unknown nbformat version)
    failed: bool = False


def virtual(notebook: str, name: str) -> str:
    return notebook + "#" + name


def split_virtual(path: str) -> Optional[tuple[str, str]]:
    """(notebook path, written name) of a virtual path; None for a plain path."""
    i = path.rfind(VIRTUAL)
    if i < 0:
        return None
    return path[: i + len(VIRTUAL) - 1], path[i + len(VIRTUAL):]


def written_name(name: str) -> str:
    """A written file's name as the launch lines name it (`./train.py` is `train.py`)."""
    return os.path.normpath(name.strip().strip("'\"")).replace("\\", "/")


def locate(spans: list, line: int) -> Optional[tuple[int, int]]:
    """(cell, line in the cell) of a view's line; None outside every span."""
    for s in spans:
        view_line, cell, cell_line, count = s.to_json() if isinstance(s, Span) else s
        if view_line <= line < view_line + count:
            return cell, cell_line + line - view_line
    return None


def cell_lines(text: str, cell: int) -> list[str]:
    """The lines of a notebook's `cell` (1-based, over all cells); [] when it has none."""
    # nbformat loads only when a notebook is read
    import nbformat
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            doc = nbformat.reads(text, as_version=4)
        return str(doc.cells[cell - 1].get("source") or "").splitlines() if cell >= 1 else []
    except Exception:  # noqa: BLE001 - nbformat raises several error types
        return []


def _diag(path: str, message: str, line: int = 1, col: int = 1) -> Diagnostic:
    return Diagnostic(code="PF002", name="syntax-error", severity="error",
                      message=message, path=path, line=line, col=col)


def parse(path: str, text: str) -> Notebook:
    """The notebook's views, or `failed` with a located PF002 saying why it cannot be
    read (not JSON, not a notebook, an nbformat version nbformat does not know)."""
    # nbformat (and its jsonschema) load only when a notebook is read
    import nbformat
    nb = Notebook(path=path)
    try:
        raw = json.loads(text)
    except ValueError as e:
        nb.failed = True
        nb.diagnostics.append(_diag(path, f"cannot read notebook: not JSON ({getattr(e, 'msg', e)})",
                                    getattr(e, "lineno", 1), getattr(e, "colno", 1)))
        return nb
    if not isinstance(raw, dict) or not isinstance(raw.get("cells", raw.get("worksheets")), list):
        nb.failed = True
        nb.diagnostics.append(_diag(path, "cannot read notebook: JSON without a list of cells"))
        return nb
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            doc = nbformat.reads(text, as_version=4)
    except nbformat.NBFormatError as e:     # a version nbformat does not know
        nb.failed = True
        nb.diagnostics.append(_diag(path, f"cannot read notebook: {str(e)[:200]}"))
        return nb
    except Exception as e:  # noqa: BLE001 - nbformat raises several error types
        nb.failed = True
        nb.diagnostics.append(_diag(path, "cannot read notebook: not a valid notebook "
                                          f"({type(e).__name__}: {str(e)[:200]})"))
        return nb
    script: list[str] = []
    shell: list[str] = []
    for n, cell in enumerate(doc.cells, start=1):
        if cell.get("cell_type") != "code":
            continue
        src = cell.get("source") or ""
        _cell(nb, n, src if isinstance(src, str) else "".join(src), script, shell)
    nb.script = "".join(ln + "\n" for ln in script)
    nb.shell = "".join(ln + "\n" for ln in shell)
    return nb


#: the first line of a Databricks notebook exported as source (`.py`)
DATABRICKS = "# Databricks notebook source"
_DB_CELL = "# COMMAND ----------"
_DB_MAGIC = re.compile(r"^# MAGIC ?(.*)$")


def is_databricks(text: str) -> bool:
    return text.lstrip("\ufeff").startswith(DATABRICKS)


def parse_databricks(path: str, text: str) -> Notebook:
    """A Databricks notebook exported as Python source: cells separated by `# COMMAND
    ----------`, a magic cell's lines prefixed `# MAGIC ` (`%md` markdown, `%sh` a shell
    script, `%pip` / `%run` line magics), `!cmd` lines in Python cells. Read as a Jupyter
    notebook's cells are, but its views keep the file's own line numbers (a `.py` file is
    reported at its lines, not at cells)."""
    nb = Notebook(path=path)
    lines = text.lstrip("\ufeff").splitlines()
    script: list[str] = []
    shell: list[str] = []
    cells: list[tuple[int, list[str]]] = []
    start, cur = 2, []
    for i, ln in enumerate(lines[1:], start=2):
        if ln.strip() == _DB_CELL:
            cells.append((start, cur))
            start, cur = i + 1, []
        else:
            cur.append(ln)
    cells.append((start, cur))
    for n, (first, body) in enumerate(cells, start=1):
        magic = [_DB_MAGIC.match(b) for b in body]
        if body and all(m is not None or not b.strip() for m, b in zip(magic, body)) and \
                any(m is not None for m in magic):
            body = [m.group(1) if m is not None else "" for m in magic]
            k = next(i for i, b in enumerate(body) if b.strip())
            first, body = first + k, body[k:]
            words = body[0].split()
            if words[0] in ("%md", "%md-sandbox"):
                continue
            if words[0] in ("%sh", "%bash"):
                # a `%sh` cell is a shell script (Jupyter's `%%sh` cell): each of its
                # lines a shell line at its place, the command on the magic's own line too
                body = ["%%sh"] + body[1:] if len(words) == 1 else \
                    ["!" + " ".join(words[1:])] + [("!" + b) if b.strip() else ""
                                                   for b in body[1:]]
        while len(script) < first - 1:
            script.append("")
            shell.append("")
        _cell(nb, n, "\n".join(body), script, shell)
    nb.spans = []           # the views are the file's lines: nothing to map
    nb.script = "".join(ln + "\n" for ln in script)
    nb.shell = "".join(ln + "\n" for ln in shell)
    return nb


def _cell(nb: Notebook, n: int, src: str, script: list[str], shell: list[str]) -> None:
    lines = src.splitlines()
    if not lines:
        return
    start = len(script) + 1
    nb.spans.append(Span(start, n, 1, len(lines)))
    py = [""] * len(lines)
    sh = [""] * len(lines)
    first = lines[0].strip()
    body_from = 0
    if first.startswith("%%"):
        words = first[2:].split()
        magic = words[0] if words else ""
        if magic in _WRITE:
            _write(nb, n, words[1:], lines)
            script += py
            shell += sh
            return
        if magic in _SHELL_BODY and (magic != "script" or (len(words) > 1 and
                                                          os.path.basename(words[1]) in ("bash", "sh"))):
            sh[1:] = lines[1:]
            script += py
            shell += sh
            return
        if magic not in PYTHON_BODY:
            script += py                # %%html, %%javascript, %%markdown …: not code
            shell += sh
            return
        body_from = 1
    continued = False
    for i in range(body_from, len(lines)):
        py[i], sh[i] = line_views(lines[i], continued)
        continued = sh[i].rstrip().endswith("\\")
        if sh[i]:
            nb.expanded.append(start + i)
    try:
        ast.parse("\n".join(py))
    except (SyntaxError, ValueError) as e:
        line = getattr(e, "lineno", None) or 1
        col = getattr(e, "offset", None) or 1
        nb.diagnostics.append(_diag(nb.path, f"cannot parse cell {n} as Python: "
                                             f"{getattr(e, 'msg', e)}; the cell is not read",
                                    start + line - 1, max(col, 1)))
        py = [""] * len(lines)
    script += py
    shell += sh


def line_views(line: str, continued: bool = False) -> tuple[str, str]:
    """(the line in the script view, the line in the shell view). `continued`: the line
    before is a shell line ending in `\\`, which IPython continues on this one (a blank
    line in the script view: its indentation is the shell's, not Python's)."""
    if continued:
        return "", line
    s = line.lstrip()
    indent = line[: len(line) - len(s)]
    masked = indent + "pass"        # a statement, as IPython runs it: not inside brackets
    if s.startswith("!"):
        return masked, s.lstrip("!")
    m = _ASSIGN_SHELL.match(s)
    if m and not s.startswith(("%", "#")):
        return masked, m.group(2).strip()
    if s.startswith("%") and not s.startswith("%%"):
        words = s[1:].split(None, 1)
        name = words[0] if words else ""
        rest = words[1] if len(words) > 1 else ""
        return masked, _line_magic(name, rest)
    if _HELP.match(s):
        return masked, ""
    return line, ""


def _line_magic(name: str, rest: str) -> str:
    """The shell line a line magic amounts to ('' when none)."""
    if name in ("sx", "system"):
        return rest
    if name == "run":
        try:
            words = shlex.split(rest, comments=True)
        except ValueError:
            return ""
        if "-m" in words:
            i = words.index("-m")
            return shlex.join(["python", "-m"] + words[i + 1:])
        while words and words[0].startswith("-"):
            words = words[1:]      # %run -i / -t / -d: how it runs, not what
        return shlex.join(["python"] + words) if words else ""
    if name == "env":
        m = re.match(r"^([A-Za-z_]\w*)(?:\s*=\s*|\s+)(.*)$", rest.strip())
        return f"export {m.group(1)}={shlex.quote(m.group(2))}" if m else ""
    if name == "cd":
        return f"cd {rest}" if rest.strip() else ""
    return ""       # %pip, %conda, %load_ext, %matplotlib, %time x, …


def _write(nb: Notebook, n: int, words: list[str], lines: list[str]) -> None:
    append = any(w in ("-a", "--append") for w in words)
    names = [w for w in words if not w.startswith("-")]
    if not names:
        return
    name = written_name(names[-1])
    w = nb.written.get(name) if append else None
    if w is None:
        w = nb.written[name] = Written()
    if len(lines) > 1:
        w.spans.append(Span(len(w.lines) + 1, n, 2, len(lines) - 1))
        w.lines += lines[1:]


# ------------------------------------------------------------ IPython's `{expr}` and `$name`

_EXPANSION = re.compile(r"\{\{|\}\}|(?<!\$)\{([^{}]+)\}|\$\$|\$([A-Za-z_]\w*)")
_SCALARS = (int, float, str, bool)
_OPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b,
        ast.Mult: lambda a, b: a * b, ast.FloorDiv: lambda a, b: a // b,
        ast.Div: lambda a, b: a / b, ast.Mod: lambda a, b: a % b}


def _static(node: ast.AST, names: dict) -> Optional[object]:
    """A value of a `{expr}` known statically (a constant, a known name, arithmetic)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, _SCALARS):
        return node.value
    if isinstance(node, ast.Name) and isinstance(names.get(node.id), _SCALARS):
        return names[node.id]
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        a, b = _static(node.left, names), _static(node.right, names)
        if a is not None and b is not None:
            try:
                return _OPS[type(node.op)](a, b)
            except (TypeError, ValueError, ArithmeticError):
                return None
    return None


def expand(line: str, names: dict, unknown: dict, tag: str) -> str:
    """A shell line as IPython hands it to the shell: `{expr}` and `$name` replaced by the
    notebook's Python values (`names`: those known statically), `{{` / `}}` / `$$` by the
    character. An expression not known statically becomes a shell variable `unknown` says
    is unknown (and why); a line with a `{…}` that is not a Python expression is left as
    it is, as IPython leaves it (`${HOME}` stays the shell's)."""
    out: list[str] = []
    pos = 0
    for n, m in enumerate(_EXPANSION.finditer(line)):
        out.append(line[pos:m.start()])
        pos = m.end()
        text, expr, name = m.group(0), m.group(1), m.group(2)
        if text in ("{{", "}}", "$$"):
            out.append(text[0])
        elif name is not None:
            v = names.get(name)
            out.append(str(v) if isinstance(v, _SCALARS) else text)   # else the shell's
        else:
            try:
                tree = ast.parse(expr.strip(), mode="eval")
            except (SyntaxError, ValueError):
                return line
            v = _static(tree.body, names)
            if v is not None:
                out.append(str(v))
            else:
                var = f"__notebook_{tag}_{n}"
                unknown[var] = f"{{{expr.strip()}}} is a Python value of the notebook, known when it runs"
                out.append("${" + var + "}")
    out.append(line[pos:])
    return "".join(out)


def literal_names(script: str) -> dict:
    """The script view's top-level names bound to a value known statically (`n_gpus = 4`,
    `bs = n * 2`), in cell order: what a `{n_gpus}` in a later `!` line expands to."""
    try:
        tree = ast.parse(script)
    except (SyntaxError, ValueError):
        return {}
    names: dict = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name):
            v = _static(node.value, names)
            if v is None:
                names.pop(node.targets[0].id, None)
            else:
                names[node.targets[0].id] = v
    return names
