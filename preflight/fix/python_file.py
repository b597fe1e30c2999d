"""Edits in Python scripts that keep every byte not edited: a literal at the fact's line is
replaced in place (a `TrainingArguments(...)` keyword, an argparse `default=`, an
assignment), and a fact the script leaves at a library default gets a new keyword in the
call that reads it (`TrainingArguments(...)`, `from_pretrained(...)`).

A default read from the command line (`HfArgumentParser(...).parse_args_into_dataclasses()`,
`argparse`) is not the script's to change: it is handed back to be written as a flag on
the launcher line that runs the script.

The edit sites are found on the stdlib `ast` tree (the C parser; the extraction's facts
carry its line and column), and each edit is a splice of the source text: a new literal
over the old one's exact span, and new keywords inserted after a call's last argument,
separated as its last two arguments are. Every byte not edited is kept; no libcst tree is
built (a whole-script one with positions and parents costs ~20× the `ast` parse, and its
import alone a quarter of a second).
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from typing import Any, Callable, Optional, Union

from preflight.extract.python import parse
from preflight.fix.edits import FactEdit, Unspellable
from preflight.fix.spelling import NEW_KEYS, render
from preflight.lang.python.source import last_name

#: calls whose keywords are TrainingArguments fields
HF_ARGS_CALLS = {"TrainingArguments", "Seq2SeqTrainingArguments", "SFTConfig", "DPOConfig",
                 "ORPOConfig", "KTOConfig", "GRPOConfig", "RewardConfig"}
#: calls that read the script's settings from its command line
CLI_CALLS = {"parse_args_into_dataclasses", "parse_args", "parse_known_args"}

_NEWLINE = re.compile(r"\r\n|\r|\n")
_STRING_PREFIX = re.compile(r"[rRbBuU]*")


def _literal(v: Any) -> str:
    """`v` written as a new Python literal (a string in double quotes)."""
    if isinstance(v, bool):
        return "True" if v else "False"
    if isinstance(v, int):
        return str(v)
    return _string(v, '"')


def _string(v: Any, q: str) -> str:
    s = str(v).replace("\\", "\\\\").replace(q, "\\" + q)
    return f"{q}{s}{q}"


def _literal_text(v: Any, old_source: str) -> str:
    """`v` written as Python, a string in the quotes of the literal it replaces."""
    if isinstance(v, bool):
        return "True" if v else "False"
    if isinstance(v, int):
        return str(v)
    body = old_source[_STRING_PREFIX.match(old_source).end():]
    q = body[:1] if body[:1] in ("'", '"') and body[:3] not in ("'''", '"""') else '"'
    return _string(v, q)


class _Source:
    """The script's text with (line, UTF-8 column) → offset, the way `ast` counts."""

    def __init__(self, text: str):
        self.text = text
        self.starts = [0] + [m.end() for m in _NEWLINE.finditer(text)]

    def offset(self, line: int, col: int) -> int:
        start = self.starts[line - 1]
        end = self.starts[line] if line < len(self.starts) else len(self.text)
        row = self.text[start:end]
        if row.isascii():
            return start + col
        return start + len(row.encode("utf-8")[:col].decode("utf-8", "replace"))

    def span(self, node: ast.AST) -> tuple[int, int]:
        return (self.offset(node.lineno, node.col_offset),
                self.offset(node.end_lineno, node.end_col_offset))


def _one_string_token(src: str) -> bool:
    """A single string literal (not an implicit concatenation, not an f-string)."""
    try:
        toks = [t for t in tokenize.generate_tokens(io.StringIO(src).readline)
                if t.type not in (tokenize.NEWLINE, tokenize.NL, tokenize.ENDMARKER,
                                  tokenize.INDENT, tokenize.DEDENT)]
    except (tokenize.TokenError, SyntaxError):
        return False
    return len(toks) == 1 and toks[0].type == tokenize.STRING


def _is_literal(node: ast.AST, src: _Source) -> bool:
    """What the edit can replace: a name, an int, a bool or one plain string."""
    if isinstance(node, ast.Name):
        return True
    if not isinstance(node, ast.Constant):
        return False
    if isinstance(node.value, (bool, int)):
        return True
    if isinstance(node.value, (str, bytes)):
        a, b = src.span(node)
        return _one_string_token(src.text[a:b])
    return False


def _old_value(node: ast.AST) -> Any:
    if isinstance(node, ast.Constant) and isinstance(node.value, (bool, int, str, bytes)):
        return node.value
    raise Unspellable("not a literal")


def _add_keywords(kws: list[tuple[str, str]]) -> Callable[[str], str]:
    """An edit of a call's own source that appends `key=value` keywords, laid out like its
    existing arguments: after the separator between its last two arguments (their comma
    with its line break and indentation, not a comment written after it), else ", "; a
    trailing comma and whatever precedes the closing parenthesis stay at the end."""
    def edit(call_source: str) -> str:
        try:
            call = ast.parse(call_source, mode="eval").body
        except SyntaxError as e:
            raise Unspellable(f"the call does not parse on its own: {e.msg}") from None
        if not isinstance(call, ast.Call):
            raise Unspellable("not a call")
        src = _Source(call_source)
        args = sorted(list(call.args) + list(call.keywords),
                      key=lambda n: (n.lineno, n.col_offset))
        new = [f"{k}={v}" for k, v in kws]
        if not args:                     # `f()` / `f( )`: right after the parenthesis
            at = call_source.index("(", src.offset(call.func.end_lineno, call.func.end_col_offset)) + 1
            return call_source[:at] + ", ".join(new) + call_source[at:]
        last_end = src.offset(args[-1].end_lineno, args[-1].end_col_offset)
        sep = ", "
        if len(args) >= 2:
            sep = _separator(call_source, src.offset(args[-2].end_lineno, args[-2].end_col_offset),
                             src.offset(args[-1].lineno, args[-1].col_offset))
        return call_source[:last_end] + "".join(sep + n for n in new) + call_source[last_end:]
    return edit


def _separator(text: str, a: int, b: int) -> str:
    """What separates two arguments (the text between them, from the end of one to the
    start of the next): its comma and the line break and indentation before the next, but
    not a comment after the comma nor blank lines."""
    between = text[a:b]
    comma = _top_comma(between)
    rest = between[comma + 1:]
    if "\n" not in rest and "\r" not in rest:
        return "," + rest                        # on one line: its spaces
    nl = "\r\n" if "\r\n" in rest else ("\r" if "\r" in rest and "\n" not in rest else "\n")
    indent = re.split(r"\r\n|\r|\n", rest)[-1]
    return "," + nl + indent


def _top_comma(between: str) -> int:
    """The offset of the comma in the text between two arguments (outside a comment)."""
    try:
        for t in tokenize.generate_tokens(io.StringIO(between).readline):
            if t.type == tokenize.OP and t.string == ",":
                lines = between.split("\n")
                return sum(len(x) + 1 for x in lines[: t.start[0] - 1]) + t.start[1]
    except (tokenize.TokenError, SyntaxError):
        pass
    k = between.find(",")
    if k < 0:
        raise Unspellable("no comma between the call's arguments")
    return k


Splice = tuple[int, int, Union[str, Callable[[str], str]]]


def _apply(text: str, splices: list[Splice]) -> str:
    """`text` with each span replaced: by a string, or by a function of the span's text
    after the splices inside it (a literal replaced in a call that also gains keywords)."""
    order = sorted(splices, key=lambda s: (s[0], -s[1]))

    def build(lo: int, hi: int, i: int) -> tuple[str, int]:
        out, pos = [], lo
        while i < len(order) and order[i][0] < hi:
            a, b, what = order[i]
            out.append(text[pos:a])
            inner, i = build(a, b, i + 1)
            out.append(what(inner) if callable(what) else what)
            pos = b
        out.append(text[pos:hi])
        return "".join(out), i

    return build(0, len(text), 0)[0]


def edit_python(text: str, edits: list[FactEdit]) -> tuple[str, list[str], list[FactEdit]]:
    """(new text, notes, edits to make on the launcher line instead)."""
    try:
        tree = parse(text)          # the tree the extraction parsed, not a second parse
    except (SyntaxError, ValueError) as e:
        raise Unspellable(f"the script does not parse: {getattr(e, 'msg', e)}") from None
    src = _Source(text)
    parents, at = _index(tree, {e.source.line for e in edits})
    add: dict[ast.Call, list[tuple[str, str]]] = {}
    splices: list[Splice] = []
    notes: list[str] = []
    deferred: list[FactEdit] = []
    for e in edits:
        nodes = at.get((e.source.line, e.source.col - 1), [])
        calls = [n for n in nodes if isinstance(n, ast.Call)]
        if e.new_key and not calls and nodes:
            call = _call_of_argument(nodes[-1], parents)
            if call is not None:
                calls = [call]
        if calls:
            call = max(calls, key=lambda n: (n.end_lineno, n.end_col_offset))
            fname = last_name(call.func)
            if fname in CLI_CALLS:
                deferred.append(e)
                continue
            site = ("hf_args" if fname in HF_ARGS_CALLS else
                    "from_pretrained" if fname == "from_pretrained" else None)
            key = NEW_KEYS.get(site or "", {}).get(e.fact)
            if key is None:
                raise Unspellable(f"{fname}(...) at line {e.source.line} has no keyword for "
                                  f"{e.fact}")
            if any(k.arg == key for k in call.keywords):
                raise Unspellable(f"{key}= at line {e.source.line} is not a literal")
            v = render(e.fact, e.value, key)
            if v is None:
                raise Unspellable(f"{key}= cannot say {e.fact} = {e.value}")
            add.setdefault(call, []).append((key, _literal(v)))
            notes.append(f"{key}={v!r} added to {fname}(...) at line {call.lineno}: "
                         f"nothing set it, {fname} read its default")
            continue
        lits = [n for n in nodes if _is_literal(n, src)]
        if not lits:
            raise Unspellable(f"no literal at line {e.source.line}, column {e.source.col} "
                              f"for {e.fact}")
        node = lits[0]
        key = _key_of(node, parents)
        old = _old_value(node)
        v = render(e.fact, e.value, key or e.fact, old)
        if v is None:
            raise Unspellable(f"{key or 'the value'} at line {e.source.line} cannot say "
                              f"{e.fact} = {e.value}")
        a, b = src.span(node)
        splices.append((a, b, _literal_text(v, text[a:b])))
    splices += [(*src.span(call), _add_keywords(kws)) for call, kws in add.items()]
    new = _apply(text, splices) if splices else text
    return new, notes, deferred


def _index(tree: ast.AST, lines: set[int]) -> tuple[dict, dict]:
    """(parent of each node, the expressions starting at each (line, column), outer ones
    first), for the nodes whose lines include one of `lines`: the rest of the script is
    not visited."""
    parents: dict[ast.AST, ast.AST] = {}
    at: dict[tuple[int, int], list[ast.AST]] = {}
    stack = [tree]
    while stack:
        node = stack.pop()                   # a parent is taken before its children
        if isinstance(node, (ast.expr, ast.keyword)):
            at.setdefault((node.lineno, node.col_offset), []).append(node)
        for child in ast.iter_child_nodes(node):
            lo = getattr(child, "lineno", None)
            if lo is not None and not any(lo <= n <= (child.end_lineno or lo) for n in lines):
                continue
            parents[child] = node
            stack.append(child)
    return parents, at


def _call_of_argument(node: ast.AST, parents: dict) -> Optional[ast.Call]:
    """The call `node` is (inside) an argument of: the nearest enclosing argument."""
    child, p = node, parents.get(node)
    while p is not None:
        if isinstance(p, ast.Call) and child is not p.func:
            return p
        if isinstance(p, ast.ClassDef) and (child in p.bases or child in p.keywords):
            return None                  # a class's base or keyword: no call reads it
        child, p = p, parents.get(p)
    return None


def _key_of(node: ast.AST, parents: dict) -> str:
    """The keyword, assignment target or argparse option a literal is the value of."""
    p = parents.get(node)
    if isinstance(p, ast.keyword) and p.arg is not None:
        if p.arg == "default":
            call = parents.get(p)
            if isinstance(call, ast.Call):
                for a in call.args:
                    if isinstance(a, ast.Constant) and isinstance(a.value, str):
                        return a.value.lstrip("-")
        return p.arg
    if isinstance(p, (ast.Assign, ast.AnnAssign)) and node is p.value:
        t = p.targets[0] if isinstance(p, ast.Assign) else p.target
        if isinstance(t, ast.Name):
            return t.id
        if isinstance(t, ast.Attribute):
            return t.attr
    if isinstance(p, ast.Dict):
        for k, v in zip(p.keys, p.values):
            if (v is node or k is node) and isinstance(k, ast.Constant) and isinstance(k.value, str):
                return k.value
    return ""
