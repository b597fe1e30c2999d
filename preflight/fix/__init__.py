"""`check --fix` / `--diff`: the planner's first alternative written into the job's own
files, at the lines its facts came from.

    fix = first_fix(job, fit)        # the first alternative the job's files can carry
    fix.diff(root)                   # unified diff, `git apply`-able
    fix.apply()                      # writes the files

Each changed fact is edited at every line of the job that sets it to its current value
(a launcher line and its `#SBATCH` header alike), so the assembled plan cannot keep the old
value from a weaker source. A fact no file sets gets a new key where its framework reads
it (a `TrainingArguments(...)` keyword, a flag on the launcher line of a script that reads
its command line, a member of the DeepSpeed object), and the note says so. Only files of
the job are written; an alternative that needs another file (or a hardware purchase) is
passed over with the reason.

Modules: spelling (value → text per key), edits (the types and diffs), one editor per
file kind (python_file with libcst, shell_file, json_file, yaml_file with ruamel.yaml,
toml_file with tomlkit).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Optional

from preflight.extract import kind_of
from preflight.fix.edits import FactEdit, FileEdit, Hunk, Unspellable
from preflight.lazy import lazy
from preflight.lang.notebook import split_virtual
from preflight.plan import Job, Origin, Source

# the key spellings and the editors are used only when a job is fixed: a check whose jobs
# fit imports none of them (python_file edits with libcst, yaml_file with ruamel.yaml)
json_file = lazy("preflight.fix.json_file")
notebook_file = lazy("preflight.fix.notebook_file")
python_file = lazy("preflight.fix.python_file")
shell_file = lazy("preflight.fix.shell_file")
spelling = lazy("preflight.fix.spelling")
toml_file = lazy("preflight.fix.toml_file")
yaml_file = lazy("preflight.fix.yaml_file")

__all__ = ["JobFix", "FileEdit", "Hunk", "Unspellable", "fix_job", "first_fix"]

#: facts that follow from others (the estimator derives them); their inputs are edited
DERIVED_ONLY = {"world_size"}
#: knobs that change no file of the job
NOT_IN_FILES = {"other_gpu": "another GPU is a hardware choice, not an edit of the job's files"}


@dataclass
class JobFix:
    label: str
    facts: dict[str, Any]
    files: list[FileEdit] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)    # alternatives passed over, and why
    resolves: list[str] = field(default_factory=list)   # finding codes the fixed job loses

    def diff(self, root: Optional[str] = None) -> str:
        return "".join(f.diff(_rel(f.path, root)) for f in self.files if f.changed)

    def apply(self) -> list[str]:
        done = []
        for f in self.files:
            if f.changed:
                with open(f.path, "w", encoding="utf-8", newline="") as fh:
                    fh.write(f.after)
                done.append(f.path)
        return done

    def to_json(self, root: Optional[str] = None) -> dict[str, Any]:
        return {"change": self.label, "facts": self.facts, "notes": self.notes,
                "skipped": self.skipped, "resolves": self.resolves,
                "diff": self.diff(root)}


def _rel(path: str, root: Optional[str]) -> str:
    base = os.path.abspath(root or os.getcwd())
    rp = os.path.relpath(os.path.abspath(path), base)
    return path if rp.startswith(os.pardir) else rp


def _kind(path: str) -> str:
    if split_virtual(path) is not None:
        return "notebook"       # a file a notebook's cell writes: edited in that cell
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            head = fh.read(200)
    except OSError:
        head = ""
    return kind_of(path, head)


def _file_of(path: str) -> str:
    """The file an edit at `path` is written to: a notebook for the files its cells write."""
    written = split_virtual(path)
    return written[0] if written is not None else path


def _real(p: str) -> str:
    return os.path.realpath(p)


def _launcher_of(job: Job) -> Optional[Source]:
    """The launcher line that runs the job's entry script."""
    if not job.entry:
        return None
    want = os.path.basename(job.entry)
    for ext in job.extractions:
        for inv in ext.invocations:
            if inv.source is not None and os.path.basename(inv.script or "") == want:
                return inv.source
    return None


def _locations(job: Job, fact: str) -> list[Any]:
    plan = job.plan
    cur = plan.facts.get(fact)
    files = {_real(f) for f in job.files}
    cands = plan.candidates.get(fact) or ([cur] if cur is not None else [])
    if cur is None or not cur.known:
        return []
    out = []
    for c in cands:
        if c is None or c.source is None or not c.source.line or not c.known:
            continue
        if c.value != cur.value or _real(c.source.path) not in files:
            continue
        if any(o.source == c.source for o in out):
            continue
        out.append(c)
    return out


def _default_site(job: Job, fact: str) -> Optional[Source]:
    """Where the framework reads `fact` when no file sets it: the call or command line
    another setting of the same framework was read from (a default read there first)."""
    files = {_real(f) for f in job.files}
    for site, keys in spelling.NEW_KEYS.items():
        if fact not in keys:
            continue
        found = [job.plan.facts.get(k) for k in keys]
        found = [f for f in found if f is not None and f.source is not None and f.source.line
                 and _real(f.source.path) in files and f.origin in (Origin.DEFAULT,
                                                                   Origin.LITERAL, Origin.CLI)]
        found.sort(key=lambda f: f.origin is not Origin.DEFAULT)
        if found:
            return found[0].source
    return None


def fix_job(job: Job, facts: dict[str, Any], label: str = "") -> JobFix:
    """Write `facts` into the job's files. Raises Unspellable when one cannot be."""
    plan = job.plan
    per_file: dict[str, list[FactEdit]] = {}
    for fact, value in facts.items():
        cur = plan.facts.get(fact)
        if cur is not None and cur.known and cur.value == value:
            continue
        if fact in DERIVED_ONLY and (cur is None or cur.origin in (Origin.DERIVED,
                                                                   Origin.ASSUMED)):
            continue
        if fact == "gpu":
            raise Unspellable(NOT_IN_FILES["other_gpu"])
        locs = _locations(job, fact)
        if not locs:
            site = _default_site(job, fact)
            if site is None:
                raise Unspellable(f"no file of the job sets {fact} or reads its default")
            if _kind(site.path) == "shell":
                key = (spelling.NEW_KEYS["hf_args"].get(fact)
                       or spelling.NEW_KEYS["torchrun"].get(fact))
                edit = shell_file.launcher_flag_edit(key if key.startswith("-") else "--" + key,
                                                     fact, value, site)
            else:
                edit = FactEdit(fact=fact, value=value, source=site, new_key=True)
            per_file.setdefault(_file_of(site.path), []).append(edit)
            continue
        for c in locs:
            per_file.setdefault(_file_of(c.source.path), []).append(
                FactEdit(fact=fact, value=value, source=c.source, old=c.value,
                         new_key=c.origin is Origin.DEFAULT))
    out = JobFix(label=label, facts=dict(facts))
    launcher = _launcher_of(job)
    texts: dict[str, str] = {}

    def read(p: str) -> str:
        if p not in texts:
            with open(p, encoding="utf-8", newline="") as fh:
                texts[p] = fh.read()
        return texts[p]

    results: dict[str, str] = {}
    deferred: list[FactEdit] = []
    order = sorted(per_file, key=lambda p: _kind(p) != "python")   # scripts first
    for path in order:
        edits = per_file[path]
        kind = _kind(path)
        text = results.get(path, read(path))
        if kind == "python":
            new, notes, later = python_file.edit_python(text, edits)
            deferred += later
        elif kind == "shell":
            new, notes = shell_file.edit_shell(text, edits)
        elif kind == "json":
            new, notes = json_file.edit_json(text, edits)
        elif kind == "yaml":
            new, notes = yaml_file.edit_yaml(text, edits)
        elif kind == "toml":
            new, notes = toml_file.edit_toml(text, edits)
        elif kind == "notebook":
            new, notes = notebook_file.edit_notebook(path, text, edits)
        else:
            raise Unspellable(f"{path}: files of this kind are not edited")
        results[path] = new
        out.notes += [f"{path}: {n}" for n in notes]
    if deferred:
        if launcher is not None and _kind(launcher.path) == "notebook":
            raise Unspellable("the script reads its settings from its command line, and "
                              "launch lines inside a notebook are not edited")
        if launcher is None or _real(launcher.path) not in {_real(f) for f in job.files}:
            raise Unspellable("the script reads its settings from its command line and the "
                              "job has no launcher line to add them to")
        flags = spelling.NEW_KEYS["hf_args"]
        news = []
        for e in deferred:
            key = flags.get(e.fact)
            if key is None:
                raise Unspellable(f"no command-line flag for {e.fact}")
            news.append(shell_file.launcher_flag_edit("--" + key, e.fact, e.value, launcher))
        text = results.get(launcher.path, read(launcher.path))
        new, notes = shell_file.edit_shell(text, news)
        results[launcher.path] = new
        out.notes += [f"{launcher.path}: {n}" for n in notes]
    for path, new in results.items():
        out.files.append(FileEdit(path=path, before=read(path), after=new))
    return out


def first_fix(job: Job, fit: Any) -> Optional[JobFix]:
    """The first of the planner's alternatives the job's files can carry (None when none
    can; `fit.notes` then says why for each)."""
    skipped: list[str] = []
    for alt in getattr(fit, "alternatives", []):
        try:
            fx = fix_job(job, alt.facts, alt.label)
        except Unspellable as e:
            skipped.append(f"{alt.label}: {e}")
            continue
        if not any(f.changed for f in fx.files):
            skipped.append(f"{alt.label}: nothing to change in the files")
            continue
        fx.skipped = skipped
        return fx
    if skipped:
        fit.notes.extend(f"not written: {s}" for s in skipped)
    return None
