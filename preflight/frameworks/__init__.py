"""Framework adapters: one module per training framework.

An adapter says what launches a framework's jobs (its programs and `python -m` modules),
what configures them (which config documents are its own, and how their keys map to
facts), and which library defaults its idioms imply. Each carries EXAMPLES — small jobs in
the framework's documented idiom with the facts they must yield at their lines — that the
test suite runs through the real pipeline, and a coverage note (what is read, what is not)
from which docs/frameworks.md's table is written.

Adapters get their value spellings (optimizer, precision, FSDP strategy, dtype, attention
names) from the shared vocabulary tables, never from tables of their own.

Config documents are claimed in registry order (`ADAPTERS`): the first adapter whose
`claims(cfg, path)` is true reads the document; more specific formats come first, DeepSpeed
(whose keys other formats embed) last.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Optional

from preflight.lang import lexicon, overrides
from preflight.lang.shell.lines import lines_of, locate_flag
from preflight.lang.shell.values import reason_of
from preflight.plan import Diagnostic, Extraction, Fact, Invocation, Origin, Source

# --------------------------------------------------------------------------- examples


@dataclass
class Example:
    """A small job in the framework's idiom and the facts it must yield.

    `files` maps relative paths to contents; `command` is the launch command (as after
    `preflight check … --`); `paths` what to pass to `check` (default: every file when there
    is no command). `facts` maps a fact name to `(value, "path:line")` — the value and where
    it is stated — or to `(value, "path:line", origin)`; a value of `UNKNOWN` expects an
    explicit unknown at that place."""

    files: dict[str, str]
    facts: dict[str, tuple]
    command: Optional[str] = None
    paths: Optional[list[str]] = None
    title: str = ""


#: expected value of a fact that must be an explicit unknown
UNKNOWN = object()


# --------------------------------------------------------------------------- adapters


class Framework:
    """Base of every adapter. Subclasses set the class attributes and override the hooks
    they support; the defaults read nothing."""

    #: short identifier (the module's name) and the name users know
    name: ClassVar[str] = ""
    title: ClassVar[str] = ""
    #: programs whose command lines the adapter reads (`tune`, `composer`)
    programs: ClassVar[tuple[str, ...]] = ()
    #: what the adapter reads and what it does not (docs/frameworks.md)
    reads: ClassVar[tuple[str, ...]] = ()
    not_read: ClassVar[tuple[str, ...]] = ()
    EXAMPLES: ClassVar[list[Example]] = []
    #: the flags the framework defines for its scripts: name → (fact, converter(text))
    FLAGS: ClassVar[dict[str, tuple[str, Callable[[Optional[str]], Any]]]] = {}
    #: the table read when no other framework's flags are recognised
    flags_fallback: ClassVar[bool] = False
    #: words in a script's path or module that name the framework's own entry points
    #: (`openrlhf.cli.train_sft`): such a line's flags are this framework's, whatever
    #: other frameworks' flag shapes they resemble
    script_markers: ClassVar[tuple[str, ...]] = ()
    #: the framework's one-letter options and the long flag each stands for
    #: (`-b 64` → `--batch-size 64`), applied to a line once its flags are the framework's
    short_flags: ClassVar[dict[str, str]] = {}
    #: the flag (or flags, by release) giving the global batch (accumulation = global /
    #: (micro × data-parallel))
    global_batch_flag: ClassVar[str | tuple[str, ...]] = ""
    #: Python entry points (`python -m verl.trainer.main_ppo`, `megatron_gpt_pretraining.py`)
    #: whose launch lines the adapter reads: regular expressions searched in the module or
    #: script a `python` / `torchrun` / `deepspeed` line runs
    entry_points: ClassVar[tuple[str, ...]] = ()
    #: those entry points as users write them (docs/frameworks.md)
    launched_by: ClassVar[tuple[str, ...]] = ()

    # -- config documents (YAML / JSON / TOML as a dict with key positions)
    def claims(self, cfg: dict, path: str) -> bool:
        """Is this config document this framework's?"""
        return False

    def read_config(self, cfg: dict, out: "ConfigOut") -> None:
        """Facts of a config document this adapter claims (or of command-line overrides of
        it, `out.partial`: then no defaults)."""

    def config_overrides(self, cfg: dict, args: list[str]) -> list[tuple[tuple, Any, str]]:
        """(key path, value, why) that the arguments of the line running a config this
        adapter claims set in it (mmengine's `--cfg-options a.b=1`, detectron2's `a.b=c`)."""
        return []

    def flag_defaults(self, flags: dict[str, Any], script: str = "") -> list[tuple[str, Any, str]]:
        """(fact, value, why) the framework's script fixes when its flags leave them out;
        `script` is the script or module the line runs."""
        return []

    def line_facts(self, args: list[str], source: Optional[Source]) -> list[tuple[str, Fact]]:
        """Facts of a line's arguments that are not `--flag value` pairs (detectron2's
        trailing `KEY VALUE` config overrides), once the line's flags are this framework's."""
        return []

    def flag_lora(self, flags: dict[str, Optional[str]], script: str) -> Optional[dict]:
        """The LoRA adapter a line's flags (`{name: value}`) turn on, if any."""
        return None

    def reads_flags(self, flags: dict[str, Any], script: str) -> bool:
        """Are these arguments of a launch line (`{name: (value, index)}`) this framework's
        flags? `script` is the script or module the line runs."""
        return False

    # -- launch lines
    def launch_python(self, inv: Invocation, origin: Origin) -> Invocation:
        """The invocation of a line that runs one of `entry_points` (its arguments in the
        framework's own syntax, Hydra overrides say), with the facts they fix; other roles
        the line trains go in `roles`. `origin`: the line's (cli after `--`, else config)."""
        return inv

    def launch(self, prog: str, rest: list[str], line: Any, cwd: str = "") -> Optional[Invocation]:
        """The invocation a command line of one of `programs` runs (`rest` after the
        program's name; `line` collects the launcher's facts)."""
        return None


#: registry order = claim order (see the module docstring)
_MODULES = ("accelerate", "torchtune", "olmo", "nanotron", "levanter", "composer", "nemo", "easyr1", "lightning", "axolotl", "llamafactory",
            "litgpt", "neox", "oumi", "swift", "timm", "diffusers", "unsloth", "trl", "hf_trainer", "torchtitan", "megatron", "openrlhf",
            "dschat", "nanogpt", "mmengine", "detectron2", "fire_cli", "peft", "verl", "torchrun", "deepspeed")

_LOADED: list[Framework] = []


def adapters() -> list[Framework]:
    """Every adapter, in claim order (imported on first use)."""
    if not _LOADED:
        for m in _MODULES:
            mod = importlib.import_module(f"preflight.frameworks.{m}")
            _LOADED.append(mod.ADAPTER)
    return _LOADED


def get(name: str) -> Framework:
    return next(a for a in adapters() if a.name == name)


def for_config(cfg: Any, path: str) -> Optional[Framework]:
    """The adapter that reads this config document, if any."""
    if not isinstance(cfg, dict):
        return None
    return next((a for a in adapters() if a.claims(cfg, path)), None)


def for_program(prog: str) -> Optional[Framework]:
    """The adapter that reads command lines of this program."""
    return next((a for a in adapters() if prog in a.programs), None)


def for_entry(name: str) -> Optional[Framework]:
    """The adapter that reads launch lines running this module or script."""
    if not name:
        return None
    return next((a for a in adapters() if any(re.search(p, name) for p in a.entry_points)), None)


def flag_reader(flags: dict[str, Any], script: str) -> tuple[Optional[str], dict]:
    """The framework whose flags a line's arguments are, and its flag table."""
    ordered = sorted((a for a in adapters() if a.FLAGS), key=lambda a: a.flags_fallback)
    words = set(re.split(r"[/\\.\s]+", script.lower()))
    for a in ordered:
        if words & set(a.script_markers):
            return a.name, a.FLAGS
    for a in ordered:
        if a.flags_fallback or a.reads_flags(flags, script):
            return a.name, a.FLAGS
    return None, {}


#: recipe keys (any framework's config document) that switch on a loss keeping no full
#: logits: the Trainer's / TRL's `use_liger_kernel`, LLaMA-Factory's `enable_liger_kernel`,
#: axolotl's Liger and Cut-Cross-Entropy plugin settings
FUSED_LOSS_KEYS = ("use_liger_kernel", "enable_liger_kernel", "liger_fused_linear_cross_entropy",
                   "cut_cross_entropy")


def fused_loss_switch(cfg: Any, o: "ConfigOut") -> Optional[dict]:
    """`{"what", "line"}` (what the PF111 rule cites) for the first fused-loss switch set
    true at the top of a config document, else None."""
    if not isinstance(cfg, dict):
        return None
    for k in FUSED_LOSS_KEYS:
        if cfg.get(k) is True:
            return {"what": f"{k}: true", "line": o.src((k,)).line}
    return None


#: the keys of FUSED_LOSS_KEYS that switch Liger-Kernel on (the `loss_kernel` fact, liger)
LIGER_KEYS = FUSED_LOSS_KEYS[:3]
#: axolotl's Liger plugin: its layer-kernel keys (absent: off) → Liger's kernel
AXOLOTL_LIGER_LAYERS = (("liger_rms_norm", "rms_norm"), ("liger_glu_activation", "swiglu"),
                        ("liger_swiglu", "swiglu"), ("liger_rope", "rope"))


def liger_facts(cfg: Any, o: "ConfigOut") -> None:
    """The `loss_kernel` fact (liger) at the first Liger switch set true at the top of a
    config document; with axolotl's plugin key, the `liger` fact's layers from its layer
    keys (the plugin passes each to Liger's patch, None meaning off)."""
    if not isinstance(cfg, dict):
        return
    for k in LIGER_KEYS:
        if cfg.get(k) is True:
            o.put("loss_kernel", "liger", (k,), f"{k}: true (Liger-Kernel)")
            if k == "liger_fused_linear_cross_entropy":
                layers = sorted({kern for key, kern in AXOLOTL_LIGER_LAYERS
                                 if cfg.get(key) is True})
                o.put("liger", {"layers": layers}, (k,), "axolotl's Liger plugin: "
                      + (", ".join(layers) if layers else "no layer kernel") + " ("
                      + ", ".join(key for key, _ in AXOLOTL_LIGER_LAYERS) + ")")
            return


def read_document(path: str, cfg: Any, pos: dict, *, kind: str,
                  diagnostics: Optional[list[Diagnostic]] = None,
                  where: Optional[Callable[[tuple], Optional[Source]]] = None,
                  references: Optional[list[str]] = None,
                  unread: Optional[Callable[[Any], Optional[str]]] = None) -> Extraction:
    """A parsed config document (YAML, JSON, TOML, a Python config) read by the framework
    adapter that claims it; `kind` names the extraction when none does, and then the knob
    lexicon reads what it can by the keys' names (origin `inferred`). `where` places a key
    path when the document was merged from several files (a Python config's `_base_`
    files, includes, a Hydra composition), `references` the files it was merged from; `unread(value)` says why a value of
    the document's language is not known (a Python config's computed values)."""
    fw = for_config(cfg, path)
    place = None
    if where is not None:
        def place(p: tuple) -> Source:
            return where(p) or Source(path=path, line=1, col=1)
    if fw is None:
        o = ConfigOut(path, pos, where=place)
        inferred(cfg, o, unread)
        return Extraction(path=path, kind=kind, facts=o.facts, diagnostics=list(diagnostics or []),
                          references=list(references or []),
                          extras={"model_refs": o.model_refs} if o.model_refs else {})
    o = ConfigOut(path, pos, where=place)
    try:
        fw.read_config(cfg, o)
    except (TypeError, ValueError, AttributeError, KeyError, IndexError) as e:
        # a document of odd shapes (a number where a section is expected): what was read
        # stands, the rest is said, never a traceback
        diagnostics = list(diagnostics or []) + [Diagnostic(
            code="PF005", name="malformed-config", severity="warning",
            message=f"{fw.title} config: a value of an unexpected type stopped the reading "
                    f"({type(e).__name__}); later keys are not read", path=path, line=1, col=1)]
    if o.model_refs:
        o.extras["model_refs"] = o.model_refs
    fused = fused_loss_switch(cfg, o)
    if fused is not None and "fused_loss" not in o.extras:
        o.extras["fused_loss"] = fused
        liger_facts(cfg, o)
    o.extras["recipe"] = fw.name
    if fw.name == "deepspeed":
        o.extras["deepspeed"] = True
    return Extraction(path=path, kind=fw.name, facts=o.facts, diagnostics=list(diagnostics or []),
                      references=list(o.configs) + [r for r in references or [] if r not in o.configs],
                      extras=o.extras)


def inferred(cfg: Any, o: "ConfigOut", unread: Optional[Callable[[Any], Optional[str]]] = None) -> None:
    """What the knob lexicon reads by the keys' names in a document no adapter claims, put
    with origin `inferred` (an unknown keeps the value it would have under one reading)."""
    for r in lexicon.read(cfg, unread):
        if r.value is None:
            o.facts.append((r.fact, Fact.unknown(r.why, source=o.src(r.path),
                                                 default=r.alternative)))
        elif r.fact == "model":
            o.hub_model(r.value, r.path, Origin.INFERRED, r.why)
            o.model_refs[-1]["origin"] = Origin.INFERRED.value
        else:
            o.put(r.fact, r.value, r.path, r.why, Origin.INFERRED)


# --------------------------------------------------------------------------- config output


class ConfigOut:
    """Where an adapter puts what it reads from one config document: facts at their keys'
    positions, the config files it names, model references for model resolution."""

    def __init__(self, path: str, pos: dict, *, origin: Origin = Origin.CONFIG,
                 where: Optional[Callable[[tuple], Source]] = None, partial: bool = False):
        self.path, self.pos = path, pos
        self.origin = origin
        self.partial = partial          # command-line overrides only: no defaults
        self._where = where
        self.facts: list[tuple[str, Fact]] = []
        self.configs: list[str] = []
        self.model_refs: list[dict] = []
        self.extras: dict[str, Any] = {}

    def src(self, p: tuple) -> Source:
        if self._where is not None:
            return self._where(p)
        q = p
        while q and q not in self.pos:
            q = q[:-1]
        line, col = self.pos.get(q, (1, 1))
        return Source(path=self.path, line=line, col=col)

    def put(self, name: str, value: Any, p: tuple, why: str = "", origin: Optional[Origin] = None) -> None:
        if value is None and name not in ("fsdp", "lora"):
            return
        origin = origin or self.origin
        if self.partial and origin in (Origin.DEFAULT, Origin.ASSUMED):
            return
        self.facts.append((name, Fact(value=value, origin=origin, source=self.src(p),
                                      reason=why or f"{'.'.join(map(str, p))}: {value}")))

    def default(self, name: str, value: Any, p: tuple, why: str) -> None:
        self.put(name, value, p, why, Origin.DEFAULT)

    def unknown(self, name: str, p: tuple, why: str) -> None:
        self.facts.append((name, Fact.unknown(why, source=self.src(p))))

    def hub_model(self, name: str, p: tuple, origin: Optional[Origin] = None, why: str = "") -> None:
        self.put("model", name, p, why, origin)
        self.model_refs.append({"kind": "hub", "name": name, "source": self.src(p)})

    def lora(self, r: Any, alpha: Any, targets: Any, bits: int, p: tuple, why: str = "",
             dropout: Any = None) -> None:
        """The `lora` fact and model reference (`dropout`: the config's lora_dropout as
        written; anything but a number is not known)."""
        if not is_int(r):
            self.unknown("lora", p, "adapter set but its rank is not a number in this file")
            return
        t = lora_targets(targets)
        num = (lambda v: v if isinstance(v, (int, float)) and not isinstance(v, bool) else None)
        val = {"r": r, "alpha": num(alpha), "targets": t, "base_bits": bits}
        if num(dropout) is not None:
            val["dropout"] = num(dropout)
        self.put("lora", val, p, why or f"LoRA r={r}")
        self.model_refs.append({"kind": "lora", "r": r, "alpha": val["alpha"], "targets": t,
                                "dropout": num(dropout), "source": self.src(p)})

    def quant(self, bits: int, p: tuple, why: str = "") -> None:
        self.put("param_dtype", f"int{bits}", p, why)
        self.model_refs.append({"kind": "quant", "bits": bits, "source": self.src(p)})


# --------------------------------------------------------------------------- small readers


def get_path(d: Any, *path: Any) -> Any:
    for k in path:
        if not isinstance(d, dict) or k not in d:
            return None
        d = d[k]
    return d


def is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def truthy(v: Any) -> bool:
    return v is True or (isinstance(v, str) and v.lower() in ("true", "yes", "1"))


# --- converters of a flag's text (None: the flag given with no value) into a fact value,
# shared by the adapters' flag tables

def flag_int(s: Optional[str]) -> Optional[int]:
    """`--micro-batch-size 4` → 4; anything that is not an integer → None."""
    try:
        return int(str(s))
    except (TypeError, ValueError):
        return None


def flag_bool(s: Optional[str]) -> Optional[bool]:
    """A boolean flag: bare (`--bf16`) or `true/1/yes` → True, `false/0/no` → False."""
    if s is None:
        return True
    return {"true": True, "1": True, "yes": True, "false": False, "0": False,
            "no": False}.get(str(s).lower())


def flag_values(flags: dict[str, Any]) -> dict[str, Optional[str]]:
    """A line's parsed flags (`{name: (value, index)}`, or plain values) as `{name: value}`,
    dashes in names as underscores (`--batch-size` → `batch_size`)."""
    return {k.replace("-", "_") if not k.startswith("-") or k.startswith("--") else k:
            (v[0] if isinstance(v, tuple) else v) for k, v in flags.items()}


def when_true(value: Any) -> Callable[[Optional[str]], Any]:
    """A converter giving `value` when the boolean flag is on (`--bf16` → "bf16")."""
    return lambda s: value if flag_bool(s) else None


def lora_targets(v: Any) -> list[str]:
    """LoRA target modules however written: a list, one name, `all-linear`, a comma list, or
    a list-like string from a command line (`'[q_proj,v_proj]'`)."""
    if v is None:
        return []
    if isinstance(v, (list, tuple)):
        return [str(x).strip().strip("'\"") for x in v if str(x).strip()]
    s = str(v).strip()
    if s.startswith("[") and s.endswith("]"):
        s = s[1:-1]
    return [t.strip().strip("'\"") for t in s.replace(",", " ").split() if t.strip().strip("'\"")]


def dotted_overrides(words: list[str], *, dashes: bool = False) -> dict:
    """`key.sub=value` words (Hydra / OmegaConf / torchtune overrides, read by
    `preflight.lang.overrides`; `--key.sub value` flags with `dashes`) → a nested dict of
    typed values. A value the shell could not expand stays a string (its marker makes it
    unknown where it is read)."""
    if not dashes:
        return overrides.nested([o for o in overrides.parse(words) if o.op != "delete"])
    flat: list[str] = []
    i = 0
    while i < len(words):
        w = words[i]
        if w.startswith("--") and len(w) > 2:
            if "=" in w:
                flat.append(w[2:])
            elif i + 1 < len(words) and not words[i + 1].startswith("--"):
                flat.append(f"{w[2:]}={words[i + 1]}")
                i += 1
            else:
                flat.append(f"{w[2:]}=true")
        i += 1
    return overrides.nested(overrides.parse(flat))


def locate_word(source: Optional[Source], word: str) -> Optional[Source]:
    """Where a word (`batch_size=`, `--trainer.devices`) of a launch line is written: on the
    line or its continuation lines, else the line."""
    if source is None:
        return None
    if word.startswith("-"):
        return locate_flag(source, word)
    lines = lines_of(source.path) or []
    i = max(source.line - 1, 0)
    while i < len(lines) and i - source.line < 400:
        k = lines[i].find(word)
        if k >= 0 and (k == 0 or not (lines[i][k - 1].isalnum() or lines[i][k - 1] in "._")):
            return Source(path=source.path, line=i + 1, col=k + 1)
        if not lines[i].rstrip().endswith("\\"):
            break
        i += 1
    return source


def overrides_out(source: Optional[Source], origin: Origin, *, dashes: bool = False) -> ConfigOut:
    """A ConfigOut for command-line overrides (`key.sub=value`, or `--key.sub` with
    `dashes`): each fact at its override word on the launch line; no defaults."""

    def where(p: tuple) -> Source:
        key = ".".join(str(x) for x in p)
        word = f"--{key}" if dashes else f"{key}="
        return locate_word(source, word) or Source(path="<command>", line=1, col=1)

    return ConfigOut(source.path if source else "<command>", {}, origin=origin, where=where,
                     partial=True)


def read_overrides(reader: Callable[[dict, "ConfigOut"], None], words: list[str],
                   source: Optional[Source], origin: Origin, *, dashes: bool = False) -> list[tuple[str, Fact]]:
    """Facts of a launch line's overrides read by `reader` (an adapter's config reader). An
    override whose value the shell could not expand (`batch_size=$BS`) is an explicit
    unknown of the facts its key sets — never the file's value it replaces."""
    over = dotted_overrides(words, dashes=dashes)
    blind: list[tuple[tuple, str]] = []

    def split(d: dict, p: tuple) -> dict:
        keep = {}
        for k, v in d.items():
            if isinstance(v, dict):
                keep[k] = split(v, p + (k,))
            elif isinstance(v, str) and "\0" in v:
                blind.append((p + (k,), v))
            else:
                keep[k] = v
        return keep

    o = overrides_out(source, origin, dashes=dashes)
    reader(split(over, ()), o)
    for p, raw in blind:
        probe: dict = {}
        cur = probe
        for part in p[:-1]:
            cur = cur.setdefault(part, {})
        cur[p[-1]] = 1                 # which facts does this key set?
        o2 = overrides_out(source, origin, dashes=dashes)
        reader(probe, o2)
        key = ".".join(p)
        for name, f in o2.facts:
            o.facts.append((name, Fact.unknown(f"{key}: {reason_of(raw) or 'not known statically'}",
                                               source=f.source).model_copy(update={"over": origin})))
    return o.facts



# --------------------------------------------------------------------------- script calls


#: what an adapter's script hook answers for a call that is not its own (None is an answer:
#: "recognised, no value")
NO_MATCH = object()


def answers(*names: str, suffixes: tuple[str, ...] = (),
            prefixes: tuple[str, ...] = ()) -> Callable[[Callable], Callable]:
    """Declare the calls a script hook can answer, by their last name part (`Call.name`):
    these names, or names ending / starting with these. The collector offers a call only to
    the hooks that may answer it, so a declaration must hold every name the hook's own test
    accepts (a superset is harmless: the hook still decides). A hook without a declaration
    is offered every call."""
    def mark(hook: Callable) -> Callable:
        hook.answers = (frozenset(names), tuple(suffixes), tuple(prefixes))
        return hook
    return mark


def may_answer(hook: Callable, name: str) -> bool:
    """Whether a script hook may answer a call of this last name (see `answers`)."""
    decl = getattr(hook, "answers", None)
    if decl is None:
        return True
    names, suffixes, prefixes = decl
    return name in names or (bool(suffixes) and name.endswith(suffixes)) or \
        (bool(prefixes) and name.startswith(prefixes))


class Call:
    """One call of a Python script as the evaluator hands it to the training-API patterns
    (preflight.extract.py_patterns), which pass it on to the adapters' script hooks: the
    call's dotted name (`qual`, `?`-prefixed when its module is not known), its last part
    (`name`), what it is called on (`recv`), its top module (`top`), its evaluated arguments
    and its AST node.

    A script hook is `hook(p, ev, c) -> value | NO_MATCH`, where `p` is the script's fact
    collector (`emit`, `src`, its state flags and shared readers such as `hub_model`, `bnb`,
    `deepspeed_dict`, `fsdp_strategy`, passed in so that adapters never import each other)
    and `ev` the evaluator."""

    __slots__ = ("qual", "name", "recv", "top", "line", "col", "args", "kwargs", "node",
                 "kwnodes", "func")

    def __init__(self, qual: str, args: list, kwargs: dict, node: Any, kwnodes: dict,
                 func: Any = None) -> None:
        self.qual = qual
        self.name = qual.rsplit(".", 1)[-1]
        self.recv = qual[: -len(self.name) - 1] if "." in qual else ""
        self.top = qual.lstrip("?").split(".", 1)[0]
        self.line, self.col = node.lineno, node.col_offset + 1
        self.args, self.kwargs, self.node, self.kwnodes = args, kwargs, node, kwnodes
        #: the callee's own value (None when not handed): where a name chosen at run time
        #: came from (`getattr(torch.optim, args.optim)`: the flag's default or its value)
        self.func = func

    def kw(self, k: str, pos: Optional[int] = None) -> Any:
        """The argument `k`, by keyword or at position `pos`; None when not given."""
        if k in self.kwargs:
            return self.kwargs[k]
        if pos is not None and pos < len(self.args):
            return self.args[pos]
        return None
