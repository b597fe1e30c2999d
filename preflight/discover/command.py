"""A launch command given after `--` (`preflight check -- torchrun …`) → an invocation."""

from __future__ import annotations

import os
import shlex
from typing import Any, Optional

from preflight.discover.paths import COMMAND_PATH
from preflight.extract.launchers import parse_command
from preflight.lang.shell.lines import register_text
from preflight.plan import Diagnostic, Invocation, Origin, Source


def command_invocation(command: list[str]) -> tuple[Optional[Invocation], list[Diagnostic]]:
    """`preflight check -- torchrun …`: the same parser as a launcher line, origin cli."""

    # the words were already split and expanded by the user's shell; a `$` left in one
    # (quoted on the command line) cannot be known
    env: dict[str, Any] = {}
    words = [str(w) for w in command]
    unknown = {w: f"{w!r} was not expanded by the shell" for w in words if "$" in w}
    src = Source(path=COMMAND_PATH, line=1, col=1)
    register_text(COMMAND_PATH, " ".join(shlex.quote(w) for w in words))
    diags: list[Diagnostic] = []
    inv = parse_command(words, src, Origin.CLI, unknown, cwd=os.getcwd(), env=env,
                        diagnostics=diags)
    return inv, diags
