"""The Python API: `preflight.check` and `preflight.estimate`.

    import preflight

    report = preflight.check(["examples/7b-zero3"])           # -> Report
    report.jobs[0].fits                                       # True | False | None (unknown)

    est = preflight.estimate(params=7e9, optimizer="adamw", precision="bf16-mixed",
                             world_size=8, zero_stage=3, micro_batch=1, seq_len=4096,
                             layers=32, hidden=4096, heads=32, gpu="H100-80GB")
    est.fits, est.peak_bytes
    for line in est.lines:                                    # the ledger, with formulas
        print(line.label, line.bytes, line.formula)
    est.to_json()                                             # the JSON contract's ledger

The command line is a thin layer over these two functions: `preflight check` calls
`check`, `preflight estimate` builds a plan from its flags and calls `estimate`. Neither
function imports torch or the code it reads. Bad arguments raise `ValueError` (or
`preflight.hardware.UnknownGPU`, a ValueError) naming the argument; bad *files* are
findings on the report, never exceptions.
"""

from __future__ import annotations

import os
from typing import Any, Mapping, Optional, Sequence, Union

from preflight.physics.result import Estimate as SizedEstimate
from preflight.physics.result import Ledger, LedgerLine, Walls
from preflight.facts import spellings
from preflight.facts.names import CONTRACT_FACTS, INT_FACTS, UnknownFactName, check_value, fact_name
from preflight.models.param_tensors import with_catalogue_tensors
from preflight.plan import Fact, Origin, Source, TrainingPlan
from preflight.plan_fit import suggest
from preflight.result import JobResult, Report

__all__ = ["check", "estimate", "plan_from_values", "Report", "JobResult", "Estimate",
           "Ledger", "LedgerLine", "Walls"]

PathLike = Union[str, "os.PathLike[str]"]


def check(paths: Union[PathLike, Sequence[PathLike]], *, gpu: Any = None,
          gpu_memory: Union[int, str, None] = None, headroom: Optional[float] = None,
          config: Any = None, select: Sequence[str] = (), ignore: Sequence[str] = (),
          command: Optional[Sequence[str]] = None, sets: Sequence[str] = (),
          cache: bool = False, suggest: bool = False, fixes: bool = True) -> Report:
    """Check the training jobs that `paths` (scripts, launchers, configs, directories)
    belong to, as `preflight check PATH…` does, and return the report.

    gpu: a catalogue name ("H100-80GB", "A100-40GB", "4090"), a `preflight.hardware.Hardware`,
         or None: the job's own GPU (sbatch constraint, declared job), else `[tool.preflight]`.
    gpu_memory: a GPU known only by its memory: bytes, or "80GiB" / "40GB".
    headroom: fraction of capacity to keep free (default: `[tool.preflight]`, else 0.2).
    config: the `[tool.preflight]` to use: a path to a pyproject.toml, a
            `preflight.config.ProjectConfig`, or None for the nearest pyproject.toml.
    select / ignore: code prefixes, added to the configuration's.
    command: a launch command (`["torchrun", "--nproc_per_node", "8", "train.py"]`), read
             like the same line in a launcher file.
    sets: facts the files do not state, as `"FACT=VALUE"` (`"micro_batch=4"`), stronger
          than any file (the command line's `--set`).
    cache: keep per-file extractions in `.preflight_cache/` (the command line's default).
    suggest: every job's full ranking of what would fit (`check --suggest`); otherwise a job
             that does not fit carries only the first alternative, as file edits.
    fixes: False leaves `JobResult.fit` / `.fix` unset (an output that shows no fix need
           not search for one).
    """
    from preflight import pipeline
    from preflight.config import ProjectConfig, load_project_config

    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    plist = [os.fspath(p) for p in paths]
    if not plist and not command:
        raise ValueError("check: give paths to check, or a launch command")
    if headroom is not None and not 0 <= headroom < 1:
        raise ValueError(f"headroom must be in [0, 1), got {headroom}")
    mem = _size("gpu_memory", gpu_memory) if gpu_memory is not None else None
    from preflight.fact_values import set_facts
    set_pairs = set_facts(list(sets))
    if config is None:
        pass                               # each project found uses its nearest pyproject.toml
    elif isinstance(config, (str, os.PathLike)):
        config = load_project_config(os.fspath(config))
    elif not isinstance(config, ProjectConfig):
        raise ValueError(f"config: a pyproject.toml path or a ProjectConfig, not {type(config).__name__}")
    if isinstance(gpu, str):
        pipeline.resolve_gpu(gpu)          # an unknown name raises here, naming the known ones
    # each job that does not fit gets the planner's alternatives, as it is checked
    fix_args = None
    if fixes or suggest:
        fix_args = {"headroom": headroom, "full": suggest,
                    "config": config if config is not None
                    else load_project_config(plist[0] if plist else os.getcwd())}
    return pipeline.run(plist, list(command) if command else None, gpu=gpu,
                        headroom=headroom, gpu_memory=mem, config=config,
                        select=_codes(select), ignore=_codes(ignore), sets=set_pairs,
                        cache=cache, fixes=fix_args)


class Estimate(SizedEstimate):
    """What `estimate` returns: the estimator's `Estimate` (ledger, walls) with the
    planner's alternatives as `suggest()` (the estimator itself knows no planner)."""

    def suggest(self, limit: int = 5) -> list:
        """What would fit, best first (`preflight.plan_fit.suggest`): the ranked
        alternatives, each keeping the global batch, on this estimate's GPU and headroom."""
        return suggest(self, limit)

    @classmethod
    def of(cls, est: SizedEstimate) -> "Estimate":
        out = cls(ledger=est.ledger, walls=est.walls, layout=est.layout)
        out._basis = est.basis
        return out


def estimate(plan: Union[TrainingPlan, Mapping[str, Any], None] = None, *, gpu: Any = None,
             gpu_memory: Union[int, str, None] = None, headroom: float = 0.2,
             precision: Optional[str] = None, mfu: Optional[float] = None,
             family: Optional[str] = None, **facts: Any) -> Estimate:
    """The per-GPU ledger and the scaling walls for one job given by its facts.

    Facts are the names of the JSON contract (`params`, `trainable_params`, `optimizer`,
    `param_dtype`, `mixed_precision`, `micro_batch`, `seq_len`, `grad_accum`, `layers`,
    `hidden`, `heads`, `kv_heads`, `ffn_hidden`, `vocab`, `world_size`, `nodes`,
    `gpus_per_node`, `zero_stage`, `fsdp`, `offload`, `tp`, `pp`, `sp`,
    `activation_checkpointing`, `attention`, `lora`, `model`), given as keywords or as a
    `plan` (a TrainingPlan, e.g. a checked job's `report.jobs[0].job.plan`, or a mapping).
    Counts take 7e9, "7B" or 6_738_415_616; `precision="bf16-mixed"` sets `param_dtype`
    and `mixed_precision` together. A fact not given is not guessed: the lines that need
    it come out unknown and `Estimate.unknown` names it.
    """
    from preflight.physics import estimate as run_estimate

    if isinstance(plan, TrainingPlan):
        base = plan
    else:
        base = plan_from_values(dict(plan or {}))
    extra = dict(facts)
    if precision is not None:
        modes = spellings.PRECISION_MODES
        key = str(precision).strip().lower()
        if key not in modes:
            raise ValueError(f"precision {precision!r} is not one of {', '.join(modes)}")
        extra.setdefault("param_dtype", modes[key][0])
        extra.setdefault("mixed_precision", modes[key][1])
    if extra:
        merged = TrainingPlan(facts=dict(base.facts), candidates=dict(base.candidates))
        for name, fact in plan_from_values(extra).facts.items():
            merged.facts[name] = fact
        base = merged
    if not 0 <= headroom < 1:
        raise ValueError(f"headroom must be in [0, 1), got {headroom}")
    hw = _hardware(gpu, gpu_memory)
    if hw is not None and "gpu" not in base.facts:
        base.facts["gpu"] = Fact(value=hw.name, origin=Origin.CLI, source=_API)
    return Estimate.of(run_estimate(with_catalogue_tensors(base), hw, headroom, mfu=mfu,
                                    family=family))


_API = Source(path="<python api>")


def plan_from_values(values: Mapping[str, Any], origin: Origin = Origin.CLI,
                     source: Optional[Source] = _API) -> TrainingPlan:
    """A TrainingPlan from plain values, checked and normalised: counts parsed
    ("7B" → 7_000_000_000), optimizer spellings mapped (`adamw_torch` → `adamw`), enums
    checked. Raises ValueError naming the first bad value. A value that is already a
    `Fact` is taken as it is; None leaves the fact unknown."""
    from preflight.units import parse_count

    facts: dict[str, Fact] = {}
    for name, value in values.items():
        try:
            name = fact_name(name).value
        except UnknownFactName:
            raise ValueError(f"unknown fact {name!r}; facts are: {', '.join(CONTRACT_FACTS)}") \
                from None
        if value is None:
            continue
        if isinstance(value, Fact):
            facts[name] = value
            continue
        if name in INT_FACTS and isinstance(value, (str, float)):
            try:
                value = parse_count(value)
            except (ValueError, TypeError) as e:
                raise ValueError(f"{name}: {e}") from None
        elif name == "optimizer":
            value = spellings.optimizer_name(value) or value
        elif isinstance(value, str) and name != "model" and name != "gpu":
            value = value.strip().lower()
        checked, why = check_value(name, value)
        if why is not None:
            raise ValueError(why)
        facts[name] = Fact(value=checked, origin=origin, source=source)
    return TrainingPlan(facts=facts)


def _hardware(gpu: Any, gpu_memory: Union[int, str, None]):
    from preflight import hardware

    hw = hardware.lookup(gpu) if isinstance(gpu, str) else gpu
    if gpu_memory is not None:
        hw = hardware.custom(_size("gpu_memory", gpu_memory),
                             name=getattr(hw, "name", None))
    return hw


def _size(name: str, value: Union[int, str]) -> int:
    if isinstance(value, bool):
        raise ValueError(f"{name}: not a size: {value!r}")
    if isinstance(value, int):
        if value <= 0:
            raise ValueError(f"{name} must be positive, got {value}")
        return value
    from preflight.units import parse_size
    try:
        return parse_size(str(value))
    except ValueError as e:
        raise ValueError(f"{name}: {e}") from None


def _codes(values: Sequence[str]) -> list[str]:
    if isinstance(values, str):
        values = [values]
    out: list[str] = []
    for v in values:
        out += [c.strip().upper() for c in str(v).split(",") if c.strip()]
    return out
