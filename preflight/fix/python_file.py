"""Edits in Python scripts that keep every byte not edited: a literal at the fact's line is
replaced in place (a `TrainingArguments(...)` keyword, an argparse `default=`, an
assignment), and a fact the script leaves at a library default gets a new keyword in the
call that reads it (`TrainingArguments(...)`, `from_pretrained(...)`).

A default read from the command line (`HfArgumentParser(...).parse_args_into_dataclasses()`,
`argparse`) is not the script's to change: it is handed back to be written as a flag on
the launcher line that runs the script.

The edit sites are found on the stdlib `ast` tree (the C parser; the extraction's facts
carry its line and column), and each edit is a splice of the source text: a new literal
over the old one's exact span, and a call with keywords added, re-laid out by libcst on the
call's own source only. A libcst tree of the whole script with positions and parents costs
~20× the `ast` parse, once per job that does not fit.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from typing import TYPE_CHECKING, Any, Callable, Optional, Union

from preflight.fix.edits import FactEdit, Unspellable
from preflight.fix.spelling import NEW_KEYS, render

#: calls whose keywords are TrainingArguments fields
HF_ARGS_CALLS = {"TrainingArguments", "Seq2SeqTrainingArguments", "SFTConfig", "DPOConfig",
                 "ORPOConfig", "KTOConfig", "GRPOConfig", "RewardConfig"}
#: calls that read the script's settings from its command line
CLI_CALLS = {"parse_args_into_dataclasses", "parse_args", "parse_known_args"}

if TYPE_CHECKING:
    import libcst as cst

_NEWLINE = re.compile(r"\r\n|\r|\n")
_STRING_PREFIX = re.compile(r"[rRbBuU]*")


def _name(func: ast.expr) -> str:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""


def _literal(v: Any) -> "cst.BaseExpression":
    import libcst as cst
    if isinstance(v, bool):
        return cst.Name("True" if v else "False")
    if isinstance(v, int):
        return cst.Integer(str(v))
    return cst.SimpleString(_string(v, '"'))


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


def _with_keywords(call: "cst.Call", kws: list[tuple[str, "cst.BaseExpression"]]) -> "cst.Call":
    """The call with keywords appended, laid out like its existing arguments (one per line
    in a call written one per line)."""
    import libcst as cst
    args = list(call.args)
    for key, value in kws:
        new = cst.Arg(keyword=cst.Name(key), value=value,
                      equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                                            whitespace_after=cst.SimpleWhitespace("")))
        if not args:
            args.append(new)
            continue
        last = args[-1]
        if len(args) >= 2 and isinstance(args[-2].comma, cst.Comma):
            sep = _layout_only(args[-2].comma)
        else:
            sep = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
        new = new.with_changes(comma=last.comma)
        args[-1] = last.with_changes(comma=sep)
        args.append(new)
    return call.with_changes(args=args)


def _layout_only(comma: "cst.Comma") -> "cst.Comma":
    """A comma between arguments with its line break and indentation but not the comment
    written after it (that comment belongs to the argument before it)."""
    import libcst as cst
    ws = comma.whitespace_after
    if isinstance(ws, cst.ParenthesizedWhitespace):
        ws = ws.with_changes(first_line=cst.TrailingWhitespace(newline=ws.first_line.newline),
                             empty_lines=[])
    return comma.with_changes(whitespace_after=ws)


def _add_keywords(kws: list[tuple[str, "cst.BaseExpression"]]) -> Callable[[str], str]:
    def edit(call_source: str) -> str:
        import libcst as cst
        try:
            call = cst.parse_expression(call_source)
        except cst.ParserSyntaxError as e:
            raise Unspellable(f"the call does not parse on its own: {e.message}") from None
        if not isinstance(call, cst.Call):
            raise Unspellable("not a call")
        return cst.Module(body=[]).code_for_node(_with_keywords(call, kws))
    return edit


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
    from preflight.extract.python import parse
    try:
        tree = parse(text)          # the tree the extraction parsed, not a second parse
    except (SyntaxError, ValueError) as e:
        raise Unspellable(f"the script does not parse: {getattr(e, 'msg', e)}") from None
    src = _Source(text)
    parents, at = _index(tree, {e.source.line for e in edits})
    add: dict[ast.Call, list[tuple[str, "cst.BaseExpression"]]] = {}
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
            fname = _name(call.func)
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
