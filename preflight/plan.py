"""The vocabulary every stage speaks: facts, training plans, diagnostics, jobs.

A `Fact` is one value with its provenance (where and how it was known) or an explicit
unknown with a reason. A `TrainingPlan` is the set of facts for one job, one per fact
name. Stages depend on this module and on the stage before them, never on each other's
internals.
"""

from __future__ import annotations

from enum import Enum
from typing import Any, Iterable, Literal, Optional

import re

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from preflight.facts.names import (CONTRACT_FACTS, ENUMS, FACT_NAMES, INT_FACTS,  # noqa: F401
                                   check_value, fact_name)


class Origin(str, Enum):
    """How a value was known. Order in `PRECEDENCE` decides which source wins."""

    RUNTIME = "runtime"    # read from the live objects at the start of training (callbacks)
    CLI = "cli"            # a command-line flag given to the script or launcher
    CONFIG = "config"      # a launcher or config file (DeepSpeed JSON, YAML, TOML, sbatch)
    LITERAL = "literal"    # a literal in the script
    DERIVED = "derived"    # computed from other known values
    DEFAULT = "default"    # an argparse / dataclass / library default
    CATALOG = "catalog"    # the offline model catalogue / a resolved config.json
    PROJECT = "project"    # [tool.preflight] in pyproject.toml
    # read by the generic knob lexicon from a document no framework adapter owns: the key's
    # name says what it likely means, the job may not use it; `reason` says which key
    INFERRED = "inferred"
    ASSUMED = "assumed"    # preflight's own assumption, always labelled as such
    UNKNOWN = "unknown"    # cannot be known statically; `reason` says why


#: Highest first (docs/design.md: command-line flag > launcher/config file > script literal >
#: argparse/dataclass default > library default > [tool.preflight] > inferred from a knob's name >
#: assumption).
PRECEDENCE: tuple[Origin, ...] = (
    Origin.RUNTIME,
    Origin.CLI,
    Origin.CONFIG,
    Origin.LITERAL,
    Origin.DERIVED,
    Origin.DEFAULT,
    Origin.CATALOG,
    Origin.PROJECT,
    Origin.INFERRED,
    Origin.ASSUMED,
    Origin.UNKNOWN,
)


def rank(origin: Origin) -> int:
    """Lower is stronger."""
    return PRECEDENCE.index(origin)


#: an evaluator's unknown-piece marker (`\x00<n>\x00`) and any other control character
_MARKED = re.compile(r"\x00[^\x00]*\x00")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def printable(text: str) -> str:
    """Text fit for a message: an unknown piece shows as `<?>`, no control characters
    (line breaks and tabs kept)."""
    return _CONTROL.sub("", _MARKED.sub("<?>", text))


def in_cell(path: str, cell: Optional[int]) -> str:
    """A notebook's path with the cell a location is in, as every format spells it
    (`nb.ipynb:cell 4`, then `:line:col`, as ruff does); the path alone outside notebooks."""
    return path if cell is None else f"{path}:cell {cell}"


class Source(BaseModel):
    """A location in a file: 1-based line, 1-based column (0 when the format has none).
    In a notebook, `cell` is the 1-based cell and `line` the line within it."""

    model_config = ConfigDict(frozen=True)

    path: str
    line: int = 0
    col: int = 0
    cell: Optional[int] = None

    def __str__(self) -> str:
        return f"{in_cell(self.path, self.cell)}:{self.line}:{self.col}"


class Fact(BaseModel):
    """One extracted value and how it was known; or an explicit unknown with a reason."""

    model_config = ConfigDict(frozen=True)

    value: Any = None
    origin: Origin
    source: Optional[Source] = None
    reason: Optional[str] = None       # why unknown / how derived / what was assumed
    default: Any = None                # for unknowns with a visible default (os.environ.get)
    #: for an unknown: the origin its value would have had (a flag given with a value not
    #: known statically is `cli`): it overrules known values of weaker origins (`merge`)
    over: Optional[Origin] = None

    @model_validator(mode="before")
    @classmethod
    def _no_unknown_pieces(cls, data: Any) -> Any:
        """A text value with a piece not known statically (`$1/ds.json`) is unknown, never a
        known value with a control character in it; reasons are printable."""
        if not isinstance(data, dict):
            return data
        v, r = data.get("value"), data.get("reason")
        if isinstance(v, str) and _CONTROL.search(v):
            data = {**data, "value": None, "origin": Origin.UNKNOWN,
                    "reason": f"{printable(v)!r} is not known statically"
                              + (f" ({printable(r)})" if isinstance(r, str) and r else "")}
        elif isinstance(r, str) and _CONTROL.search(r):
            data = {**data, "reason": printable(r)}
        return data

    @property
    def known(self) -> bool:
        return self.origin is not Origin.UNKNOWN

    @classmethod
    def unknown(cls, reason: str, source: Optional[Source] = None, default: Any = None) -> "Fact":
        return cls(origin=Origin.UNKNOWN, reason=reason, source=source, default=default)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"value": self.value, "origin": self.origin.value,
                               "source": str(self.source) if self.source else None}
        if self.reason:
            out["reason"] = self.reason
        if self.default is not None:
            out["default"] = self.default
        return out


# --------------------------------------------------------------------------- fact names
# The names, their specs and the spellings live in preflight.facts (FACT_NAMES, ENUMS and
# INT_FACTS are importable from here too, for the stages that speak of plans).


class Lora(BaseModel):
    """LoRA / QLoRA settings (`lora` fact value as a dict via model_dump())."""

    r: int
    alpha: Optional[float] = None
    targets: list[str] = Field(default_factory=list)
    base_bits: int = 16            # 4 (QLoRA nf4/fp4), 8 (LLM.int8) or 16
    modules_to_save: list[str] = Field(default_factory=list)
    dropout: Optional[float] = None  # lora_dropout (None: not known, 0 assumed)
    adapter_dtype: Optional[str] = None  # fp32 / bf16 / fp16 (None: the compute dtype)


# --------------------------------------------------------------------------- diagnostics



Severity = Literal["error", "warning", "info"]
#: the severities, most severe first; the one order every filter and format uses
SEVERITIES: tuple[str, ...] = ("error", "warning", "info")
SEVERITY_RANK: dict[str, int] = {s: len(SEVERITIES) - i for i, s in enumerate(SEVERITIES)}


class Diagnostic(BaseModel):
    """A finding at a location. `path` is as the user gave it (or repo-relative)."""

    code: str
    name: str = ""
    severity: Severity = "error"
    message: str
    path: Optional[str] = None
    line: int = 0
    col: int = 0
    fix: Optional[str] = None                     # the cheapest fix, one sentence
    #: in a notebook: the 1-based cell, and `line` is the line within that cell
    cell: Optional[int] = None
    related: list[Source] = Field(default_factory=list)   # other places (conflicts)
    data: dict[str, Any] = Field(default_factory=dict)    # numbers behind the message

    @field_validator("message", "fix")
    @classmethod
    def _printable(cls, v: Optional[str]) -> Optional[str]:
        return printable(v) if isinstance(v, str) else v

    @classmethod
    def at(cls, code: str, message: str, source: Optional[Source], **kw: Any) -> "Diagnostic":
        if source is None:
            return cls(code=code, message=message, **kw)
        return cls(code=code, message=message, path=source.path, line=source.line,
                   col=source.col, **kw)

    def to_json(self) -> dict[str, Any]:
        out = {"code": self.code, "name": self.name, "severity": self.severity,
               "message": self.message, "path": self.path, "line": self.line, "col": self.col}
        if self.cell is not None:
            out["cell"] = self.cell
        if self.fix:
            out["fix"] = self.fix
        if self.related:
            out["related"] = [str(s) for s in self.related]
        return out


# --------------------------------------------------------------------------- the plan

class TrainingPlan(BaseModel):
    """One fact per name for one job. Missing names read as unknown."""

    facts: dict[str, Fact] = Field(default_factory=dict)
    #: every candidate seen, strongest first — kept for conflict findings and --explain
    candidates: dict[str, list[Fact]] = Field(default_factory=dict)

    def fact(self, name: str) -> Fact:
        return self.facts.get(name) or Fact.unknown("not found in any file of the job")

    def value(self, name: str, default: Any = None) -> Any:
        f = self.facts.get(name)
        return f.value if f is not None and f.known else default

    def known(self, name: str) -> bool:
        f = self.facts.get(name)
        return f is not None and f.known

    def source(self, name: str) -> Optional[Source]:
        f = self.facts.get(name)
        return f.source if f is not None else None

    def set(self, name: str, fact: Fact) -> None:
        self.facts[name] = fact

    def candidate_pairs(self) -> list[tuple[str, Fact]]:
        """Every candidate as (name, fact), weakest first: `merge` of them (plus stronger
        ones) rebuilds this plan."""
        pairs = [(n, f) for n, fs in self.candidates.items() for f in reversed(fs)]
        return pairs + [(n, f) for n, f in self.facts.items() if n not in self.candidates]

    def with_values(self, reason: str, **values: Any) -> "TrainingPlan":
        """The same plan with some facts changed (a what-if): each new value is derived,
        with `reason` saying why."""
        facts = dict(self.facts)
        for name, value in values.items():
            facts[str(fact_name(name))] = Fact(value=value, origin=Origin.DERIVED, reason=reason)
        return TrainingPlan(facts=facts, candidates=self.candidates)

    @classmethod
    def from_values(cls, values: dict[str, Any], origin: Origin = Origin.CLI,
                    source: Optional[Source] = None) -> "TrainingPlan":
        """A plan from explicit values (e.g. `preflight estimate --params 7e9 …`)."""
        return cls(facts={k: Fact(value=v, origin=origin, source=source)
                          for k, v in values.items() if v is not None})

    def to_json(self) -> dict[str, Any]:
        return {name: self.fact(name).to_json() for name in CONTRACT_FACTS}


def validated(name: str, fact: Fact) -> Fact:
    """The candidate with its value in canonical type, or — when the value is not allowed
    for the fact (out of range, not one of the vocabulary's values) — an explicit unknown
    at the same source that says why. An unknown fact name raises UnknownFactName."""
    fact_name(name)
    if not fact.known:
        return fact
    value, why = check_value(name, fact.value)
    if why is not None:
        if fact.value is None:
            return fact            # "not set" said by a source (fsdp: None under DeepSpeed)
        how = f"{fact.origin.value}" + (f", {fact.reason}" if fact.reason else "")
        return Fact.unknown(f"{why} ({how})", source=fact.source)
    if type(value) is not type(fact.value) or value != fact.value:
        return fact.model_copy(update={"value": value})
    return fact


def merge(candidates: Iterable[tuple[str, Fact]]) -> TrainingPlan:
    """Assemble facts by precedence; the strongest known candidate wins per name. Every
    candidate is validated once (`validated`).

    Ties at the same origin go to the later candidate (a later CLI flag overrides an earlier
    one, as argparse does).
    """
    by_name: dict[str, list[Fact]] = {}
    for name, fact in candidates:
        name = str(name.value if isinstance(name, Enum) else name)
        by_name.setdefault(name, []).append(validated(name, fact))
    plan = TrainingPlan()
    for name, facts in by_name.items():
        order = sorted(enumerate(facts), key=lambda p: (rank(p[1].origin), -p[0]))
        ranked = [f for _, f in order]
        plan.candidates[name] = ranked
        plan.facts[name] = _overruled(facts) or ranked[0]
    return plan


def _overruled(facts: list[Fact]) -> Optional[Fact]:
    """An unknown from a stronger source than every known candidate (a flag whose value is
    not known statically, over a config file's value) makes the fact unknown: the known
    value is not what runs, only an alternative (said in the reason, kept as `default`).
    None when a known candidate is at least as strong (later candidates win ties)."""
    def strength(p: tuple[int, Fact]) -> tuple[int, int]:
        i, f = p
        return (rank(f.over) if not f.known and f.over is not None else rank(f.origin), -i)

    first = min(enumerate(facts), key=strength)[1]
    known = [f for f in facts if f.known]
    if first.known or first.over is None or not known:
        return None
    alt = min(enumerate(known), key=strength)[1]
    where = f" at {alt.source}" if alt.source else ""
    return Fact.unknown(f"{first.reason or 'not known statically'}; it overrides "
                        f"{alt.value!r} ({alt.origin.value}{where})",
                        source=first.source, default=alt.value).model_copy(
                            update={"over": first.over})


# --------------------------------------------------------------------------- jobs

class Invocation(BaseModel):
    """A script run by a launcher line: `torchrun --nproc_per_node 8 train.py --bs 4`."""

    script: str                                   # path as written, resolved by discovery
    args: list[str] = Field(default_factory=list)  # arguments given to the script
    source: Optional[Source] = None               # the launcher line
    module: Optional[str] = None                  # `python -m pkg.mod` / `accelerate launch -m`
    #: facts the launcher itself fixes for this run (world size, precision flags…)
    facts: list[tuple[str, Fact]] = Field(default_factory=list)
    #: config files the line names (--config_file, --deepspeed ds.json, recipe YAML)
    configs: list[str] = Field(default_factory=list)
    #: the program that starts the script's processes: python | torchrun | deepspeed |
    #: accelerate | srun | mpirun | a recipe CLI | a program preflight does not read
    launcher: Optional[str] = None
    #: environment variables the launch script gives the process (exported, or assigned
    #: before the command), where their values are known statically
    env: dict[str, str] = Field(default_factory=dict)
    #: the role this invocation's job trains where one line trains several models (an RL
    #: trainer's actor and critic), and the invocations of the line's other trained roles:
    #: each is a job of its own; frozen and inference-only roles are none
    role: Optional[str] = None
    roles: list["Invocation"] = Field(default_factory=list)

    def jobs(self) -> list["Invocation"]:
        """This invocation and those of the other roles its line trains."""
        return [self] + [r for r in self.roles]


class Extraction(BaseModel):
    """What one extractor learnt from one file."""

    path: str
    kind: str                                     # python | shell | deepspeed | accelerate | recipe | toml | …
    facts: list[tuple[str, Fact]] = Field(default_factory=list)
    diagnostics: list[Diagnostic] = Field(default_factory=list)
    invocations: list[Invocation] = Field(default_factory=list)
    references: list[str] = Field(default_factory=list)   # other files it names
    #: free-form hand-off to later stages (e.g. model config objects for models/)
    extras: dict[str, Any] = Field(default_factory=dict)
    #: line numbers carrying `# noqa` → codes (empty set = all codes)
    noqa: dict[int, list[str]] = Field(default_factory=dict)
    #: the file's text as read (Python files: rules look for textual patterns in it)
    text: Optional[str] = Field(default=None, exclude=True, repr=False)

    def without_tree(self) -> "Extraction":
        """This extraction without the `ast` tree it keeps in memory (`extras["tree"]`):
        what is cached on disk or sent between processes, where parsing again costs less
        than the tree."""
        if "tree" not in self.extras:
            return self
        return self.model_copy(update={"extras": {k: v for k, v in self.extras.items()
                                                  if k != "tree"}})


class JobSpec(BaseModel):
    """Discovery's answer: which files form one job, and how the entry is invoked."""

    entry: Optional[str] = None                   # main script (or recipe) path
    files: list[str] = Field(default_factory=list)  # every file that forms the job, entry first
    invocation: Optional[Invocation] = None
    declared: bool = False                        # from [[tool.preflight.jobs]]
    overrides: dict[str, Any] = Field(default_factory=dict)  # e.g. gpu from the declaration


class Job(BaseModel):
    """An assembled job: the plan and everything found on the way."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    entry: Optional[str] = None
    files: list[str] = Field(default_factory=list)
    plan: TrainingPlan = Field(default_factory=TrainingPlan)
    diagnostics: list[Diagnostic] = Field(default_factory=list)
    extractions: list[Extraction] = Field(default_factory=list)
