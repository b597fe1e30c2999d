"""libcst parses that cannot take the process down.

libcst's parser is native code. On expressions nested deeply — a 10,000-term `a and a and …`,
a thousand nested brackets — it recurses until the thread's stack overflows, and the
process dies with a segmentation fault (no Python exception to catch); well before that,
its time grows quadratically with the nesting (1,000 nested calls: minutes, gigabytes).

So a text is handed to libcst only when its nesting is within `MAX_NESTING` — measured on
the `ast` tree when there is one (exact, and cheap next to a libcst parse), else by a scan
of the text's brackets and logical-line lengths — and the parse runs on a thread with a
large stack, so even a shape we did not measure ends in an exception, not a signal.
"""

from __future__ import annotations

import ast
import threading
from typing import Any, Optional

#: the deepest expression nesting handed to libcst (chains count one level per operator:
#: libcst nests `a and b and c` as it nests brackets). Real training code stays under 30;
#: at 100 a libcst parse of the nested part costs about a second.
MAX_NESTING = 100
#: without an `ast` tree: the deepest bracket nesting, and the longest logical line
MAX_BRACKETS = 64
MAX_LOGICAL_LINE = 5_000
MAX_LOGICAL_TOKENS = 1_000
#: the stack of the parsing thread (address space; only the pages touched are used)
STACK_BYTES = 512 * 1024 * 1024

_lock = threading.Lock()


class TooDeep(ValueError):
    """A text not handed to libcst; the message says why."""


def ast_nesting(tree: ast.AST, limit: int = MAX_NESTING) -> int:
    """The nesting depth of `tree` as libcst builds it (stops counting past `limit`)."""
    stack: list[tuple[ast.AST, int]] = [(tree, 0)]
    best = 0
    while stack:
        node, d = stack.pop()
        t = type(node)
        if t is ast.BoolOp:
            d += len(node.values) - 1       # type: ignore[attr-defined]
        elif t is ast.Compare:
            d += len(node.comparators)      # type: ignore[attr-defined]
        else:
            d += 1
        if d > best:
            best = d
            if best > limit:
                return best
        for child in ast.iter_child_nodes(node):
            stack.append((child, d))
    return best


def text_nesting(text: str) -> tuple[int, int, int]:
    """(deepest bracket nesting, longest logical line, most tokens on a logical line) of
    Python source, by a scan that skips string literals and comments roughly (enough to
    bound a parser's work; tokens are counted approximately: each operator character, each
    name or number)."""
    depth = best = 0
    longest = tokens = most = 0
    start = 0
    prev_word = False
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        word = c.isalnum() or c == "_"
        if word and not prev_word:
            tokens += 1
        prev_word = word
        if word or c in " \t":
            i += 1
            continue
        if c in "([{":
            depth += 1
            if depth > best:
                best = depth
        elif c in ")]}":
            depth = max(depth - 1, 0)
        elif c == "#":
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        elif c in "'\"":
            q = text[i:i + 3] if text[i:i + 3] in ("'''", '"""') else c
            j = text.find(q, i + len(q))
            i = n if j < 0 else j + len(q)
            tokens += 1
            continue
        elif c == "\n":
            if depth == 0 and (i == 0 or text[i - 1] != "\\"):
                longest = max(longest, i - start)
                most = max(most, tokens)
                start, tokens = i + 1, 0
            i += 1
            continue
        tokens += 1
        i += 1
    return best, max(longest, n - start), max(most, tokens)


def refusal(text: str, tree: Optional[ast.AST] = None) -> Optional[str]:
    """Why `text` is not handed to libcst (None: it may be)."""
    brackets, longest, tokens = text_nesting(text)
    if tree is not None:
        # an expression is no deeper than its logical line has tokens: the exact (slower)
        # measure only when the quick one cannot vouch for the text
        if tokens <= MAX_NESTING and brackets <= MAX_BRACKETS:
            return None
        d = ast_nesting(tree)
        if d > MAX_NESTING:
            return f"expressions nested over {MAX_NESTING} levels deep"
        return None
    if brackets > MAX_BRACKETS:
        return f"brackets nested {brackets} levels deep (over {MAX_BRACKETS})"
    if longest > MAX_LOGICAL_LINE:
        return f"a logical line of {longest:,} characters (over {MAX_LOGICAL_LINE:,})"
    if tokens > MAX_LOGICAL_TOKENS:
        return f"a logical line of about {tokens:,} tokens (over {MAX_LOGICAL_TOKENS:,})"
    return None


def _on_big_stack(fn: Any, *args: Any) -> Any:
    out: list[Any] = []
    err: list[BaseException] = []

    def target() -> None:
        try:
            out.append(fn(*args))
        except BaseException as e:  # noqa: BLE001 - handed back to the caller's thread
            err.append(e)

    with _lock:                     # threading.stack_size is process-wide: set, start, reset
        old = threading.stack_size()
        try:
            threading.stack_size(STACK_BYTES)
            th = threading.Thread(target=target, name="preflight-cst-parse", daemon=True)
            th.start()
        finally:
            threading.stack_size(old)
    th.join()
    if err:
        raise err[0]
    return out[0]


def parse_module(text: str, tree: Optional[ast.AST] = None) -> Any:
    """`libcst.parse_module(text)`, guarded. Raises `TooDeep` with the reason when the
    text is refused, and libcst's own errors when it does not parse."""
    why = refusal(text, tree)
    if why is not None:
        raise TooDeep(why)
    import libcst as cst
    return _on_big_stack(cst.parse_module, text)


def parse_expression(text: str) -> Any:
    """`libcst.parse_expression(text)`, guarded like `parse_module`."""
    why = refusal(text)
    if why is not None:
        raise TooDeep(why)
    import libcst as cst
    if len(text) < 200:             # the common case: short expressions, no thread needed
        return cst.parse_expression(text)
    return _on_big_stack(cst.parse_expression, text)
