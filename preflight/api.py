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
from dataclasses import replace
from typing import Any, Mapping, Optional, Sequence, Union

from preflight.lazy import lazy
from preflight.physics import estimate as run_estimate
from preflight.physics.result import Estimate as SizedEstimate
from preflight.physics.result import Ledger, LedgerLine, Walls
from preflight.facts import spellings
from preflight.facts.names import CONTRACT_FACTS, INT_FACTS, UnknownFactName, check_value, fact_name
from preflight.models.param_tensors import with_catalogue_tensors
from preflight.options import CheckOptions, EstimateOptions, keywords_of, refuse_unknown
from preflight.plan import Fact, Origin, Source, TrainingPlan
from preflight.plan_fit import suggest
from preflight.result import JobResult, Report
from preflight.units import parse_count

pipeline = lazy("preflight.pipeline")
project_config = lazy("preflight.config")

__all__ = ["check", "estimate", "plan_from_values", "CheckOptions", "EstimateOptions", "Report",
           "JobResult", "Estimate", "Ledger", "LedgerLine", "Walls"]

PathLike = Union[str, "os.PathLike[str]"]


def check(paths: Union[PathLike, Sequence[PathLike]], options: Optional[CheckOptions] = None,
          **keywords: Any) -> Report:
    """Check the training jobs that `paths` (scripts, launchers, configs, directories)
    belong to, as `preflight check PATH…` does, and return the report.

    The options are a `preflight.options.CheckOptions`, or its keywords (those its fields
    mark `keyword`, documented there): `gpu`, `gpu_memory`, `headroom`, `config` (also a
    path to a pyproject.toml), `select`, `ignore`, `command`, `sets`, `cache`, `suggest`,
    `fixes`. Keywords given with `options` change those options.
    """
    if options is not None and not isinstance(options, CheckOptions):
        raise TypeError("check() takes 1 positional argument but 2 were given")
    refuse_unknown(CheckOptions, "check", keywords)
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    plist = [os.fspath(p) for p in paths]
    if not plist and not keywords.get("command", options.command if options else None):
        raise ValueError("check: give paths to check, or a launch command")
    options = replace(options, **keywords) if options is not None else CheckOptions(**keywords)
    config = _config(options.config)
    if config is not options.config:
        options = replace(options, config=config)
    if isinstance(options.gpu, str):
        pipeline.resolve_gpu(options.gpu)  # an unknown name raises here, naming the known ones
    return pipeline.run(plist, options)


def _config(config: Any) -> Any:
    """The `config` keyword: None (each project found uses its nearest pyproject.toml), a
    path to a pyproject.toml, or a ProjectConfig."""
    if config is None or isinstance(config, project_config.ProjectConfig):
        return config
    if isinstance(config, (str, os.PathLike)):
        return project_config.load_project_config(os.fspath(config))
    raise ValueError(f"config: a pyproject.toml path or a ProjectConfig, not {type(config).__name__}")


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


def estimate(plan: Union[TrainingPlan, Mapping[str, Any], None] = None,
             options: Optional[EstimateOptions] = None, *, precision: Optional[str] = None,
             **keywords: Any) -> Estimate:
    """The per-GPU ledger and the scaling walls for one job given by its facts.

    Options: a `preflight.options.EstimateOptions`, or its keywords `gpu`, `gpu_memory`,
    `headroom` (default 0.2), `mfu`, `family` (documented there). Every other keyword is
    a fact: the names of the JSON contract (`params`, `trainable_params`, `optimizer`,
    `param_dtype`, `mixed_precision`, `micro_batch`, `seq_len`, `grad_accum`, `layers`,
    `hidden`, `heads`, `kv_heads`, `ffn_hidden`, `vocab`, `world_size`, `nodes`,
    `gpus_per_node`, `zero_stage`, `fsdp`, `offload`, `tp`, `pp`, `sp`,
    `activation_checkpointing`, `attention`, `lora`, `model`), given as keywords or as a
    `plan` (a TrainingPlan, e.g. a checked job's `report.jobs[0].job.plan`, or a mapping).
    Counts take 7e9, "7B" or 6_738_415_616; `precision="bf16-mixed"` sets `param_dtype`
    and `mixed_precision` together. A fact not given is not guessed: the lines that need
    it come out unknown and `Estimate.unknown` names it.
    """
    if options is not None and not isinstance(options, EstimateOptions):
        raise TypeError("estimate() takes from 0 to 1 positional arguments but 2 were given")
    chosen = {k: keywords.pop(k) for k in _ESTIMATE_KEYWORDS if k in keywords}
    if isinstance(plan, TrainingPlan):
        base = plan
    else:
        base = plan_from_values(dict(plan or {}))
    extra = dict(keywords)
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
    if options is None:
        options = EstimateOptions(**chosen)
    elif chosen:
        options = replace(options, **chosen)
    hw = options.hardware
    if hw is not None and "gpu" not in base.facts:
        base.facts["gpu"] = Fact(value=hw.name, origin=Origin.CLI, source=_API)
    return Estimate.of(run_estimate(with_catalogue_tensors(base), hw, options.headroom,
                                    mfu=options.mfu, family=options.family))


#: the keywords of `estimate` that are options, not facts
_ESTIMATE_KEYWORDS = keywords_of(EstimateOptions)

_API = Source(path="<python api>")


def plan_from_values(values: Mapping[str, Any], origin: Origin = Origin.CLI,
                     source: Optional[Source] = _API) -> TrainingPlan:
    """A TrainingPlan from plain values, checked and normalised: counts parsed
    ("7B" → 7_000_000_000), optimizer spellings mapped (`adamw_torch` → `adamw`), enums
    checked. Raises ValueError naming the first bad value. A value that is already a
    `Fact` is taken as it is; None leaves the fact unknown."""
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
