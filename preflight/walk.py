"""The files of a directory that preflight reads, found the way ruff finds Python files.

A directory given to `preflight check` is walked once:

* `.gitignore` files (of the walked folders and of the folders above it up to the
  repository root, and `.git/info/exclude`) are respected, matched by `pathspec`;
* folders that hold no training jobs are skipped by default: virtual environments (any
  folder with a `pyvenv.cfg`), `node_modules`, `build/`, `dist/`, hidden folders, tests,
  fixtures and docs (`DEFAULT_EXCLUDE`);
* `exclude` in `[tool.preflight]` replaces that default list and `extend-exclude` adds to
  it; both are gitignore-style patterns relative to the pyproject.toml that sets them, and
  each folder uses the nearest pyproject.toml with a `[tool.preflight]` table;
* of the files left, only the kinds preflight reads (Python, shell launchers and
  Makefiles, JSON / YAML / TOML) are returned, in sorted order.

A path given explicitly is never excluded (as in ruff): only what lies below a given
folder is filtered.
"""

from __future__ import annotations

import os
from typing import Iterable, Optional

import pathspec

from preflight import runcache, safe_read
from preflight.config import load_project_config
from preflight.extract import kind_of, read_text
from preflight.plan import Diagnostic
from preflight.project import has_preflight_table

#: skipped below a given folder unless `exclude` says otherwise (gitignore-style patterns)
DEFAULT_EXCLUDE = (
    ".*/", "__pycache__/", "venv/", "env/", "node_modules/", "site-packages/", "build/",
    "dist/", "*.egg-info/", "test/", "tests/", "fixtures/", "docs/", "doc/", "wandb/",
    "outputs/", "checkpoints/",
)
#: file extensions of the files preflight reads (others are read only without an extension)
READ_EXT = (".py", ".sh", ".bash", ".slurm", ".sbatch", ".mk", ".json", ".yaml", ".yml", ".toml",
            ".ipynb")
#: files that configure the project's tooling, never training (other configs are told
#: apart by their content: `preflight.extract.recognise`)
SKIP_FILES = {"pyproject.toml", "setup.py", "conftest.py", "noxfile.py"}


def _spec(lines: Iterable[str]) -> Optional[pathspec.PathSpec]:
    lines = [ln for ln in lines if ln.strip() and not ln.lstrip().startswith("#")]
    if not lines:
        return None
    try:
        return pathspec.GitIgnoreSpec.from_lines(lines)
    except Exception:  # noqa: BLE001 - a malformed pattern file is ignored, never fatal
        return None


def _spec_file(path: str) -> Optional[pathspec.PathSpec]:
    runcache.note_file(path)
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return _spec(fh.read().splitlines())
    except OSError:
        return None


class _Rules:
    """The ignore rules in force in one folder: (base folder, spec) pairs, outermost
    first, and the exclude patterns of the nearest project configuration. `prefix` holds
    the folder's path relative to each base, computed once per folder."""

    def __init__(self, ignores: tuple, exclude: tuple):
        self.ignores = ignores
        self.exclude = exclude

    def for_folder(self, d: str) -> "_Folder":
        return _Folder(self, d)


class _Folder:
    def __init__(self, rules: _Rules, d: str):
        self.rules = rules
        self.excl = [(_prefix(b, d), spec, only_dirs) for b, spec, only_dirs in rules.exclude]
        self.ign = [(_prefix(b, d), spec) for b, spec in rules.ignores]

    def ignored(self, name: str, is_dir: bool) -> bool:
        tail = name + "/" if is_dir else name
        for pre, spec, only_dirs in self.excl:
            if pre is not None and (is_dir or not only_dirs) and spec.match_file(pre + tail):
                return True
        verdict = False
        for pre, spec in self.ign:
            if pre is None:
                continue
            check = getattr(spec, "check_file", None)
            if check is not None:
                include = check(pre + tail).include
                if include is not None:
                    verdict = bool(include)
            elif spec.match_file(pre + tail):
                verdict = True
        return verdict


def _prefix(base: str, d: str) -> Optional[str]:
    """`d` relative to `base` as a pattern path prefix ('' or 'a/b/'); None outside it."""
    if d == base:
        return ""
    if not d.startswith(base.rstrip(os.sep) + os.sep):
        return None
    return os.path.relpath(d, base).replace(os.sep, "/") + "/"


def _repo_root(folder: str) -> Optional[str]:
    d = folder
    while True:
        runcache.note_file(os.path.join(d, ".git"))
        if os.path.exists(os.path.join(d, ".git")):
            return d
        up = os.path.dirname(d)
        if up == d:
            return None
        d = up


def _outer_ignores(top: str) -> tuple:
    """The .gitignore files of the folders above `top` up to the repository root (and the
    repository's .git/info/exclude): they apply inside `top` too."""
    root = _repo_root(top)
    if root is None:
        return ()
    chain = []
    d = os.path.dirname(top)
    while d.startswith(root) and d != top:
        chain.append(d)
        if d == root:
            break
        d = os.path.dirname(d)
    out = []
    spec = _spec_file(os.path.join(root, ".git", "info", "exclude"))
    if spec is not None:
        out.append((root, spec))
    for d in reversed(chain):
        spec = _spec_file(os.path.join(d, ".gitignore"))
        if spec is not None:
            out.append((d, spec))
    return tuple(out)


def _exclusions(config) -> tuple:
    """(base, spec, folders only) of a project configuration's exclude + extend-exclude
    patterns; patterns ending in `/` match folders only, so files skip them."""
    patterns = list(DEFAULT_EXCLUDE if config is None or config.exclude is None else config.exclude)
    patterns += list(config.extend_exclude) if config is not None else []
    base = (config.root if config is not None and config.root else None)
    out = []
    for only_dirs in (True, False):
        spec = _spec([p for p in patterns if p.rstrip().endswith("/") == only_dirs])
        if spec is not None:
            out.append((base, spec, only_dirs))
    return tuple(out)


def _kind(path: str, name: str) -> str:
    head = ""
    if "." not in name:
        try:
            head = safe_read.read_text(path, 200, truncate=True)
        except OSError:
            return "unknown"
    return kind_of(path, head)


def _listing(d: str) -> tuple[list[str], list[str], list[str]]:
    """(folders, regular files, other entries) in `d`, sorted. A symlink counts as what it
    points to, but a symlinked folder is not entered (no loops); a FIFO, socket or device,
    a dangling link or a link loop is never opened — reading one could block or fail — and
    is listed last, for a finding."""
    dirs: list[str] = []
    files: list[str] = []
    other: list[str] = []
    runcache.note_file(d)       # an entry added, removed or renamed changes its stamp
    try:
        with os.scandir(d) as it:
            for e in it:
                try:
                    if e.is_dir(follow_symlinks=False):
                        dirs.append(e.name)
                    elif e.is_file():
                        files.append(e.name)
                    elif not (e.is_symlink() and e.is_dir()):
                        other.append(e.name)
                except OSError:
                    other.append(e.name)
    except OSError:
        return [], [], []
    return sorted(dirs), sorted(files), sorted(other)


def walk(given: str, special: Optional[list[str]] = None) -> list[str]:
    """The files below folder `given` that preflight reads, sorted, spelt from `given` as
    the user wrote it (see the module doc). Entries with a name preflight would read that
    are not regular files (FIFO, device, dangling link, link loop) go to `special`."""

    top = os.path.abspath(given)
    config = load_project_config(top)
    # exclude patterns with no pyproject.toml are relative to the folder walked
    excl = tuple((b or top, s, o) for b, s, o in _exclusions(config))
    found: list[str] = []
    todo = [(top, _Rules(_outer_ignores(top), excl))]
    while todo:
        d, r = todo.pop()
        dirs, names, other = _listing(d)
        if ".gitignore" in names:
            spec = _spec_file(os.path.join(d, ".gitignore"))
            if spec is not None:
                r = _Rules(r.ignores + ((d, spec),), r.exclude)
        if d != top and "pyproject.toml" in names and has_preflight_table(os.path.join(d, "pyproject.toml")):
            sub = load_project_config(d)
            r = _Rules(r.ignores, tuple((b or d, s, o) for b, s, o in _exclusions(sub)))
        here = r.for_folder(d)
        spelt = os.path.normpath(os.path.join(given, os.path.relpath(d, top)))
        for n in names:
            if n in SKIP_FILES or n.startswith("."):
                continue
            if "." in n and not n.lower().endswith(READ_EXT):
                continue
            if here.ignored(n, False):
                continue
            if "." in n or _kind(os.path.join(d, n), n) != "unknown":
                found.append(os.path.join(spelt, n) if spelt != "." else n)
                runcache.note_file(os.path.join(d, n))
        if special is not None:
            special += [os.path.join(spelt, n) if spelt != "." else n for n in other
                        if not n.startswith(".") and n.lower().endswith(READ_EXT)
                        and not here.ignored(n, False)]
        # a virtual environment, or a cache (CACHEDIR.TAG: preflight's own, wherever
        # `cache-dir` puts it), is never entered
        sub_dirs = []
        for x in dirs:
            if here.ignored(x, True):
                continue
            marks = [os.path.join(d, x, "pyvenv.cfg"), os.path.join(d, x, "CACHEDIR.TAG")]
            for m in marks:
                runcache.note_file(m)
            if not any(os.path.isfile(m) for m in marks):
                sub_dirs.append(x)
        todo.extend((os.path.join(d, x), r) for x in reversed(sub_dirs))
    return found


# ------------------------------------------------------------------ the paths of a check

def _unreadable(path: str) -> "Diagnostic":
    """The PF001 of a file a directory walk found but does not open (a FIFO, a device, a
    dangling link or a link loop), with the true reason."""
    reason = safe_read.stat_reason(path)
    if reason is not None:
        return Diagnostic(code="PF001", name="unreadable-file", severity="error",
                          message=reason, path=path)
    diag = read_text(path)[1]
    return diag if diag is not None else Diagnostic(
        code="PF001", name="unreadable-file", severity="error",
        message="not a regular file; not read", path=path)


def expand_paths(paths: list[str], diags: "Optional[list[Diagnostic]]" = None) -> list[str]:
    """Directories become the files in them that preflight reads (`preflight.walk`: the
    .gitignore, exclude settings and default skips apply), sorted; other paths pass
    through unchanged (a missing one is discovery's PF001). A directory with nothing
    preflight reads is a PF001 finding in `diags`: a check of nothing does not pass."""
    out: list[str] = []
    for p in paths:
        if not os.path.isdir(p):
            out.append(p)
            continue
        special: list[str] = []
        found = walk(p, special)
        if diags is not None:
            diags += [_unreadable(f) for f in special]
        if not found and not special and diags is not None:
            diags.append(Diagnostic(
                code="PF001", name="unreadable-file", severity="warning",
                message="nothing to check in this directory: no Python script, launcher "
                        "(.sh, .slurm, Makefile) or config (.json, .yaml, .toml) in it",
                path=p))
        out += found
    return out


def project_groups(paths: list[str]) -> list[tuple[Optional[str], list[str]]]:
    """The files split by the project they belong to: the nearest pyproject.toml with a
    `[tool.preflight]` table above each (None: no such file), in order of first appearance.
    Each project is discovered and configured on its own, so checking a folder of
    projects reports what checking each project does."""

    by_dir: dict[str, Optional[str]] = {}

    def project(d: str) -> Optional[str]:
        if d not in by_dir:
            p = os.path.join(d, "pyproject.toml")
            up = os.path.dirname(d)
            by_dir[d] = p if os.path.isfile(p) and has_preflight_table(p) else (None if up == d else project(up))
        return by_dir[d]

    groups: dict[Optional[str], list[str]] = {}
    folders: dict[str, Optional[str]] = {}
    for f in paths:
        d = os.path.dirname(f)
        if d not in folders:
            folders[d] = project(os.path.abspath(d or "."))
        groups.setdefault(folders[d], []).append(f)
    return list(groups.items())


def walk_paths(paths: list[str]) -> tuple[list, "list[Diagnostic]", tuple[dict, dict]]:
    """(project groups, PF001 findings, what was read) of walking `paths` — the walk as a
    helper process makes it (`pipeline._walk_and_test`, `preflight.ahead`)."""
    with runcache.recording() as read:
        found: list = []
        groups = project_groups(expand_paths(list(paths), found))
    return groups, found, (read.files, read.env)
