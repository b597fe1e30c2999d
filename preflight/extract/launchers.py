"""Launch lines: what a command line of a launch script (or the command after
`preflight check --`) launches.

`parse_command(words, source, origin)` turns one launch line (already split into words) into
an `Invocation`; `preflight check -- torchrun …` uses exactly that function. The prefix of
the line (assignments, wrappers like `nohup`, `env`, `srun` / `mpirun`, programs that run a
command in an environment like singularity / docker / conda) is recognised here; the
launcher's own options are read by its framework adapter (preflight.frameworks).
"""

from __future__ import annotations

import os
import re
from typing import Any, Callable, Optional

from preflight.frameworks import for_entry, for_program
from preflight.frameworks._common import LaunchLine, option_at, script_configs
from preflight.frameworks.accelerate import parse_accelerate
from preflight.frameworks.deepspeed import parse_deepspeed
from preflight.frameworks.mpi import MPIRUN_VALUE, mpirun_option
from preflight.frameworks.neox import deepy_configs
from preflight.frameworks.slurm import SRUN_VALUE, srun_option
from preflight.frameworks.torchrun import parse_torchrun
from preflight.lang.shell.values import Unknown, Value, as_int
from preflight.plan import Diagnostic, Fact, Invocation, Origin, Source

LAUNCHERS = {"torchrun", "accelerate", "deepspeed", "python", "python3", "srun", "mpirun",
             "litgpt", "axolotl", "llamafactory-cli", "tune", "composer", "lightning", "fabric", "trl",
             "swift", "oumi"}
WRAPPERS = {"exec", "time", "nohup", "command", "builtin", "stdbuf", "nice", "ionice", "xargs"}


def parse_command(words: list[str], source: Optional[Source] = None,
                  origin: Origin = Origin.CONFIG, unknown: Optional[dict[str, str]] = None,
                  cwd: str = "", env: Optional[dict[str, Value]] = None,
                  diagnostics: Optional[list[Diagnostic]] = None) -> Optional[Invocation]:
    """One launch line → an Invocation (None when the line launches no Python program).

    `words` are already expanded; `unknown` maps a word to the reason it is unknown.
    `cwd` is the directory relative paths are resolved against (hostfiles). Findings of the
    line (a hostfile that does not exist) are appended to `diagnostics`."""
    diags = diagnostics if diagnostics is not None else []
    inv = _parse_line(words, source, origin, unknown, cwd, env, diags)
    if inv is not None and inv.launcher is None:
        inv.launcher = _launcher_of(words)
    fw = for_entry(inv.module or inv.script) if inv is not None else None
    if fw is not None:
        # a framework's own entry point: its arguments are in the framework's syntax
        inv = fw.launch_python(inv, origin)
    return inv


_MODULE_LAUNCHERS = {"torch.distributed.run": "torchrun", "torch.distributed.launch": "torchrun",
                     "deepspeed.launcher.runner": "deepspeed",
                     "accelerate.commands.launch": "accelerate"}



def _skip_prefix(words: list[str], i: int = 0,
                 runner_opt: Optional[Callable[[str, Optional[str]], None]] = None) -> tuple[int, Optional[str]]:
    """Where the command proper starts after a launch line's prefix — `VAR=value`
    assignments, wrappers (`nohup`, `time`, …), `env [-opts] [VAR=value …]`, and `srun` /
    `mpirun` with their options — and the outer runner that prefix names ("srun",
    "mpirun" or None). `runner_opt(option, value)` sees each option of the runner."""
    outer = None
    while i < len(words):
        w = words[i]
        base = os.path.basename(w)
        if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", w) or base in WRAPPERS:
            i += 1
            continue
        if base == "env":
            i += 1
            while i < len(words) and (words[i].startswith("-") or "=" in words[i]):
                i += 1
            continue
        if base in ("srun", "mpirun", "mpiexec"):
            outer = "srun" if base == "srun" else "mpirun"
            i += 1
            while i < len(words) and words[i].startswith("-"):
                k, v, j = option_at(words, i)
                if v is None and (k in SRUN_VALUE or k in MPIRUN_VALUE):
                    v, j = (words[j] if j < len(words) else None), j + 1
                if runner_opt is not None:
                    runner_opt(k, v)
                i = j
            continue
        break
    return i, outer


def _launcher_of(words: list[str]) -> Optional[str]:
    """The program that starts the processes of a launch line parse_command understood."""
    i, outer = _skip_prefix(words)
    if i >= len(words):
        return outer
    base = os.path.basename(words[i])
    if base in ("python", "python3") or re.fullmatch(r"python3(\.\d+)?", base):
        rest = words[i + 1:]
        if "-m" in rest[:3]:
            mod = rest[rest.index("-m") + 1] if rest.index("-m") + 1 < len(rest) else ""
            if mod in _MODULE_LAUNCHERS:
                return _MODULE_LAUNCHERS[mod]
        return outer or "python"
    if base.endswith(".py"):
        return outer or "python"
    return base


def _parse_line(words: list[str], source: Optional[Source], origin: Origin,
                unknown: Optional[dict[str, str]], cwd: str,
                env: Optional[dict[str, Value]], diags: list[Diagnostic]) -> Optional[Invocation]:
    unknown = unknown or {}
    ln = LaunchLine(source, origin, unknown)
    i = 0
    # leading assignments, wrappers, srun / mpirun and the facts their options fix
    tasks: dict[str, Any] = {}          # per_node: srun --ntasks-per-node; total: (flag, -n value)

    def runner_opt(k: str, v: Optional[str]) -> None:
        srun_option(k, v, ln, tasks)
        mpirun_option(k, v, tasks)

    under_srun = False
    while True:
        i, outer = _skip_prefix(words, i, runner_opt)
        under_srun = under_srun or outer is not None
        if i + 2 < len(words) and os.path.basename(words[i]) in ("sh", "bash") and words[i + 1] == "-c":
            import shlex
            try:
                inner = shlex.split(words[i + 2])
            except ValueError:
                return None
            words = words[:i] + inner
            continue
        break
    srun_tasks: Optional[str] = tasks.get("per_node")
    total_tasks: Optional[tuple[str, str]] = tasks.get("total")
    if i >= len(words):
        return None
    prog = os.path.basename(words[i])
    rest = words[i + 1:]
    ln.env = dict(env or {})
    ln.env.update(w.split("=", 1) for w in words[:i] if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", w))
    module: Optional[str] = None
    script: Optional[str] = None
    args: list[str] = []
    if prog in ("python", "python3") or re.fullmatch(r"python3(\.\d+)?", prog):
        j = 0
        while j < len(rest) and rest[j].startswith("-"):
            if rest[j] == "-m" and j + 1 < len(rest):
                module = rest[j + 1]
                j += 2
                break
            if rest[j] in ("-c",):
                return None
            j += 1 if rest[j] not in ("-W", "-X") else 2
        if module in ("torch.distributed.run", "torch.distributed.launch"):
            return parse_torchrun(rest[j:], ln)
        if module == "deepspeed.launcher.runner":
            return parse_deepspeed(rest[j:], ln, cwd, diags)
        if module == "accelerate.commands.launch":
            return parse_accelerate(rest[j:], ln)
        if module is None:
            if j >= len(rest):
                return None
            script, args = rest[j], rest[j + 1:]
        else:
            script, args = module, rest[j:]
        sub = _submitted(script, args, source, origin, unknown, cwd, env, diags)
        if sub is not None:
            return sub
        # a plain python launch is one process per task
        if total_tasks is not None:
            ln.fact("world_size", total_tasks[1], as_int, total_tasks[0])
        if srun_tasks is not None:
            ln.fact("gpus_per_node", srun_tasks, as_int, "--ntasks-per-node")
        elif not under_srun:
            ln.facts.append(("nodes", Fact(value=1, origin=Origin.DEFAULT, source=source,
                                           reason="a plain `python` launch runs one process")))
            ln.facts.append(("gpus_per_node", Fact(value=1, origin=Origin.DEFAULT, source=source,
                                                   reason="a plain `python` launch runs one process")))
        inv = Invocation(script=script, args=args, source=source, module=module if module else None,
                         facts=ln.facts, configs=script_configs(args, cwd))
        if script.endswith("deepy.py"):
            inv = deepy_configs(inv)
        return inv
    if prog == "torchrun":
        return parse_torchrun(rest, ln)
    if prog == "accelerate":
        if rest[:1] != ["launch"]:
            return None
        return parse_accelerate(rest[1:], ln)
    if prog == "deepspeed":
        return parse_deepspeed(rest, ln, cwd, diags)
    if prog in ("sh", "bash") and rest and for_program(os.path.basename(rest[0])) is not None:
        # `bash distributed_train.sh 8 …`: a framework's launcher script run by the shell
        prog, rest = os.path.basename(rest[0]), rest[1:]
    fw = for_program(prog)
    if fw is not None and prog not in ("litgpt", "axolotl", "llamafactory-cli"):
        inv = fw.launch(prog, rest, ln, cwd)
        if inv is not None or prog in ("tune", "composer", "lightning", "fabric", "trl"):
            return inv
    if prog in ("litgpt", "axolotl", "llamafactory-cli", "tune"):
        # recipe CLIs: `litgpt finetune_full --config X.yaml`, `axolotl train X.yaml`
        sub = rest[0] if rest else ""
        rargs = rest[1:]
        cfgs = script_configs(rargs, cwd)
        script = cfgs[0] if cfgs else f"{prog} {sub}".strip()
        if prog == "llamafactory-cli" and env is not None:
            if env.get("FORCE_TORCHRUN") in ("1", "true", "True"):
                ln.fact("nodes", str(env.get("NNODES", "1")) if not isinstance(env.get("NNODES"), Unknown) else None, as_int, "NNODES")
        return Invocation(script=script, args=rargs, source=source, module=f"{prog} {sub}".strip(),
                          facts=ln.facts, configs=cfgs)
    if prog.endswith(".py"):
        script, args = words[i], rest
        ln.facts.append(("nodes", Fact(value=1, origin=Origin.DEFAULT, source=source,
                                       reason="a plain script launch runs one process")))
        ln.facts.append(("gpus_per_node", Fact(value=1, origin=Origin.DEFAULT, source=source,
                                               reason="a plain script launch runs one process")))
        return Invocation(script=script, args=args, source=source, facts=ln.facts,
                          configs=script_configs(args, cwd))
    return _under_unknown_program(prog, words[i + 1:], source, origin, unknown, cwd, env, diags)


def _submitted(script: str, args: list[str], source: Optional[Source], origin: Origin,
               unknown: dict[str, str], cwd: str, env: Optional[dict[str, Value]],
               diags: list[Diagnostic]) -> Optional[Invocation]:
    """`python submit.py --cluster c --num_nodes 8 -- accelerate launch … train.py`: a job
    submitter given the training command after `--`. The command after `--` is the job; the
    submitter, which preflight does not read as a launcher, decides where and how many times
    it runs, so the layout a bare launch line would default to is unknown."""
    if "--" not in args:
        return None
    words = args[args.index("--") + 1:]
    # the submitted command may chain several, its `&&` escaped for the submitter
    # (`-- source setup.sh \&\& python train.py …`): the first that launches one is the job
    inner = None
    while words and inner is None:
        cut = next((i for i, x in enumerate(words) if x in ("&&", ";", "||")), len(words))
        w = os.path.basename(words[0])
        if w in LAUNCHERS or w.endswith(".py") or re.fullmatch(r"python3(\.\d+)?", w):
            inner = parse_command(words[:cut], source, origin, unknown, cwd=cwd, env=env,
                                  diagnostics=diags)
        words = words[cut + 1:]
    if inner is None:
        return None
    name = os.path.basename(script)
    layout = ("nodes", "gpus_per_node", "world_size")
    facts = [(n, f) for n, f in inner.facts if not (n in layout and f.origin == Origin.DEFAULT)]
    stated = {n for n, _ in facts}
    for n in ("nodes", "world_size"):
        if n not in stated:
            facts.append((n, Fact.unknown(
                f"the command is submitted by `{name}` (the words after `--`), which preflight "
                f"does not read as a launcher: where and how many times it runs the command "
                f"is not known", source=source)))
    return inner.model_copy(update={"facts": facts, "launcher": inner.launcher or "python"})


#: programs whose arguments may name a script without launching it
NOT_LAUNCHERS = {"echo", "printf", "cat", "less", "head", "tail", "grep", "sed", "awk", "ls",
                 "cp", "mv", "rm", "mkdir", "cd", "export", "source", ".", "git", "pip", "pip3",
                 "conda", "wget", "curl", "tee", "test", "[", "[[", "chmod", "touch", "find",
                 "wc", "sort", "tar", "rsync", "scp", "ssh", "readlink", "dirname", "basename",
                 "which", "type", "hash", "sleep", "kill", "wait", "read", "set", "unset", "cut",
                 # test runners, linters and docs builders: the .py files they are given are
                 # tests and sources, never a training entry
                 "pytest", "py.test", "mypy", "pyright", "ruff", "black", "flake8", "pylint",
                 "isort", "pre-commit", "tox", "nox", "sphinx-build"}
#: programs that run a command inside an environment, one process for one
ENV_RUNNERS = {"singularity", "apptainer", "docker", "podman", "enroot", "conda", "uv",
               "poetry", "pipenv", "micromamba", "mamba", "pixi", "hatch", "taskset", "numactl",
               "timeout", "caffeinate", "ccache", "nsys", "ncu"}


def _under_unknown_program(prog: str, rest: list[str], source: Optional[Source], origin: Origin,
                           unknown: dict[str, str], cwd: str,
                           env: Optional[dict[str, Value]], diags: list[Diagnostic]) -> Optional[Invocation]:
    """`horovodrun -np 8 python train.py`, `apptainer exec img torchrun …`: a program
    preflight does not read that runs a training command. The command inside is read; when
    the outer program may start several copies of it, the world size is unknown (never the
    one process a bare `python` line means)."""
    if prog in NOT_LAUNCHERS or not rest:
        return None
    # a word starting with `-` is an option (`--ignore=tests/x.py`), never the command
    k = next((j for j, w in enumerate(rest) if not w.startswith("-") and (
              os.path.basename(w) in LAUNCHERS - {"srun", "mpirun"} or w.endswith(".py")
              or re.fullmatch(r"python3(\.\d+)?", os.path.basename(w)))), None)
    if k is None:
        return None
    inner = parse_command(rest[k:], source, origin, unknown, cwd=cwd, env=env, diagnostics=diags)
    if inner is None or prog in ENV_RUNNERS:
        return inner
    if inner.launcher not in (None, "python"):
        return inner                # `wrapper torchrun …`: the inner launcher starts them
    one = {"nodes", "gpus_per_node", "world_size"}
    facts = [(n, f) for n, f in inner.facts if not (n in one and f.origin == Origin.DEFAULT)]
    if len(facts) != len(inner.facts):
        facts.append(("world_size", Fact.unknown(
            f"the script is started by `{prog}`, which preflight does not read: how many "
            f"processes it starts is not known", source=source)))
    return inner.model_copy(update={"facts": facts, "launcher": prog})
