"""Group the given paths (and an optional launch command) into jobs.

A job is an entry (a training script, or a recipe for recipe-driven CLIs) plus the launcher
line that runs it and the config files that feed it. A pre-commit hook passes only the
changed files, so for a script or config given alone discovery looks across the repository
for the launchers and configs that name it: a cheap text scan (file names only, no parsing)
over launcher and config files, skipping VCS folders, virtual environments and
node_modules, with caps on depth, file count and size. Only the few files whose text names
the target are parsed.

Jobs can also be declared in pyproject.toml:

    [[tool.preflight.jobs]]
    entry = "train.py"
    launcher = "scripts/train.sh"        # or: command = "torchrun --nproc_per_node 8 train.py"
    args = ["--batch_size", "4"]
    gpu = "H100-SXM5-80GB"
    nodes = 2
"""

from __future__ import annotations

import functools
import os
import re
import shlex
from typing import Any, Iterable, Optional

from preflight import cache, runcache, safe_read
from preflight.config import load_project_config
from preflight.extract import extract_file, kind_of, stats, stats_since
# the walked files' tests run thousands of times a run: imported once, not per call
from preflight.extract.python import mentions_training_api
from preflight.extract.recognise import is_training_config, launches_training, may_launch, \
    runs_training
from preflight.extract.launchers import parse_command
from preflight.lang.shell.lines import register_text
from preflight.lang.shell.values import MARK, readable, reason_of
from preflight.plan import Diagnostic, Invocation, JobSpec, Origin, Source
from preflight.project import find_root

SKIP_DIRS = {".git", ".hg", ".svn", ".venv", "venv", "env", ".env", "node_modules", "__pycache__",
             ".tox", ".nox", ".mypy_cache", ".pytest_cache", ".ruff_cache", "site-packages",
             "build", "dist", ".eggs", "wandb", "outputs", "checkpoints", ".idea", ".vscode"}
SCAN_EXT = (".sh", ".bash", ".slurm", ".sbatch", ".yaml", ".yml", ".json", ".toml")
LAUNCH_EXT = (".sh", ".bash", ".slurm", ".sbatch")
MAX_DEPTH = 8
MAX_FILES = 20000
MAX_SCAN_BYTES = 256 * 1024
COMMAND_PATH = "<command>"


def _rel(path: str) -> str:
    """A path as the user would write it: relative to the working directory when inside it."""
    a = os.path.abspath(path)
    cwd = os.getcwd()
    if a == cwd or a.startswith(cwd + os.sep):
        return os.path.relpath(a, cwd)
    return path


def resolve(name: str, bases: Iterable[str], root: str) -> Optional[str]:
    """A file named on a launch line → an existing path. Tried against each base folder,
    then — for paths built from variables such as `${CODE_DIR}/train.py` — the longest
    tail of the path that exists under the repository root."""
    if not name:
        return None
    if "\0" in name:
        # a path built from an unknown variable: only its known tail can be looked for
        name = name.rsplit("\0", 1)[-1].lstrip("/") or ""
        if not name:
            return None
    name = os.path.expanduser(name)
    if os.path.isabs(name) and os.path.isfile(name):
        return name
    for b in bases:
        p = os.path.normpath(os.path.join(b, name))
        if os.path.isfile(p):
            return p
    parts = [x for x in name.replace("\\", "/").split("/") if x and x != "."]
    for k in range(1, len(parts)):
        tail = os.path.join(root, *parts[k:])
        if os.path.isfile(tail):
            return os.path.normpath(tail)
    return None


def _module_file(module: str, root: str) -> Optional[str]:
    rel = module.replace(".", os.sep)
    for base in (root, os.path.join(root, "src")):
        for cand in (rel + ".py", os.path.join(rel, "__main__.py")):
            p = os.path.join(base, cand)
            if os.path.isfile(p):
                return p
    return None


# --------------------------------------------------------------------------- scanning


#: characters that end a file name written in a launcher or config (quotes, `=`, `/`, …)
_NAME_SPLIT = re.compile(r"[\s\"'`=/\\,;:|&<>(){}\[\]$]+")


class _Index:
    """Launcher and config files of the repository with their text, read lazily once, and
    an index from every file name they mention to the files that mention it — built in one
    pass over them, so finding the launchers that name a file is one look-up, not one
    search of the repository per file."""

    def __init__(self, root: str, files: Optional[list[str]] = None):
        self.root = root
        self._files: Optional[list[str]] = None
        if files is not None:
            self._files = [f for f in files
                           if f.lower().endswith(SCAN_EXT) or os.path.basename(f).lower() == "makefile"]
        self._text: dict[str, str] = {}
        self._names: Optional[dict[str, list[str]]] = None

    def files(self) -> list[str]:
        if self._files is None:
            out: list[str] = []
            base_depth = self.root.rstrip(os.sep).count(os.sep)
            for d, dirs, names in os.walk(self.root):
                runcache.note_file(d)     # a launcher added here later changes its stamp
                depth = d.count(os.sep) - base_depth
                dirs[:] = sorted(x for x in dirs if x not in SKIP_DIRS and not x.startswith(".")
                                 and not x.endswith(".egg-info")) if depth < MAX_DEPTH else []
                for n in sorted(names):
                    low = n.lower()
                    if low.endswith(SCAN_EXT) or low == "makefile":
                        out.append(os.path.join(d, n))
                if len(out) >= MAX_FILES:
                    break
            self._files = out[:MAX_FILES]
        return self._files

    def text(self, path: str) -> str:
        if path not in self._text:
            try:
                if os.path.getsize(path) > MAX_SCAN_BYTES:
                    runcache.note_file(path)
                    self._text[path] = ""
                else:
                    self._text[path] = safe_read.read_text(path)
            except OSError:
                self._text[path] = ""
        return self._text[path]

    def _by_name(self) -> dict[str, list[str]]:
        if self._names is None:
            names: dict[str, list[str]] = {}
            for f in self.files():
                for word in {w.rstrip(".") for w in _NAME_SPLIT.split(self.text(f))}:
                    if "." in word:
                        names.setdefault(word, []).append(f)
            self._names = names
        return self._names

    def naming(self, target: str, exts: tuple[str, ...]) -> list[str]:
        base = os.path.basename(target)
        ta = os.path.abspath(target)
        if "." in base and not _NAME_SPLIT.search(base):
            cands = self._by_name().get(base, [])
        else:      # a name the index cannot hold: the plain text search
            cands = [f for f in self.files() if base in self.text(f)]
        return [_rel(f) for f in cands if f.lower().endswith(exts) or
                (os.path.basename(f).lower() == "makefile" and "makefile" in exts)
                if os.path.abspath(f) != ta]


# --------------------------------------------------------------------------- building specs


def _unresolved(path: str) -> bool:
    """A path with a piece the shell evaluator could not know (its marker is a control
    character): `$1/ds.json`, `${CONFIG:?}`."""
    return MARK in (path or "")


def _readable_roots(root: str, launcher: Optional[str]) -> Optional[list[str]]:
    """The folders whose files a launch line may name: the project root, the launcher's own
    folder and the working directory — or None (anywhere) when the project sets
    `read-outside-root = true`. Elsewhere (`../outside.json`, `/etc/…`) a file is not read:
    its text would be echoed into reports and CI logs."""
    try:
        if load_project_config(root).read_outside_root:
            return None
    except Exception:  # noqa: BLE001 - a broken project config is reported by its owner
        pass
    roots = [root, os.getcwd()]
    if launcher and launcher != COMMAND_PATH:
        roots.append(os.path.dirname(os.path.abspath(launcher)))
    return roots


def _outside(p: str, roots: Optional[list[str]], name: str, diags: list[Diagnostic],
             source: Optional[Source]) -> bool:
    """True (and a PF001 finding at the launch line) when `p` lies outside `roots`."""
    if roots is None or safe_read.within(p, roots):
        return False
    if source is not None:
        diags.append(Diagnostic.at(
            "PF001", f"{name!r} named on the launch line is outside the project root; "
                     "not read", source, name="unreadable-file", severity="warning",
            fix="keep the file in the repository, or set read-outside-root = true in "
                "[tool.preflight]"))
    return True


def _config_chain(configs: list[str], bases: list[str], root: str, diags: list[Diagnostic],
                  source: Optional[Source], roots: Optional[list[str]] = None) -> list[str]:
    """Resolve config files named on a line, then the configs those name (recipe → ds.json)."""
    out: list[str] = []
    todo = list(configs)
    seen: set[str] = set()
    while todo and len(out) < 16:
        c = todo.pop(0)
        p = resolve(c, bases, root) if not _unresolved(c) else None
        if p is not None and _outside(p, roots, c, diags, source):
            continue
        if p is None:
            if _unresolved(c) and source is not None:
                # a path built from values set at run time (the script's own arguments, the
                # environment) is not known statically: not a missing file
                diags.append(Diagnostic.at(
                    "PF003", f"config path {readable(c)!r} is not known statically: "
                             f"{reason_of(c) or 'set at run time'}", source,
                    name="unresolved-value", severity="info",
                    fix="give the launch command after `--`, or declare the job in "
                        "[[tool.preflight.jobs]]"))
            elif c.lower().endswith((".json", ".yaml", ".yml", ".toml")) and source is not None:
                diags.append(Diagnostic.at(
                    "PF006", f"config file {c!r} named on the launch line does not exist", source,
                    name="missing-file", severity="warning",
                    fix="commit the file or correct its path"))
            continue
        a = os.path.abspath(p)
        if a in seen:
            continue
        seen.add(a)
        out.append(_rel(p))
        if p.lower().endswith((".yaml", ".yml")):
            # cheap look for `deepspeed: x.json` / `deepspeed_config_file: x.json`
            try:
                head = safe_read.read_text(p, MAX_SCAN_BYTES, truncate=True)
            except OSError:
                continue
            for line in head.splitlines():
                s = line.split("#", 1)[0].strip()
                for key in ("deepspeed:", "deepspeed_config_file:"):
                    if s.startswith(key):
                        v = s[len(key):].strip().strip("'\"")
                        if v.endswith(".json"):
                            todo.append(v)
    return out


def spec_from_invocation(inv: Invocation, launcher: Optional[str], root: str,
                         diags: list[Diagnostic]) -> JobSpec:
    bases: list[str] = []
    if launcher and launcher != COMMAND_PATH:
        # a launcher is run from its own folder or from one above it (`bash scripts/run.sh`)
        d = os.path.dirname(os.path.abspath(launcher))
        while True:
            bases.append(d)
            if d == root or not d.startswith(root) or len(bases) > 6:
                break
            d = os.path.dirname(d)
    bases += [os.getcwd(), root]
    entry: Optional[str] = None
    script_path = resolve(inv.script, bases, root) if inv.script and not inv.module else None
    roots = _readable_roots(root, launcher)
    outside = script_path is not None and _outside(script_path, roots, inv.script or "",
                                                   diags, inv.source)
    if outside:
        script_path = None
    configs = _config_chain(list(inv.configs), bases + ([os.path.dirname(script_path)] if script_path else []),
                            root, diags, inv.source, roots)
    if script_path:
        entry = _rel(script_path)
    elif inv.module:
        recipe = next((c for c in configs if c.lower().endswith((".yaml", ".yml", ".toml"))), None)
        mod = _module_file(inv.module, root) if " " not in inv.module else None
        entry = recipe or (_rel(mod) if mod else None)
    elif inv.script and inv.script.lower().endswith((".yaml", ".yml", ".toml")):
        entry = configs[0] if configs else None
    elif inv.script and "\0" in inv.script and inv.source is not None:
        diags.append(Diagnostic.at("PF003", f"script path {readable(inv.script)!r} is not known statically: "
                                            f"{reason_of(inv.script)}", inv.source, name="unresolved-value",
                                   severity="info", fix="declare the job in [[tool.preflight.jobs]]"))
    elif inv.script and inv.script.endswith(".py") and inv.source is not None and not outside:
        diags.append(Diagnostic.at("PF006", f"script {inv.script!r} named on the launch line does not exist",
                                   inv.source, name="missing-file", severity="warning",
                                   fix="run preflight from the folder the job is launched from"))
    files: list[str] = []
    for f in ([entry] if entry else []) + ([_rel(launcher)] if launcher and launcher != COMMAND_PATH else []) + configs:
        if f and f not in files:
            files.append(f)
    if script_path is None and inv.script and not entry:
        entry = readable(inv.script)
    return JobSpec(entry=entry, files=files, invocation=inv)


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


def _declared(root: str) -> tuple[list[dict], list[Diagnostic]]:
    """[[tool.preflight.jobs]] of the project (a malformed config is reported by
    preflight.config, with the other [tool.preflight] problems)."""
    jobs = load_project_config(root).jobs
    return [j for j in jobs if isinstance(j, dict)], []


def _declared_spec(job: dict, root: str, diags: list[Diagnostic]) -> Optional[JobSpec]:
    entry = job.get("entry")
    entry_p = resolve(entry, [root], root) if isinstance(entry, str) else None
    inv: Optional[Invocation] = None
    launcher = job.get("launcher")
    lpath = resolve(launcher, [root], root) if isinstance(launcher, str) else None
    command = job.get("command")
    src = Source(path=os.path.relpath(os.path.join(root, "pyproject.toml")), line=1, col=1)
    if isinstance(command, str):
        try:
            command = shlex.split(command)
        except ValueError:
            command = None
    if isinstance(command, list) and command:
        inv = parse_command([str(c) for c in command], src, Origin.CLI, {}, cwd=root,
                            diagnostics=diags)
    elif lpath:
        ext = extract_file(lpath)
        cands = ext.invocations
        if entry_p:
            cands = [i for i in cands if i.script and resolve(i.script, [os.path.dirname(lpath), root], root)
                     and os.path.abspath(resolve(i.script, [os.path.dirname(lpath), root], root) or "")
                     == os.path.abspath(entry_p)] or cands
        inv = cands[0] if cands else None
    extra = job.get("args")
    if isinstance(extra, str):
        extra = shlex.split(extra)
    if inv is None:
        inv = Invocation(script=entry or "", args=[], source=src)
    if isinstance(extra, list) and extra:
        inv = inv.model_copy(update={"args": list(inv.args) + [str(a) for a in extra]})
    if entry and not inv.script:
        inv = inv.model_copy(update={"script": entry})
    spec = spec_from_invocation(inv, lpath, root, diags)
    if entry_p:
        files = [_rel(entry_p)] + [f for f in spec.files if os.path.abspath(f) != os.path.abspath(entry_p)]
        spec = spec.model_copy(update={"entry": _rel(entry_p), "files": files})
    overrides = {k: job[k] for k in ("gpu", "nodes", "gpus_per_node", "world_size") if k in job}
    return spec.model_copy(update={"declared": True, "overrides": overrides})


#: absolute paths of this `discover` call (emptied as it starts: the working folder may
#: have changed since the last): a walk's thousands of files compare paths many times
_ABS: dict[str, str] = {}


def _absolute(p: str) -> str:
    a = _ABS.get(p)
    if a is None:
        a = _ABS[p] = os.path.abspath(p)
    return a


def _same(a: Optional[str], b: Optional[str]) -> bool:
    return bool(a) and bool(b) and _absolute(a) == _absolute(b)


def discover(paths: list[str], command: Optional[list[str]] = None,
             root: Optional[str] = None, *, walked: bool = False
             ) -> tuple[list[JobSpec], list[Diagnostic]]:
    """Jobs formed by `paths` (and `command`). `walked`: the paths are what a directory
    walk found (`preflight.walk`), not files the user named — then only training forms a
    job: a launcher that launches nothing, a Python module no job imports, a script with no
    training step, and a JSON / YAML / TOML file no job names that is not a training config
    by its content are left out, and files join a job only when it uses them."""

    store = cache.active()
    _read_head.cache_clear()        # files may have changed since the last call
    _ABS.clear()

    def signal(p: str, test) -> Any:
        """A cheap text test of a walked file, remembered between runs by the cache."""
        return store.signal(p, test) if store is not None else test(p)

    specs: list[JobSpec] = []
    diags: list[Diagnostic] = []
    root = os.path.abspath(root) if root else find_root(paths[0] if paths else None)
    index = _Index(root, files=paths if walked else None)
    declared, d2 = _declared(root)
    diags.extend(d2)
    covered: set[str] = set()
    spec_diags: dict[int, list[Diagnostic]] = {}

    def add(spec: JobSpec) -> None:
        for s in specs:
            same_inv = (s.invocation is not None and spec.invocation is not None and
                        s.invocation.source == spec.invocation.source and
                        s.invocation.script == spec.invocation.script)
            if s.entry == spec.entry and (same_inv or (s.invocation is None and spec.invocation is None)):
                return
        specs.append(spec)
        covered.update(_absolute(f) for f in spec.files)
        for d in spec_diags.get(id(spec), []):
            if d not in diags:
                diags.append(d)

    if command:
        inv, cd = command_invocation(command)
        diags.extend(cd)
        if inv is None:
            diags.append(Diagnostic(code="PF006", name="missing-file", severity="warning",
                                    message=f"no training program found in the command: {' '.join(command)}",
                                    path=COMMAND_PATH, line=1, col=1))
        else:
            add(spec_from_invocation(inv, COMMAND_PATH, root, diags))

    existing: list[str] = []
    for p in paths if not walked else ():
        missing = safe_read.stat_reason(p)
        if missing is not None:
            diags.append(Diagnostic(code="PF001", name="unreadable-file", severity="error",
                                    message=missing, path=p))
        elif os.path.isdir(p):
            diags.append(Diagnostic(code="PF001", name="unreadable-file", severity="error",
                                    message="is a directory; pass files", path=p))
        else:
            existing.append(p)
    if walked:
        existing = list(paths)      # regular files the walk just listed (others: PF001 there)

    kinds: dict[str, str] = {}

    def kind(p: str) -> str:
        if p not in kinds:
            head = ""
            if walked and p.lower().endswith(SCAN_EXT + (".py",)):
                pass       # the extension decides; the walk read the others' heads
            else:
                try:
                    head = safe_read.read_text(p, 200, truncate=True)
                except OSError:
                    pass
            kinds[p] = kind_of(p, head)
        return kinds[p]

    # declared jobs that name one of the paths
    for job in declared:
        names = [job.get(k) for k in ("entry", "launcher") if isinstance(job.get(k), str)]
        hit = any(_same(resolve(n, [root], root), p) for n in names for p in existing)
        if hit or (not existing and not command):
            spec = _declared_spec(job, root, diags)
            if spec:
                add(spec)

    # launchers first: they say how the other files are run; then scripts, whose text says
    # which of the given configs and modules they use; then configs
    order = {"shell": 0, "python": 1}
    ordered = sorted(existing, key=lambda p: order.get(kind(p), 2))
    launcher_cache: dict[str, Any] = {}

    def launcher_specs(lpath: str) -> list[JobSpec]:
        if lpath not in launcher_cache:
            ext = extract_file(lpath)
            out = []
            sourced = [_rel(r) for r in ext.references if os.path.isfile(r)
                       and r.lower().endswith(LAUNCH_EXT)]
            for inv in ext.invocations:
                if not launches_training(inv.module, inv.script):
                    continue          # `python -m venv`, `python -m pytest`, `python setup.py`
                mine: list[Diagnostic] = []
                s = spec_from_invocation(inv, lpath, root, mine)
                extra = [r for r in sourced if r not in s.files]
                if extra:
                    s = s.model_copy(update={"files": s.files + extra})
                spec_diags[id(s)] = mine
                out.append(s)
            launcher_cache[lpath] = (out, ext)
        return launcher_cache[lpath][0]

    launched: list[int] = []     # jobs formed by a launcher or a recipe among the given files

    def attach(p: str, users: list[int]) -> None:
        """Add a given file to the jobs (by index) whose entry uses it."""
        for i in users:
            s = specs[i]
            if not any(_same(f, p) for f in s.files):
                specs[i] = s.model_copy(update={"files": list(s.files) + [_rel(p)]})
        covered.add(_absolute(p))

    def users_of(p: str, test) -> list[int]:
        """Jobs whose entry script's text passes `test` (an import of, or the name of, p)."""
        out = []
        for i, s in enumerate(specs):
            if s.entry and s.entry.lower().endswith(".py") and not _same(s.entry, p) \
                    and test(_head(s.entry), p):
                out.append(i)
        return out

    def place(p: str, k: str) -> None:
        found: list[JobSpec] = []
        # launchers (and configs naming a config) across the repository
        for lp in index.naming(p, LAUNCH_EXT + ("makefile",)):
            if kind(lp) != "shell":
                continue
            for s in launcher_specs(lp):
                if any(_same(f, p) for f in s.files):
                    found.append(s)
        if not found and k in ("json", "yaml", "toml"):
            # a given script that reads this config
            users = users_of(p, lambda t, q: _names_file(t, q) or _configures(t, q))
            if users:
                attach(p, users)
                return
            # two hops: a recipe / accelerate YAML that names this config, and its launchers
            for cp in index.naming(p, (".yaml", ".yml", ".json", ".toml")):
                chain = _config_chain([cp], [os.path.dirname(cp), os.getcwd(), root], root, [], None)
                if not any(_same(c, p) for c in chain[1:]):
                    continue
                via_launcher = False
                for lp in index.naming(cp, LAUNCH_EXT):
                    if kind(lp) != "shell":
                        continue
                    for s in launcher_specs(lp):
                        if any(_same(f, cp) for f in s.files) and not any(_same(f, p) for f in s.files):
                            s2 = s.model_copy(update={"files": s.files + [_rel(p)]})
                            spec_diags[id(s2)] = spec_diags.get(id(s), [])
                            s = s2
                        if any(_same(f, p) for f in s.files):
                            found.append(s)
                            via_launcher = True
                if not via_launcher and kind(cp) in ("yaml", "toml"):
                    # a recipe naming this config is itself a job entry
                    found.append(JobSpec(entry=_rel(cp), files=[_rel(c) for c in chain]))
        if found:
            for s in found:
                add(s)
            return
        # alone: a script, or a recipe with the configs it names
        files = [_rel(p)]
        if k in ("yaml", "toml"):
            for c in _config_chain([p], [os.path.dirname(p), root], root, diags, None)[1:]:
                if c not in files:
                    files.append(c)
        add(JobSpec(entry=_rel(p), files=files))
        if k in ("yaml", "toml") and _recipe(p):
            # a recipe is run by its framework: like a launcher, it claims the modules given with it
            launched.extend(i for i, x in enumerate(specs) if x.entry == _rel(p))

    modules: list[str] = []      # Python files that may be modules of a given script
    documents: list[str] = []    # files preflight does not read (READMEs, data files)
    loose: list[str] = []        # walked configs that are not training configs by content
    for p in ordered:
        if _absolute(p) in covered:
            continue
        k = kind(p)
        if k == "unknown":
            documents.append(p)      # placed once the given launchers' jobs are known
            continue
        if walked and k in ("json", "yaml", "toml") and not signal(p, _WALK_TESTS[k]):
            loose.append(p)          # part of a job only if one names it
            continue
        if walked and k == "shell" and not signal(p, _WALK_TESTS[k]):
            continue                 # launches nothing: not parsed, not a job
        if walked and k == "python" and not signal(p, _WALK_TESTS[k]):
            modules.append(p)
            continue
        if k == "shell":
            ss = launcher_specs(p)
            if not ss and walked:
                continue             # a Makefile of `pip install` / `pytest` recipes
            if not ss:
                add(JobSpec(entry=None, files=[_rel(p)]))
            for s in ss:
                add(s)
                launched.extend(i for i, x in enumerate(specs) if x is s or x == s)
            continue
        if k == "python" and len(existing) > 1 and (not _is_entry(p) or not _training(p)):
            modules.append(p)        # placed once the given scripts are known
            continue
        if k == "python" and not _training(p):
            add(JobSpec(entry=_rel(p), files=[_rel(p)]))     # no training API: nothing to read
            continue
        place(p, k)

    # a module joins the given scripts that import it; one nobody imports is a script of its
    # own when it uses a training API, and otherwise no training file at all
    # — unless a launcher was given with it: a launcher that runs a package (`python -m
    # pkg.train`, torchtitan's `--module`) uses modules no given script imports, and the
    # documents given with it describe that job.
    launched = sorted(set(launched))
    if walked:
        # a walk gives every module of the repository: one pass over the jobs' entry
        # scripts collects the names they import and mention; a module or config joins
        # only the jobs whose entry names it
        imported: dict[str, list[tuple[int, int, tuple[str, ...]]]] = {}
        mentioned: dict[str, list[int]] = {}
        for i, s in enumerate(specs):
            if s.entry and s.entry.lower().endswith(".py"):
                text = _head(s.entry)
                for level, parts in _imported_modules(text):
                    imported.setdefault(parts[-1], []).append((i, level, parts))
                for word in {w.rstrip(".") for w in _NAME_SPLIT.split(text)}:
                    if "." in word:
                        mentioned.setdefault(word, []).append(i)
        for p in modules:
            if _absolute(p) in covered:
                continue
            users = sorted({i for i, level, parts in imported.get(_module_name(p), [])
                            if not _same(specs[i].entry, p)
                            and _is_module(p, level, parts, specs[i].entry or "", root)})
            if users:
                attach(p, users)
        for p in loose:
            if _absolute(p) in covered:
                continue
            users = [i for i in mentioned.get(os.path.basename(p), []) if not _same(specs[i].entry, p)]
            if users:
                attach(p, users)
        return specs, diags
    for p in modules:
        if _absolute(p) in covered:
            continue
        users = users_of(p, _imports)
        if users:
            attach(p, users)
        elif launched and _parses(p):
            attach(p, launched)
        elif _training(p):
            place(p, "python")
        else:
            add(JobSpec(entry=_rel(p), files=[_rel(p)]))
    for p in documents:
        if launched:
            attach(p, launched)
        else:
            # not a file preflight reads: no job is formed from it
            add(JobSpec(entry=_rel(p), files=[_rel(p)]))
    return specs, diags


def _parses(path: str) -> bool:
    """A module that does not parse is reported as its own job, not hidden in another."""
    import ast
    try:
        ast.parse(_head(path))
        return True
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False


def _head(path: str) -> str:
    """The start of a file, read once per run (the memo is emptied as a run's walked
    files are tested, `WalkTests`, and as `discover` starts): placing the given files asks
    the same scripts' text once per file placed, and the walk's test of a file
    (`cache.signal`) has just looked at its size and time."""
    return _read_head(path)


@functools.lru_cache(maxsize=512)
def _read_head(path: str) -> str:
    try:
        return safe_read.read_text(path, MAX_SCAN_BYTES, truncate=True)
    except OSError:
        return ""


def _training(path: str) -> bool:
    """Does a Python file mention a training API at all (the extractor's own pre-check)?"""
    return mentions_training_api(_head(path))


def _module_name(path: str) -> str:
    """The name a module file is imported by (its package's for an `__init__.py`)."""
    name = os.path.splitext(os.path.basename(path))[0]
    if name == "__init__":
        name = os.path.basename(os.path.dirname(_absolute(path)))
    return name


_IMPORT_LINE = re.compile(r"^[ \t]*(?:from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]+\(?([\w \t,]*)|"
                          r"import[ \t]+([\w. \t,]+))", re.M)


def _imported_modules(text: str) -> list[tuple[int, tuple[str, ...]]]:
    """(relative level, dotted parts) of every module the import statements of `text` may
    load: `from a.b import c` may load a.b or a.b.c; `from . import m` loads m beside."""
    out: list[tuple[int, tuple[str, ...]]] = []
    for m in _IMPORT_LINE.finditer(text):
        dots, mod, names, plain = m.groups()
        if plain is not None:
            for item in plain.split(","):
                words = item.split()
                if words:
                    out.append((0, tuple(words[0].split("."))))
            continue
        level = len(dots or "")
        base = tuple(x for x in (mod or "").split(".") if x)
        if base:
            out.append((level, base))
        for item in (names or "").split(","):
            words = item.split()
            if words and words[0].isidentifier():
                out.append((level, base + (words[0],)))
    return out


def _is_module(path: str, level: int, parts: tuple[str, ...], importer: str, root: str) -> bool:
    """Is the file `path` the module `parts` imported (at relative `level`) by `importer`?
    An absolute import matches a file whose trailing folders spell the dotted name; a
    relative one, the file at that place beside the importer."""
    a = os.path.splitext(_absolute(path))[0]
    if a.endswith(os.sep + "__init__"):
        a = a[: -len("__init__") - 1]
    if level:
        base = os.path.dirname(_absolute(importer))
        for _ in range(level - 1):
            base = os.path.dirname(base)
        return a == os.path.join(base, *parts)
    return a.endswith(os.sep + os.path.join(*parts))


def _imports(text: str, path: str) -> bool:
    """Does `text` import the module file `path` (`import m`, `from m import`, `from .m`,
    `from pkg.m import`, `import pkg.m`)? A cheap text test."""
    import re
    name = os.path.splitext(os.path.basename(path))[0]
    if name == "__init__":
        name = os.path.basename(os.path.dirname(os.path.abspath(path)))
    n = re.escape(name)
    return re.search(rf"^[ \t]*(?:from[ \t]+\.*(?:[\w.]*\.)?{n}(?:\.[\w.]+)?[ \t]+import\b|"
                     rf"from[ \t]+[\w.]+[ \t]+import[ \t]+\(?[ \t]*(?:[\w \t,]*,[ \t]*)?{n}\b|"
                     rf"import[ \t]+(?:[\w. \t]*,[ \t]*)?(?:[\w.]*\.)?{n}\b)", text, re.M) is not None


_RECIPE_KEYS = re.compile(
    r"^\s*\[?(base_model|model_name(_or_path)?|checkpoint_dir|micro_batch_size|sequence_len|"
    r"gradient_accumulation_steps|per_device_train_batch_size|learning_rate|global_batch_size|"
    r"train_micro_batch_size_per_gpu|seq_len|max_seq_length|cutoff_len|lr)\b", re.M)


def _recipe(path: str) -> bool:
    """Does a YAML / TOML file carry training settings (a recipe), by its keys? A cheap text test."""
    return _RECIPE_KEYS.search(_head(path)) is not None


_CLI_MARKERS = ("CLI(", "jsonargparse", "LightningCLI", "fire.Fire", "--config")


def _configures(text: str, path: str) -> bool:
    """Is the YAML `path` a config for the script `text`: the script takes a config file on a
    command line (jsonargparse, LightningCLI, fire, `--config`) and most of the YAML's
    top-level keys are names in the script? A cheap text test."""
    import re
    if not path.lower().endswith((".yaml", ".yml")) or not any(m in text for m in _CLI_MARKERS):
        return False
    keys = set(re.findall(r"^([A-Za-z_]\w*):", _head(path), re.M))
    if len(keys) < 3:
        return False
    hits = sum(1 for k in keys if re.search(rf"\b{re.escape(k)}\b", text))
    return hits >= max(3, (len(keys) + 1) // 2)


def _names_file(text: str, path: str) -> bool:
    """Does `text` name the config file `path` (its file name, in any string)?"""
    return os.path.basename(path) in text


def _is_entry(path: str) -> bool:
    """Does a Python file look runnable (a `__main__` guard, fire / CLI entry) rather than a
    module that only defines things? A cheap text test."""
    if not os.path.exists(path):
        return True
    return _runnable(_head(path))


def _training_entry(path: str) -> bool:
    """Is a walked Python file the entry of a training job: runnable, using a training API
    and showing a training step? One read of the file."""
    text = _head(path)
    return _runnable(text) and mentions_training_api(text) and runs_training(text)


def _training_config(path: str) -> bool:
    return is_training_config(path, _head(path))


def _may_launch(path: str) -> bool:
    return may_launch(_head(path))


#: the cheap text test discovery asks of a walked file, by its kind
_WALK_TESTS = {"json": _training_config, "yaml": _training_config, "toml": _training_config,
               "shell": _may_launch, "python": _training_entry}

class WalkTests:
    """The walked files' tests, asked over two processes (`both_ends`, from
    `pipeline`) so that `discover` finds the answers in the active cache's memory:
    `prepare` the list (files whose kind only their content tells are left to `discover`),
    `ask` a block of it, and in this process `take` what the other one answered — the
    tests' answers, the launchers it extracted, its counts and what it read."""

    def __init__(self) -> None:
        _read_head.cache_clear()    # a new run: no text remembered from an earlier one
        self.store = cache.active()
        self.tests: list[tuple[str, Any]] = []
        self.done: list[str] = []       # in the child: the files it tested (the parent's copy is apart)
        self.known = set(self.store.memory) if self.store is not None else set()
        self.counted = dict(stats)

    def prepare(self, files: list[str]) -> list[tuple[str, Any]]:
        self.tests = [(p, _WALK_TESTS[k]) for p in files if (k := kind_of(p)) in _WALK_TESTS]
        return self.tests

    def ask(self, start: int, end: int) -> None:
        store = self.store
        assert store is not None
        for p, test in self.tests[start:end]:
            if store.signal(p, test) and test is _may_launch:
                extract_file(p)     # `discover` reads each such launcher: here, on two cores
            self.done.append(p)

    def child_result(self, rec) -> tuple:
        store = self.store
        assert store is not None
        return (store.signals_of(self.done),
                {k: v for k, v in store.memory.items() if k not in self.known},
                stats_since(self.counted), (rec.files, rec.env))

    def take(self, got: Optional[tuple]) -> None:
        if got is None or self.store is None:
            return
        signals, extracted, counts, read = got
        self.store.add_signals(signals)
        self.store.memory.update((k, v) for k, v in extracted.items() if k not in self.store.memory)
        stats.update(counts)
        runcache.absorb(read)


def _runnable(text: str) -> bool:
    # a `__main__` guard, or a module-level CLI call (not one inside a helper function).
    # Every such line holds one of the words: only the lines where a word occurs are
    # matched — most files of a repository have none, and the rest one or two (a
    # `getLogger(__name__)`), where the multi-line pattern over the whole text is slow
    for w in _ENTRY_WORDS:
        i = text.find(w)
        while i != -1:
            if _ENTRY.match(text, text.rfind("\n", 0, i) + 1):
                return True
            i = text.find(w, text.find("\n", i) + 1 or len(text))
    return False


_ENTRY_WORDS = ("__name__", "Fire", "CLI", "auto_cli", "typer")
_ENTRY = re.compile(r"^(?:if\s+__name__\s*==|(?:\w+\s*=\s*)?(?:fire\.Fire|(?:\w+\.)?(?:Lightning)?CLI|"
                    r"auto_cli|typer\.run)\s*\()", re.M)
