"""Bash arithmetic (`$(( … ))`) with bash's own semantics, evaluated statically.

Bash computes in signed 64-bit integers (`intmax_t`): results wrap around, `/` truncates
toward zero, `%` takes the dividend's sign, `**` is repeated multiplication (so it wraps
too). Python's unbounded integers and floor division give other answers (`2**62*8` is 0 in
bash, `-7/2` is -3), and an exponent tower such as `9**9**9` never finishes in Python.

`evaluate(text)` returns the integer bash prints, or raises `ArithError` with the reason:
a syntax bash rejects, a division by zero, a construct not modelled (assignment,
variables left unexpanded), or an expression past the budget (tokens, nesting, steps).
"""

from __future__ import annotations

import re

#: an expression longer than this (in tokens) is not evaluated; the value is unknown
MAX_TOKENS = 4096
#: parentheses / unary / right-associative `**` nested deeper than this are not evaluated
MAX_DEPTH = 200
#: evaluation steps (operators applied) per expression
MAX_STEPS = 20_000

_BITS = 64
_MOD = 1 << _BITS
_MIN = -(1 << (_BITS - 1))


class ArithError(ValueError):
    """The expression has no value we can state (the message says why)."""


def wrap(n: int) -> int:
    """Python int → the signed 64-bit value bash holds."""
    n &= _MOD - 1
    return n - _MOD if n >> (_BITS - 1) else n


_TOKEN = re.compile(r"\s*(?:(0[xX][0-9A-Fa-f]+|[0-9]+#[0-9A-Za-z@_]+|[0-9]+)|"
                    r"(\*\*|<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%<>&|^!~?:()])|(\S))")

# binary operators: precedence (higher binds tighter), as in bash's expr.c
_PREC = {"||": 1, "&&": 2, "|": 3, "^": 4, "&": 5, "==": 6, "!=": 6,
         "<": 7, "<=": 7, ">": 7, ">=": 7, "<<": 8, ">>": 8, "+": 9, "-": 9,
         "*": 10, "/": 10, "%": 10, "**": 12}


def _number(text: str) -> int:
    if "#" in text:
        base_s, digits = text.split("#", 1)
        base = int(base_s)
        if not 2 <= base <= 64:
            raise ArithError(f"invalid arithmetic base {base}")
        alphabet = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ@_"
        n = 0
        for ch in digits:
            d = alphabet.index(ch) if base > 36 else alphabet.index(ch.lower())
            if d >= base:
                raise ArithError(f"value too great for base ({text})")
            n = wrap(n * base + d)
        return n
    if text[:2] in ("0x", "0X"):
        return wrap(int(text, 16))
    if len(text) > 1 and text[0] == "0":
        if any(c in "89" for c in text):
            raise ArithError(f"value too great for base ({text})")
        return wrap(int(text, 8))
    if len(text) > 4000:      # Python's int() refuses over 4,300 digits; bash wraps
        n = 0
        for k in range(0, len(text), 1000):
            chunk = text[k:k + 1000]
            n = (n * 10 ** len(chunk) + int(chunk)) % _MOD
        return wrap(n)
    return wrap(int(text))


def _tokens(text: str) -> list[str]:
    out: list[str] = []
    pos = 0
    n = len(text)
    while pos < n:
        m = _TOKEN.match(text, pos)
        if m is None:
            break
        if m.group(3) is not None:
            raise ArithError(f"syntax error: operand expected (error token is "
                             f"\"{text[m.start(3):m.start(3) + 20]}\")")
        tok = m.group(1) or m.group(2)
        if tok is None:
            break
        out.append(tok)
        if len(out) > MAX_TOKENS:
            raise ArithError(f"expression over {MAX_TOKENS} tokens; not evaluated")
        pos = m.end()
    return out


class _Parser:
    def __init__(self, toks: list[str]) -> None:
        self.t = toks
        self.i = 0
        self.steps = 0
        self.depth = 0

    def peek(self) -> str | None:
        return self.t[self.i] if self.i < len(self.t) else None

    def take(self) -> str:
        tok = self.peek()
        if tok is None:
            raise ArithError("syntax error: operand expected")
        self.i += 1
        return tok

    def step(self) -> None:
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise ArithError(f"expression over {MAX_STEPS} evaluation steps; not evaluated")

    def nest(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise ArithError(f"expression nested over {MAX_DEPTH} levels deep; not evaluated")

    # expr := cond ; cond := binary [ '?' expr ':' cond ]
    def expr(self) -> int:
        self.nest()
        try:
            cond = self.binary(1)
            if self.peek() == "?":
                self.take()
                yes = self.expr()
                if self.take() != ":":
                    raise ArithError("syntax error: `:' expected for conditional expression")
                no = self.expr()
                self.step()
                return yes if cond else no
            return cond
        finally:
            self.depth -= 1

    def binary(self, min_prec: int) -> int:
        left = self.unary()
        while True:
            op = self.peek()
            prec = _PREC.get(op or "")
            if prec is None or prec < min_prec:
                return left
            self.take()
            if op == "**":           # right-associative
                self.nest()
                try:
                    right = self.binary(prec)
                finally:
                    self.depth -= 1
            else:
                right = self.binary(prec + 1)
            self.step()
            left = _apply(op, left, right)  # type: ignore[arg-type]

    def unary(self) -> int:
        tok = self.take()
        if tok in ("-", "+", "!", "~"):
            self.nest()
            try:
                v = self.unary()
            finally:
                self.depth -= 1
            self.step()
            return {"-": lambda x: wrap(-x), "+": lambda x: x,
                    "!": lambda x: int(x == 0), "~": lambda x: wrap(~x)}[tok](v)
        if tok == "(":
            v = self.expr()
            if self.take() != ")":
                raise ArithError("syntax error: missing `)'")
            return v
        if tok[0].isdigit():
            return _number(tok)
        raise ArithError(f"syntax error: operand expected (error token is \"{tok}\")")


def _apply(op: str, a: int, b: int) -> int:
    if op in ("/", "%"):
        if b == 0:
            raise ArithError("division by 0")
        if a == _MIN and b == -1:        # bash special-cases the one overflowing division
            return _MIN if op == "/" else 0
        q = abs(a) // abs(b)
        if (a < 0) != (b < 0):
            q = -q
        return wrap(q) if op == "/" else wrap(a - q * b)
    if op == "**":
        if b < 0:
            raise ArithError("exponent less than 0")
        return wrap(pow(a, b, _MOD))
    if op in ("<<", ">>"):
        if not 0 <= b < _BITS:
            raise ArithError(f"shift by {b} is undefined in bash")
        return wrap(a << b) if op == "<<" else a >> b
    return {"+": lambda: wrap(a + b), "-": lambda: wrap(a - b), "*": lambda: wrap(a * b),
            "<": lambda: int(a < b), "<=": lambda: int(a <= b), ">": lambda: int(a > b),
            ">=": lambda: int(a >= b), "==": lambda: int(a == b), "!=": lambda: int(a != b),
            "&": lambda: a & b, "|": lambda: a | b, "^": lambda: a ^ b,
            "&&": lambda: int(bool(a) and bool(b)), "||": lambda: int(bool(a) or bool(b)),
            }[op]()


def evaluate(text: str) -> int:
    """The value bash gives `$(( text ))` (variables already replaced by numbers)."""
    toks = _tokens(text)
    if not toks:
        return 0                      # `$(( ))` is 0 in bash
    p = _Parser(toks)
    v = p.expr()
    if p.peek() is not None:
        raise ArithError(f"syntax error in expression (error token is \"{p.peek()}\")")
    return v
