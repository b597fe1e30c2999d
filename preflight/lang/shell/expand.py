"""Expansions: what `$NAME`, `${…}` (defaults, lengths, array elements), `$(…)` and
`$((…))` expand to in the variables the reader holds, or why that is not known."""

from __future__ import annotations

import os
import re
from typing import Any, Optional, Union

from preflight import runcache
from preflight.lang.shell.values import ABSENT, Unknown, Value, reason_of
from preflight.lazy import lazy

arith = lazy("preflight.lang.shell.arith")

#: variables of preflight's own environment that say nothing about the job
_IGNORED_ENV = {"PWD", "OLDPWD", "SHLVL", "_", "PS1", "PROMPT_COMMAND"}

#: while the extraction cache records one extraction: the environment variables looked up
#: (name → value, None when unset), checked again before the entry is reused
env_read: Optional[dict[str, Optional[str]]] = None


def _matching_paren(s: str, start: int) -> int:
    """Index of the `)` closing the `(` at `start` (len(s) when unbalanced)."""
    depth, j = 0, start
    while j < len(s):
        if s[j] == "(":
            depth += 1
        elif s[j] == ")":
            depth -= 1
            if depth == 0:
                return j
        j += 1
    return j


def _arith(expr: str, env: dict[str, Value]) -> Union[str, Unknown]:
    """`$(( … ))`: integers, + - * / % **, parentheses, variables with or without `$`."""
    missing: list[str] = []

    def sub(m: re.Match) -> str:
        name = m.group(1) or m.group(2)
        v = env.get(name)
        if isinstance(v, str) and re.fullmatch(r"\s*-?\d+\s*", v):
            return v.strip()
        if isinstance(v, str) and reason_of(v):
            missing.append(f"{name} ({reason_of(v)})")
        elif isinstance(v, Unknown):
            missing.append(f"{name} ({v.reason})")
        else:
            missing.append(f"{name} is not set in the script" if v is None else f"{name}={v!r} is not a number")
        return "0"

    text = re.sub(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?|(?<![\w#])([A-Za-z_][A-Za-z0-9_]*)\b",
                  sub, expr)
    if missing:
        return Unknown("$((" + _clip(expr.strip()) + ")) uses " + ", ".join(missing[:3]))
    try:
        return str(arith.evaluate(text))
    except arith.ArithError as e:
        return Unknown(f"cannot evaluate $(({_clip(expr.strip())})): {e}")


def _clip(text: str, limit: int = 80) -> str:
    """An expression as quoted in a reason: long ones are cut, the reader sees the head."""
    return text if len(text) <= limit else text[:limit] + "…"


class Expander:
    """The `$…` expansions of a word splitter: the splitter (a subclass) holds the text
    `s`, the position `i`, the variables `env`, the line and the script's positional
    arguments `pos`, and builds its words from what `dollar()` returns. A default
    (`${VAR:-word}`) is expanded by a splitter of the same class."""

    s: str
    i: int
    env: dict[str, Value]
    line: int
    pos: dict[str, Value]

    def _lookup(self, name: str) -> Optional[Value]:
        if name.isdigit() or name in ("@", "*", "#"):
            return self.pos.get(name)
        v = self.env.get(name)
        if v is None and name not in _IGNORED_ENV:
            runcache.note_env(name)
        if v is None and env_read is not None and name not in _IGNORED_ENV:
            env_read[name] = os.environ.get(name)
        if v is None and name in os.environ and name not in _IGNORED_ENV:
            # a variable the script does not set, given in the environment preflight runs in
            # (`MODULE=llama3 preflight check run.slurm` mirrors `MODULE=llama3 sbatch run.slurm`)
            return os.environ[name]
        return v

    def dollar(self) -> tuple[Any, Optional[list[str]]]:
        """At a `$`: returns (value, None) or (None, words) for array expansions."""
        s, n = self.s, len(self.s)
        i = self.i
        if s.startswith("$((", i):
            j = _matching_paren(s, i + 1)
            self.i = j + 1
            inner = s[i + 3:j - 1]
            # expand ${…} inside first
            inner = re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", lambda m: "$" + m.group(1), inner)
            return _arith(inner, self.env), None
        if s.startswith("$(", i):
            j = _matching_paren(s, i + 1)
            self.i = j + 1
            if s[i + 2:j].strip() == "pwd" and isinstance(self.env.get("PWD"), str):
                return self.env["PWD"], None
            path = self._path_command(s[i + 2:j])
            if path is not None:
                return path, None
            return Unknown(f"command substitution $({s[i + 2:j]}) is not run"), None
        if s.startswith("${", i):
            j = s.find("}", i)
            j = n if j < 0 else j
            self.i = j + 1
            return self._brace(s[i + 2:j])
        m = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!])").match(s, i)
        if not m:
            self.i += 1
            return "$", None
        self.i = m.end()
        name = m.group(1)
        v = self._lookup(name)
        if name == "@" or name == "*":
            return (Unknown("script arguments ($@) are not known") if v is None else None), (
                None if v is None else list(v))
        return self._value(name, v), None

    def _value(self, name: str, v: Optional[Value]) -> Any:
        if v is None:
            given = self.pos.get("#")
            if name.isdigit() and isinstance(given, str) and given.isdigit() and int(name) > int(given):
                return Unknown(f"${name} {ABSENT}")
            if name.isdigit():
                return Unknown(f"${name} is a command-line argument of the script, not known statically")
            return Unknown(f"${name} is not set in the script (comes from the environment)")
        if isinstance(v, list):
            return v[0] if v else ""
        return v

    def _path_command(self, inner: str) -> Optional[str]:
        """The path a substitution of pure path commands prints, computed on the path's
        text: `dirname P`, `basename P`, `realpath P`, `readlink -f P`, `cd P && pwd`
        (`$(cd "$(dirname "$0")" && pwd)`, the script's folder). None for anything else."""
        words = [w for w in type(self)(inner, self.env, self.line, self.pos).run()]
        texts = [w.text for w in words]
        if any(w.unknown for w in words) or not texts:
            return None
        if len(texts) == 2 and texts[0] in ("dirname", "realpath", "basename"):
            p = texts[1]
        elif len(texts) == 3 and texts[0] == "readlink" and texts[1] in ("-f", "-e", "-m"):
            p = texts[2]
        elif len(texts) == 4 and texts[0] == "cd" and texts[2] in ("&&", ";") and \
                texts[3] == "pwd":
            return os.path.normpath(texts[1])
        else:
            return None
        if texts[0] == "dirname":
            return os.path.dirname(p.rstrip("/")) or "."
        if texts[0] == "basename":
            return os.path.basename(p.rstrip("/"))
        return os.path.normpath(p)

    def _brace(self, body: str) -> tuple[Any, Optional[list[str]]]:
        m = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*)\[([@*])\]", body)
        if m:
            v = self.env.get(m.group(1))
            if isinstance(v, list) and m.group(2) == "*":
                return " ".join(v), None        # one word in quotes, split outside them
            if isinstance(v, list):
                return None, list(v)
            if isinstance(v, Unknown):
                return v, None
            if v is None:
                return Unknown(f"array {m.group(1)} is not set in the script"), None
            return None, [v]
        m = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*)\[(\d+)\]", body)
        if m:
            v = self.env.get(m.group(1))
            k = int(m.group(2))
            if isinstance(v, list) and k < len(v):
                return v[k], None
            if isinstance(v, str) and k == 0:
                return v, None
            return Unknown(f"${{{body}}} is not set in the script"), None
        m = re.fullmatch(r"#([A-Za-z_][A-Za-z0-9_]*)(\[[@*]\])?", body)
        if m:
            v = self.env.get(m.group(1))
            if isinstance(v, list):
                return str(len(v)) if m.group(2) else str(len(v[0]) if v else 0), None
            if isinstance(v, str):
                return str(len(v)), None
            return Unknown(f"${{{body}}}: {m.group(1)} is not known"), None
        m = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*|\d+)(:?[-=+?])(.*)", body, re.S)
        if m:
            name, op, word = m.groups()
            v = self._lookup(name)
            empty = v is None or (op.startswith(":") and v == "")
            default = type(self)(word, self.env, self.line, self.pos).expand_text()
            if op.endswith("+"):
                return ("" if empty else default), None
            if isinstance(v, Unknown):
                return v, None
            if empty:
                if op.endswith("?"):
                    return Unknown(f"${name} is required but not set in the script"), None
                if op.endswith("=") and not name.isdigit():
                    self.env[name] = default
                return default, None
            return self._value(name, v), None
        if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*|\d+", body):
            return self._value(body, self._lookup(body)), None
        return Unknown(f"${{{body}}} is not evaluated"), None

