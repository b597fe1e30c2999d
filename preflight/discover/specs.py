"""A launch line's invocation → a job spec: the script it runs (or the module or recipe),
resolved from the folders it may be run from, and the config files it names, followed on
to the configs those name — with the findings for files outside the project, missing, or
named by values known only at run time.
"""

from __future__ import annotations

import os
from typing import Optional

from preflight import safe_read
from preflight.config import load_project_config
from preflight.lang import overrides, pyconfig
from preflight.discover.paths import COMMAND_PATH, MAX_SCAN_BYTES, module_file, rel, resolve
from preflight.lang.shell.values import MARK, readable, reason_of
from preflight.plan import Diagnostic, Invocation, JobSpec, Source


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


def _python_config(p: str) -> bool:
    """Is the `.py` file a line names a Python config document (`preflight.lang.pyconfig`)?"""
    try:
        text = safe_read.read_text(p, MAX_SCAN_BYTES, truncate=True)
    except OSError:
        return False
    return pyconfig.looks_like_config(text) and pyconfig.is_config_module(text)


def config_chain(configs: list[str], bases: list[str], root: str, diags: list[Diagnostic],
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
        if p.endswith(".py") and not _python_config(p):
            continue            # a script or a module of constants, not a config document
        out.append(rel(p))
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
    configs = config_chain(list(inv.configs), bases + ([os.path.dirname(script_path)] if script_path else []),
                           root, diags, inv.source, roots)
    if script_path:
        entry = rel(script_path)
    elif inv.module:
        recipe = next((c for c in configs if c.lower().endswith((".yaml", ".yml", ".toml"))), None)
        mod = module_file(inv.module, root) if " " not in inv.module else None
        # the repository's own module is the program, its config one of its files
        # (`python -m apps.train config=c.yaml`); a library's module (not in the
        # repository) is known by its recipe
        named = any(overrides.config_path(a) for a in inv.args)
        entry = ((rel(mod) if mod else None) or recipe) if named else \
            (recipe or (rel(mod) if mod else None))
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
    for f in ([entry] if entry else []) + ([rel(launcher)] if launcher and launcher != COMMAND_PATH else []) + configs:
        if f and f not in files:
            files.append(f)
    if script_path is None and inv.script and not entry:
        entry = readable(inv.script)
    return JobSpec(entry=entry, files=files, invocation=inv)
