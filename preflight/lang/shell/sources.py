"""Text a script reads from elsewhere: here-documents (`<<EOF` bodies read into a variable,
or written to a config file the script then names) and repository files pulled in with
`source` / `.` (or run with `bash` / `sbatch`), read in place."""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Optional

from preflight import safe_read
from preflight.lang.shell import budgets
from preflight.lang.shell.values import Word
from preflight.lang.shell.words import split_words

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
        def sub(m: "re.Match") -> str:
            v = st.env.get(m.group(1) or m.group(2))
            return v if isinstance(v, str) and "\0" not in v else m.group(0)
        body = re.sub(r"\$\{([A-Za-z_]\w*)\}|\$([A-Za-z_]\w*)", sub, body)
    st.on_written(target, body, first, display)


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

