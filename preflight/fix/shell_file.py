"""Edits of launcher lines (shell scripts, sbatch files): the value of a `--flag value` /
`--flag=value` / `#SBATCH --flag=value` at the fact's position is replaced; a setting
nothing gives becomes a new flag on the command that reads it (the script's own flags at
the end of its command, the launcher's right after the launcher's name)."""

from __future__ import annotations

import re
import shlex
from typing import Any

from preflight.fix.edits import FactEdit, Unspellable
from preflight.fix.spelling import render

_FLAG = re.compile(r"""(?P<flag>--?[A-Za-z0-9_.-]+)(?:=|[ \t]+)(?P<val>"[^"]*"|'[^']*'|[^\s\\;|&#]+)""")


def _word(v: Any) -> str:
    if isinstance(v, bool):
        return "True" if v else "False"
    s = str(v)
    return s if re.fullmatch(r"[A-Za-z0-9_./:+=-]+", s) else '"' + s.replace('"', '\\"') + '"'


def _unquote(s: str) -> str:
    try:
        parts = shlex.split(s)
    except ValueError:
        return s
    return parts[0] if len(parts) == 1 else s


def command_end(lines: list[str], start: int) -> int:
    """0-based index of the last physical line of the command starting at `start`."""
    i = start
    while i < len(lines) - 1 and lines[i].rstrip("\r\n").endswith("\\"):
        i += 1
    return i


def has_flag(lines: list[str], start: int, flag: str) -> bool:
    end = command_end(lines, start)
    body = " ".join(ln.rstrip("\r\n").rstrip("\\") for ln in lines[start:end + 1])
    return re.search(rf"(?:^|\s){re.escape(flag)}(?:[\s=]|$)", body) is not None


def edit_shell(text: str, edits: list[FactEdit]) -> tuple[str, list[str]]:
    lines = text.splitlines(keepends=True)
    notes: list[str] = []
    appended: dict[int, list[str]] = {}
    for e in edits:
        i = e.source.line - 1
        if not 0 <= i < len(lines):
            raise Unspellable(f"line {e.source.line} is not in the file")
        if e.new_key:
            flag = e.old                    # new flags carry their spelling in `old`
            if not isinstance(flag, str) or not flag.startswith("-"):
                # a default the launcher implies (no ZeRO under torchrun): no flag says it
                raise Unspellable(f"nothing at line {e.source.line} sets {e.fact}; the "
                                  "launcher implies its value")
            if has_flag(lines, i, flag):
                continue                    # the flag is there: its own edit changes it
            v = render(e.fact, e.value, flag)
            if v is None:
                raise Unspellable(f"{flag} cannot say {e.fact} = {e.value}")
            end = command_end(lines, i)
            appended.setdefault(end, []).append(f"{flag} {_word(v)}")
            notes.append(f"{flag} {_word(v)} added to the command at line {e.source.line}: "
                         f"nothing set {e.fact}, the script read its default")
            continue
        line = lines[i]
        m = _FLAG.match(line, max(0, e.source.col - 1))
        if m is None:
            raise Unspellable(f"no --flag value at line {e.source.line}, column {e.source.col} "
                              f"for {e.fact}")
        old = _unquote(m.group("val"))
        v = render(e.fact, e.value, m.group("flag"), old)
        if v is None:
            raise Unspellable(f"{m.group('flag')} cannot say {e.fact} = {e.value}")
        lines[i] = line[:m.start("val")] + _word(v) + line[m.end("val"):]
    for end, flags in appended.items():
        line = lines[end]
        body = line.rstrip("\r\n")
        nl = line[len(body):]
        stripped = body.rstrip()
        lines[end] = stripped + " " + " ".join(flags) + body[len(stripped):] + nl
    return "".join(lines), notes


def launcher_flag_edit(flag: str, fact: str, value: Any, source) -> FactEdit:
    """A new flag for the command at `source` (a launcher line)."""
    return FactEdit(fact=fact, value=value, source=source, old=flag, new_key=True)
