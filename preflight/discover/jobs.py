"""Group the given paths (and an optional launch command) into jobs.

A job is an entry (a training script, or a recipe for recipe-driven CLIs) plus the launcher
line that runs it and the config files that feed it. A pre-commit hook passes only the
changed files, so for a script or config given alone discovery looks across the repository
for the launchers and configs that name it (`index`); jobs declared in pyproject.toml
(`declared`) and a launch command given after `--` (`command`) join the given files'.
"""

from __future__ import annotations

import os
from typing import Any, Optional

from preflight import cache, safe_read
# the text tests through their module: every read of a file's start is `signals.head`
from preflight.discover import signals
from preflight.discover.command import command_invocation
from preflight.discover.declared import declared_jobs, declared_spec
from preflight.discover.index import LAUNCH_EXT, NAME_SPLIT, NOTEBOOK_EXT, SCAN_EXT, Index
from preflight.discover.paths import ABS, COMMAND_PATH, absolute, rel, resolve, same
from preflight.discover.specs import config_chain, spec_from_invocation
from preflight.discover.walk_tests import WALK_TESTS
from preflight.extract import extract_file, kind_of
from preflight.extract.recognise import launches_training
from preflight.lang.notebook import is_databricks
from preflight.plan import Diagnostic, JobSpec
from preflight.project import find_root


def shell_script(command: Optional[list[str]]) -> Optional[tuple[str, list[str]]]:
    """(path, arguments) when the command runs a shell script of the checkout — `bash
    run.sh 8`, `sh run.sh`, `./tools/run.sh cfg 8` — and the file is here; else None."""
    words = [str(w) for w in command or []]
    if words and os.path.basename(words[0]) in ("bash", "sh") and len(words) > 1 \
            and not words[1].startswith("-"):
        words = words[1:]
    if not words or not words[0].lower().endswith(LAUNCH_EXT) or not os.path.isfile(words[0]):
        return None
    return words[0], words[1:]


def shell_launcher(command: Optional[list[str]]) -> Optional[str]:
    """The shell script a command runs with no arguments (`bash run.sh`): read as a given
    launcher file, with the files beside it. With arguments it is read with them as its
    positional parameters instead (`discover`)."""
    found = shell_script(command)
    return found[0] if found is not None and not found[1] else None


def discover(paths: list[str], command: Optional[list[str]] = None,
             root: Optional[str] = None, *, walked: bool = False
             ) -> tuple[list[JobSpec], list[Diagnostic]]:
    """Jobs formed by `paths` (and `command`). `walked`: the paths are what a directory
    walk found (`preflight.walk`), not files the user named — then only training forms a
    job: a launcher that launches nothing, a Python module no job imports, a script with no
    training step, and a JSON / YAML / TOML file no job names that is not a training config
    by its content are left out, and files join a job only when it uses them."""

    store = cache.active()
    launcher = shell_launcher(command)
    if launcher is not None:
        # `bash run.sh`: the launcher is read as a given file, its lines resolved from the
        # folder the command runs in
        paths, command = [*paths, launcher], None
    signals.read_head.cache_clear()        # files may have changed since the last call
    ABS.clear()

    def signal(p: str, test) -> Any:
        """A cheap text test of a walked file, remembered between runs by the cache."""
        return store.signal(p, test) if store is not None else test(p)

    specs: list[JobSpec] = []
    diags: list[Diagnostic] = []
    root = os.path.abspath(root) if root else find_root(paths[0] if paths else None)
    index = Index(root, files=paths if walked else None)
    declared, d2 = declared_jobs(root)
    diags.extend(d2)
    covered: set[str] = set()
    spec_diags: dict[int, list[Diagnostic]] = {}

    #: (entry, where its launch line is, its script and arguments) → index in specs: one job
    #: each (a line read once per value of a loop launches one run per value)
    added: dict[tuple, int] = {}

    def add(spec: JobSpec) -> int:
        """Add a job unless it is one already added; returns its index in `specs`."""
        inv = spec.invocation
        key = (spec.entry, None) if inv is None else (
            spec.entry, repr(inv.source.model_dump() if inv.source is not None else None), inv.script,
            tuple(inv.args), inv.role)
        if key in added:
            return added[key]
        added[key] = len(specs)
        specs.append(spec)
        covered.update(absolute(f) for f in spec.files)
        for d in spec_diags.get(id(spec), []):
            if d not in diags:
                diags.append(d)
        return added[key]

    script_line = shell_script(command) if command else None
    if script_line is not None:
        # `bash tools/dist_train.sh cfg.py 8`: the checkout's launch script, read as the
        # shell runs it, with the command's words as its positional arguments
        ext = extract_file(script_line[0], script_line[1])
        diags.extend(ext.diagnostics)
        for one in [j for i in ext.invocations for j in i.jobs()]:
            if launches_training(one.module, one.script):
                add(spec_from_invocation(one, rel(script_line[0]), root, diags))
        if not any(True for _ in specs):
            script_line = None      # the script runs no training line: read the command itself
    if command and script_line is None:
        inv, cd = command_invocation(command)
        diags.extend(cd)
        if inv is None:
            diags.append(Diagnostic(code="PF006", name="missing-file", severity="warning",
                                    message=f"no training program found in the command: {' '.join(command)}",
                                    path=COMMAND_PATH, line=1, col=1))
        else:
            for one in inv.jobs():       # a line that trains several roles: a job each
                add(spec_from_invocation(one, COMMAND_PATH, root, diags))

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
            # a Databricks notebook exported as source: its cells' launch lines are jobs,
            # as a Jupyter notebook's are (a walk asks its remembered entry test; a given
            # file's head is read)
            if kinds[p] == "python" and (
                    signal(p, WALK_TESTS["python"]) == signals.DATABRICKS_NOTEBOOK if walked
                    else is_databricks(signals.head(p))):
                kinds[p] = "notebook"
        return kinds[p]

    # declared jobs that name one of the paths
    for job in declared:
        names = [job.get(k) for k in ("entry", "launcher") if isinstance(job.get(k), str)]
        hit = any(same(resolve(n, [root], root), p) for n in names for p in existing)
        if hit or (not existing and not command):
            spec = declared_spec(job, root, diags)
            if spec:
                add(spec)

    # launchers first: they say how the other files are run; then scripts, whose text says
    # which of the given configs and modules they use; then configs
    order = {"shell": 0, "notebook": 0, "python": 1}
    ordered = sorted(existing, key=lambda p: order.get(kind(p), 2))
    launcher_cache: dict[str, Any] = {}

    def launcher_specs(lpath: str) -> list[JobSpec]:
        if lpath not in launcher_cache:
            ext = extract_file(lpath)
            out = []
            sourced = [rel(r) for r in ext.references if os.path.isfile(r)
                       and r.lower().endswith(LAUNCH_EXT)]
            for inv in [j for i in ext.invocations for j in i.jobs()]:
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
            if not any(same(f, p) for f in s.files):
                specs[i] = s.model_copy(update={"files": list(s.files) + [rel(p)]})
        covered.add(absolute(p))

    def users_of(p: str, test) -> list[int]:
        """Jobs whose entry script's text passes `test` (an import of, or the name of, p)."""
        out = []
        for i, s in enumerate(specs):
            if s.entry and s.entry.lower().endswith(".py") and not same(s.entry, p) \
                    and test(signals.head(s.entry), p):
                out.append(i)
        return out

    def place(p: str, k: str) -> None:
        found: list[JobSpec] = []
        # launchers (and configs naming a config) across the repository
        for lp in index.naming(p, LAUNCH_EXT + NOTEBOOK_EXT + ("makefile",)):
            if kind(lp) not in ("shell", "notebook"):
                continue
            for s in launcher_specs(lp):
                if any(same(f, p) for f in s.files):
                    found.append(s)
        if not found and k in ("json", "yaml", "toml"):
            # a given script that reads this config
            users = users_of(p, lambda t, q: signals.names_file(t, q) or signals.configures(t, q))
            users += [i for i, s in enumerate(specs) if i not in users and s.entry
                      and s.entry.lower().endswith(".py")
                      and signals.hydra_config(signals.head(s.entry), s.entry, p)]
            if users:
                attach(p, users)
                return
            # two hops: a recipe / accelerate YAML that names this config, and its launchers
            for cp in index.naming(p, (".yaml", ".yml", ".json", ".toml")):
                chain = config_chain([cp], [os.path.dirname(cp), os.getcwd(), root], root, [], None)
                if not any(same(c, p) for c in chain[1:]):
                    continue
                via_launcher = False
                for lp in index.naming(cp, LAUNCH_EXT):
                    if kind(lp) != "shell":
                        continue
                    for s in launcher_specs(lp):
                        if any(same(f, cp) for f in s.files) and not any(same(f, p) for f in s.files):
                            s2 = s.model_copy(update={"files": s.files + [rel(p)]})
                            spec_diags[id(s2)] = spec_diags.get(id(s), [])
                            s = s2
                        if any(same(f, p) for f in s.files):
                            found.append(s)
                            via_launcher = True
                if not via_launcher and kind(cp) in ("yaml", "toml"):
                    # a recipe naming this config is itself a job entry
                    found.append(JobSpec(entry=rel(cp), files=[rel(c) for c in chain]))
        if found:
            for s in found:
                add(s)
            return
        # alone: a script, or a recipe with the configs it names
        files = [rel(p)]
        if k in ("yaml", "toml"):
            for c in config_chain([p], [os.path.dirname(p), root], root, diags, None)[1:]:
                if c not in files:
                    files.append(c)
        add(JobSpec(entry=rel(p), files=files))
        if k in ("yaml", "toml") and signals.recipe(p):
            # a recipe is run by its framework: like a launcher, it claims the modules given with it
            launched.extend(i for i, x in enumerate(specs) if x.entry == rel(p))

    def notebook(p: str) -> None:
        """A notebook: the jobs its launch lines start, and itself when its cells train
        in its own kernel (or, named alone, when nothing else is found in it)."""
        ss = launcher_specs(p)
        for s in ss:
            launched.append(add(s))
        ext = launcher_cache[p][1]
        if ext.extras.get("trains") or ext.kind != "python" or not (ss or walked):
            add(JobSpec(entry=rel(p), files=[rel(p)]))
        for name in ext.extras.get("notebook_files") or ():
            # the file a %%writefile cell writes, on disk from an earlier run: the cell is
            # what the notebook runs (its jobs were formed above)
            covered.add(absolute(os.path.join(os.path.dirname(p), name)))

    modules: list[str] = []      # Python files that may be modules of a given script
    documents: list[str] = []    # files preflight does not read (READMEs, data files)
    loose: list[str] = []        # walked configs that are not training configs by content
    for p in ordered:
        if absolute(p) in covered:
            continue
        k = kind(p)
        if k == "unknown":
            documents.append(p)      # placed once the given launchers' jobs are known
            continue
        if walked and k in ("json", "yaml", "toml") and not signal(p, WALK_TESTS[k]):
            loose.append(p)          # part of a job only if one names it
            continue
        if walked and k == "shell" and not signal(p, WALK_TESTS[k]):
            continue                 # launches nothing: not parsed, not a job
        if walked and k == "python" and not signal(p, WALK_TESTS[k]):
            modules.append(p)
            continue
        if k == "notebook":
            notebook(p)
            continue
        if k == "shell":
            ss = launcher_specs(p)
            if not ss and walked:
                continue             # a Makefile of `pip install` / `pytest` recipes
            if not ss:
                add(JobSpec(entry=None, files=[rel(p)]))
            for s in ss:
                launched.append(add(s))
            continue
        if k == "python" and len(existing) > 1 and (not signals.is_entry(p) or not signals.training(p)):
            modules.append(p)        # placed once the given scripts are known
            continue
        if k == "python" and not signals.training(p):
            add(JobSpec(entry=rel(p), files=[rel(p)]))     # no training API: nothing to read
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
                text = signals.head(s.entry)
                for level, parts in signals.imported_modules(text):
                    imported.setdefault(parts[-1], []).append((i, level, parts))
                for word in {w.rstrip(".") for w in NAME_SPLIT.split(text)}:
                    if "." in word:
                        mentioned.setdefault(word, []).append(i)
        for p in modules:
            if absolute(p) in covered:
                continue
            users = sorted({i for i, level, parts in imported.get(signals.module_name(p), [])
                            if not same(specs[i].entry, p)
                            and signals.is_module(p, level, parts, specs[i].entry or "", root)})
            if users:
                attach(p, users)
        for p in loose:
            if absolute(p) in covered:
                continue
            users = [i for i in mentioned.get(os.path.basename(p), []) if not same(specs[i].entry, p)]
            if users:
                attach(p, users)
        return specs, diags
    for p in modules:
        if absolute(p) in covered:
            continue
        users = users_of(p, signals.imports)
        if users:
            attach(p, users)
        elif launched and signals.parses(p):
            attach(p, launched)
        elif signals.training(p):
            place(p, "python")
        else:
            add(JobSpec(entry=rel(p), files=[rel(p)]))
    for p in documents:
        if launched:
            attach(p, launched)
        else:
            # not a file preflight reads: no job is formed from it
            add(JobSpec(entry=rel(p), files=[rel(p)]))
    return specs, diags

