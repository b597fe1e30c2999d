"""The version of a library a job pins, read from the project files nearest to its script.

Library defaults change between major versions (transformers 5 loads `from_pretrained` in
the checkpoint's dtype; 4.x loaded float32), so the version decides a fact. It is read
without installing or importing anything, from the script's directory upwards to the
repository root (the first directory holding `.git`), nearest first; in one directory a
lock file (exact versions) comes before a requirement list:

    uv.lock, poetry.lock          [[package]] name = "…" / version = "…"
    Pipfile.lock                  {"default": {"name": {"version": "==…"}}}
    requirements*.txt             PEP 508 lines (`-r` includes are not followed)
    pyproject.toml                [project] dependencies, [tool.poetry.dependencies]
    setup.py                      install_requires=[…] literals
    environment.yml / .yaml       conda dependencies and their `pip:` list

A bounded requirement (`==4.44.2`, `>=4.40,<5`, `~=4.44`, `^4.40`) is read as the highest
major version it allows. A lower bound alone (`>=4.40`) is read as the major version it
names: the one the project was written against (pip may install a later major today; an
upper bound says which). A bare name pins nothing: the newest major preflight knows.
"""

from __future__ import annotations

import ast
import glob
import json
import os
import re
from dataclasses import dataclass
from typing import Any, Optional

from preflight import runcache
from preflight.safe_read import try_read_text

#: the newest major version of each library preflight knows the defaults of
CURRENT_MAJOR = {"transformers": 5}

_MAX_LEVELS = 12


@dataclass(frozen=True)
class Pin:
    """A library's major version as a project file states it."""

    library: str
    major: int
    path: str
    line: int
    text: str           # the requirement as written: "transformers==4.44.2"
    version: Optional[str] = None   # the one release it names (`version_named`), if any

    @property
    def where(self) -> str:
        return f"{os.path.basename(self.path)}:{self.line}"


def _major_allowed(spec: str, library: str) -> Optional[int]:
    """The highest major version `spec` ("==4.44.2", ">=4.40,<5", "^4.40", "~4.1") allows."""
    spec = spec.strip().strip('"\'')
    if not spec or spec == "*":
        return CURRENT_MAJOR.get(library)
    poetry = re.fullmatch(r"([\^~])\s*(\d+)(?:\.(\d+))?.*", spec)
    if poetry:                      # poetry's ^4.40 / ~4.40 / ~4: the same major
        return int(poetry.group(2))
    if re.fullmatch(r"\d+(\.\d+)*", spec):
        spec = "==" + spec          # a bare version (conda `transformers=4.44`, a lock file)
    spec = re.sub(r"(?<![=!<>~])=(?!=)", "==", spec)   # conda's single '='
    # imported here: most jobs pin nothing, and packaging costs a check ~50 ms to import
    from packaging.specifiers import InvalidSpecifier, SpecifierSet
    from packaging.version import InvalidVersion, Version
    try:
        s = SpecifierSet(spec)
    except InvalidSpecifier:
        return None
    top = CURRENT_MAJOR.get(library, 99)
    ops = {sp.operator for sp in s}
    if ops and ops <= {">=", ">", "!="} and ops & {">=", ">"}:
        # a lower bound alone: the major the project was written against
        lows = []
        for sp in s:
            if sp.operator in (">=", ">"):
                try:
                    lows.append(Version(sp.version).major)
                except InvalidVersion:
                    pass
        if lows:
            return min(max(lows), top)
    candidates = [Version(f"{major}.{minor}.0") for major in range(top + 1)
                  for minor in range(0, 100)]
    for sp in s:                # the versions the specifier names (==4.44.2, <4.30.1)
        try:
            candidates.append(Version(sp.version.rstrip(".*")))
        except InvalidVersion:
            pass
    majors = [v.major for v in candidates if v.major <= top and s.contains(v, prereleases=False)]
    return max(majors) if majors else None


def version_named(spec: str) -> Optional[str]:
    """The one release a requirement names, read as `_major_allowed` reads the major: an
    exact pin (`==0.42.0`, a lock file, conda's `=0.42.0`, a bare `0.42.0`), a compatible
    release (`~=0.42.0`, poetry's `^0.42` / `~0.42`) or a lower bound alone (`>=0.43.0`:
    the release the project was written against). A range or a bare name names none."""
    spec = spec.strip().strip('"\'')
    m = re.fullmatch(r"(?:===?|~=|[\^~]|=)?\s*(\d+(?:\.\d+)*)", spec)
    if m:
        return m.group(1)
    parts = [p.strip() for p in spec.split(",") if p.strip()]
    lows = [re.fullmatch(r"(>=?)\s*(\d+(?:\.\d+)*)", p) for p in parts]
    if parts and all(lo or p.startswith("!=") for lo, p in zip(lows, parts)):
        named = [lo.group(2) for lo in lows if lo]
        if len(named) == 1:
            return named[0]
    return None


def _line_of(text: str, needle: str) -> int:
    for i, ln in enumerate(text.splitlines(), 1):
        if needle in ln.lower():
            return i
    return 1


def _requirement(req: str, library: str) -> Optional[str]:
    """The specifier of `library` in a PEP 508 requirement string, or None."""
    from packaging.requirements import InvalidRequirement, Requirement
    try:
        r = Requirement(req.strip())
    except InvalidRequirement:
        return None
    if r.name.lower().replace("_", "-") != library:
        return None
    return str(r.specifier) or "*"


def _from_requirements(text: str, library: str) -> Optional[tuple[str, int, str]]:
    for i, raw in enumerate(text.splitlines(), 1):
        ln = raw.split(" #", 1)[0].strip()
        if not ln or ln.startswith(("#", "-")):
            continue
        spec = _requirement(ln, library)
        if spec is not None:
            return spec, i, ln
    return None


def _from_lock_toml(text: str, library: str) -> Optional[tuple[str, int, str]]:
    try:
        import tomllib                      # type: ignore[import-not-found]
    except ModuleNotFoundError:             # pragma: no cover - Python 3.10
        import tomli as tomllib             # type: ignore[no-redef]
    try:
        data = tomllib.loads(text)
    except Exception:                       # noqa: BLE001 - a broken lock file pins nothing
        return None
    for pkg in data.get("package", []) or []:
        if isinstance(pkg, dict) and str(pkg.get("name", "")).lower() == library \
                and isinstance(pkg.get("version"), str):
            return "==" + pkg["version"], _line_of(text, f'name = "{library}"'), \
                f"{library} {pkg['version']}"
    return None


def _from_pipfile_lock(text: str, library: str) -> Optional[tuple[str, int, str]]:
    try:
        data = json.loads(text)
    except ValueError:
        return None
    for section in ("default", "develop"):
        entry = (data.get(section) or {}).get(library) if isinstance(data, dict) else None
        if isinstance(entry, dict) and isinstance(entry.get("version"), str):
            return entry["version"], _line_of(text, f'"{library}"'), f"{library}{entry['version']}"
    return None


def _from_pyproject(text: str, library: str) -> Optional[tuple[str, int, str]]:
    try:
        import tomllib                      # type: ignore[import-not-found]
    except ModuleNotFoundError:             # pragma: no cover - Python 3.10
        import tomli as tomllib             # type: ignore[no-redef]
    try:
        data = tomllib.loads(text)
    except Exception:                       # noqa: BLE001
        return None
    project = data.get("project") or {}
    deps: list[Any] = list(project.get("dependencies") or [])
    for extra in (project.get("optional-dependencies") or {}).values():
        deps += list(extra or [])
    for d in deps:
        if isinstance(d, str):
            spec = _requirement(d, library)
            if spec is not None:
                return spec, _line_of(text, library), d
    poetry = ((data.get("tool") or {}).get("poetry") or {}).get("dependencies") or {}
    for name, v in poetry.items():
        if name.lower() == library:
            spec = v.get("version") if isinstance(v, dict) else v
            if isinstance(spec, str):
                return spec, _line_of(text, library), f"{name} = {spec!r}"
    return None


def _from_setup_py(text: str, library: str) -> Optional[tuple[str, int, str]]:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "install_requires" \
                and isinstance(node.value, (ast.List, ast.Tuple)):
            for el in node.value.elts:
                if isinstance(el, ast.Constant) and isinstance(el.value, str):
                    spec = _requirement(el.value, library)
                    if spec is not None:
                        return spec, el.lineno, el.value
    return None


def _from_environment_yml(text: str, library: str) -> Optional[tuple[str, int, str]]:
    for i, raw in enumerate(text.splitlines(), 1):
        m = re.match(r"\s*-\s*(?:conda-forge::)?([A-Za-z0-9_.\-]+)\s*([<>=!~][^#]*)?\s*(#.*)?$", raw)
        if m and m.group(1).lower() == library:
            return (m.group(2) or "*").strip(), i, raw.strip().lstrip("- ")
    return None


#: file patterns of one directory, most exact first, and their readers
_READERS = (("uv.lock", _from_lock_toml), ("poetry.lock", _from_lock_toml),
            ("Pipfile.lock", _from_pipfile_lock), ("requirements*.txt", _from_requirements),
            ("pyproject.toml", _from_pyproject), ("setup.py", _from_setup_py),
            ("environment.yml", _from_environment_yml),
            ("environment.yaml", _from_environment_yml))


def find_pin(library: str, start: str) -> Optional[Pin]:
    """The nearest pin of `library` from directory `start` upwards (see the module)."""
    d = os.path.abspath(start)
    for _ in range(_MAX_LEVELS):
        runcache.note_file(d)       # a pin file added later changes the folder's stamp
        for pattern, reader in _READERS:
            for path in sorted(glob.glob(os.path.join(glob.escape(d), pattern))):
                text = try_read_text(path)
                if not text:
                    continue
                found = reader(text, library)
                if found is None:
                    continue
                spec, line, shown = found
                major = _major_allowed(spec, library)
                if major is not None:
                    return Pin(library=library, major=major, path=path, line=line, text=shown,
                               version=version_named(spec))
        if os.path.exists(os.path.join(d, ".git")):
            return None
        parent = os.path.dirname(d)
        if parent == d:
            return None
        d = parent
    return None
