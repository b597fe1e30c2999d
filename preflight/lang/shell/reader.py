"""The reader: its state while it walks a script (and the files the script sources), and
the walk itself — logical lines, array assignments, blocks, and the simple commands the
language reads itself (`export`, `unset`, `eval`, `source`, assignments).

A command the language does not read (a launcher, a program) goes to the state's
`on_command` hook, a comment line (an `#SBATCH` header) to `on_comment`, a config written
by a here-document to `on_written`: a subclass of `State` gives them their meaning."""

from __future__ import annotations

import re
from collections import deque
from typing import Optional

from preflight.lang.shell import blocks, budgets
from preflight.lang.shell.control import Frame, active, active_outer, branch, case_pattern, close, cond_value, open_loop
from preflight.lang.shell.lines import logical_lines
from preflight.lang.shell.sources import follow, read_heredoc, split_heredocs
from preflight.lang.shell.values import OPERATORS, Value, Word, mark, readable
from preflight.lang.shell.words import split_words


class State:
    """The variables, the open `if` / `case` / loop blocks and the files followed while a
    script is read; its hooks (`on_comment`, `on_command`, `on_written`) read nothing."""

    def __init__(self, path: str, env: dict[str, Value], depth: int = 0,
                 seen: Optional[set] = None, positional: Optional[dict[str, Value]] = None):
        self.path, self.env, self.depth = path, env, depth
        #: the script's own arguments (`$1`, `$@`, `$#`); `run_as_named` sets them for a
        #: script run by name without arguments
        self.positional: dict[str, Value] = positional if positional is not None else {}
        # `$0` and `${BASH_SOURCE[0]}`: the script, as its path is given (the folder a
        # script finds its siblings in: `source "$(dirname "$0")/env.sh"`)
        self.positional.setdefault("0", path)
        env.setdefault("BASH_SOURCE", [path])
        self.seen = seen if seen is not None else set()
        #: files read in place (`source`d, run with `bash` / `sbatch`)
        self.references: list[str] = []
        #: open if / case / loop blocks
        self.frames: list[Frame] = []
        #: files the script writes from a here-document (`cat > ds.json <<EOF`): read here
        self.written: set[str] = set()
        #: simple commands read so far, and why reading stopped when a budget was spent
        self.commands = 0
        #: variables the script exports (what the programs it starts find in their environment)
        self.exported: set[str] = set()
        #: functions the script defines: name → the logical lines of its body
        self.functions: dict[str, list[tuple[int, str]]] = {}
        self.spent: Optional[tuple[str, str, int]] = None      # (why, path, line)

    def read(self, text: str, display: str) -> None:
        """Read a script's text (`display`: the path its positions are reported at)."""
        run_text(self, text, display)

    def follow(self, name: str) -> None:
        """Read the repository file a command names (`source`, `bash other.sh`) in place."""
        follow(self, name)

    # -- hooks
    def on_comment(self, raw: str, lineno: int, display: str) -> None:
        """A comment line (`raw`, as written), wherever it is, in a branch taken or not."""

    def on_command(self, cmd: list[Word], k: int, prefix_env: dict[str, Value], lineno: int,
                   display: str) -> None:
        """A simple command the language does not read itself: `cmd[k]` is its program,
        `prefix_env` the assignments before it (`NCCL_DEBUG=INFO torchrun …`)."""

    def on_written(self, target: str, body: str, first: int, display: str) -> None:
        """A file the script writes from a here-document; `body` is expanded where the
        delimiter is unquoted, its first line is line `first` of the script."""


def _assign(word: str) -> Optional[tuple[str, str, bool]]:
    m = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*)(\+?)=(.*)", word, re.S)
    if not m:
        return None
    return m.group(1), m.group(3), bool(m.group(2))


_ARRAY_RE = re.compile(r"^\s*(?:export\s+|declare\s+-a\s+|local\s+|readonly\s+)?([A-Za-z_][A-Za-z0-9_]*)(\+?)=\((.*)\)\s*(?:#.*)?$", re.S)


def run_text(st: State, text: str, display: str) -> None:
    """Walks a script's logical lines (here-document bodies set apart first)."""
    text, docs = split_heredocs(text) if "<<" in text else (text, [])
    run_lines(st, logical_lines(text), display, deque(docs))


def run_lines(st: State, lines: blocks.Lines, display: str, pending: deque) -> None:
    """Walks logical lines; `pending`: the here-documents not met yet, in line order."""
    loops: Optional[dict[int, int]] = None          # loop line → its `done` line, when needed
    k = 0
    while k < len(lines) and not st.spent:
        lineno, raw = lines[k]
        k += 1
        st.commands += 1            # a line read again (a loop's body, a function) counts again
        if st.commands > budgets.MAX_COMMANDS:
            _spend(st, display, lineno)
            return
        stripped = raw.strip()
        if stripped.startswith("#"):
            st.on_comment(raw, lineno, display)
            continue
        if not stripped:
            continue
        m = _ARRAY_RE.match(raw)
        if m and not active(st):
            continue
        if m:
            body = re.sub(r"#[^\n]*", "", m.group(3))
            items = [w.text for w in split_words(body.replace("\n", " "), st.env, lineno, st.positional) if w.text not in OPERATORS]
            if m.group(2):
                prev = st.env.get(m.group(1))
                items = (prev if isinstance(prev, list) else ([prev] if isinstance(prev, str) else [])) + items
            st.env[m.group(1)] = items
            continue
        fn = blocks.function_header(raw)
        if fn is not None:
            # a function's body is read when it is called, not where it is defined
            end = blocks.function_end(lines, k, fn[1])
            if end is None:
                continue
            if active(st):
                st.functions[fn[0]] = lines[k:end + 1]
            k = end + 1
            continue
        one = blocks.one_line_loop(raw) if active(st) else None
        if one is not None and _each_value(st, one[:2], [(lineno, raw), (lineno, one[2]), (lineno, "done")],
                                           display):
            continue
        loop = blocks.loop_header(raw) if active(st) else None
        if loop is not None:
            loops = blocks.loop_ends(lines) if loops is None else loops
            end = loops.get(k - 1)
            if end is not None and end - k <= budgets.MAX_LOOP_BODY and _each_value(st, loop, lines[k - 1:end + 1], display):
                k = end + 1
                continue
        rest = case_pattern(st, raw, lineno)
        if rest is not None:
            raw = rest
        words = split_words(raw, st.env, lineno, st.positional)
        if pending and "<<" in raw:
            # the here-document opened on this logical line (its `<<` on one of its lines)
            span = lineno + raw.count("\n")
            while pending and pending[0][0] < lineno:
                pending.popleft()
            if pending and pending[0][0] <= span + 40:
                doc = pending.popleft()
                if active(st):
                    read_heredoc(st, [w for w in words if not w.text.startswith("<<")], lineno, doc, display)
        run_words(st, words, lineno, display, raw)


def _each_value(st: State, loop: tuple[str, str], block: blocks.Lines, display: str) -> bool:
    """A `for NAME in a b c` loop over lines, read once per value with NAME set to it, so
    that each value launches its own run. False (the loop is read once, NAME unknown with
    its values) when the list is not known statically or is longer than the budget."""
    name, listed = loop
    values = split_words(listed, st.env, block[0][0], st.positional)
    if not 1 < len(values) <= budgets.MAX_LOOP_VALUES or any(w.unknown for w in values) \
            or st.depth >= budgets.MAX_EVAL_DEPTH:
        return False
    st.depth += 1
    try:
        for w in values:
            quoted = "'" + w.text.replace("'", "'\\''") + "'"
            header = (block[0][0], f"for {name} in {quoted}; do")
            run_lines(st, [header] + block[1:], display, deque())
    finally:
        st.depth -= 1
    return True


def call_function(st: State, name: str, args: list[Word], display: str) -> None:
    """A call of a function the script defines: its body read with the call's arguments."""
    saved = st.positional
    texts = [w.text for w in args]
    st.positional = {str(n): t for n, t in enumerate(texts, 1)}
    st.positional.update({"#": str(len(texts)), "@": texts, "*": texts, "0": saved.get("0", st.path)})
    st.depth += 1
    try:
        run_lines(st, st.functions[name], display, deque())
    finally:
        st.depth -= 1
        st.positional = saved


def run_words(st: State, words: list[Word], lineno: int, display: str,
              raw: Optional[str] = None) -> None:
    """Walks one logical line: `if`/`elif`/`else`/`fi` and `case` with conditions that can be
    decided statically take one branch; undecidable ones are read branch by branch.

    `raw` is the text the words were split from: a command after another on the same line
    (`MBS=8; torchrun … --bs $MBS`, the body of `if …; then …; fi`) is expanded again from
    it when it runs, as the shell expands each command just before running it."""
    i = 0
    cmd: list[Word] = []
    n = len(words)
    ran = False                 # a command or block word of this line was read already

    def again(span: list[Word], end: int) -> list[Word]:
        if not ran or raw is None or not span or span[0].col < 1:
            return span
        start = span[0].col - 1
        out = split_words(raw[start:end if end > 0 else len(raw)], st.env, lineno, st.positional)
        for x in out:
            x.col += start
        return out
    # `A && B`, `A || B`: whether the next command runs (None: cannot be told), and the truth
    # of the list so far — a test decides it, any other command is taken to succeed
    gate: Optional[bool] = True
    truth: Optional[bool] = True
    while i <= n:
        w = words[i] if i < n else Word(";")
        at_start = not cmd
        kw = w.text if at_start and not w.quoted else ""
        if kw == "{" and gate is not True:
            # a group after `&&` / `||` runs as one command
            fr = Frame("group", "{ … } after && / ||")
            st.frames.append(fr)
            branch(st, fr, None if gate is None else False)
            gate, truth = True, True
            i += 1
            continue
        if kw == "}" and st.frames and st.frames[-1].kind == "group":
            close(st, st.frames.pop())
            i += 1
            continue
        if kw in _BLOCK_WORDS:
            gate, truth = True, True
        if kw in ("if", "elif", "while", "until", "for", "select"):
            j = i + 1
            while j < n and not (words[j].text in ("then", "do") and not words[j].quoted):
                j += 1
            cond = again(words[i + 1:j], words[j].col - 1 if j < n else len(raw or ""))
            cond = [x for x in cond if not (x.text == ";" and not x.quoted)]
            ran = True
            if kw in ("while", "until", "for", "select"):
                open_loop(st, kw, cond, lineno)
            elif kw == "if":
                fr = Frame("if", "if " + " ".join(readable(x.text) for x in cond)[:60])
                st.frames.append(fr)
                branch(st, fr, cond_value(cond) if active(st) else False)
                if not active_outer(st, fr):
                    fr.val = False
            elif st.frames and st.frames[-1].kind == "if":
                branch(st, st.frames[-1], cond_value(cond))
            i = j + 1
            continue
        if kw in _BLOCK_WORDS or kw in ("{", "}"):
            ran = True
        if kw == "case":
            j = i + 1
            while j < n and not (words[j].text == "in" and not words[j].quoted):
                j += 1
            fr = Frame("case", "case " + " ".join(readable(x.text) for x in words[i + 1:j])[:60])
            fr.subject = words[i + 1].text if i + 1 < j else None
            if words[i + 1:j] and words[i + 1].unknown:
                fr.subject = mark(words[i + 1].unknown)
            fr.val = None if active(st) else False
            fr.taken = not active(st)
            st.frames.append(fr)
            i = j + 1
            continue
        if kw == "else":
            if st.frames and st.frames[-1].kind == "if":
                fr = st.frames[-1]
                branch(st, fr, True)
                fr.closed = True
            i += 1
            continue
        if kw in ("fi", "done", "esac"):
            want = {"fi": "if", "done": "loop", "esac": "case"}[kw]
            if st.frames and st.frames[-1].kind == want:
                close(st, st.frames.pop())
            i += 1
            continue
        if kw in ("then", "do", "{", "}"):
            i += 1
            continue
        if w.text in OPERATORS and not w.quoted:
            if cmd and gate is not False:
                cmd = again(cmd, w.col - 1 if i < n else len(raw or ""))
                t = _gated(st, cmd, gate, lineno, display) if cmd else True
                truth = t if gate is True else None
            ran = ran or bool(cmd)
            if w.text == "&&":
                gate = truth
            elif w.text == "||":
                gate = None if truth is None else not truth
            else:
                gate, truth = True, True
            cmd = []
        else:
            cmd.append(w)
        i += 1


_BLOCK_WORDS = {"if", "elif", "while", "until", "for", "select", "case", "else", "fi", "done",
                "esac", "then", "do"}
_TESTS = {"[", "[[", "test"}


def _gated(st: State, cmd: list[Word], gate: Optional[bool], lineno: int, display: str) -> Optional[bool]:
    """Run one command of an `&&` / `||` list (`gate` None: whether it runs cannot be told,
    so what it sets is read like an undecidable branch); returns its truth."""
    t: Optional[bool] = cond_value(cmd) if cmd[0].text in _TESTS and not cmd[0].quoted else True
    if not active(st):
        return t
    if gate is True:
        _simple(st, cmd, lineno, display)
        return t
    fr = Frame("if", "&& / ||")
    st.frames.append(fr)
    branch(st, fr, None)
    _simple(st, cmd, lineno, display)
    close(st, st.frames.pop())
    return t


_KEYWORDS = {"if", "then", "else", "elif", "fi", "do", "done", "while", "until", "{", "}", "!", "case", "esac"}


def _spend(st: State, display: str, lineno: int) -> None:
    if st.spent is None:
        st.spent = (f"more than {budgets.MAX_COMMANDS} lines and commands read (loops and "
                    "functions read again count again): the rest of the script is not read",
                    display, lineno)


def _simple(st: State, cmd: list[Word], lineno: int, display: str) -> None:
    st.commands += 1
    if st.commands > budgets.MAX_COMMANDS:
        _spend(st, display, lineno)
        return
    while cmd and cmd[0].text in _KEYWORDS and not cmd[0].quoted:
        cmd = cmd[1:]
    if not cmd:
        return
    head = cmd[0].text
    if head == "eval" and not cmd[0].quoted and len(cmd) > 1 and st.depth < budgets.MAX_EVAL_DEPTH:
        # `eval $CMD` / `eval "torchrun …"`: the arguments, joined, are read as a command line
        st.depth += 1
        try:
            run_words(st, split_words(" ".join(w.text for w in cmd[1:]), st.env, lineno, st.positional), lineno, display)
        finally:
            st.depth -= 1
        return
    if head in ("for", "[", "[[", "test", "echo", "printf", "cd", "mkdir", "rm", "cp", "mv", "set",
                "trap", "shift", "exit", "return", "wait", "sleep", "cat", "ls", "pip", "git", "wget",
                "curl", "unset", "read"):
        if head == "unset":
            for w in cmd[1:]:
                st.env.pop(w.text, None)
        return
    if head in ("export", "declare", "local", "readonly", "typeset"):
        exports = head == "export" or any(w.text.startswith("-") and "x" in w.text for w in cmd[1:])
        for w in cmd[1:]:
            if w.text.startswith("-"):
                continue
            a = _assign(w.text)
            if exports:
                st.exported.add(a[0] if a else w.text)
            if a:
                name, val, plus = a
                st.env[name] = (st.env.get(name, "") if plus and isinstance(st.env.get(name), str) else "") + val
        return
    if head in st.functions and not cmd[0].quoted and st.depth < budgets.MAX_EVAL_DEPTH:
        call_function(st, head, cmd[1:], display)
        return
    if head in ("source", ".") and len(cmd) > 1:
        if cmd[1].unknown:
            return
        st.follow(cmd[1].text)
        return
    # leading assignments
    k = 0
    prefix_env: dict[str, Value] = {}
    while k < len(cmd):
        a = _assign(cmd[k].text) if not cmd[k].quoted or "=" in cmd[k].text else None
        if not a or cmd[k].text.startswith("="):
            break
        name, val, plus = a
        prefix_env[name] = val
        k += 1
    if k == len(cmd):
        st.env.update(prefix_env)
        return
    st.on_command(cmd, k, prefix_env, lineno, display)
