"""Words: one logical shell line split into words the way the shell does (quotes,
backslashes, operators, comments), each `$…` expanded as it is met."""

from __future__ import annotations

import re
from typing import Any, Optional

from preflight.lang.shell import budgets
from preflight.lang.shell.expand import Expander
from preflight.lang.shell.values import Unknown, Value, Word, mark, reason_of


_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\+?=")


def _expand(result: tuple, parts: list[str], extra: list[str], split: bool) -> int:
    """Add a `$…` expansion to the word being built: its first word joins the word, the rest
    (an array, or an unquoted value split on blanks) follow as words of their own — except
    in an assignment (`cmd="$cmd ${ARGS[@]}"`), where the shell splits nothing and an
    array's elements are joined by blanks. Returns the number of characters added."""
    val, words = result
    if isinstance(val, Unknown):
        parts.append(mark(val.reason))
        return len(parts[-1])
    if words is not None and len(words) > budgets.MAX_WORDS:
        parts.append(mark(f"an array of over {budgets.MAX_WORDS} elements is not expanded"))
        return len(parts[-1])
    if words is None:
        words = val.split() if split else [val]
    if words and parts and _ASSIGNMENT.match("".join(parts[:80])):
        parts.append(" ".join(words))
        return len(parts[-1])
    if words:
        parts.append(words[0])
        extra.extend(words[1:])
    return sum(len(w) for w in words)


class Splitter(Expander):
    """Splits one logical shell line into words, expanding variables as it goes."""

    def __init__(self, text: str, env: dict[str, Value], line: int, positional: dict[str, Value]):
        self.s, self.env, self.line, self.pos = text, env, line, positional
        self.i = 0
        self.words: list[Word] = []
        #: characters the expansions of this line produced (budgets.MAX_EXPANDED)
        self.size = 0

    # a word is built from pieces; an array expansion "${A[@]}" splits into several words
    def run(self) -> list[Word]:
        s = self.s
        n = len(s)
        while self.i < n:
            c = s[self.i]
            if c in " \t":
                self.i += 1
                continue
            if c == "#":
                break
            for op in ("&&", "||", ";", "|", "&"):
                if s.startswith(op, self.i):
                    self.words.append(Word(op, line=self.line, col=self.i + 1))
                    self.i += len(op)
                    break
            else:
                self._word()
        return self.words

    def _word(self) -> None:
        s, n = self.s, len(self.s)
        start = self.i
        parts: list[str] = []
        unknown: Optional[str] = None
        quoted = False
        extra: list[str] = []          # additional words from an unquoted/quoted array expansion
        while self.i < n:
            c = s[self.i]
            if c in " \t" or c in ";|&" or (c == "#" and not parts and self.i == start):
                break
            if c == "\\" and self.i + 1 < n:
                # an escaped character is quoted: `\&\&` is a word, not the && operator
                parts.append(s[self.i + 1])
                quoted = True
                self.i += 2
            elif c == "'":
                j = s.find("'", self.i + 1)
                j = n if j < 0 else j
                parts.append(s[self.i + 1:j])
                quoted = True
                self.i = j + 1
            elif c == '"':
                quoted = True
                self.i += 1
                while self.i < n and s[self.i] != '"':
                    if s[self.i] == "\\" and self.i + 1 < n and s[self.i + 1] in '"\\$`':
                        parts.append(s[self.i + 1])
                        self.i += 2
                    elif s[self.i] == "$":
                        self.size += _expand(self.dollar(), parts, extra, split=False)
                        if self.size > budgets.MAX_EXPANDED:
                            break
                    else:
                        parts.append(s[self.i])
                        self.i += 1
                self.i += 1
            elif c == "$":
                self.size += _expand(self.dollar(), parts, extra, split=True)
            elif c == "`":
                j = s.find("`", self.i + 1)
                j = n if j < 0 else j
                if s[self.i + 1:j].strip() == "pwd" and isinstance(self.env.get("PWD"), str):
                    parts.append(self.env["PWD"])
                else:
                    parts.append(mark(f"command substitution `{s[self.i + 1:j]}` is not run"))
                self.i = j + 1
            else:
                parts.append(c)
                self.i += 1
            if self.size > budgets.MAX_EXPANDED:
                # a value that grows past any command line (`A="$A$A"` on every line)
                lhs = _ASSIGNMENT.match("".join(parts[:80]))
                parts, extra = [lhs.group(0) if lhs else "",
                                mark(f"the expansion passes {budgets.MAX_EXPANDED} characters: "
                                     "not expanded")], []
                self.i = n
        unknown = reason_of("".join(parts) + "".join(extra))
        if extra:
            first = "".join(parts)
            self.words.append(Word(first, reason_of(first), self.line, start + 1, quoted))
            for e in extra:
                self.words.append(Word(e, reason_of(e), self.line, start + 1, quoted))
            return
        if not parts and not quoted:
            return  # an unquoted empty expansion vanishes
        self.words.append(Word("".join(parts), unknown, self.line, start + 1, quoted))

    def expand_text(self) -> Any:
        """Expand a fragment (a `${VAR:-default}` word) as one string, quotes removed."""
        words = Splitter(self.s, self.env, self.line, self.pos).run()
        return " ".join(w.text for w in words)


def split_words(text: str, env: dict[str, Value], line: int = 0,
                positional: Optional[dict[str, Value]] = None) -> list[Word]:
    return Splitter(text, env, line, positional or {}).run()

