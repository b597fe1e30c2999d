"""Text a script reads from elsewhere: here-documents (`<<EOF` bodies read into a variable,
or written to a config file the script then names) and repository files pulled in with
`source` / `.` (or run with `bash` / `sbatch`), read in place."""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Optional

from preflight import safe_read
from preflight.lang.shell import budgets
from preflight.lang.shell.values import MARK, Unknown, Word, mark
from preflight.lang.shell.words import Splitter, split_words

if TYPE_CHECKING:
    from preflight.lang.shell.reader import State


_HEREDOC = re.compile(r"<<(-?)\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\2")


def split_heredocs(text: str) -> tuple[str, list[tuple[int, int, str, bool]]]:
    """The text with here-document bodies blanked (line numbers kept), and each body as
    (line of its `<<`, first body line, body, expanded: delimiter unquoted)."""
    lines = text.splitlines()
    docs: list[tuple[int, int, str, bool]] = []
    i = 0
    while i < len(lines):
        code = lines[i].split("#", 1)[0] if not lines[i].lstrip().startswith("#") else ""
        m = _HEREDOC.search(code)
        if m and "<<<" not in code:
            strip_tabs, delim = m.group(1) == "-", m.group(3)
            body: list[str] = []
            j = i + 1
            while j < len(lines) and (lines[j].lstrip("\t") if strip_tabs else lines[j]).rstrip() != delim:
                body.append(lines[j].lstrip("\t") if strip_tabs else lines[j])
                j += 1
            docs.append((i + 1, i + 2, "\n".join(body), not m.group(2)))
            for k in range(i + 1, min(j + 1, len(lines))):
                lines[k] = ""
            i = j + 1
            continue
        i += 1
    return "\n".join(lines), docs


def read_heredoc(st: State, words: list[Word], lineno: int, doc: tuple[int, int, str, bool],
                 display: str) -> None:
    """`read -r -d '' VAR <<EOF` assigns the body; `cat > FILE <<EOF` / `tee FILE` writes a
    config the script then names: the body is handed to `st.on_written`, to be read at its
    lines in the script."""
    _, first, body, expand = doc
    texts = [w.text for w in words]
    if expand:
        body = re.sub(r"\\\n", "", body)
    if texts[:1] == ["read"]:
        var = next((t for t in reversed(texts[1:]) if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", t)), None)
        if var:
            st.env[var] = " ".join(w.text for w in split_words(body.replace("\n", " "), st.env, first, st.positional)) \
                if expand else body
        return
    target = None
    for k, t in enumerate(texts):
        if t in (">", ">>") and k + 1 < len(texts):
            target = texts[k + 1]
        elif t.startswith(">") and len(t) > 1 and not t.startswith(">&"):
            target = t.lstrip(">")
    if target is None and texts[:1] == ["tee"]:
        target = next((t for t in texts[1:] if not t.startswith("-")), None)
    # `cat <<EOT > $DIR/ds_config.json`: the folder may be known only at run time, the file
    # the launch line names is still the one written here (matched by its name)
    if not target or "\0" in os.path.basename(target):
        return
    st.written.add(os.path.basename(target))
    if expand:
        body = expand_body(st, body, first, json_like=body.lstrip().startswith("{"))
    st.on_written(target, body, first, display)


def expand_body(st: State, body: str, line: int, json_like: bool) -> str:
    """A here-document's body with its `$…` expanded as the shell does (defaults, arithmetic,
    arrays; quotes in it are text). In a JSON body a value not known statically becomes a
    JSON string holding the unknown marker, so the document still parses and that one
    value is unknown with its reason; elsewhere it is left as written."""
    out: list[str] = []
    sp = Splitter(body, st.env, line, st.positional)
    in_string = False
    i = 0
    while i < len(body):
        j = body.find("$", i)
        k = body.find('"', i) if json_like else -1
        if k >= 0 and (j < 0 or k < j):
            # a JSON string opens or closes (an escaped quote stays inside it)
            if not (k > 0 and body[k - 1] == "\\"):
                in_string = not in_string
            out.append(body[i:k + 1])
            i = k + 1
            continue
        if j < 0:
            out.append(body[i:])
            break
        out.append(body[i:j])
        sp.i = j
        val, words = sp.dollar()
        text = " ".join(words) if words is not None else val
        if isinstance(text, Unknown):
            text = body[j:sp.i] if not json_like else mark(text.reason)
        if json_like and MARK in text:
            text = text.replace(MARK, "\\u0000")
            if not in_string:
                text = '"' + text + '"'
        out.append(text)
        i = max(sp.i, j + 1)
    return "".join(out)


def _find_root(path: str) -> str:
    d = os.path.dirname(os.path.abspath(path))
    while True:
        if os.path.exists(os.path.join(d, ".git")) or os.path.exists(os.path.join(d, "pyproject.toml")):
            return d
        up = os.path.dirname(d)
        if up == d:
            return os.path.dirname(os.path.abspath(path))
        d = up


def follow(st: State, name: str) -> None:
    """Read a `source`d / `bash`ed / `sbatch`ed repository file in place, once, four deep at most."""
    target = _resolve_sourced(name, st.path)
    if not target or target in st.seen or st.depth >= budgets.MAX_SOURCE_DEPTH:
        return
    st.seen.add(target)
    st.references.append(_display(target))
    try:
        sub = safe_read.read_text(target, 1 << 20, truncate=True)
    except OSError:
        return
    st.read(sub, _display(target))


def _resolve_sourced(name: str, path: str) -> Optional[str]:
    here = os.path.dirname(path)
    root = _find_root(path)
    for base in (here, root, os.getcwd()):
        cand = os.path.normpath(os.path.join(base, name))
        real = os.path.realpath(cand)
        if os.path.isfile(cand) and (real.startswith(os.path.realpath(root) + os.sep)
                                     or real.startswith(os.path.realpath(here) + os.sep)):
            return cand
    return None


def _display(path: str) -> str:
    a, cwd = os.path.abspath(path), os.getcwd()
    return os.path.relpath(a, cwd) if a.startswith(cwd + os.sep) else path

