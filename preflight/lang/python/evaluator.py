"""The `Evaluator`: abstract interpretation of one file, composed of one mixin per part of
the language (names, statements, expressions, calls, builtins, the script's arguments,
other modules), and the `Hooks` through which the extractor that creates it hands it what
the layers above know (the parse shared by the run, library arguments dataclasses).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import AbstractSet, Any, Callable, Mapping, Optional

from preflight.lang.python.arguments import ArgumentsMixin
from preflight.lang.python.builtin_calls import BuiltinsMixin
from preflight.lang.python.calls import CallsMixin
from preflight.lang.python.cli import parse_cli
from preflight.lang.python.config_files import ConfigFilesMixin, HydraMixin
from preflight.lang.python.dataclass_cli import DataclassCliMixin
from preflight.lang.python.expressions import ExpressionsMixin
from preflight.lang.python.modules import ModulesMixin
from preflight.lang.python.scopes import ScopesMixin
from preflight.lang.python.source import source_text, walk_statements
from preflight.lang.python.statements import StatementsMixin
from preflight.lang.python.values import ClassVal, FuncVal, V


def _no_defaults(cls: str) -> dict[str, Any]:
    return {}


@dataclass(frozen=True)
class Hooks:
    """What the evaluator is handed rather than imports (it sits below the extractors and
    the framework adapters): `parse` turns the text of another module of the repository
    into its `ast` tree (the extractor's parse, shared by the whole run); the library
    arguments dataclasses (`TrainingArguments`, TRL's configs …) by short name, the
    defaults of each and the types of their fields as the command line gives them. The
    call hook itself is the `patterns` object (`on_call`, `on_dataclass`, …)."""

    parse: Callable[[str], ast.Module] = ast.parse
    lib_dataclasses: AbstractSet[str] = frozenset()
    library_defaults: Callable[[str], dict[str, Any]] = _no_defaults
    lib_field_types: Mapping[str, str] = field(default_factory=dict)


_NO_HOOKS = Hooks()


class Evaluator(ScopesMixin, StatementsMixin, ExpressionsMixin, CallsMixin, BuiltinsMixin,
                ArgumentsMixin, DataclassCliMixin, ConfigFilesMixin, HydraMixin, ModulesMixin):
    """Abstract interpretation of one file. `patterns` receives the calls it recognises."""

    def __init__(self, path: str, tree: ast.Module, args: Optional[list[str]], patterns: Any,
                 read_file: Any = None, lines: Optional[list[str]] = None,
                 env: Optional[dict] = None, hooks: Optional[Hooks] = None) -> None:
        self.path = path
        #: the launcher's environment: name → (value or None when not set, reason)
        self.env: dict = dict(env or {})
        #: modules of the repository followed into (path → _Module or None), and the budget
        self.modules: dict[str, Any] = {}
        self.followed = 0
        self.follow_counts: dict[int, int] = {}
        self.tree = tree
        self.argv = list(args or [])
        self.cli_opts, self.cli_pos = parse_cli(self.argv)
        #: `parse_args(args=[...])` written in the script: its line (its values are the
        #: script's literals), or why the list it passes is not known
        self.argv_written: Optional[int] = None
        self.argv_unknown: Optional[V] = None
        self.used_cli: set[str] = set()
        self.patterns = patterns
        self.read_file = read_file
        self.hooks = hooks if hooks is not None else _NO_HOOKS
        self.globals: dict[str, Any] = {}
        self.frames: list[dict[str, Any]] = []
        self.depth = 0
        self.steps = 0
        self.visited: set[int] = set()
        self.functions: list[FuncVal] = []
        self.classes: dict[str, ClassVal] = {}
        self.argparse: dict[str, dict] = {}
        self.argparse_order: list[str] = []
        #: `args.x = ...` after the parse: the value the namespace holds from there on
        self.args_set: dict[str, V] = {}
        #: where the parsed arguments' attributes are read: dest → [(line, inside an arm
        #: of an undecided `if` / `match`)]
        self.arg_reads: dict[str, list[tuple[int, bool]]] = {}
        #: `parser.set_defaults(x=...)`: dest → the default's expression (over `default=`)
        self.set_defaults: dict[str, ast.Call] = {}
        #: `parser.set_defaults(**mapping)` as run: dest → its value; and why every other
        #: default may be replaced, when the mapping is not known statically
        self.run_defaults: dict[str, V] = {}
        self.run_defaults_unknown: Optional[V] = None
        #: sub-parsers by the name they are bound to → their sub-command word, and the
        #: options two sub-commands both declare (dest → each declaration)
        self.subcommands: dict[str, str] = {}
        self.argparse_alts: dict[str, list[dict]] = {}
        self._updaters: dict[int, bool] = {}              # function → copies **kwargs by name
        #: configuration dataclasses of other modules instantiated by the run (their fields
        #: are the job's settings by name where no training API says otherwise)
        self.config_instances: list = []
        #: simple_parsing `add_arguments(Config, dest=...)`: dest → class name
        self.dataclass_dests: dict[str, str] = {}
        self.references: list[str] = []
        self.notes: list[tuple[int, int, str]] = []    # unresolved things worth a PF003
        self.cond_depth = 0                              # > 0 inside an unknown-condition branch
        self.conds: list[str] = []                       # the unknown `if` tests around the statement
        #: the undecided choices around the statement (`if` / `match` arms, not `try`): a
        #: setting made here is one alternative of the job, not what it certainly runs
        self.choices: list[str] = []
        self.loops = 0                                   # > 0 inside a `for` / `while` body
        #: the `if` statements being run, innermost last, with the loop and call depth
        #: each was entered at (what guards a call: `if (i + 1) % n == 0: opt.step()`)
        self.if_stack: list[tuple[ast.If, int, int]] = []
        #: `if` arms of this file the launch certainly does not take: (first line, last
        #: line of the arm, why)
        self.skipped: list[tuple[int, int, str]] = []
        self.cur_stmt: Optional[ast.stmt] = None
        self.unbound = False                              # walking never-called functions
        self.local_config: dict[str, V] = {}             # config-like names bound in functions
        #: the lines of the file being evaluated (for `src`); each evaluator has its own
        self.lines: list[str] = lines if lines is not None else []
        self._prescan()

    def src(self, node: ast.AST) -> str:
        """The source text of a node of this file (first line only when it spans several)."""
        return source_text(self.lines, node)

    # ----------------------------------------------------------------- prescan
    def _prescan(self) -> None:
        """Collect add_argument calls and classes anywhere in the file (order-independent)."""
        self.prescan_arguments(self.tree, self.lines)
        # classes: module level and one level down (inside `if`/`try` blocks)
        for st in self.tree.body:
            if isinstance(st, ast.ClassDef):
                self._register_class(st)
            elif isinstance(st, (ast.If, ast.Try)):
                for sub in st.body:
                    if isinstance(sub, ast.ClassDef):
                        self._register_class(sub)

    def prescan_arguments(self, tree: ast.Module, lines: list[str]) -> None:
        """The argparse declarations of a module (this file, or another module of the
        repository the run follows into): options, sub-commands, `set_defaults`,
        simple_parsing's `add_arguments`."""
        if any("add_argument" in line or "set_defaults" in line for line in lines):
            # statement level only (`parser.add_argument(...)` is a statement): a walk of
            # every expression node would cost a quarter of the analysis
            for st in walk_statements(tree.body):
                if type(st) is ast.Assign and type(st.value) is ast.Call and \
                        type(st.value.func) is ast.Attribute and st.value.func.attr == "add_parser":
                    self.register_subcommand(st)
                if type(st) is ast.Expr and type(st.value) is ast.Call:
                    f = st.value.func
                    if type(f) is ast.Attribute and f.attr == "add_argument":
                        self._register_argument(st.value)
                    elif type(f) is ast.Attribute and f.attr == "add_arguments":
                        self.register_add_arguments(st.value)
                    elif type(f) is ast.Attribute and f.attr == "set_defaults":
                        self.register_set_defaults(st.value)

    def _register_class(self, node: ast.ClassDef) -> None:
        self.classes[node.name] = self.class_value(node)

    def class_value(self, node: ast.ClassDef) -> ClassVal:
        """A class definition's bases, dataclass decorator and field statements."""
        bases = [self._dotted_text(b) for b in node.bases]
        deco = [self._dotted_text(d.func if isinstance(d, ast.Call) else d) for d in node.decorator_list]
        is_dc = any(d.endswith("dataclass") for d in deco if d)
        cv = ClassVal(node, [b for b in bases if b], is_dc)
        for st in node.body:
            if isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name):
                cv.fields[st.target.id] = (st, st.value, st.annotation)
            elif isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name):
                cv.fields[st.targets[0].id] = (st, st.value, None)
        return cv

    @staticmethod
    def _dotted_text(node: ast.AST) -> str:
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name):
            parts.append(node.id)
            return ".".join(reversed(parts))
        return ""

    # ----------------------------------------------------------------- run
    def run(self) -> None:
        self.exec_block(self.tree.body)
        # functions and methods never called from the top level: walk them once so their
        # training-API calls are still seen (parameters unknown)
        i = 0
        self.unbound = True
        self.patterns.unbound = True
        while i < len(self.functions):
            fv = self.functions[i]
            i += 1
            if id(fv.node) in self.visited:
                continue
            self.call_function(fv, [], {}, fv.node.lineno, fv.node.col_offset + 1, unbound=True)
        self.unbound = False
        self.patterns.unbound = False
