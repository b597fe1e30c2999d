"""Is a Python file a config (read as a document) or a script? A cheap text test first,
then the shape of its top level."""

from __future__ import annotations

import ast
import re
from typing import Optional

from preflight.lang.pyconfig.inherit import pre_substitute

_CONFIG_HINT = re.compile(r"^(_base_\s*=|with\s+read_base\(\)|\w+(\.\w+)*\s*=\s*(dict\(|L\(|"
                          r"LazyCall\(|get_config\(|OmegaConf\.create\()|"
                          r"from\s+\.+\w*[\w.]*\s+import\s)", re.M)
#: calls a config's top level may make without running anything of the job
_TOP_CALLS = frozenset({"update", "merge", "merge_from_dict", "setdefault"})


def looks_like_config(text: str) -> bool:
    """Cheap text test: does the file assign a `_base_`, a `dict(...)`, a `LazyCall(...)`
    at its top level, or import from a relative config module?"""
    return _CONFIG_HINT.search(text) is not None


def _config_stmt(st: ast.stmt) -> bool:
    t = type(st)
    if t in (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Import, ast.ImportFrom, ast.Pass,
             ast.Delete):
        return True
    if t is ast.With:
        return all(_config_stmt(s) for s in st.body)
    if t is ast.If:
        return all(_config_stmt(s) for s in st.body + st.orelse)
    if t is ast.Expr:
        v = st.value
        if isinstance(v, ast.Constant):
            return True
        return isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute) and \
            v.func.attr in _TOP_CALLS
    return False


def is_config_module(text: str, tree: Optional[ast.Module] = None) -> bool:
    """Is this Python file a config (read as a document) rather than a script? Its top
    level holds only assignments, imports, `with read_base():` and `x.update(...)`, and it
    assigns a dict, a LazyCall or a `_base_` (a module of plain constants stays a module the
    scripts that import or `exec` it read)."""
    if not looks_like_config(text):
        return False
    if tree is None:
        try:
            tree = ast.parse(pre_substitute(text) if "_base_" in text else text)
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            return False
    body = tree.body
    return bool(body) and all(_config_stmt(st) for st in body) and any(
        isinstance(st, (ast.Assign, ast.With, ast.ImportFrom, ast.Expr)) for st in body)
