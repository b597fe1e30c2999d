"""Shell launchers: `.sh` / sbatch scripts (and Makefile recipes), read without running them.

The script is read by the shell language's reader (preflight.lang.shell); this module gives
its hooks their meaning for a launch script: a command line is a launch line
(preflight.extract.launchers), an `#SBATCH` header and `sbatch` options are SLURM's
(preflight.frameworks.slurm), a config written by a here-document is read like a config
file, at its lines in the script.
"""

from __future__ import annotations

import os
import re
from typing import Any, Optional

from preflight.extract.launchers import parse_command
from preflight.frameworks import read_document
from preflight.frameworks._common import EVERY_VISIBLE_GPU
from preflight.frameworks.slurm import SBATCH_VALUE, SLURM_ENV, read_sbatch_header, read_sbatch_option
from preflight.lang.shell.lines import lines_of
from preflight.lang.shell.reader import State
from preflight.lang.shell.values import Value, Word, reason_of
from preflight.lazy import lazy
from preflight.plan import Diagnostic, Extraction, Fact, Invocation, Origin, Source

positions = lazy("preflight.lang.positions")

#: different launch lines of one script read as jobs: a sweep of a few dozen runs is read
#: whole; a script generated with thousands of them costs no more than its first ones
MAX_LAUNCH_LINES = 64


class _ScriptReader(State):
    """The reader of one launch script: what its lines launch, the facts of its `#SBATCH`
    header and of the configs it writes, and what was found on the way."""

    def __init__(self, path: str, env: dict[str, Value], depth: int = 0,
                 seen: Optional[set] = None, positional: Optional[dict[str, Value]] = None):
        super().__init__(path, env, depth, seen, positional)
        self.facts: list[tuple[str, Fact]] = []
        self.invocations: list[Invocation] = []
        self.diagnostics: list[Diagnostic] = []
        #: what the #SBATCH header fixes (fact name → value), for the lines under it
        self.sbatch: dict[str, Any] = {}
        #: the runs read so far (`_identity`), and the launch lines past MAX_LAUNCH_LINES
        self.launched: set[tuple] = set()
        self.lines_read: set[tuple] = set()
        self.skipped = 0

    def on_comment(self, raw: str, lineno: int, display: str) -> None:
        read_sbatch_header(raw, lineno, display, self.facts, self.sbatch)

    def on_written(self, target: str, body: str, first: int, display: str) -> None:
        cfg, pos = None, {}
        try:
            if body.lstrip().startswith("{"):
                cfg, pos = positions.json_positions(body)
            elif target.lower().endswith((".yaml", ".yml")):
                cfg, pos, _ = positions.yaml_tree(body)
        except Exception:  # noqa: BLE001 - a malformed body is not read, like a malformed file
            return
        if not isinstance(cfg, dict):
            return
        shifted = {k: (ln + first - 1, col) for k, (ln, col) in pos.items()}
        shifted.setdefault((), (first, 1))          # the document as a whole: its first line
        self.facts.extend(read_document(display, cfg, shifted, kind="heredoc").facts)

    def on_command(self, cmd: list[Word], k: int, prefix_env: dict[str, Value], lineno: int,
                   display: str) -> None:
        if cmd[k].text in ("sbatch", "bash", "sh") and len(cmd) > k + 1 and cmd[k + 1].text != "-c":
            # `sbatch other.sh` / `bash other.sh`: follow into the repository file
            j = k + 1
            while j < len(cmd) and cmd[j].text.startswith("-"):
                t = cmd[j].text
                opt_col = cmd[j].col
                if cmd[k].text == "sbatch":
                    if "=" in t and t.startswith("--"):
                        key, val = t.split("=", 1)
                    elif (not t.startswith("--") or t in SBATCH_VALUE) and j + 1 < len(cmd):
                        key, val = t, cmd[j + 1].text
                        j += 1
                    else:
                        key, val = t, None
                    if not cmd[j].unknown:
                        read_sbatch_option(key, val, Source(path=display, line=lineno, col=opt_col),
                                           self.facts, self.sbatch)
                j += 1
            if j < len(cmd) and not cmd[j].unknown:
                self.follow(cmd[j].text)
            return
        words = [w.text for w in cmd]
        again = (display, lineno, tuple(words), tuple(sorted(prefix_env.items(), key=str)))
        if again in self.lines_read:
            return          # the same line with the same words (a loop, a function called again)
        self.lines_read.add(again)
        unknown = {w.text: w.unknown for w in cmd if w.unknown}
        src = Source(path=display, line=lineno, col=cmd[0].col)
        merged_env = dict(self.env)
        merged_env.update(prefix_env)
        if len(self.invocations) >= MAX_LAUNCH_LINES:
            self.skipped += 1
            if self.skipped == 1:
                self.diagnostics.append(Diagnostic(
                    code="PF003", name="unresolved-value", severity="info", path=display,
                    line=lineno, col=cmd[0].col,
                    message=f"more than {MAX_LAUNCH_LINES} different launch lines in one script: "
                            "this one and those after it are not read as jobs"))
            return
        inv = parse_command(words, src, Origin.CONFIG, unknown, cwd=os.path.dirname(self.path) or ".",
                            env=merged_env, diagnostics=self.diagnostics)
        if inv is None:
            return
        if os.path.basename(words[k]) in ("srun", "mpirun", "mpiexec"):
            inv = inv.model_copy(update={"module": inv.module})
            if "ntasks_per_node" in self.sbatch and not any(n == "gpus_per_node" for n, _ in inv.facts) \
                    and _plain_python(words[k:]):
                inv.facts.append(("gpus_per_node", Fact(
                    value=self.sbatch["ntasks_per_node"], origin=Origin.CONFIG, source=src,
                    reason="srun starts one process per task (#SBATCH --ntasks-per-node)")))
        inv = _visible_gpus(inv, merged_env, display, lineno)
        given = {k: merged_env.get(k) for k in sorted(self.exported | set(prefix_env))}
        given = {k: v for k, v in given.items() if isinstance(v, str) and reason_of(v) is None}
        if given:
            inv = inv.model_copy(update={"env": given})
        key = _identity(inv)
        if key in self.launched:
            return          # the same run again (a line repeated, a loop): one job, at its first line
        self.launched.add(key)
        self.invocations.append(inv)


def _visible_gpus(inv: Invocation, env: dict[str, Value], display: str, lineno: int) -> Invocation:
    """A launcher that starts one process per visible GPU, under a CUDA_VISIBLE_DEVICES the
    script sets (`export CUDA_VISIBLE_DEVICES=0,1,2,3`, or before the command): that many."""
    cvd = env.get("CUDA_VISIBLE_DEVICES")
    if not isinstance(cvd, str) or reason_of(cvd) is not None:
        return inv
    ids = [d for d in cvd.split(",") if d.strip()]
    if not ids or any(d.strip().startswith("-") for d in ids):
        return inv
    facts = []
    for n, f in inv.facts:
        if n == "gpus_per_node" and not f.known and EVERY_VISIBLE_GPU in (f.reason or ""):
            f = Fact(value=len(ids), origin=Origin.CONFIG, source=_assigned_at(display, lineno) or f.source,
                     reason=f"CUDA_VISIBLE_DEVICES={cvd}: {len(ids)} visible GPUs")
        facts.append((n, f))
    return inv.model_copy(update={"facts": facts})


def _assigned_at(display: str, lineno: int) -> Optional[Source]:
    """Where CUDA_VISIBLE_DEVICES is set: on the launch line, else the nearest line above."""
    lines = lines_of(display) or []
    for j in range(min(lineno, len(lines)) - 1, max(lineno - 2000, 0) - 1, -1):
        col = lines[j].find("CUDA_VISIBLE_DEVICES=")
        if col >= 0:
            return Source(path=display, line=j + 1, col=col + 1)
    return None


def _identity(inv: Invocation) -> tuple:
    """What makes two launch lines the same run: the program, the script and its arguments,
    the configs and the values of the facts the line fixes (not where they are written)."""
    return (inv.launcher, inv.script, inv.module, tuple(inv.args), tuple(inv.configs),
            tuple((n, repr(f.value), f.origin, f.reason if not f.known else None) for n, f in inv.facts))


def _plain_python(words: list[str]) -> bool:
    progs = [os.path.basename(w) for w in words]
    return not any(p in ("torchrun", "accelerate", "deepspeed") or p.startswith("torch.distributed")
                   for p in progs)


def makefile_as_shell(text: str) -> str:
    """Makefile → shell text with the same line numbers: `VAR = x` / `VAR := x` become
    assignments, recipe lines lose their tab and `@`/`-` prefixes, `$(VAR)` becomes `${VAR}`,
    rule lines become blank."""
    out = []
    for line in text.splitlines():
        m = re.match(r"^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*(?::=|::=|\?=|\+=|=)\s*(.*)$", line)
        if m and not line.startswith("\t"):
            out.append(f"{m.group(1)}={shlex_quote(m.group(2))}")
        elif line.startswith("\t"):
            body = line[1:].lstrip("@-+ ")
            out.append(re.sub(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", r"${\1}", body).replace("$$", "$"))
        else:
            out.append("")
    return "\n".join(out)


def shlex_quote(s: str) -> str:
    s = re.sub(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", r"${\1}", s.strip())
    return '"' + s.replace('"', '\\"') + '"'


def extract(path: str, text: str, args: Optional[list[str]] = None,
            env: Optional[dict[str, Value]] = None) -> Extraction:
    """`env`: variables set before the script runs (a notebook's Python values in its
    `!` lines)."""
    if os.path.basename(path).lower() in ("makefile", "gnumakefile") or path.endswith(".mk"):
        text = makefile_as_shell(text)
    given = env
    env = dict(given or {})
    # a launch script checked by name is read as `bash run.sh` runs it: with the arguments
    # given, else none (`$#` is 0, `"$@"` expands to nothing, `${1:-8}` takes its default;
    # a bare `$1` stays unknown: the script needs it)
    positional: dict[str, Value] = {str(n): a for n, a in enumerate(args or [], 1)}
    positional.update({"#": str(len(args or [])), "@": list(args or []), "*": list(args or [])})
    env["PWD"] = os.path.dirname(path) or "."
    st = _ScriptReader(path, env, seen={os.path.abspath(path)}, positional=positional)
    try:
        st.read(text, path)
    except RecursionError:  # pragma: no cover - pathological input
        pass
    # SLURM variables in launch lines resolve from the header: re-run once with them set
    if st.sbatch and any(f.reason and "SLURM_" in f.reason for inv in st.invocations
                         for _, f in inv.facts if not f.known):
        env2: dict[str, Value] = {**(given or {}), "PWD": env.get("PWD", ".")}
        for var, key in SLURM_ENV.items():
            if key in st.sbatch:
                env2[var] = str(st.sbatch[key])
        st2 = _ScriptReader(path, env2, seen={os.path.abspath(path)}, positional=positional)
        st2.read(text, path)
        st = st2
    if st.written:
        # configs the script writes itself were read from its here-documents
        st.invocations = [inv.model_copy(update={"configs": [c for c in inv.configs
                                                             if os.path.basename(c) not in st.written]})
                          for inv in st.invocations]
    if st.spent:
        why, where, line = st.spent
        st.diagnostics.append(Diagnostic(code="PF003", name="unresolved-value", severity="info",
                                         path=where, line=line, col=1, message=why))
    refs = list(st.references)
    for inv in st.invocations:
        refs.extend(inv.configs)
    return Extraction(path=path, kind="shell", facts=st.facts, diagnostics=st.diagnostics,
                      invocations=st.invocations, references=refs)
