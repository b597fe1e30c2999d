"""The house rules of preflight's own code (docs/architecture.md), checked on every run.

- The import graph of `preflight/` has no cycle: every import that runs counts, a
  function-local one and a deferred `lazy("…")` one too (an import under `TYPE_CHECKING`,
  for annotations alone, does not run; the layer contracts still see it).
- Every deferred import obeys the layers that import-linter enforces for plain imports
  (`[tool.importlinter]` in pyproject.toml; `lint-imports` runs in `make test`).
- The framework adapters' independence contract names every adapter in the folder.
- No function takes more than 8 parameters: what travels together is one object.
"""

from __future__ import annotations

import ast
import pathlib
import sys

import grimp
import pytest


try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

ROOT = pathlib.Path(__file__).resolve().parents[1]
PKG = ROOT / "preflight"
MAX_PARAMETERS = 8


def _contracts() -> list[dict]:
    with open(ROOT / "pyproject.toml", "rb") as fh:
        return tomllib.load(fh)["tool"]["importlinter"]["contracts"]


def _module_name(path: pathlib.Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def lazy_imports() -> dict[str, set[str]]:
    """Every `lazy("preflight.x")` call of preflight's modules: importer → imported."""
    out: dict[str, set[str]] = {}
    for path in sorted(PKG.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id == "lazy" and node.args
                    and isinstance(node.args[0], ast.Constant)
                    and isinstance(node.args[0].value, str)):
                out.setdefault(_module_name(path), set()).add(node.args[0].value)
    return out


def import_graph() -> dict[str, set[str]]:
    """preflight's modules → the preflight modules each imports (grimp reads every import
    statement, a function's own included), with the deferred imports added."""
    sys.path.insert(0, str(ROOT))
    try:
        # annotations alone (`if TYPE_CHECKING:`) are not dependencies at run time: a mixin
        # may name the class it is mixed into; the layer contracts still see them
        g = grimp.build_graph("preflight", cache_dir=None, exclude_type_checking_imports=True)
    finally:
        sys.path.remove(str(ROOT))
    graph = {m: set(g.find_modules_directly_imported_by(m)) for m in g.modules}
    for importer, targets in lazy_imports().items():
        graph.setdefault(importer, set()).update(targets)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    comp = []
                    while True:
                        m = stack.pop()
                        on_stack.discard(m)
                        comp.append(m)
                        if m == node:
                            break
                    if len(comp) > 1:
                        found.append(sorted(comp))
    return found


def test_cycles_finds_a_circle_and_nothing_else():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_import_graph_has_no_cycle():
    graph = import_graph()
    assert len(graph) > 100                       # the whole package was read
    found = cycles(graph)
    assert found == [], "import circles: " + "; ".join(" ⇄ ".join(c) for c in found)


def _layers() -> list[list[str]]:
    (contract,) = [c for c in _contracts() if c["type"] == "layers"]
    container = contract.get("containers", [""])[0]
    out = []
    for layer in contract["layers"]:
        names = [n.strip().strip("()") for n in layer.replace("|", ":").split(":")]
        out.append([f"{container}.{n}" if container else n for n in names])
    return out


def _layer_of(module: str, layers: list[list[str]]) -> int | None:
    for i, names in enumerate(layers):
        if any(module == n or module.startswith(n + ".") for n in names):
            return i
    return None


def test_deferred_imports_point_down_the_layers():
    layers = _layers()
    wrong = []
    for importer, targets in lazy_imports().items():
        a = _layer_of(importer, layers)
        for t in targets:
            b = _layer_of(t, layers)
            if a is not None and b is not None and b < a:
                wrong.append(f"{importer} → {t}")
    assert wrong == []


def test_lazy_loads_on_first_use_and_is_the_imported_module(tmp_path, monkeypatch):
    (tmp_path / "lazypkg").mkdir()
    (tmp_path / "lazypkg" / "__init__.py").write_text("runs = []\n")
    (tmp_path / "lazypkg" / "heavy.py").write_text("import lazypkg\nlazypkg.runs.append(1)\nVALUE = 42\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    from preflight.lazy import lazy
    mod = lazy("lazypkg.heavy")
    import lazypkg
    assert lazypkg.runs == []                       # named, not run
    assert mod.VALUE == 42
    assert lazypkg.runs == [1]                      # run once, on first use
    import lazypkg.heavy
    assert lazypkg.heavy is mod and lazy("lazypkg.heavy") is mod
    assert lazypkg.runs == [1]
    monkeypatch.delitem(sys.modules, "lazypkg.heavy")
    monkeypatch.delitem(sys.modules, "lazypkg")
    with pytest.raises(ValueError, match="not the package"):
        lazy("lazypkg")                             # a package is never deferred
    assert "lazypkg" not in sys.modules
    with pytest.raises(ModuleNotFoundError):
        lazy("lazypkg.absent_module")
    monkeypatch.delitem(sys.modules, "lazypkg")     # imported to look for the module


def test_lazy_of_a_module_its_own_package_names_lazily_is_one_module(tmp_path, monkeypatch):
    (tmp_path / "lazypkg2").mkdir()
    (tmp_path / "lazypkg2" / "__init__.py").write_text(
        "from preflight.lazy import lazy\nheavy_module = lazy('lazypkg2.heavy')\n")
    (tmp_path / "lazypkg2" / "heavy.py").write_text("VALUE = 42\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    from preflight.lazy import lazy
    mod = lazy("lazypkg2.heavy")                    # imports the package, which names it first
    import lazypkg2
    assert lazypkg2.heavy_module is mod and sys.modules["lazypkg2.heavy"] is mod
    assert lazypkg2.heavy_module.VALUE == 42         # loads: still the module sys.modules holds
    monkeypatch.delitem(sys.modules, "lazypkg2.heavy")
    monkeypatch.delitem(sys.modules, "lazypkg2")


def test_the_adapters_independence_contract_names_every_adapter():
    (contract,) = [c for c in _contracts() if c["type"] == "independence"
                   and any(m.startswith("preflight.frameworks.") for m in c["modules"])]
    listed = set(contract["modules"])
    adapters = {f"preflight.frameworks.{p.stem}" for p in (PKG / "frameworks").glob("*.py")
                if not p.stem.startswith("_")}
    assert adapters == listed


def _parameter_count(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    a = fn.args
    names = [x.arg for x in a.posonlyargs + a.args]
    n = len(names) + len(a.kwonlyargs) + bool(a.vararg) + bool(a.kwarg)
    if names and names[0] in ("self", "cls", "mcs"):
        n -= 1
    return n


def test_parameter_count_counts_every_kind():
    fn = ast.parse("def f(self, a, /, b, *c, d, e=1, **f): pass").body[0]
    assert _parameter_count(fn) == 6


def test_no_function_takes_more_than_eight_parameters():
    over = []
    for path in sorted(PKG.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = _parameter_count(node)
                if n > MAX_PARAMETERS:
                    over.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({n})")
    assert over == []


def _top_level_names() -> set[str]:
    names = {p.stem for p in PKG.glob("*.py") if p.stem not in ("__init__", "__main__")}
    return names | {p.parent.name for p in PKG.glob("*/__init__.py")}


def test_every_module_of_the_package_has_a_layer():
    layered = {name.split(".", 1)[1] for layer in _layers() for name in layer}
    assert _top_level_names() - layered == set()      # none escapes the contracts
    assert layered - _top_level_names() == set()      # none is named that does not exist


def test_the_architecture_page_names_every_layer_as_the_contract_orders_them():
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    named = [[n.strip(" `") for n in row.split("|")[1].split(":")] for row in rows]
    layers = [[n.split(".", 1)[1] for n in layer] for layer in _layers()]
    assert [r for r in named if r[0] in {l[0] for l in layers}] == layers


def test_the_readme_and_the_architecture_page_name_every_package():
    packages = sorted(p.parent.name for p in PKG.glob("*/__init__.py"))
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert [p for p in packages if f"preflight/{p}/" not in readme] == []
    assert [p for p in packages if f"`{p}`" not in page] == []


def test_every_package_ships():
    """The distribution lists its packages one by one (rules/ ships as preflight.rules):
    a package missing from the list is absent from an installed copy, where only a
    non-editable install (the pre-commit hook's) would notice."""
    with open(ROOT / "pyproject.toml", "rb") as fh:
        listed = set(tomllib.load(fh)["tool"]["setuptools"]["packages"])
    found = {_module_name(p) for p in PKG.rglob("__init__.py")}
    assert found - listed == set()
    assert listed - found == {"preflight.rules"}


def test_no_module_imports_another_modules_private_name():
    """A name another module imports is part of its module's surface: public. (An import
    under a private alias, `import x as _x`, is the importer's own business.)"""
    found = []
    for path in sorted(list(PKG.rglob("*.py")) + list((ROOT / "rules").glob("*.py"))):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("preflight"):
                for alias in node.names:
                    if alias.name.startswith("_") and not alias.name.startswith("__") \
                            and not node.module.startswith("preflight.rules"):
                        found.append(f"{path.relative_to(ROOT)}:{node.lineno} {alias.name}")
    assert found == []


def test_an_import_inside_a_function_says_why():
    """Imports sit at the top (deferred ones through `preflight.lazy`); one left inside a
    function is there for a reason a comment gives, on it or just above it (the start-up
    of a command that does not need it, a package `lazy()` cannot name, the dry run's
    child)."""
    silent = []
    for path in sorted(PKG.rglob("*.py")):
        lines = path.read_text(encoding="utf-8").splitlines()
        for node in ast.walk(ast.parse("\n".join(lines))):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for imp in ast.walk(node):
                named = (imp.module or "" if isinstance(imp, ast.ImportFrom) else
                         " ".join(a.name for a in imp.names) if isinstance(imp, ast.Import) else "")
                if not named.startswith("preflight"):
                    continue
                near = lines[max(0, imp.lineno - 4):imp.end_lineno]
                if not any("#" in line for line in near):
                    silent.append(f"{path.relative_to(ROOT)}:{imp.lineno}")
    assert silent == []
