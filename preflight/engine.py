"""The rule engine: the `Rule` base class, the registry, and the filters between rules and
the user (select / ignore, per-file-ignores, `# noqa`, fail level).

A rule is one class in one file of `rules/` (shipped as `preflight.rules`)::

    class StateExceedsCapacity(Rule):
        '''## What it does … ## Why is this bad … ## Example … ## Use instead …'''
        code = "PF101"
        name = "state-exceeds-capacity"
        summary = "Model states alone exceed the GPU's memory"
        severity = "error"
        misconception = None          # 1–6 (docs/ledger.md) or None
        case = "A"                     # A / B / C (docs/ledger.md) or None
        VALID = [Example(files={...}, command="torchrun … train.py")]
        INVALID = [Example(files={...}, command=..., expect=[("PF101", "train.py", 12)])]

        def check(self, ctx):
            if …:
                yield self.diagnostic("…numbers…", ctx.plan.source("optimizer"), fix="…")

Third-party packs register classes the same way through the entry-point group
`preflight.rules` (an entry point may name a Rule subclass, a module, or a list of classes).

The engine imports nothing heavy: rules read the plan and the estimate, never files
(except the cheap text patterns some rules look for in the job's own sources).
"""

from __future__ import annotations

import fnmatch
import importlib
import os
import pkgutil
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Optional, Sequence

from preflight import packs, safe_read, units
from preflight.facts.layout import Layout
from preflight.lazy import lazy
from preflight.lang.notebook import split_virtual
from preflight.noqa import noqa_codes
from preflight.packs import ENTRY_POINT_GROUP  # noqa: F401 - the group, owned there
from preflight.plan import SEVERITY_RANK, Diagnostic, Job, Source, TrainingPlan

# for a rule's what-if on a job sized only by its GPU's capacity: `preflight rules` loads
# the rules but sizes nothing
hardware = lazy("preflight.hardware")

DOC_SECTIONS = ("What it does", "Why is this bad", "Example", "Use instead")


# --------------------------------------------------------------------------- examples

@dataclass
class Example:
    """A small job for a rule's documentation and its generated tests.

    `files` maps relative paths to contents; `command` is the launch command (as after
    `preflight check … --`), `gpu` the GPU to check against; for INVALID examples `expect`
    lists the (code, relative path, line) findings the rule must produce."""

    files: dict[str, str]
    command: Optional[str] = None
    gpu: Optional[str] = "H100-80GB"
    expect: list[tuple[str, str, int]] = field(default_factory=list)
    headroom: Optional[float] = None
    paths: Optional[list[str]] = None      # what to pass to `check` (default: every file)
    #: facts the example relies on other stages to know (its test says so when they do not)
    needs: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------- number formats

def gib(n: Optional[float]) -> str:
    """Bytes in a finding: GiB (MiB / KiB below one GiB), by the one formatter that the
    verdict bar uses too (`preflight.units.gib`); '?' when unknown."""
    return units.gib(n, unknown="?")


def count(n: Optional[float]) -> str:
    """Parameter counts: 7.00B, 125.0M."""
    if n is None:
        return "?"
    if n >= 1e9:
        return f"{n / 1e9:.2f}B"
    if n >= 1e6:
        return f"{n / 1e6:.1f}M"
    return f"{int(n):,}"


def pct(x: float) -> str:
    return f"{x * 100:.0f} %"


# --------------------------------------------------------------------------- context

STATE_KEYS = ("params", "grads", "optimizer", "master")


@dataclass
class RuleContext:
    """What a rule reads: the plan, the estimate (ledger and walls), the job, the config."""

    plan: TrainingPlan
    estimate: Any = None                  # preflight.physics.Estimate or None
    job: Optional[Job] = None
    config: Any = None                    # preflight.config.ProjectConfig or None
    gpu_name: Optional[str] = None
    headroom: float = 0.2
    #: why the job was not sized (preflight.sizing.Unsized), None when it was
    unsized: Any = None
    _what_ifs: dict = field(default_factory=dict, repr=False)

    # ---- the ledger -------------------------------------------------------
    @property
    def ledger(self):
        return getattr(self.estimate, "ledger", None)

    @property
    def walls(self):
        return getattr(self.estimate, "walls", None)

    @property
    def has_ledger(self) -> bool:
        """A ledger of known model states — not one the estimator completed by assuming a
        world size the job leaves open (its sharded lines would be guesses)."""
        led = self.ledger
        if self.unsized is not None and "world_size" in getattr(self.unsized, "facts", ()):
            return False
        return bool(led is not None and led.lines and led.states_bytes is not None)

    @property
    def capacity(self) -> Optional[int]:
        led = self.ledger
        return getattr(led, "capacity_bytes", None) if led is not None else None

    def part(self, key: str) -> Optional[int]:
        led = self.ledger
        return led.bytes_of(key) if led is not None and led.lines else None

    @property
    def states(self) -> Optional[int]:
        return self.ledger.states_bytes if self.has_ledger else None

    @property
    def activations(self) -> Optional[int]:
        """Every activation line added up, whenever each lives (not all at once)."""
        return self.part("activations")

    @property
    def activations_at_peak(self) -> Optional[int]:
        """The activation lines alive at the phase that sets the peak: the activations a
        finding may quote beside the peak."""
        led = self.ledger
        return led.at_peak("activations") if led is not None and led.lines else None

    @property
    def peak_phase(self) -> Optional[str]:
        """The phase of the step that sets the peak ("forward", "loss backward", …)."""
        led = self.ledger
        return led.peak_phase if led is not None else None

    @property
    def peak(self) -> Optional[int]:
        """The predicted peak: the ledger's own (everything but the headroom margin)."""
        return self.ledger.peak if self.has_ledger else None

    @property
    def limit(self) -> Optional[float]:
        """The most the peak may be: capacity less the headroom margin (the ledger's)."""
        led = self.ledger
        return led.limit if led is not None else None

    # ---- what-ifs: the estimator's answer for a changed plan -----------------
    def what_if(self, reason: str, **values: Any):
        """The estimate of this job with some facts changed (`zero_stage=3, fsdp=None`,
        `optimizer="adamw_8bit"`, `micro_batch=1`), on the same GPU and headroom. Rules
        never rescale ledger lines themselves (docs/ledger.md)."""
        key = tuple(sorted((k, repr(v)) for k, v in values.items()))
        if key in self._what_ifs:
            return self._what_ifs[key]
        # imported here: `preflight rules` and `explain` load the engine, not the estimator
        from preflight.physics import estimate, replan
        plan = self.plan.with_values(reason, **values)
        est = replan(self.estimate, plan) if self.estimate is not None else None
        if est is None and self.capacity:
            est = estimate(plan, hardware.custom(int(self.capacity)), self.headroom)
        self._what_ifs[key] = est
        return est

    def largest_micro_batch(self, **values: Any) -> Optional[int]:
        """The largest micro-batch (≤ the job's) whose predicted peak fits the limit, with
        `values` changed too; 0 when not even 1 fits, None when the estimator cannot say.
        Only divisors of the job's micro-batch are tried, so that accumulating
        `micro_batch / k` times more keeps the global batch exactly."""
        mb = self.v("micro_batch")
        if not mb:
            return None
        mb = int(mb)

        def fits(k: int) -> Optional[bool]:
            est = self.what_if(f"micro-batch {k}", micro_batch=k, **values)
            return None if est is None else est.ledger.fits()

        ok = fits(1)
        if ok is None:
            return None
        if not ok:
            return 0
        divisors = _divisors(mb)
        lo, hi = 0, len(divisors) - 1         # fits(divisors[lo]) holds
        if fits(divisors[hi]):
            return divisors[hi]
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if fits(divisors[mid]):
                lo = mid
            else:
                hi = mid
        return divisors[lo]

    @property
    def gpu(self) -> str:
        return self.gpu_name or str(self.plan.value("gpu") or "the GPU")

    def capacity_text(self) -> str:
        return f"{self.gpu} has {gib(self.capacity)} usable"

    # ---- plan shorthands --------------------------------------------------
    def v(self, name: str, default: Any = None) -> Any:
        return self.plan.value(name, default)

    def src(self, *names: str) -> Optional[Source]:
        """The source of the first of `names` that has one (the anchor of a finding)."""
        for n in names:
            s = self.plan.source(n)
            if s is not None and s.line:
                return s
        for n in names:
            s = self.plan.source(n)
            if s is not None:
                return s
        if self.job is not None and self.job.entry:
            return Source(path=self.job.entry, line=1, col=1)
        return None

    @property
    def n(self) -> Optional[int]:
        """Trainable parameters (falls back to all parameters)."""
        return self.v("trainable_params") or self.v("params")

    # ---- the layout: the estimator's own (preflight.facts.layout) -----------
    @property
    def layout(self) -> Layout:
        lay = getattr(self.estimate, "layout", None)
        return lay if lay is not None else Layout.from_plan(self.plan)

    @property
    def world(self) -> int:
        return self.layout.world_size

    @property
    def dp(self) -> int:
        return self.layout.dp

    @property
    def stage(self) -> int:
        """Effective ZeRO stage, as the ledger used it."""
        return self.layout.stage

    @property
    def shard_degree(self) -> int:
        """How many GPUs the sharded states are split over (hybrid shards within a node)."""
        return self.layout.shard

    def sharding_label(self) -> str:
        return self.layout.label

    def states_under(self, stage: int) -> Optional[int]:
        """Per-GPU model-state bytes if the job sharded with ZeRO `stage` over its
        data-parallel GPUs: the estimator's ledger of that plan."""
        if not self.has_ledger:
            return None
        est = self.what_if(f"ZeRO-{stage}", zero_stage=stage, fsdp=None)
        return None if est is None else est.ledger.states_bytes

    def full_states(self) -> Optional[int]:
        """Unsharded model states (what each GPU holds under plain DDP)."""
        return self.states_under(0)

    @property
    def split(self) -> int:
        """Tensor × pipeline parallel degree (the ledger's lines are already divided by it)."""
        return self.layout.mp

    def total_states(self) -> Optional[int]:
        """Model states of the whole model, before any sharding or splitting."""
        full = self.full_states()
        return None if full is None else full * self.split

    def is_sharded(self) -> bool:
        tot, st = self.total_states(), self.states
        return bool(tot and st is not None and st < tot * 0.999)

    def bytes_per_param(self) -> Optional[float]:
        """Model-state bytes per trainable parameter (16 for mixed-precision AdamW),
        independent of how the states are sharded."""
        tot, n = self.total_states(), self.n
        if tot is None or not n or self.partly_frozen():
            return None
        return tot / n

    def partly_frozen(self) -> bool:
        """LoRA / frozen base: states are not a per-trainable-parameter multiple."""
        t, p = self.v("trainable_params"), self.v("params")
        return bool(self.v("lora")) or bool(t and p and t < p)

    # ---- the job's own text ----------------------------------------------
    def texts(self) -> Iterator[tuple[str, str]]:
        """(path, text) of the job's Python files, as the extractor read them — for cheap
        textual patterns (rules read no files)."""
        if self.job is None:
            return
        for ext in self.job.extractions:
            if ext.kind == "python" and ext.text is not None:
                yield ext.path, ext.text


# --------------------------------------------------------------------------- the rule base

class Rule:
    """Base class of every rule. Subclasses set the class attributes and `check`."""

    code: str = ""
    name: str = ""
    summary: str = ""
    severity: str = "error"
    misconception: Optional[int] = None
    #: the diagnosis case (docs/ledger.md) a finding of this rule establishes — set only
    #: for rules whose findings predict an OOM of that kind (the dry run checks them)
    case: Optional[str] = None
    #: for codes a pipeline stage reports itself (a file that does not parse, a model that
    #: cannot be sized): that stage's name; the rule documents the code and `check` is empty
    stage: Optional[str] = None
    VALID: Sequence[Example] = ()
    INVALID: Sequence[Example] = ()

    def check(self, ctx: RuleContext) -> Iterable[Diagnostic]:  # pragma: no cover - abstract
        return ()

    def diagnostic(self, message: str, source: Optional[Source], *, fix: Optional[str] = None,
                   severity: Optional[str] = None, data: Optional[dict] = None,
                   related: Optional[list[Source]] = None) -> Diagnostic:
        data = dict(data or {})
        if self.case and "case" not in data:
            data["case"] = self.case
        return Diagnostic.at(self.code, message, source, name=self.name,
                             severity=severity or self.severity, fix=fix,
                             data=data, related=related or [])

    @classmethod
    def docs(cls) -> str:
        import inspect
        return inspect.cleandoc(cls.__doc__ or "")

    @classmethod
    def doc_sections(cls) -> dict[str, str]:
        """The docstring split on its `## Heading` lines."""
        out: dict[str, str] = {}
        cur = None
        fenced = False
        for line in cls.docs().splitlines():
            if line.lstrip().startswith("```"):
                fenced = not fenced
            m = None if fenced else re.match(r"^##\s+(.+?)\s*\??\s*$", line)
            if m:
                cur = m.group(1).rstrip("?")
                out[cur] = ""
            elif cur is not None:
                out[cur] += line + "\n"
        return {k: v.strip() for k, v in out.items()}

    @classmethod
    def meta(cls) -> dict[str, Any]:
        return {"code": cls.code, "name": cls.name, "summary": cls.summary,
                "severity": cls.severity, "misconception": cls.misconception, "case": cls.case,
                "reported_by": cls.stage or "rule", "origin": cls.__module__}


# --------------------------------------------------------------------------- registry

_RULES: Optional[list[Rule]] = None
LOAD_ERRORS: list[str] = []


def _rules_in(obj: Any) -> list[type[Rule]]:
    if isinstance(obj, type) and issubclass(obj, Rule) and obj is not Rule and obj.code:
        return [obj]
    if isinstance(obj, (list, tuple)):
        return [c for o in obj for c in _rules_in(o)]
    if hasattr(obj, "__dict__") and type(obj).__name__ == "module":
        return [c for c in vars(obj).values()
                if isinstance(c, type) and issubclass(c, Rule) and c is not Rule and c.code
                and c.__module__ == obj.__name__]
    return []


def load_rules(entry_points: bool = True) -> list[Rule]:
    """Every rule: the built-in `preflight.rules` package, then third-party packs."""
    global _RULES
    if _RULES is not None:
        return _RULES
    classes: list[type[Rule]] = []
    # The built-in rules are a pack like any other (rules/ ships as preflight.rules): found
    # by name, as the entry points below are, not imported as a dependency of the engine.
    pkg = importlib.import_module("preflight.rules")
    for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda i: i.name):
        if info.name.startswith("_"):
            continue
        mod = importlib.import_module(f"preflight.rules.{info.name}")
        classes += _rules_in(mod)
    if entry_points:
        try:
            for ep in packs.entry_points():
                try:
                    classes += _rules_in(ep.load())
                except Exception as e:  # noqa: BLE001 - a broken pack must not stop the run
                    LOAD_ERRORS.append(f"rule pack {ep.name!r} ({ep.value}) failed to load: "
                                       f"{type(e).__name__}: {e}")
        except Exception as e:  # noqa: BLE001
            LOAD_ERRORS.append(f"entry points unavailable: {e}")
    seen: dict[str, type[Rule]] = {}
    for c in classes:
        if c.code in seen and seen[c.code] is not c:
            LOAD_ERRORS.append(f"rule code {c.code} defined twice ({seen[c.code].__module__}, "
                               f"{c.__module__}); keeping the first")
            continue
        seen[c.code] = c
    _RULES = [seen[k]() for k in sorted(seen)]
    return _RULES


def get_rule(code: str) -> Optional[Rule]:
    code = code.strip()
    for r in load_rules():
        if r.code.upper() == code.upper() or r.name == code.lower():
            return r
    return None


# --------------------------------------------------------------------------- filtering

def is_selected(code: str, select: Sequence[str] = (), ignore: Sequence[str] = ()) -> bool:
    """Prefix selection; when both match, the longer (more specific) prefix wins."""
    code = code.upper()
    sel = max((len(p) for p in select if code.startswith(p.upper())), default=-1)
    if select and sel < 0:
        return False
    ign = max((len(p) for p in ignore if code.startswith(p.upper())), default=-1)
    return not (ign >= 0 and ign >= max(sel, 0))


class NoqaIndex:
    """Which lines of which files carry `# noqa` — from the extractors' `noqa` maps and,
    for any file, from the line text itself (cheap: files are read once)."""

    def __init__(self) -> None:
        self._lines: dict[str, list[str]] = {}
        self._ext: dict[str, dict[int, list[str]]] = {}

    def add_extraction(self, ext: Any) -> None:
        if getattr(ext, "noqa", None):
            self._ext.setdefault(os.path.normpath(ext.path), {}).update(ext.noqa)

    def _text_lines(self, path: str) -> list[str]:
        if path not in self._lines:
            try:
                self._lines[path] = safe_read.read_text(path).splitlines()
            except OSError:
                self._lines[path] = []
        return self._lines[path]

    def suppresses(self, d: Diagnostic) -> bool:
        if not d.path or not d.line:
            return False
        path = os.path.normpath(d.path)
        codes = self._ext.get(path, {}).get(d.line)
        if codes is None:
            lines = self._text_lines(path)
            if 0 < d.line <= len(lines) and not path.endswith(".json"):
                codes = noqa_codes(lines[d.line - 1])
        if codes is None:
            return False
        return not codes or any(d.code.upper().startswith(c.upper()) for c in codes)


def per_file_ignored(d: Diagnostic, per_file: dict[str, list[str]], root: Optional[str]) -> bool:
    if not per_file or not d.path:
        return False
    written = split_virtual(d.path)
    path = written[0] if written is not None else d.path   # a %%writefile cell: its notebook
    ap = os.path.abspath(path)
    cands = {path, os.path.normpath(path), os.path.basename(path)}
    if root:
        rel = os.path.relpath(ap, root)
        if not rel.startswith(".."):
            cands.add(rel)
    cands = {c.replace(os.sep, "/") for c in cands}
    for pattern, codes in per_file.items():
        pat = pattern.replace(os.sep, "/")
        if any(fnmatch.fnmatchcase(c, pat) or fnmatch.fnmatchcase(c, pat.rstrip("/") + "/*")
               for c in cands):
            if not codes or any(d.code.upper().startswith(c.upper()) for c in codes):
                return True
    return False


@dataclass
class Filters:
    select: Sequence[str] = ()
    ignore: Sequence[str] = ()
    per_file_ignores: dict[str, list[str]] = field(default_factory=dict)
    root: Optional[str] = None
    noqa: NoqaIndex = field(default_factory=NoqaIndex)

    def keep(self, d: Diagnostic) -> bool:
        return (is_selected(d.code, self.select, self.ignore)
                and not per_file_ignored(d, self.per_file_ignores, self.root)
                and not self.noqa.suppresses(d))


def run_rules(ctx: RuleContext, rules: Optional[Sequence[Rule]] = None,
              select: Sequence[str] = (), ignore: Sequence[str] = ()) -> list[Diagnostic]:
    """Every selected rule over one job. A crashing rule reports itself, never a traceback."""
    out: list[Diagnostic] = []
    for rule in (load_rules() if rules is None else rules):
        if not is_selected(rule.code, select, ignore):
            continue
        try:
            for d in rule.check(ctx) or ():
                if not d.name:
                    d.name = rule.name
                out.append(d)
        except Exception as e:  # noqa: BLE001
            if os.environ.get("PREFLIGHT_DEBUG"):
                raise
            out.append(rule.diagnostic(f"internal error in rule {rule.code}: {type(e).__name__}: {e}",
                                       ctx.src("model"), severity="info"))
    return out


def dedupe_sort(diags: Iterable[Diagnostic]) -> list[Diagnostic]:
    seen = set()
    out = []
    for d in diags:
        key = (d.code, d.path, d.line, d.col, d.message)
        if key in seen:
            continue
        seen.add(key)
        out.append(d)
    return sorted(out, key=lambda d: (d.path or "", d.line, d.col, d.code))


def fails(diags: Iterable[Diagnostic], fail_level: str = "warning") -> bool:
    floor = SEVERITY_RANK.get(fail_level, 2)
    return any(SEVERITY_RANK.get(d.severity, 3) >= floor for d in diags)


def _divisors(n: int) -> list[int]:
    """The divisors of `n`, ascending (every whole number up to `n` past 10^12, where a
    micro-batch is no longer a real one and exactness does not matter)."""
    if n > 10**12:
        return list(range(1, min(n, 1 << 20) + 1))
    small, large = [], []
    k = 1
    while k * k <= n:
        if n % k == 0:
            small.append(k)
            if k * k != n:
                large.append(n // k)
        k += 1
    return small + large[::-1]
