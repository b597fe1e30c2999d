"""Whether a job was sized: its per-GPU peak worked out from known facts against a known GPU.

A job whose memory could not be worked out is *not sized*, whatever else was checked: no
summary may call it passed. `not_sized` says what is missing and where each missing fact
was looked for, so that the report can name it and say how to supply it (`--set
FACT=VALUE`, `--gpu`, `[[tool.preflight.jobs]]`).

One owner: the report's summary, `--fail-on-unsized` and the rule that gives each such job
its finding all ask this module.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from preflight.plan import Origin, Source, TrainingPlan

#: origins that show a file of the job really configures training (not preflight's defaults)
#: a value read by a knob's name (`inferred`) is weak as a value, but it is still evidence
#: that the document configures training: such a job is sized, or said not to be
_EVIDENCE = frozenset({Origin.CLI, Origin.CONFIG, Origin.LITERAL, Origin.CATALOG, Origin.INFERRED})


@dataclass
class Missing:
    """One fact the sizing lacks: its name, why it is unknown, where it was looked for."""

    fact: str
    reason: str = ""
    source: Optional[Source] = None

    def text(self) -> str:
        if self.fact == "gpu":
            return "no GPU given"
        where = f" in {self.source.path}" if self.source is not None and self.source.path else ""
        return f"{self.fact} unknown{where}"


@dataclass
class Unsized:
    """Why a job was not sized: the missing facts, or that its entry was not analysed."""

    missing: list[Missing] = field(default_factory=list)
    not_analysed: Optional[str] = None      # the entry file that could not be read / parsed

    @property
    def facts(self) -> list[str]:
        return [m.fact for m in self.missing]

    def text(self) -> str:
        """'micro_batch, seq_len unknown in train.py; no GPU given'."""
        if self.not_analysed:
            return f"{self.not_analysed} could not be read or parsed"
        return "; ".join(clauses(self.missing))


def clauses(missing: list[Missing], reasons: bool = False) -> list[str]:
    """The missing facts grouped by where (and, with `reasons`, why) they are unknown:
    'seq_len, vocab unknown in train.py (not found in any file of the job)'."""
    groups: dict[tuple, list[str]] = {}
    gpu = False
    for m in missing:
        if m.fact == "gpu":
            gpu = True
            continue
        where = m.source.path if m.source is not None and m.source.path else ""
        groups.setdefault((where, m.reason if reasons else ""), []).append(m.fact)
    out = []
    for (where, why), facts in groups.items():
        out.append(f"{', '.join(facts)} unknown" + (f" in {where}" if where else "")
                   + (f" ({why})" if why else ""))
    if gpu:
        out.append("no GPU given")
    return out


#: facts only a training job states (a model loaded for inference or for counting its
#: parameters states none of them)
_TRAINING = ("optimizer", "micro_batch", "grad_accum", "mixed_precision", "zero_stage", "fsdp",
             "offload", "tp", "pp", "world_size", "nodes", "gpus_per_node",
             "activation_checkpointing", "lora")


def has_evidence(plan: TrainingPlan) -> bool:
    """A training setting read from the job's files (not a default, an assumption or an
    unknown): a file that merely passed through discovery, or a script that only loads
    a model, configures no training to size."""
    return any(f.known and f.origin in _EVIDENCE
               for n, f in plan.facts.items() if n in _TRAINING)


def memory_missing(estimate: Any) -> list[str]:
    """The facts the memory ledger lacked (the step-time walls' needs left out)."""
    led = getattr(estimate, "ledger", None)
    if led is None:
        return ["params"]
    names = getattr(led, "memory_unknown", None)
    return list(led.unknown if names is None else names)


def not_sized(plan: TrainingPlan, estimate: Any, *, entry: Optional[str] = None,
              diagnostics: Any = ()) -> Optional[Unsized]:
    """None when the job was sized; else what is missing.

    Sized means: the ledger's every line is known, the GPU's capacity is known, and, when
    the states are sharded over the GPUs, the world size was read or derived rather than
    left unknown (the estimator's one-GPU assumption is not a size then). A job whose known
    lines alone exceed the GPU is sized too: it does not fit, whatever is missing."""
    if entry and any(getattr(d, "code", "") in ("PF001", "PF002") and getattr(d, "path", None) == entry
                     for d in diagnostics):
        return Unsized(not_analysed=entry)
    led = getattr(estimate, "ledger", None)
    if led is not None and led.capacity_bytes and led.verdict() == "does not fit" \
            and not (_shards(plan) and not plan.known("world_size")
                     and not (plan.known("gpus_per_node") and plan.known("nodes"))):
        # the known lines alone exceed the GPU: no missing fact can make the job fit
        return None
    out: list[Missing] = []
    names = memory_missing(estimate)
    if "params" in names and "trainable_params" in names:
        names.remove("trainable_params")           # follows from params
    for name in names:
        f = plan.facts.get(name)
        out.append(Missing(name, (f.reason or "") if f is not None else "not found in any file of the job",
                           f.source if f is not None else None))
    if _shards(plan) and not plan.known("world_size") \
            and not (plan.known("gpus_per_node") and plan.known("nodes")):
        # no world size fact at all (a launcher that starts one process per visible GPU
        # states only an unknown GPU count) is as missing as an unknown one
        f = plan.facts.get("world_size") or plan.facts.get("gpus_per_node")
        if f is None or not f.known:
            out.append(Missing("world_size", (f.reason or "") if f is not None else
                               "not found in any file of the job", f.source if f is not None else None))
    led = getattr(estimate, "ledger", None)
    if led is None or not getattr(led, "capacity_bytes", None):
        out.append(Missing("gpu", "no GPU given: --gpu, --gpu-memory or [tool.preflight] gpu"))
    return Unsized(out) if out else None


def _shards(plan: TrainingPlan) -> bool:
    """Per-GPU memory depends on the world size: the states are (or may be) sharded over
    it. Plain data parallelism holds the same bytes on every GPU whatever their number."""
    for name, off in (("zero_stage", (0,)), ("fsdp", (None, "no_shard"))):
        f = plan.facts.get(name)
        if f is None:
            continue
        if not f.known or f.value not in off:
            return True
    return False


def how_to_supply(missing: list[Missing]) -> str:
    """The command-line flags that fill the missing facts."""
    sets = [f"--set {m.fact}=VALUE" for m in missing if m.fact != "gpu"]
    if any(m.fact == "gpu" for m in missing):
        sets.append("--gpu NAME")
    return " ".join(sets)
