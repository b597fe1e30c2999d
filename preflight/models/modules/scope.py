"""What the counter knows of the module it reads: its classes, functions, imports,
config-class defaults and constants (the scan), which classes are `nn.Module`s, dotted
names with import aliases expanded, and the line and source text of a node for the
unknown pieces it reports."""

from __future__ import annotations

import ast
import re
from typing import Any, Optional

from preflight.models.modules.values import Unknown


#: names of library classes that are nn.Modules (a base class from outside the files)
_LIBRARY_LAYER = re.compile(r"(Head|Layer|Block|Model|Embeddings|Attention|MLP|Encoder|Decoder)$")

FUNCTION_NODES = (ast.FunctionDef, ast.AsyncFunctionDef)


class ScopeMixin:
    """The module scan, names, and where a node is (`_Evaluator`'s part)."""

    # ----------------------------------------------------------------- module scan
    def _scan(self) -> None:
        for stmt in self.module.body:
            if isinstance(stmt, ast.ClassDef):
                self.classes[stmt.name] = stmt
            elif isinstance(stmt, FUNCTION_NODES):
                self.funcs[stmt.name] = stmt
            elif isinstance(stmt, ast.Import):
                for a in stmt.names:
                    local = a.asname if a.asname else a.name.split(".")[0]
                    self.imports[local] = a.name if a.asname else local
            elif isinstance(stmt, ast.ImportFrom) and not any(a.name == "*" for a in stmt.names):
                mod = stmt.module or ""
                for a in stmt.names:
                    local = a.asname if a.asname else a.name
                    self.imports[local] = f"{mod}.{a.name}" if mod else a.name
        # dataclass-style config classes: their field defaults back `config.x`
        for name, cls in self.classes.items():
            if self._is_module_class(cls):
                continue
            for s in cls.body:
                if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name) \
                        and s.value is not None:
                    v = self._safe_eval(s.value, {})
                    if not isinstance(v, Unknown):
                        self.defaults.setdefault(s.target.id, v)
        # module constants; what their statements cannot size (`model = Net(cfg)` at the
        # top level, run here with globals not known) is not a piece of the class counted:
        # a global it reads that stays unknown is noted where the class reads it
        pieces, fatal = list(self.pieces), self.fatal
        for s in self.module.body:
            if isinstance(s, (ast.Assign, ast.AnnAssign)):
                try:
                    self._exec_simple(s, self.globals)
                except Exception:
                    pass
        self.pieces, self.fatal = pieces, fatal

    def _link(self, linked: tuple) -> None:
        """The classes, functions and imports of the repository's modules the file imports
        from (`from lingua.transformer import BaseTransformer`), under the names the file
        does not define itself; their nodes keep their own file's text and path."""
        for path, text, tree in linked:
            for stmt in tree.body:
                if isinstance(stmt, ast.ClassDef):
                    if stmt.name in self.classes:
                        continue
                    self.classes[stmt.name] = stmt
                elif isinstance(stmt, FUNCTION_NODES):
                    if stmt.name in self.funcs:
                        continue
                    self.funcs[stmt.name] = stmt
                elif isinstance(stmt, ast.Import):
                    for a in stmt.names:
                        local = a.asname if a.asname else a.name.split(".")[0]
                        self.imports.setdefault(local, a.name if a.asname else local)
                    continue
                elif isinstance(stmt, ast.ImportFrom) and not any(a.name == "*" for a in stmt.names):
                    mod = stmt.module or ""
                    for a in stmt.names:
                        local = a.asname if a.asname else a.name
                        if local not in self.classes and local not in self.funcs:
                            self.imports.setdefault(local, f"{mod}.{a.name}" if mod else a.name)
                    continue
                else:
                    continue
                for n in ast.walk(stmt):
                    self.foreign[id(n)] = text
                    self.node_path[id(n)] = path

    def _is_module_class(self, cls: ast.ClassDef, seen: int = 0) -> bool:
        for b in cls.bases:
            name = self._full(b)
            if name and (name.startswith("torch.nn.") or name.endswith("Module")):
                return True
            base = name.split(".")[-1] if name else ""
            if base in self.classes and seen < 10 and self._is_module_class(self.classes[base], seen + 1):
                return True
            if base and base not in self.classes and _LIBRARY_LAYER.search(base):
                return True         # a library layer (transformers' RobertaLMHead, …Model)
        return False

    def _full(self, node: ast.expr) -> str:
        """Dotted name of a Name/Attribute with import aliases expanded."""
        try:
            d = _dotted(node)
        except ValueError:
            return ""
        head, _, rest = d.partition(".")
        if head in self.imports:
            head = self.imports[head]
        return f"{head}.{rest}" if rest else head

    def line(self, node: ast.AST) -> int:
        """1-based line of `node` in the module (0 for a node from another text). A
        comprehension's `for` has no position of its own: its target's line."""
        if id(node) in self.foreign:
            return 0
        if isinstance(node, ast.comprehension):
            node = node.target
        return getattr(node, "lineno", 0)

    def code(self, node: ast.AST) -> str:
        """The source of `node` as written, its continuation lines within brackets without
        the indentation of the statement it is in (as the node would be written alone)."""
        text = self.foreign.get(id(node), self.text)
        if text is None:
            return ast.unparse(node)
        if text is not self.text:
            return ast.get_source_segment(text, node) or ast.unparse(node)
        if self._lines is None:
            self._lines = _split_lines(text)
        lines = self._lines
        l0, l1 = node.lineno - 1, node.end_lineno - 1
        if l1 >= len(lines):
            return ast.unparse(node)
        first = lines[l0].encode()
        if l0 == l1:
            return first[node.col_offset:node.end_col_offset].decode()
        rows = [first[node.col_offset:].decode(), *lines[l0 + 1:l1],
                lines[l1].encode()[:node.end_col_offset].decode()]
        stmt = self._statement_of(node)
        indent = _INDENT.match(lines[stmt.lineno - 1]).group() if stmt is not None else ""
        if indent:
            # lines inside a multi-line string, and lines after a backslash, are kept as
            # they are: their whitespace is not indentation
            kept = {n for sub in ast.walk(node) if isinstance(sub, (ast.Constant, ast.JoinedStr))
                    for n in range(sub.lineno + 1, sub.end_lineno + 1)}
            for i in range(1, len(rows)):
                n = l0 + 1 + i                                   # its 1-based line
                if n not in kept and not lines[n - 2].rstrip("\r\n").endswith("\\") \
                        and rows[i].startswith(indent):
                    rows[i] = rows[i][len(indent):]
        return "".join(rows)

    def _statement_of(self, node: ast.AST) -> Optional[ast.stmt]:
        """The innermost statement of the module that holds `node`."""
        start, end = (node.lineno, node.col_offset), (node.end_lineno, node.end_col_offset)
        found = None
        stmts: list = self.module.body
        while stmts:
            for st in stmts:
                if (st.lineno, st.col_offset) <= start and end <= (st.end_lineno, st.end_col_offset):
                    found = st
                    stmts = [c for f in ("body", "orelse", "finalbody")
                             for c in (getattr(st, f, None) or [])]
                    stmts += [c for h in (getattr(st, "handlers", None) or ()) for c in h.body]
                    stmts += [c for m in (getattr(st, "cases", None) or ()) for c in m.body]
                    break
            else:
                break
        return found

    def note(self, node: ast.AST, msg: str) -> None:
        path = self.node_path.get(id(node))
        piece = (f"{path}:{getattr(node, 'lineno', 0)}: {msg}" if path else
                 f"line {self.line(node)}: {msg}")
        if piece not in self.pieces:
            self.pieces.append(piece)


def _split_lines(text: str) -> list[str]:
    """`text`'s lines with their endings, split where `ast` counts lines."""
    return re.split(r"(?<=\r\n)|(?<=\r)(?!\n)|(?<=\n)", text)


_INDENT = re.compile(r"[ \t\f]*")


def _dotted(node: Any) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    raise ValueError("not a dotted name")
