"""Python training scripts, read with libcst (never imported or executed)."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from preflight.plan import Diagnostic, Extraction


def extract(path: str, text: str, args: Optional[list[str]] = None) -> Extraction:
    try:
        cst.parse_module(text)
    except cst.ParserSyntaxError as e:
        return Extraction(path=path, kind="python", diagnostics=[Diagnostic(
            code="PF002", name="syntax-error", severity="error",
            message=f"cannot parse Python: {e.message}", path=path,
            line=e.raw_line, col=e.raw_column + 1)])
    return Extraction(path=path, kind="python")
