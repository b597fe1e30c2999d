"""Options several commands share, parsed once so that every command says the same thing
about a bad value (one line on stderr, exit 2)."""

from __future__ import annotations

from typing import Optional

import click

from preflight.units import parse_size


def gpu_memory(text: Optional[str]) -> Optional[int]:
    """`--gpu-memory 80GiB` → bytes; a bare number or an unknown unit is a usage error."""
    if text is None:
        return None
    try:
        return parse_size(text)
    except ValueError as e:
        raise click.ClickException(f"--gpu-memory: {e}") from None
