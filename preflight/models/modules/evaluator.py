"""The static evaluator of the counter: one object per module read, which walks a class's
`__init__` (and the helper methods it calls) on the module's `ast` tree, never importing
or running it. Its concerns live in mixins: the module scan (`scope`), statements
(`statements`), expressions (`expressions`) and calls (`calls`)."""

from __future__ import annotations

import ast
from typing import Any, Optional

from preflight.models.modules.calls import CallsMixin
from preflight.models.modules.expressions import ExpressionsMixin
from preflight.models.modules.scope import ScopeMixin
from preflight.models.modules.statements import StatementsMixin
from preflight.models.modules.values import ConfigObj, ModuleLike, as_code


class Evaluator(ScopeMixin, StatementsMixin, ExpressionsMixin, CallsMixin):
    def __init__(self, module: ModuleLike, config: Optional[dict]) -> None:
        code = as_code(module)
        self.module = code.tree
        self.text = code.text
        self._lines: Optional[list[str]] = None
        #: nodes parsed from another text (`count_expression`'s expression) → that text
        self.foreign: dict[int, str] = {}
        self.classes: dict[str, ast.ClassDef] = {}
        self.funcs: dict[str, ast.FunctionDef] = {}
        self.imports: dict[str, str] = {}
        self.steps = 0
        self.depth = 0
        self.pieces: list[str] = []
        self.fatal = False
        self.defaults: dict[str, Any] = {}
        self.globals: dict[str, Any] = {}
        self.config = ConfigObj(config or {}, self.defaults)
        #: nodes of a linked module → its path (their lines are that file's)
        self.node_path: dict[int, str] = {}
        self._scan()
        self._link(code.linked)
