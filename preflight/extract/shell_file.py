"""Shell launchers: `.sh` / sbatch scripts (and Makefile recipes), read without running them.

The parser is a small evaluator of our own on top of a quote-aware word splitter, not
bashlex: bashlex only builds a syntax tree (it evaluates nothing, so `$((N*8))`,
`${VAR:-default}` and `"${ARGS[@]}"` would still need an evaluator of ours) and it rejects
bash arrays and several constructs common in launch scripts. What a launcher needs is
narrow — variables, `export`, arithmetic, default expansions, continuations, arrays,
`source` — and a hand-written evaluator says *why* a value is unknown, which a parse tree
does not. Control flow is read straight through (both branches of an `if` are seen; the
last assignment wins), which is what a reader of the script would assume too.

`parse_command(words, source, origin)` turns one launch line (already split into words) into
an `Invocation`; `preflight check -- torchrun …` uses exactly that function.
"""

from __future__ import annotations

import os
import re
from typing import Any, Callable, Optional, Union
from urllib.parse import quote, unquote

from preflight import runcache, safe_read
from preflight.facts import spellings
from preflight.plan import Diagnostic, Extraction, Fact, Invocation, Origin, Source

# --------------------------------------------------------------------------- values


class Unknown:
    """An expansion that cannot be known statically (the reason says why)."""

    def __init__(self, reason: str):
        self.reason = reason

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"Unknown({self.reason!r})"


class Word:
    """One shell word after expansion; `unknown` is set when part of it could not be known."""

    __slots__ = ("text", "unknown", "line", "col", "quoted")

    def __init__(self, text: str, unknown: Optional[str] = None, line: int = 0, col: int = 0,
                 quoted: bool = False):
        self.text, self.unknown, self.line, self.col, self.quoted = text, unknown, line, col, quoted

    def __repr__(self) -> str:  # pragma: no cover
        return f"Word({self.text!r}{', ?' + self.unknown if self.unknown else ''})"


Value = Union[str, list, Unknown]

#: An unknown piece inside an expanded string is kept as a marker, so that the rest of the
#: string (a launcher command stored in a variable) stays usable: "\x00<reason>\x00", the
#: reason percent-encoded (no spaces, so word splitting keeps it whole). The string carries
#: its own reason: no table outside it, so expansions are re-entrant.
MARK = "\x00"
_MARKED = re.compile(MARK + r"([^\x00]*)" + MARK)


def mark(reason: str) -> str:
    return f"{MARK}{quote(reason, safe='')}{MARK}"


def readable(text: str) -> str:
    """An expanded string for display: each unknown piece shown as `<?>`."""
    return _MARKED.sub("<?>", text or "")


def reason_of(text: str) -> Optional[str]:
    """The reason of the first unknown piece in an expanded string (None when fully known)."""
    m = _MARKED.search(text or "")
    return unquote(m.group(1)) if m else None
OPERATORS = (";", "&&", "||", "|", "&")

#: environment variables SLURM sets from the #SBATCH header → the header key they mirror
SLURM_ENV = {"SLURM_NNODES": "nodes", "SLURM_JOB_NUM_NODES": "nodes",
             "SLURM_GPUS_ON_NODE": "gpus_per_node", "SLURM_GPUS_PER_NODE": "gpus_per_node",
             "SLURM_NTASKS_PER_NODE": "ntasks_per_node"}

#: variables of preflight's own environment that say nothing about the job
_IGNORED_ENV = {"PWD", "OLDPWD", "SHLVL", "_", "PS1", "PROMPT_COMMAND"}

# --------------------------------------------------------------------------- arithmetic

def _expand(result: tuple, parts: list[str], extra: list[str], split: bool) -> None:
    """Add a `$…` expansion to the word being built: its first word joins the word, the rest
    (an array, or an unquoted value split on blanks) follow as words of their own."""
    val, words = result
    if isinstance(val, Unknown):
        parts.append(mark(val.reason))
        return
    if words is None:
        words = val.split() if split else [val]
    if words:
        parts.append(words[0])
        extra.extend(words[1:])


def _matching_paren(s: str, start: int) -> int:
    """Index of the `)` closing the `(` at `start` (len(s) when unbalanced)."""
    depth, j = 0, start
    while j < len(s):
        if s[j] == "(":
            depth += 1
        elif s[j] == ")":
            depth -= 1
            if depth == 0:
                return j
        j += 1
    return j


def _arith(expr: str, env: dict[str, Value]) -> Union[str, Unknown]:
    """`$(( … ))`: integers, + - * / % **, parentheses, variables with or without `$`."""
    missing: list[str] = []

    def sub(m: re.Match) -> str:
        name = m.group(1) or m.group(2)
        v = env.get(name)
        if isinstance(v, str) and re.fullmatch(r"\s*-?\d+\s*", v):
            return v.strip()
        if isinstance(v, str) and reason_of(v):
            missing.append(f"{name} ({reason_of(v)})")
        elif isinstance(v, Unknown):
            missing.append(f"{name} ({v.reason})")
        else:
            missing.append(f"{name} is not set in the script" if v is None else f"{name}={v!r} is not a number")
        return "0"

    text = re.sub(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?|(?<![\w#])([A-Za-z_][A-Za-z0-9_]*)\b",
                  sub, expr)
    if missing:
        return Unknown("$((" + _clip(expr.strip()) + ")) uses " + ", ".join(missing[:3]))
    from preflight.extract.shell_arith import ArithError, evaluate
    try:
        return str(evaluate(text))
    except ArithError as e:
        return Unknown(f"cannot evaluate $(({_clip(expr.strip())})): {e}")


def _clip(text: str, limit: int = 80) -> str:
    """An expression as quoted in a reason: long ones are cut, the reader sees the head."""
    return text if len(text) <= limit else text[:limit] + "…"


# --------------------------------------------------------------------------- word splitting


class _Splitter:
    """Splits one logical shell line into words, expanding variables as it goes."""

    def __init__(self, text: str, env: dict[str, Value], line: int, positional: dict[str, Value]):
        self.s, self.env, self.line, self.pos = text, env, line, positional
        self.i = 0
        self.words: list[Word] = []

    # a word is built from pieces; an array expansion "${A[@]}" splits into several words
    def run(self) -> list[Word]:
        s = self.s
        n = len(s)
        while self.i < n:
            c = s[self.i]
            if c in " \t":
                self.i += 1
                continue
            if c == "#":
                break
            for op in ("&&", "||", ";", "|", "&"):
                if s.startswith(op, self.i):
                    self.words.append(Word(op, line=self.line, col=self.i + 1))
                    self.i += len(op)
                    break
            else:
                self._word()
        return self.words

    def _word(self) -> None:
        s, n = self.s, len(self.s)
        start = self.i
        parts: list[str] = []
        unknown: Optional[str] = None
        quoted = False
        extra: list[str] = []          # additional words from an unquoted/quoted array expansion
        while self.i < n:
            c = s[self.i]
            if c in " \t" or c in ";|&" or (c == "#" and not parts and self.i == start):
                break
            if c == "\\" and self.i + 1 < n:
                parts.append(s[self.i + 1])
                self.i += 2
            elif c == "'":
                j = s.find("'", self.i + 1)
                j = n if j < 0 else j
                parts.append(s[self.i + 1:j])
                quoted = True
                self.i = j + 1
            elif c == '"':
                quoted = True
                self.i += 1
                while self.i < n and s[self.i] != '"':
                    if s[self.i] == "\\" and self.i + 1 < n and s[self.i + 1] in '"\\$`':
                        parts.append(s[self.i + 1])
                        self.i += 2
                    elif s[self.i] == "$":
                        _expand(self._dollar(), parts, extra, split=False)
                    else:
                        parts.append(s[self.i])
                        self.i += 1
                self.i += 1
            elif c == "$":
                _expand(self._dollar(), parts, extra, split=True)
            elif c == "`":
                j = s.find("`", self.i + 1)
                j = n if j < 0 else j
                if s[self.i + 1:j].strip() == "pwd" and isinstance(self.env.get("PWD"), str):
                    parts.append(self.env["PWD"])
                else:
                    parts.append(mark(f"command substitution `{s[self.i + 1:j]}` is not run"))
                self.i = j + 1
            else:
                parts.append(c)
                self.i += 1
        unknown = reason_of("".join(parts) + "".join(extra))
        if extra:
            first = "".join(parts)
            self.words.append(Word(first, reason_of(first), self.line, start + 1, quoted))
            for e in extra:
                self.words.append(Word(e, reason_of(e), self.line, start + 1, quoted))
            return
        if not parts and not quoted:
            return  # an unquoted empty expansion vanishes
        self.words.append(Word("".join(parts), unknown, self.line, start + 1, quoted))

    def _lookup(self, name: str) -> Optional[Value]:
        if name.isdigit() or name in ("@", "*", "#"):
            return self.pos.get(name)
        v = self.env.get(name)
        if v is None and name not in _IGNORED_ENV:
            runcache.note_env(name)
        if v is None and env_read is not None and name not in _IGNORED_ENV:
            env_read[name] = os.environ.get(name)
        if v is None and name in os.environ and name not in _IGNORED_ENV:
            # a variable the script does not set, given in the environment preflight runs in
            # (`MODULE=llama3 preflight check run.slurm` mirrors `MODULE=llama3 sbatch run.slurm`)
            return os.environ[name]
        return v

    def _dollar(self) -> tuple[Any, Optional[list[str]]]:
        """At a `$`: returns (value, None) or (None, words) for array expansions."""
        s, n = self.s, len(self.s)
        i = self.i
        if s.startswith("$((", i):
            j = _matching_paren(s, i + 1)
            self.i = j + 1
            inner = s[i + 3:j - 1]
            # expand ${…} inside first
            inner = re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", lambda m: "$" + m.group(1), inner)
            return _arith(inner, self.env), None
        if s.startswith("$(", i):
            j = _matching_paren(s, i + 1)
            self.i = j + 1
            if s[i + 2:j].strip() == "pwd" and isinstance(self.env.get("PWD"), str):
                return self.env["PWD"], None
            return Unknown(f"command substitution $({s[i + 2:j]}) is not run"), None
        if s.startswith("${", i):
            j = s.find("}", i)
            j = n if j < 0 else j
            self.i = j + 1
            return self._brace(s[i + 2:j])
        m = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!])").match(s, i)
        if not m:
            self.i += 1
            return "$", None
        self.i = m.end()
        name = m.group(1)
        v = self._lookup(name)
        if name == "@" or name == "*":
            return (Unknown("script arguments ($@) are not known") if v is None else None), (
                None if v is None else list(v))
        return self._value(name, v), None

    def _value(self, name: str, v: Optional[Value]) -> Any:
        if v is None:
            if name.isdigit():
                return Unknown(f"${name} is a command-line argument of the script, not known statically")
            return Unknown(f"${name} is not set in the script (comes from the environment)")
        if isinstance(v, list):
            return v[0] if v else ""
        return v

    def _brace(self, body: str) -> tuple[Any, Optional[list[str]]]:
        m = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*)\[([@*])\]", body)
        if m:
            v = self.env.get(m.group(1))
            if isinstance(v, list) and m.group(2) == "*":
                return " ".join(v), None        # one word in quotes, split outside them
            if isinstance(v, list):
                return None, list(v)
            if isinstance(v, Unknown):
                return v, None
            if v is None:
                return Unknown(f"array {m.group(1)} is not set in the script"), None
            return None, [v]
        m = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*)\[(\d+)\]", body)
        if m:
            v = self.env.get(m.group(1))
            k = int(m.group(2))
            if isinstance(v, list) and k < len(v):
                return v[k], None
            if isinstance(v, str) and k == 0:
                return v, None
            return Unknown(f"${{{body}}} is not set in the script"), None
        m = re.fullmatch(r"#([A-Za-z_][A-Za-z0-9_]*)(\[[@*]\])?", body)
        if m:
            v = self.env.get(m.group(1))
            if isinstance(v, list):
                return str(len(v)) if m.group(2) else str(len(v[0]) if v else 0), None
            if isinstance(v, str):
                return str(len(v)), None
            return Unknown(f"${{{body}}}: {m.group(1)} is not known"), None
        m = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*|\d+)(:?[-=+?])(.*)", body, re.S)
        if m:
            name, op, word = m.groups()
            v = self._lookup(name)
            empty = v is None or (op.startswith(":") and v == "")
            default = _Splitter(word, self.env, self.line, self.pos).expand_text()
            if op.endswith("+"):
                return ("" if empty else default), None
            if isinstance(v, Unknown):
                return v, None
            if empty:
                if op.endswith("?"):
                    return Unknown(f"${name} is required but not set in the script"), None
                if op.endswith("=") and not name.isdigit():
                    self.env[name] = default
                return default, None
            return self._value(name, v), None
        if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*|\d+", body):
            return self._value(body, self._lookup(body)), None
        return Unknown(f"${{{body}}} is not evaluated"), None

    def expand_text(self) -> Any:
        """Expand a fragment (a `${VAR:-default}` word) as one string, quotes removed."""
        words = _Splitter(self.s, self.env, self.line, self.pos).run()
        return " ".join(w.text for w in words)


def split_words(text: str, env: dict[str, Value], line: int = 0,
                positional: Optional[dict[str, Value]] = None) -> list[Word]:
    return _Splitter(text, env, line, positional or {}).run()


# --------------------------------------------------------------------------- logical lines


def logical_lines(text: str) -> list[tuple[int, str]]:
    """(first line number, text) with backslash continuations joined and multi-line
    array assignments / quoted strings kept together."""
    out: list[tuple[int, str]] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        start = i
        cur = lines[i]
        while True:
            stripped = cur.rstrip()
            if stripped.endswith("\\") and not stripped.endswith("\\\\") and i + 1 < len(lines):
                cur = stripped[:-1] + " " + lines[i + 1]
                i += 1
                continue
            # an open array `X=(` or an unclosed double quote continues on the next line
            if i + 1 < len(lines) and (_open_paren(cur) or cur.count('"') % 2 == 1 and '#' not in cur.split('"')[0]):
                cur = cur + "\n" + lines[i + 1] if _open_paren(cur) else cur + " " + lines[i + 1]
                i += 1
                if i - start > 400:
                    break
                continue
            break
        out.append((start + 1, cur))
        i += 1
    return out


def _open_paren(s: str) -> bool:
    m = re.search(r"(?:^|\s)(?:export\s+|declare\s+-a\s+|local\s+)?[A-Za-z_][A-Za-z0-9_]*\+?=\(", s)
    if not m:
        return False
    body = s[m.end():]
    depth = 1
    q = None
    for ch in body:
        if q:
            if ch == q:
                q = None
            continue
        if ch in "'\"":
            q = ch
        elif ch == "#":
            # a comment inside a multi-line array runs to the end of that physical line
            continue
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return False
    return True


# --------------------------------------------------------------------------- flag positions

_TEXTS: dict[str, list[str]] = {}


def register_text(path: str, text: str) -> None:
    """Make a text that is not a file (the command after `--`) searchable by locate_flag."""
    _TEXTS[path] = text.splitlines() or [""]


_STAMPS: dict[str, tuple] = {}

#: while the extraction cache records one extraction: the environment variables looked up
#: (name → value, None when unset), checked again before the entry is reused
env_read: Optional[dict[str, Optional[str]]] = None


def _lines_of(path: str) -> Optional[list[str]]:
    # a file's lines are kept per version of the file (a long-lived process checks many
    # repositories, with relative paths that repeat)
    try:
        st = os.stat(path)
        stamp: tuple = (os.path.abspath(path), st.st_mtime_ns, st.st_size)
    except (OSError, ValueError):
        stamp = ()
    if path not in _TEXTS or (stamp and _STAMPS.get(path) != stamp):
        if len(_TEXTS) > 256:
            _TEXTS.clear()
        try:
            _TEXTS[path] = safe_read.read_text(path, 1 << 20, truncate=True).splitlines()
        except (OSError, ValueError):
            _TEXTS[path] = []
        _STAMPS[path] = stamp
    return _TEXTS[path]


def locate_flag(source: Optional[Source], flag: str) -> Optional[Source]:
    """Where a flag of a launch line is written: in the command's continuation lines, else
    (a flag kept in a variable or an array) its last occurrence above the line, else the line."""
    if source is None or not flag.startswith("-"):
        return source
    lines = _lines_of(source.path)
    if not lines:
        return source
    variants = {flag, flag.replace("_", "-"), "--" + flag.lstrip("-").replace("-", "_")}
    pat = re.compile(r"(?:^|[\s\"'(=])(" + "|".join(re.escape(v) for v in sorted(variants, key=len, reverse=True))
                     + r")(?=[\s=\"')]|$)")
    start = max(source.line - 1, 0)
    i = start
    while i < len(lines) and i - start < 400:
        m = pat.search(lines[i])
        if m:
            return Source(path=source.path, line=i + 1, col=m.start(1) + 1)
        if not lines[i].rstrip().endswith("\\"):
            break
        i += 1
    for j in range(min(start, len(lines)) - 1, -1, -1):
        if lines[j].lstrip().startswith("#"):
            continue
        m = pat.search(lines[j])
        if m:
            return Source(path=source.path, line=j + 1, col=m.start(1) + 1)
    return source


# --------------------------------------------------------------------------- launch lines

LAUNCHERS = {"torchrun", "accelerate", "deepspeed", "python", "python3", "srun", "mpirun",
             "litgpt", "axolotl", "llamafactory-cli", "tune", "composer", "lightning", "fabric", "trl"}
WRAPPERS = {"exec", "time", "nohup", "command", "builtin", "stdbuf", "nice", "ionice", "xargs"}
CONFIG_EXT = (".json", ".yaml", ".yml", ".toml")
#: flags whose value is a DeepSpeed config file (any extension)
DS_CONFIG_FLAGS = ("deepspeed", "deepspeed_config", "deepspeed_config_file", "ds_config")

_TORCHRUN_VALUE = {"--nproc_per_node", "--nproc-per-node", "--nnodes", "--node_rank", "--node-rank",
                   "--master_addr", "--master-addr", "--master_port", "--master-port",
                   "--rdzv_backend", "--rdzv-backend", "--rdzv_endpoint", "--rdzv-endpoint",
                   "--rdzv_id", "--rdzv-id", "--rdzv_conf", "--rdzv-conf", "--max_restarts",
                   "--max-restarts", "--monitor_interval", "--monitor-interval", "--start_method",
                   "--start-method", "--role", "--log_dir", "--log-dir", "-r", "--redirects",
                   "-t", "--tee", "--local_addr", "--local-addr", "--logs_specs", "--logs-specs",
                   "--local_ranks_filter", "--local-ranks-filter", "--run_path", "--run-path"}
_DEEPSPEED_VALUE = {"--num_gpus", "--num-gpus", "--num_nodes", "--num-nodes", "--hostfile", "-H",
                    "--include", "-i", "--exclude", "-e", "--master_port", "--master_addr",
                    "--launcher", "--launcher_args", "--node_rank", "--min_elastic_nodes",
                    "--max_elastic_nodes", "--ssh_port", "--venv_script", "--comment", "--account"}
_ACCEL_FLAGS = {"--multi_gpu", "--use_deepspeed", "--use_fsdp", "--use_megatron_lm", "--use_xpu",
                "--cpu", "--mps", "--no_python", "--same_network", "--debug", "-q", "--quiet",
                "--tpu", "--tpu_use_cluster", "--tpu_use_sudo", "--downcast_bf16",
                "--enable_cpu_affinity"}
_SRUN_VALUE = {"-N", "--nodes", "-n", "--ntasks", "--ntasks-per-node", "--gpus-per-node",
               "--gres", "-c", "--cpus-per-task", "-p", "--partition", "-A", "--account",
               "-t", "--time", "-J", "--job-name", "-o", "--output", "-e", "--error",
               "--gpus", "-G", "--mem", "--nodelist", "-w", "--container-image",
               "--container-mounts", "--mpi", "--cpu-bind", "--gpus-per-task", "--export",
               "--container-workdir", "--container-name", "--distribution", "-m", "--label"} - {"--label"}


def _opt(words: list[str], i: int) -> tuple[str, Optional[str], int]:
    """Option at words[i]: (name, inline value or None, index after the name)."""
    w = words[i]
    if w.startswith("--") and "=" in w:
        k, v = w.split("=", 1)
        return k, v, i + 1
    return w, None, i + 1


def _int(s: Optional[str]) -> Optional[int]:
    if s is None:
        return None
    try:
        return int(str(s).strip())
    except ValueError:
        return None


class _Line:
    """Helper holding the facts of one launch line."""

    def __init__(self, source: Optional[Source], origin: Origin, unknown: dict[str, str]):
        self.source, self.origin, self.unknown = source, origin, unknown
        self.facts: list[tuple[str, Fact]] = []
        self.configs: list[str] = []

    def fact(self, name: str, raw: Optional[str], conv=None, flag: str = "") -> None:
        if raw is None:
            return
        src = locate_flag(self.source, flag) if flag else self.source
        if raw in self.unknown:
            self.facts.append((name, Fact.unknown(f"{flag}: {self.unknown[raw]}", source=src)))
            return
        val = conv(raw) if conv else raw
        if val is None:
            self.facts.append((name, Fact.unknown(f"{flag} {raw!r} is not a fixed number", source=src)))
            return
        self.facts.append((name, Fact(value=val, origin=self.origin, source=src,
                                      reason=f"{flag} {raw}".strip())))




def _script_configs(args: list[str], base: str) -> list[str]:
    """Config files named in the script's arguments (`--deepspeed ds.json`, `cfg.yaml`)."""
    out: list[str] = []
    for i, a in enumerate(args):
        v = a.split("=", 1)[1] if a.startswith("--") and "=" in a else a
        if v.startswith("-"):
            continue
        # a DeepSpeed config is named by its flag, whatever its extension (.conf, none)
        flag = a.split("=", 1)[0] if a.startswith("--") and "=" in a else (args[i - 1] if i else "")
        named = flag.lstrip("-").replace("-", "_") in DS_CONFIG_FLAGS
        if (named or v.lower().endswith(CONFIG_EXT)) and not re.search(r"[*?]", v):
            out.append(v)
    return out


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
    return inv


_MODULE_LAUNCHERS = {"torch.distributed.run": "torchrun", "torch.distributed.launch": "torchrun",
                     "deepspeed.launcher.runner": "deepspeed",
                     "accelerate.commands.launch": "accelerate"}


#: mpirun / mpiexec options that take a value (srun's are in _SRUN_VALUE)
_MPIRUN_VALUE = {"-np", "--np", "-npernode", "--npernode", "-x", "-H", "--host", "--hostfile",
                 "-hostfile", "--map-by", "--bind-to"}


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
                k, v, j = _opt(words, i)
                if v is None and (k in _SRUN_VALUE or k in _MPIRUN_VALUE):
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
    ln = _Line(source, origin, unknown)
    i = 0
    # leading assignments, wrappers, srun / mpirun and the facts their options fix
    tasks: dict[str, Any] = {}          # per_node: srun --ntasks-per-node; total: (flag, -n value)

    def runner_opt(k: str, v: Optional[str]) -> None:
        if k in ("-N", "--nodes"):
            ln.fact("nodes", v, _int, k)
        elif k in ("--ntasks-per-node", "-npernode", "--npernode"):
            tasks["per_node"] = v
        elif k in ("-n", "--ntasks", "-np", "--np") and v:
            tasks["total"] = (k, v)
        elif k == "--gpus-per-node" and v:
            ln.fact("gpus_per_node", v.split(":")[-1], _int, k)

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
            return _torchrun(rest[j:], ln, srun_tasks, diags)
        if module == "deepspeed.launcher.runner":
            return _deepspeed(rest[j:], ln, cwd, diags)
        if module == "accelerate.commands.launch":
            return _accelerate(rest[j:], ln)
        if module is None:
            if j >= len(rest):
                return None
            script, args = rest[j], rest[j + 1:]
        else:
            script, args = module, rest[j:]
        # a plain python launch is one process per task
        if total_tasks is not None:
            ln.fact("world_size", total_tasks[1], _int, total_tasks[0])
        if srun_tasks is not None:
            ln.fact("gpus_per_node", srun_tasks, _int, "--ntasks-per-node")
        elif not under_srun:
            ln.facts.append(("nodes", Fact(value=1, origin=Origin.DEFAULT, source=source,
                                           reason="a plain `python` launch runs one process")))
            ln.facts.append(("gpus_per_node", Fact(value=1, origin=Origin.DEFAULT, source=source,
                                                   reason="a plain `python` launch runs one process")))
        inv = Invocation(script=script, args=args, source=source, module=module if module else None,
                         facts=ln.facts, configs=_script_configs(args, cwd))
        if script.endswith("deepy.py"):
            inv = _deepy(inv)
        return inv
    if prog == "torchrun":
        return _torchrun(rest, ln, srun_tasks, diags)
    if prog == "accelerate":
        if rest[:1] != ["launch"]:
            return None
        return _accelerate(rest[1:], ln)
    if prog == "deepspeed":
        return _deepspeed(rest, ln, cwd, diags)
    from preflight.frameworks import for_program
    fw = for_program(prog)
    if fw is not None and prog not in ("litgpt", "axolotl", "llamafactory-cli"):
        inv = fw.launch(prog, rest, ln, cwd)
        if inv is not None or prog in ("tune", "composer", "lightning", "fabric", "trl"):
            return inv
    if prog in ("litgpt", "axolotl", "llamafactory-cli", "tune"):
        # recipe CLIs: `litgpt finetune_full --config X.yaml`, `axolotl train X.yaml`
        sub = rest[0] if rest else ""
        rargs = rest[1:]
        cfgs = _script_configs(rargs, cwd)
        script = cfgs[0] if cfgs else f"{prog} {sub}".strip()
        if prog == "llamafactory-cli" and env is not None:
            if env.get("FORCE_TORCHRUN") in ("1", "true", "True"):
                ln.fact("nodes", str(env.get("NNODES", "1")) if not isinstance(env.get("NNODES"), Unknown) else None, _int, "NNODES")
        return Invocation(script=script, args=rargs, source=source, module=f"{prog} {sub}".strip(),
                          facts=ln.facts, configs=cfgs)
    if prog.endswith(".py"):
        script, args = words[i], rest
        ln.facts.append(("nodes", Fact(value=1, origin=Origin.DEFAULT, source=source,
                                       reason="a plain script launch runs one process")))
        ln.facts.append(("gpus_per_node", Fact(value=1, origin=Origin.DEFAULT, source=source,
                                               reason="a plain script launch runs one process")))
        return Invocation(script=script, args=args, source=source, facts=ln.facts,
                          configs=_script_configs(args, cwd))
    return _under_unknown_program(prog, words[i + 1:], source, origin, unknown, cwd, env, diags)


#: programs whose arguments may name a script without launching it
NOT_LAUNCHERS = {"echo", "printf", "cat", "less", "head", "tail", "grep", "sed", "awk", "ls",
                 "cp", "mv", "rm", "mkdir", "cd", "export", "source", ".", "git", "pip", "pip3",
                 "conda", "wget", "curl", "tee", "test", "[", "[[", "chmod", "touch", "find",
                 "wc", "sort", "tar", "rsync", "scp", "ssh", "readlink", "dirname", "basename",
                 "which", "type", "hash", "sleep", "kill", "wait", "read", "set", "unset", "cut"}
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
    k = next((j for j, w in enumerate(rest)
              if os.path.basename(w) in LAUNCHERS - {"srun", "mpirun"} or w.endswith(".py")
              or re.fullmatch(r"python3(\.\d+)?", os.path.basename(w))), None)
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


def _program(rest: list[str], i: int, ln: _Line, module_flag: bool) -> Invocation:
    if i >= len(rest):
        return Invocation(script="", args=[], source=ln.source, facts=ln.facts, configs=ln.configs)
    if not module_flag and _MARKED.fullmatch(rest[i]):
        # `deepspeed $WORKER_STR train.py …`: a word that is wholly an unknown expansion
        # before the script is more launcher options (or nothing); the script is the
        # `.py` after it, and the counts the launcher would default are unknown
        k = i
        while k < len(rest) and _MARKED.fullmatch(rest[k]):
            k += 1
        if k < len(rest) and rest[k].endswith(".py"):
            why = (f"the launcher's options include {readable(rest[i])} "
                   f"({reason_of(rest[i]) or 'not known statically'})")
            ln.facts = [(n, Fact.unknown(why, source=ln.source))
                        if n in ("nodes", "gpus_per_node", "world_size") and f.origin == Origin.DEFAULT
                        else (n, f) for n, f in ln.facts]
            i = k
    script, args = rest[i], rest[i + 1:]
    return Invocation(script=script, args=args, source=ln.source,
                      module=script if module_flag else None, facts=ln.facts,
                      configs=ln.configs + _script_configs(args, ""))


def _torchrun(rest: list[str], ln: _Line, srun_tasks: Optional[str], diags: list) -> Invocation:
    i = 0
    module = False
    while i < len(rest) and rest[i].startswith("-"):
        k, v, j = _opt(rest, i)
        k = k.replace("-", "_").lstrip("_")
        if k in ("m", "module"):
            module = True
            i = j
            continue
        if k in ("standalone", "no_python"):
            if k == "standalone":
                ln.facts.append(("nodes", Fact(value=1, origin=ln.origin, source=ln.source,
                                               reason="--standalone runs on one node")))
            i = j
            continue
        if v is None and rest[i] in _TORCHRUN_VALUE:
            v, j = (rest[j] if j < len(rest) else None), j + 1
        if k == "nproc_per_node":
            if v in ("gpu", "auto"):
                ln.facts.append(("gpus_per_node", Fact.unknown(
                    f"--nproc_per_node {v} uses every visible GPU of the machine", source=ln.source)))
            else:
                ln.fact("gpus_per_node", v, _int, "--nproc_per_node")
        elif k == "nnodes":
            if v and ":" in v and v not in ln.unknown:
                lo, hi = v.split(":", 1)
                if lo == hi:
                    ln.fact("nodes", lo, _int, "--nnodes")
                else:
                    ln.facts.append(("nodes", Fact.unknown(
                        f"--nnodes {v} is elastic (between {lo} and {hi} nodes)", source=ln.source)))
            else:
                ln.fact("nodes", v, _int, "--nnodes")
        i = j
    if not any(n == "nodes" for n, _ in ln.facts):
        ln.facts.append(("nodes", Fact(value=1, origin=Origin.DEFAULT, source=ln.source,
                                       reason="torchrun without --nnodes runs on one node")))
    return _program(rest, i, ln, module)


def _accelerate(rest: list[str], ln: _Line) -> Invocation:
    i = 0
    module = False
    use_ds = use_fsdp = False
    while i < len(rest) and rest[i].startswith("-"):
        k, v, j = _opt(rest, i)
        if k in ("-m", "--module"):
            module = True
            i = j
            continue
        if v is None and k not in _ACCEL_FLAGS:
            nxt = rest[j] if j < len(rest) else None
            if nxt is not None and not nxt.startswith("-"):
                v, j = nxt, j + 1
        key = k.lstrip("-").replace("-", "_")
        if key == "num_processes":
            ln.fact("world_size", v, _int, k)
        elif key == "num_machines":
            ln.fact("nodes", v, _int, k)
        elif key == "mixed_precision":
            ln.fact("mixed_precision", v, spellings.mixed_precision, k)
        elif key in ("config_file", "deepspeed_config_file") and v:
            ln.configs.append(v)
        elif key == "use_deepspeed":
            use_ds = True
        elif key == "use_fsdp":
            use_fsdp = True
        elif key == "zero_stage":
            ln.fact("zero_stage", v, _int, k)
        elif key == "gradient_accumulation_steps":
            ln.fact("grad_accum", v, _int, k)
        elif key == "fsdp_sharding_strategy":
            ln.fact("fsdp", v, spellings.fsdp_strategy, k)
        elif key == "fsdp_offload_params" and v and v.lower() == "true":
            ln.facts.append(("offload", Fact(value="optimizer+params", origin=ln.origin,
                                             source=ln.source, reason=f"{k} {v}")))
        elif key == "fsdp_activation_checkpointing" and v:
            ln.facts.append(("activation_checkpointing", Fact(
                value="full" if v.lower() == "true" else "none", origin=ln.origin,
                source=ln.source, reason=f"{k} {v}")))
        elif key == "multi_gpu":
            pass
        i = j
    if use_fsdp and not any(n == "fsdp" for n, _ in ln.facts):
        ln.facts.append(("fsdp", Fact(value="full_shard", origin=ln.origin, source=ln.source,
                                      reason="--use_fsdp (accelerate's default strategy FULL_SHARD)")))
    if use_ds:
        ln.facts.append(("fsdp", Fact(value=None, origin=ln.origin, source=ln.source,
                                      reason="--use_deepspeed")))
    return _program(rest, i, ln, module)


def read_hostfile(path: str) -> Optional[list[tuple[str, Optional[int]]]]:
    try:
        text = safe_read.read_text(path, 1 << 20, truncate=True)
    except OSError:
        return None
    hosts = []
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        m = re.search(r"slots\s*=\s*(\d+)", line)
        hosts.append((line.split()[0], int(m.group(1)) if m else None))
    return hosts


def _deepspeed(rest: list[str], ln: _Line, cwd: str, diags: list) -> Invocation:
    i = 0
    module = False
    hostfile: Optional[str] = None
    include: Optional[str] = None
    while i < len(rest) and rest[i].startswith("-"):
        k, v, j = _opt(rest, i)
        if k in ("--module",):
            module = True
            i = j
            continue
        if v is None and k in _DEEPSPEED_VALUE:
            v, j = (rest[j] if j < len(rest) else None), j + 1
        key = k.lstrip("-").replace("-", "_")
        if key == "num_gpus":
            ln.fact("gpus_per_node", v, _int, k)
        elif key == "num_nodes":
            ln.fact("nodes", v, _int, k)
        elif key in ("hostfile", "H"):
            hostfile = v
        elif key in ("include", "i"):
            include = v
        i = j
    if include and include not in ln.unknown:
        groups = [g for g in include.split("@") if g]
        slots = [len(g.split(":", 1)[1].split(",")) if ":" in g else None for g in groups]
        ln.facts.append(("nodes", Fact(value=len(groups), origin=ln.origin, source=ln.source,
                                       reason=f"--include {include}")))
        if slots and all(s is not None for s in slots) and len(set(slots)) == 1:
            ln.facts.append(("gpus_per_node", Fact(value=slots[0], origin=ln.origin,
                                                   source=ln.source, reason=f"--include {include}")))
    elif hostfile and hostfile not in ln.unknown and MARK in hostfile:
        ln.facts.append(("nodes", Fact.unknown(
            f"hostfile {readable(hostfile)!r}: {reason_of(hostfile) or 'set at run time'}",
            source=ln.source)))
    elif hostfile and hostfile not in ln.unknown:
        hp = hostfile if os.path.isabs(hostfile) else os.path.join(cwd or ".", hostfile)
        hosts = read_hostfile(hp)
        if hosts is None:
            diags.append(Diagnostic.at(
                "PF006", f"hostfile {hostfile!r} does not exist; node and GPU counts unknown",
                ln.source, name="missing-file", severity="warning",
                fix="commit the hostfile or pass --num_nodes/--num_gpus"))
            ln.facts.append(("nodes", Fact.unknown(f"hostfile {hostfile} not found", source=ln.source)))
        elif hosts:
            ln.facts.append(("nodes", Fact(value=len(hosts), origin=ln.origin, source=ln.source,
                                           reason=f"{len(hosts)} host(s) in {hostfile}")))
            slots = {s for _, s in hosts}
            if len(slots) == 1 and None not in slots:
                ln.facts.append(("gpus_per_node", Fact(value=slots.pop(), origin=ln.origin,
                                                       source=ln.source, reason=f"slots= in {hostfile}")))
    else:
        if not any(n == "gpus_per_node" for n, _ in ln.facts):
            ln.facts.append(("gpus_per_node", Fact.unknown(
                "deepspeed without --num_gpus/--include uses every visible GPU", source=ln.source)))
        if not any(n == "nodes" for n, _ in ln.facts):
            ln.facts.append(("nodes", Fact(value=1, origin=Origin.DEFAULT, source=ln.source,
                                           reason="deepspeed without a hostfile runs on this node")))
    return _program(rest, i, ln, module)


def _deepy(inv: Invocation) -> Invocation:
    """gpt-neox `deepy.py train.py -d configs a.yml b.yml`: the YAMLs are the configs."""
    args = inv.args
    cfg_dir = ""
    names: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("-d", "--conf_dir") and i + 1 < len(args):
            cfg_dir = args[i + 1]
            i += 2
            continue
        if a.endswith((".yml", ".yaml")):
            names.append(a)
        i += 1
    cfgs = [os.path.join(cfg_dir, n) if cfg_dir else n for n in names]
    return inv.model_copy(update={"configs": cfgs})


# --------------------------------------------------------------------------- #SBATCH

_GPU_NAMES = [
    (r"gh200", "GH200-96GB"), (r"h200", "H200-SXM-141GB"), (r"h100.*pcie", "H100-PCIe-80GB"),
    (r"h100", "H100-SXM5-80GB"), (r"a100.*80", "A100-SXM4-80GB"), (r"a100", "A100-SXM4-40GB"),
    (r"v100.*32", "V100-SXM2-32GB"), (r"v100", "V100-SXM2-16GB"), (r"a10g", "A10G"),
    (r"l40s", "L40S"), (r"^l4$", "L4"), (r"b200", "B200"), (r"mi300x?", "MI300X"),
    (r"mi250x?", "MI250X"), (r"4090", "RTX-4090"), (r"3090", "RTX-3090"),
]


#: long #SBATCH options that take a value when written `--opt value`
_SBATCH_VALUE = {"--nodes", "--gres", "--gpus-per-node", "--ntasks-per-node", "--constraint", "--gpus",
                 "--ntasks", "--partition", "--account", "--time", "--job-name", "--output", "--error",
                 "--cpus-per-task", "--mem", "--qos", "--chdir", "--nodelist", "--exclude"}


def gpu_name(s: str) -> Optional[str]:
    """A SLURM GPU type or constraint (`a100_80gb`, `h100`) → the hardware catalogue's name.
    A family with several memory sizes reads as the smaller one, as the catalogue does."""
    from preflight.hardware import lookup
    try:
        return lookup(s).name
    except ValueError:
        pass
    low = s.lower()
    for pat, name in _GPU_NAMES:
        if re.search(pat, low):
            return name
    return None


def _sbatch(key: str, val: Optional[str], src: Source, facts: list, hdr: dict) -> None:
    def put(name: str, value: Any, why: str) -> None:
        facts.append((name, Fact(value=value, origin=Origin.CONFIG, source=src, reason=why)))
        hdr[name] = value

    if val is None:
        return
    if key in ("-N", "--nodes"):
        n = _int(val.split("-")[0])
        if n is not None and ("-" not in val or val.split("-")[0] == val.split("-")[1]):
            put("nodes", n, f"#SBATCH {key}={val}")
    elif key in ("--gpus-per-node", "--gres"):
        parts = val.split(",")[0].split(":")
        if key == "--gres" and parts[0] != "gpu":
            return
        n = _int(parts[-1])
        if n is not None:
            put("gpus_per_node", n, f"#SBATCH {key}={val}")
        typ = parts[1] if key == "--gres" and len(parts) == 3 else (parts[0] if key == "--gpus-per-node" and len(parts) == 2 else None)
        if typ and gpu_name(typ):
            put("gpu", gpu_name(typ), f"#SBATCH {key}={val}")
    elif key in ("--ntasks-per-node",):
        n = _int(val)
        if n is not None:
            hdr["ntasks_per_node"] = n
    elif key in ("-C", "--constraint"):
        g = gpu_name(val)
        if g:
            put("gpu", g, f"#SBATCH {key}={val}")


# --------------------------------------------------------------------------- the file


def _find_root(path: str) -> str:
    d = os.path.dirname(os.path.abspath(path))
    while True:
        if os.path.exists(os.path.join(d, ".git")) or os.path.exists(os.path.join(d, "pyproject.toml")):
            return d
        up = os.path.dirname(d)
        if up == d:
            return os.path.dirname(os.path.abspath(path))
        d = up


def _follow(st, name: str) -> None:
    """Read a `source`d / `bash`ed / `sbatch`ed repository file in place, once, four deep at most."""
    target = _resolve_sourced(name, st.path)
    if not target or target in st.seen or st.depth >= 4:
        return
    st.seen.add(target)
    st.references.append(_display(target))
    try:
        sub = safe_read.read_text(target, 1 << 20, truncate=True)
    except OSError:
        return
    _run_text(st, sub, _display(target))


def _resolve_sourced(name: str, path: str) -> Optional[str]:
    here = os.path.dirname(path)
    root = _find_root(path)
    for base in (here, root, os.getcwd()):
        cand = os.path.normpath(os.path.join(base, name))
        real = os.path.realpath(cand)
        if os.path.isfile(cand) and (real.startswith(os.path.realpath(root) + os.sep)
                                     or real.startswith(os.path.realpath(here) + os.sep)):
            return cand
    return None


def _display(path: str) -> str:
    a, cwd = os.path.abspath(path), os.getcwd()
    return os.path.relpath(a, cwd) if a.startswith(cwd + os.sep) else path


def _assign(word: str) -> Optional[tuple[str, str, bool]]:
    m = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*)(\+?)=(.*)", word, re.S)
    if not m:
        return None
    return m.group(1), m.group(3), bool(m.group(2))


class _State:
    def __init__(self, path: str, env: dict[str, Value], depth: int = 0,
                 seen: Optional[set] = None):
        self.path, self.env, self.depth = path, env, depth
        self.seen = seen if seen is not None else set()
        self.facts: list[tuple[str, Fact]] = []
        self.invocations: list[Invocation] = []
        self.diagnostics: list[Diagnostic] = []
        self.references: list[str] = []
        self.sbatch: dict[str, Any] = {}
        #: open if / case / loop blocks
        self.frames: list = []
        #: files the script writes from a here-document (`cat > ds.json <<EOF`): read here
        self.written: set[str] = set()


_ARRAY_RE = re.compile(r"^\s*(?:export\s+|declare\s+-a\s+|local\s+|readonly\s+)?([A-Za-z_][A-Za-z0-9_]*)(\+?)=\((.*)\)\s*(?:#.*)?$", re.S)


_HEREDOC = re.compile(r"<<(-?)\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\2")


def split_heredocs(text: str) -> tuple[str, list[tuple[int, int, str, bool]]]:
    """The text with here-document bodies blanked (line numbers kept), and each body as
    (line of its `<<`, first body line, body, expanded: delimiter unquoted)."""
    lines = text.splitlines()
    docs: list[tuple[int, int, str, bool]] = []
    i = 0
    while i < len(lines):
        code = lines[i].split("#", 1)[0] if not lines[i].lstrip().startswith("#") else ""
        m = _HEREDOC.search(code)
        if m and "<<<" not in code:
            strip_tabs, delim = m.group(1) == "-", m.group(3)
            body: list[str] = []
            j = i + 1
            while j < len(lines) and (lines[j].lstrip("\t") if strip_tabs else lines[j]).rstrip() != delim:
                body.append(lines[j].lstrip("\t") if strip_tabs else lines[j])
                j += 1
            docs.append((i + 1, i + 2, "\n".join(body), not m.group(2)))
            for k in range(i + 1, min(j + 1, len(lines))):
                lines[k] = ""
            i = j + 1
            continue
        i += 1
    return "\n".join(lines), docs


def _heredoc(st: _State, words: list["Word"], lineno: int, doc: tuple[int, int, str, bool], display: str) -> None:
    """`read -r -d '' VAR <<EOF` assigns the body; `cat > FILE <<EOF` / `tee FILE` writes a
    config the script then names: it is read here, each fact at its line in the script."""
    _, first, body, expand = doc
    texts = [w.text for w in words]
    if expand:
        body = re.sub(r"\\\n", "", body)
    if texts[:1] == ["read"]:
        var = next((t for t in reversed(texts[1:]) if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", t)), None)
        if var:
            st.env[var] = " ".join(w.text for w in split_words(body.replace("\n", " "), st.env, first)) \
                if expand else body
        return
    target = None
    for k, t in enumerate(texts):
        if t in (">", ">>") and k + 1 < len(texts):
            target = texts[k + 1]
        elif t.startswith(">") and len(t) > 1 and not t.startswith(">&"):
            target = t.lstrip(">")
    if target is None and texts[:1] == ["tee"]:
        target = next((t for t in texts[1:] if not t.startswith("-")), None)
    if not target or "\0" in target:
        return
    st.written.add(os.path.basename(target))
    if expand:
        def sub(m: "re.Match") -> str:
            v = st.env.get(m.group(1) or m.group(2))
            return v if isinstance(v, str) and "\0" not in v else m.group(0)
        body = re.sub(r"\$\{([A-Za-z_]\w*)\}|\$([A-Za-z_]\w*)", sub, body)
    cfg, pos = None, {}
    try:
        if body.lstrip().startswith("{"):
            from preflight.lang.positions import json_positions
            cfg, pos = json_positions(body)
        elif target.lower().endswith((".yaml", ".yml")):
            from preflight.lang.positions import yaml_tree
            cfg, pos, _ = yaml_tree(body)
    except Exception:  # noqa: BLE001 - a malformed body is not read, like a malformed file
        return
    if not isinstance(cfg, dict):
        return
    from preflight.frameworks import read_document
    shifted = {k: (ln + first - 1, col) for k, (ln, col) in pos.items()}
    st.facts.extend(read_document(display, cfg, shifted, kind="heredoc").facts)


def _run_text(st: _State, text: str, display: str) -> None:
    text, docs = split_heredocs(text) if "<<" in text else (text, [])
    for lineno, raw in logical_lines(text):
        stripped = raw.strip()
        if stripped.startswith("#SBATCH"):
            body = stripped[len("#SBATCH"):].split("#", 1)[0].strip()
            toks = body.split()
            k = 0
            while k < len(toks):
                t = toks[k]
                if "=" in t and t.startswith("--"):
                    key, val = t.split("=", 1)
                    k += 1
                elif k + 1 < len(toks) and t.startswith("-") and (
                        not t.startswith("--") or t in _SBATCH_VALUE) and not toks[k + 1].startswith("-"):
                    key, val = t, toks[k + 1]
                    k += 2
                else:
                    key, val = t, None
                    k += 1
                col = raw.find(t) + 1
                _sbatch(key, val, Source(path=display, line=lineno, col=col), st.facts, st.sbatch)
            continue
        if not stripped or stripped.startswith("#"):
            continue
        m = _ARRAY_RE.match(raw)
        if m and not _active(st):
            continue
        if m:
            body = re.sub(r"#[^\n]*", "", m.group(3))
            items = [w.text for w in split_words(body.replace("\n", " "), st.env, lineno) if w.text not in OPERATORS]
            if m.group(2):
                prev = st.env.get(m.group(1))
                items = (prev if isinstance(prev, list) else ([prev] if isinstance(prev, str) else [])) + items
            st.env[m.group(1)] = items
            continue
        if re.match(r"^\s*(function\s+)?[A-Za-z_][A-Za-z0-9_]*\s*\(\)\s*\{?\s*$", raw):
            continue
        rest = _case_pattern(st, raw, lineno)
        if rest is not None:
            raw = rest
        words = split_words(raw, st.env, lineno)
        if docs and "<<" in raw:
            span = lineno + raw.count("\n")
            doc = next((d for d in docs if lineno <= d[0] <= span + 40), None)
            if doc is not None and _active(st):
                docs.remove(doc)
                _heredoc(st, [w for w in words if not w.text.startswith("<<")], lineno, doc, display)
        _run_words(st, words, lineno, display)


def _cond_value(words: list[Word]) -> Optional[bool]:
    """Three-valued truth of an `if` condition: `[ … ]`, `[[ … ]]`, `test …` joined by && / ||."""
    result: Optional[bool] = None
    op: Optional[str] = None
    cur: list[Word] = []

    def one(ws: list[Word]) -> Optional[bool]:
        neg = False
        while ws and ws[0].text == "!" and not ws[0].quoted:
            neg, ws = not neg, ws[1:]
        if not ws:
            return None
        if ws[0].text in ("[", "[[") and ws[-1].text in ("]", "]]"):
            ws = ws[1:-1]
        elif ws[0].text == "test":
            ws = ws[1:]
        else:
            return None
        if any(w.unknown for w in ws):
            return None
        t = [w.text for w in ws]
        val: Optional[bool] = None
        if len(t) == 3 and t[1] in ("==", "=", "!="):
            val = (t[0] == t[2]) if t[1] != "!=" else (t[0] != t[2])
        elif len(t) == 3 and t[1] in ("-eq", "-ne", "-gt", "-lt", "-ge", "-le"):
            a, b = _int(t[0]), _int(t[2])
            if a is None or b is None:
                return None
            val = {"-eq": a == b, "-ne": a != b, "-gt": a > b, "-lt": a < b, "-ge": a >= b, "-le": a <= b}[t[1]]
        elif len(t) == 2 and t[0] in ("-z", "-n"):
            val = (t[1] == "") if t[0] == "-z" else (t[1] != "")
        elif len(t) == 1:
            val = t[0] != ""
        if val is None:
            return None
        return (not val) if neg else val

    for w in words + [Word("&&")]:
        if w.text in ("&&", "||") and not w.quoted:
            v = one(cur)
            cur = []
            if op is None:
                result = v
            elif op == "&&":
                result = False if (result is False or v is False) else (None if None in (result, v) else True)
            else:
                result = True if (result is True or v is True) else (None if None in (result, v) else False)
            op = w.text
        else:
            cur.append(w)
    return result


class _Frame:
    """An open `if` / `case` / loop. `val`: truth of the branch being read (None = cannot be
    decided statically). Once a branch is undecidable, each branch is read from the same
    starting variables (`snap`) and at `fi`/`esac` a variable the branches set differently
    becomes unknown — never the value of whichever branch happened to come last."""

    __slots__ = ("kind", "val", "taken", "snap", "branches", "closed", "what", "subject")

    def __init__(self, kind: str, what: str = ""):
        self.kind, self.what = kind, what
        self.val: Optional[bool] = None
        self.taken = False
        self.snap: Optional[dict] = None
        self.branches: list[dict] = []
        self.closed = False
        self.subject: Optional[str] = None


def _copy_env(env: dict) -> dict:
    return {k: (list(v) if isinstance(v, list) else v) for k, v in env.items()}


def _active(st: _State) -> bool:
    return all(f.val is not False for f in st.frames)


def _branch(st: _State, fr: _Frame, v: Optional[bool]) -> None:
    """Start the next branch of `fr` whose condition evaluates to `v`."""
    if fr.taken:
        fr.val = False
        return
    if fr.snap is None:
        if v is None and _active_outer(st, fr):
            fr.snap = _copy_env(st.env)
            fr.val = None
        else:
            fr.val = v
            fr.taken = v is True
        return
    # undecidable mode: close the branch just read, restart from the snapshot
    if fr.val is None:
        fr.branches.append(_copy_env(st.env))
    st.env.clear()
    st.env.update(_copy_env(fr.snap))
    if fr.closed:
        fr.val = False
    elif v is True:
        fr.val, fr.closed = None, True      # taken unless an earlier undecidable branch was
    else:
        fr.val = v


def _active_outer(st: _State, fr: _Frame) -> bool:
    return all(f.val is not False for f in st.frames if f is not fr)


def _close(st: _State, fr: _Frame) -> None:
    if fr.snap is None:
        return
    if fr.val is None:
        fr.branches.append(_copy_env(st.env))
    if not fr.closed:
        fr.branches.append(_copy_env(fr.snap))
    merged: dict = {}
    names = set().union(*fr.branches) if fr.branches else set()
    for name in names:
        vals = [b.get(name) for b in fr.branches]
        if all(v == vals[0] for v in vals):
            if vals[0] is not None:
                merged[name] = vals[0]
        else:
            merged[name] = mark(f"${name} is set differently in the branches of `{fr.what}`")
    st.env.clear()
    st.env.update(merged)


_CASE_PATTERN = re.compile(r"^\s*\(?\s*([^()]*?)\s*\)(.*)$", re.S)


def _case_pattern(st: _State, raw: str, lineno: int) -> Optional[str]:
    """In a `case`, a `pattern)` line starts a branch; returns the rest of the line."""
    if not st.frames or st.frames[-1].kind != "case":
        return None
    m = _CASE_PATTERN.match(raw)
    if not m or m.group(1).strip().startswith("#") or m.group(1).strip() in ("", "esac"):
        return None
    fr = st.frames[-1]
    alts = [w.text for w in split_words(m.group(1).replace("|", " "), st.env, lineno)]
    if fr.subject is None or reason_of(fr.subject) is not None:
        v: Optional[bool] = True if any(a == "*" for a in alts) else None
    else:
        import fnmatch
        v = any(fnmatch.fnmatchcase(fr.subject, a) for a in alts)
    _branch(st, fr, v)
    return m.group(2)


def _run_words(st: _State, words: list[Word], lineno: int, display: str) -> None:
    """Walks one logical line: `if`/`elif`/`else`/`fi` and `case` with conditions that can be
    decided statically take one branch; undecidable ones are read branch by branch."""
    i = 0
    cmd: list[Word] = []
    n = len(words)
    while i <= n:
        w = words[i] if i < n else Word(";")
        at_start = not cmd
        kw = w.text if at_start and not w.quoted else ""
        if kw in ("if", "elif", "while", "until", "for", "select"):
            j = i + 1
            while j < n and not (words[j].text in ("then", "do") and not words[j].quoted):
                j += 1
            cond = [x for x in words[i + 1:j] if not (x.text == ";" and not x.quoted)]
            if kw in ("while", "until", "for", "select"):
                fr = _Frame("loop")
                fr.val = None if _active(st) else False
                st.frames.append(fr)
            elif kw == "if":
                fr = _Frame("if", "if " + " ".join(x.text for x in cond)[:60])
                st.frames.append(fr)
                _branch(st, fr, _cond_value(cond) if _active(st) else False)
                if not _active_outer(st, fr):
                    fr.val = False
            elif st.frames and st.frames[-1].kind == "if":
                _branch(st, st.frames[-1], _cond_value(cond))
            i = j + 1
            continue
        if kw == "case":
            j = i + 1
            while j < n and not (words[j].text == "in" and not words[j].quoted):
                j += 1
            fr = _Frame("case", "case " + " ".join(x.text for x in words[i + 1:j])[:60])
            fr.subject = words[i + 1].text if i + 1 < j else None
            if words[i + 1:j] and words[i + 1].unknown:
                fr.subject = mark(words[i + 1].unknown)
            fr.val = None if _active(st) else False
            fr.taken = not _active(st)
            st.frames.append(fr)
            i = j + 1
            continue
        if kw == "else":
            if st.frames and st.frames[-1].kind == "if":
                fr = st.frames[-1]
                _branch(st, fr, True)
                fr.closed = True
            i += 1
            continue
        if kw in ("fi", "done", "esac"):
            want = {"fi": "if", "done": "loop", "esac": "case"}[kw]
            if st.frames and st.frames[-1].kind == want:
                _close(st, st.frames.pop())
            i += 1
            continue
        if kw in ("then", "do", "{", "}"):
            i += 1
            continue
        if w.text in OPERATORS and not w.quoted:
            if cmd and _active(st):
                _simple(st, cmd, lineno, display)
            cmd = []
        else:
            cmd.append(w)
        i += 1


_KEYWORDS = {"if", "then", "else", "elif", "fi", "do", "done", "while", "until", "{", "}", "!", "case", "esac"}


def _simple(st: _State, cmd: list[Word], lineno: int, display: str) -> None:
    while cmd and cmd[0].text in _KEYWORDS and not cmd[0].quoted:
        cmd = cmd[1:]
    if not cmd:
        return
    head = cmd[0].text
    if head == "eval" and not cmd[0].quoted and len(cmd) > 1 and st.depth < 8:
        # `eval $CMD` / `eval "torchrun …"`: the arguments, joined, are read as a command line
        st.depth += 1
        try:
            _run_words(st, split_words(" ".join(w.text for w in cmd[1:]), st.env, lineno), lineno, display)
        finally:
            st.depth -= 1
        return
    if head in ("for", "[", "[[", "test", "echo", "printf", "cd", "mkdir", "rm", "cp", "mv", "set",
                "trap", "shift", "exit", "return", "wait", "sleep", "cat", "ls", "pip", "git", "wget",
                "curl", "unset", "read"):
        if head == "unset":
            for w in cmd[1:]:
                st.env.pop(w.text, None)
        return
    if head in ("export", "declare", "local", "readonly", "typeset"):
        for w in cmd[1:]:
            if w.text.startswith("-"):
                continue
            a = _assign(w.text)
            if a:
                name, val, plus = a
                st.env[name] = (st.env.get(name, "") if plus and isinstance(st.env.get(name), str) else "") + val
        return
    if head in ("source", ".") and len(cmd) > 1:
        if cmd[1].unknown:
            return
        _follow(st, cmd[1].text)
        return
    # leading assignments
    k = 0
    prefix_env: dict[str, Value] = {}
    while k < len(cmd):
        a = _assign(cmd[k].text) if not cmd[k].quoted or "=" in cmd[k].text else None
        if not a or cmd[k].text.startswith("="):
            break
        name, val, plus = a
        prefix_env[name] = val
        k += 1
    if k == len(cmd):
        st.env.update(prefix_env)
        return
    if cmd[k].text in ("sbatch", "bash", "sh") and len(cmd) > k + 1 and cmd[k + 1].text != "-c":
        # `sbatch other.sh` / `bash other.sh`: follow into the repository file
        j = k + 1
        while j < len(cmd) and cmd[j].text.startswith("-"):
            t = cmd[j].text
            opt_col = cmd[j].col
            if cmd[k].text == "sbatch":
                if "=" in t and t.startswith("--"):
                    key, val = t.split("=", 1)
                elif (not t.startswith("--") or t in _SBATCH_VALUE) and j + 1 < len(cmd):
                    key, val = t, cmd[j + 1].text
                    j += 1
                else:
                    key, val = t, None
                if not cmd[j].unknown:
                    _sbatch(key, val, Source(path=display, line=lineno, col=opt_col), st.facts, st.sbatch)
            j += 1
        if j < len(cmd) and not cmd[j].unknown:
            _follow(st, cmd[j].text)
        return
    words = [w.text for w in cmd]
    unknown = {w.text: w.unknown for w in cmd if w.unknown}
    src = Source(path=display, line=lineno, col=cmd[0].col)
    merged_env = dict(st.env)
    merged_env.update(prefix_env)
    inv = parse_command(words, src, Origin.CONFIG, unknown, cwd=os.path.dirname(st.path) or ".",
                        env=merged_env, diagnostics=st.diagnostics)
    if inv is None:
        return
    if os.path.basename(words[k]) in ("srun", "mpirun", "mpiexec"):
        inv = inv.model_copy(update={"module": inv.module})
        if "ntasks_per_node" in st.sbatch and not any(n == "gpus_per_node" for n, _ in inv.facts) \
                and _plain_python(words[k:]):
            inv.facts.append(("gpus_per_node", Fact(
                value=st.sbatch["ntasks_per_node"], origin=Origin.CONFIG, source=src,
                reason="srun starts one process per task (#SBATCH --ntasks-per-node)")))
    st.invocations.append(inv)


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


def extract(path: str, text: str, args: Optional[list[str]] = None) -> Extraction:
    if os.path.basename(path).lower() in ("makefile", "gnumakefile") or path.endswith(".mk"):
        text = makefile_as_shell(text)
    env: dict[str, Value] = {}
    positional: dict[str, Value] = {}
    for n, a in enumerate(args or [], 1):
        positional[str(n)] = a
    env["PWD"] = os.path.dirname(path) or "."
    st = _State(path, env, seen={os.path.abspath(path)})
    try:
        _run_text(st, text, path)
    except RecursionError:  # pragma: no cover - pathological input
        pass
    # SLURM variables in launch lines resolve from the header: re-run once with them set
    if st.sbatch and any(f.reason and "SLURM_" in f.reason for inv in st.invocations
                         for _, f in inv.facts if not f.known):
        env2: dict[str, Value] = {"PWD": env.get("PWD", ".")}
        for var, key in SLURM_ENV.items():
            if key in st.sbatch:
                env2[var] = str(st.sbatch[key])
        st2 = _State(path, env2, seen={os.path.abspath(path)})
        _run_text(st2, text, path)
        st = st2
    if st.written:
        # configs the script writes itself were read from its here-documents
        st.invocations = [inv.model_copy(update={"configs": [c for c in inv.configs
                                                             if os.path.basename(c) not in st.written]})
                          for inv in st.invocations]
    refs = list(st.references)
    for inv in st.invocations:
        refs.extend(inv.configs)
    return Extraction(path=path, kind="shell", facts=st.facts, diagnostics=st.diagnostics,
                      invocations=st.invocations, references=refs)
