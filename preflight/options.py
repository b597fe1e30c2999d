"""The options of a check and of an estimate: the one place they live.

`CheckOptions` is every option of `preflight check` / `preflight.check(...)`, and
`EstimateOptions` those of `preflight estimate` / `preflight.estimate(...)`. Each is built
once by its source — the command line (`preflight.cli.check`, `preflight.cli.estimate`),
the API keywords (`preflight.api`) — validated once, here, as it is built, and passed
whole to whatever reads it: the pipeline, the report writers, the command itself. The
project's `[tool.preflight]` (`preflight.config.ProjectConfig`, one per project found)
lies under the options: the `*_for(config)` methods say, in one place, which wins.

Each field says once where it comes from: its command-line flag, its `[tool.preflight]`
setting, its API keyword (`metadata`: `flag`, `setting`, `keyword`; the command line words
its errors with `flag`, `preflight.check` accepts the fields marked `keyword`). Adding an
option touches only the field here, its source (the click option, the setting in
`preflight/config.py`, or `keyword=True`) and the code that reads it.

A bad value raises `OptionError` (a ValueError) in the API's words, naming the option;
the command line says the same of its flag (`preflight.cli.options.flag_error`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Mapping, Optional

from preflight.lazy import lazy
from preflight.units import parse_size

# the vocabulary and the GPU catalogue (and pydantic with them) only for a `--set`
# assignment to read and a GPU to resolve: `preflight check` builds its options, and finds
# a stored result, without them
fact_values = lazy("preflight.fact_values")
hardware = lazy("preflight.hardware")

if TYPE_CHECKING:  # pragma: no cover
    from preflight.plan import Fact


class OptionError(ValueError):
    """A bad option value. `option` is the field; `why` follows its name in the message
    (`headroom` + ` must be in [0, 1), got 1.5`), or stands alone when `named` is False
    (the message of a bad `--set` assignment names the assignment instead)."""

    def __init__(self, option: str, why: str, *, named: bool = True) -> None:
        self.option, self.why, self.named = option, why, named
        super().__init__(f"{option}{why}" if named else why)

    def worded(self, name: str) -> str:
        """The message with the option called `name` (a flag: `--headroom must be …`)."""
        return f"{name}{self.why}" if self.named else f"{name}: {self.why}"


def _opt(default: Any = None, *, flag: Optional[str] = None, setting: Optional[str] = None,
         keyword: bool = False) -> Any:
    return field(default=default, metadata={"flag": flag, "setting": setting,
                                            "keyword": keyword})


def flag_of(options: type, name: str) -> Optional[str]:
    """The command-line flag of field `name` of an options type (None: it has none)."""
    for f in fields(options):
        if f.name == name:
            return f.metadata.get("flag")
    return None


def keywords_of(options: type) -> tuple[str, ...]:
    """The fields of an options type that its API function takes as keywords."""
    return tuple(f.name for f in fields(options) if f.metadata.get("keyword"))


def refuse_unknown(options: type, function: str, keywords: Mapping[str, Any]) -> None:
    """Refuse, as Python refuses an unexpected keyword, a keyword of `function` that is
    not a keyword field of `options`."""
    allowed = keywords_of(options)
    for name in keywords:
        if name not in allowed:
            raise TypeError(f"{function}() got an unexpected keyword argument {name!r}")


def headroom_value(value: Any) -> Any:
    """A fraction of capacity kept free: in [0, 1)."""
    if value is not None and not 0 <= value < 1:
        raise OptionError("headroom", f" must be in [0, 1), got {value}")
    return value


def size_value(name: str, value: Any) -> Optional[int]:
    """A GPU memory: bytes (a positive int), or a size with its unit ("80GiB", "40GB")."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise OptionError(name, f": not a size: {value!r}")
    if isinstance(value, int):
        if value <= 0:
            raise OptionError(name, f" must be positive, got {value}")
        return value
    try:
        return parse_size(str(value))
    except ValueError as e:
        raise OptionError(name, f": {e}") from None


def codes_value(values: Any) -> tuple[str, ...]:
    """Code prefixes: "PF1,PF201", ["pf1", "PF201"] → ("PF1", "PF201")."""
    if isinstance(values, str):
        values = [values]
    out: list[str] = []
    for v in values:
        out += [c.strip().upper() for c in str(v).split(",") if c.strip()]
    return tuple(out)


def sets_value(values: Any) -> "tuple[tuple[str, Fact], ...]":
    """`"FACT=VALUE"` assignments as (fact, Fact) pairs (pairs already made are kept)."""
    out: list[tuple[str, Fact]] = []
    for v in values:
        if isinstance(v, str):
            try:
                out += fact_values.set_facts([v])
            except ValueError as e:
                raise OptionError("sets", str(e), named=False) from None
        else:
            out.append(tuple(v))        # type: ignore[arg-type]
    return tuple(out)


@dataclass(frozen=True)
class CheckOptions:
    """How to check: every option of `preflight check` and of `preflight.check`."""

    # ------------------------------------------------------------ what is checked, on what
    #: a launch command (`-- torchrun --nproc_per_node 8 train.py`), read like the same
    #: line in a launcher file
    command: Optional[tuple[str, ...]] = _opt(flag="--", keyword=True)
    #: the GPU: a catalogue name ("H100-80GB", "4090"), a `preflight.hardware.Hardware`, or
    #: None: the job's own (sbatch constraint, declared job), else `[tool.preflight] gpu`
    gpu: Any = _opt(flag="--gpu", setting="gpu", keyword=True)
    #: a GPU known only by its memory: bytes, or "80GiB" / "40GB" (stored as bytes)
    gpu_memory: Optional[int] = _opt(flag="--gpu-memory", setting="gpu-memory", keyword=True)
    #: fraction of capacity kept free (None: `[tool.preflight] headroom`, else 0.2)
    headroom: Optional[float] = _opt(flag="--headroom", setting="headroom", keyword=True)
    #: the `[tool.preflight]` every project uses (a `ProjectConfig`; the command line and
    #: `preflight.check` load it from a pyproject.toml path); None: each project found uses
    #: its nearest pyproject.toml
    config: Any = _opt(flag="--config", keyword=True)
    #: code prefixes reported (replace the setting's) and skipped (added to the setting's)
    select: tuple[str, ...] = _opt((), flag="--select", setting="select", keyword=True)
    ignore: tuple[str, ...] = _opt((), flag="--ignore", setting="ignore", keyword=True)
    #: facts the files do not state ("micro_batch=4", or (fact, Fact) pairs), stronger than
    #: any file
    sets: tuple[tuple[str, Fact], ...] = _opt((), flag="--set", keyword=True)
    #: ask the Hugging Face hub for a model nothing offline sizes (its config.json and
    #: safetensors headers, kept in the hub's cache); never while HF_HUB_OFFLINE is set.
    #: False: `[tool.preflight] hub`, else no network request
    hub: bool = _opt(False, flag="--hub", setting="hub", keyword=True)

    # ------------------------------------------------------------ fixes
    #: every job's full ranking of what would fit, with its limits; otherwise a job that
    #: does not fit carries only the first alternative, as file edits
    suggest: bool = _opt(False, flag="--suggest", keyword=True)
    #: search fixes at all (False leaves `JobResult.fit` / `.fix` unset); the command line
    #: sets it when its format or flags show a fix
    fixes: bool = _opt(True, keyword=True)
    #: write the first alternative that fits into the job's files, then check again
    apply_fix: bool = _opt(False, flag="--fix")
    #: print the edits --fix would make as a unified diff; write nothing
    show_diff: bool = _opt(False, flag="--diff")

    # ------------------------------------------------------------ the run
    #: keep per-file extractions (and the command line's stored results) in the cache
    #: folder; the command line's default (off with --no-cache), off for library calls
    cache: bool = _opt(False, flag="--no-cache", keyword=True)
    #: the cache folder (None: `[tool.preflight] cache-dir`, else `.preflight_cache` at the
    #: project root)
    cache_dir: Optional[str] = _opt(setting="cache-dir")
    #: worker processes for extraction and for checking jobs (None: as many as pay)
    jobs: Optional[int] = _opt()
    #: the rules run (None: every loaded rule); apply_rules False: size the jobs only
    rules: Any = _opt()
    apply_rules: bool = _opt(True)
    #: facts that change every job's plan before it is sized and checked
    #: (`preflight estimate FILES --zero 3`)
    overrides: tuple[tuple[str, Fact], ...] = _opt(())
    #: model FLOP utilisation and architecture family the estimator assumes
    #: (`preflight estimate --mfu / --family`)
    mfu: Optional[float] = _opt()
    family: Optional[str] = _opt()

    # ------------------------------------------------------------ the report
    #: the report's format (`preflight.report.FORMATS`)
    fmt: str = _opt("text", flag="--format")
    #: every ledger line with its formula (text)
    show_ledger: bool = _opt(False, flag="--show-ledger")
    #: how many findings of each code instead of the findings (text, concise)
    statistics: bool = _opt(False, flag="--statistics")
    #: the findings and nothing else (text, concise)
    quiet: bool = _opt(False, flag="--quiet")
    #: only the jobs touched since this git ref, with their memory changes
    diff_base: Optional[str] = _opt(flag="--diff-base")

    # ------------------------------------------------------------ the exit status
    #: lowest severity that fails the run (None: `[tool.preflight] fail-level`, else warning)
    fail_level: Optional[str] = _opt(flag="--fail-level", setting="fail-level")
    #: exit 0 even when there are findings
    exit_zero: bool = _opt(False, flag="--exit-zero")
    #: exit 1 when a job could not be sized against a known GPU
    fail_on_unsized: bool = _opt(False, flag="--fail-on-unsized")
    #: with diff_base: exit 1 only for a job that no longer fits, or that loses more than
    #: max_headroom_loss of its headroom
    fail_on_regression: bool = _opt(False, flag="--fail-on-regression")
    max_headroom_loss: float = _opt(0.5, flag="--max-headroom-loss")

    # ------------------------------------------------------------ the dry run
    #: also run each job's script for one optimizer step, on `device`, with
    #: `nproc_per_node` processes, ended after `timeout` seconds without a step
    dry_run: bool = _opt(False, flag="--dry-run")
    device: str = _opt("auto", flag="--device")
    nproc_per_node: int = _opt(1, flag="--nproc-per-node")
    timeout: float = _opt(600.0, flag="--timeout")

    def __post_init__(self) -> None:
        # validated in this order: the order the command line has always reported them in
        put = object.__setattr__
        headroom_value(self.headroom)
        put(self, "gpu_memory", size_value("gpu_memory", self.gpu_memory))
        put(self, "sets", sets_value(self.sets))
        put(self, "select", codes_value(self.select))
        put(self, "ignore", codes_value(self.ignore))
        put(self, "command", tuple(self.command) if self.command else None)
        put(self, "overrides", tuple(self.overrides))

    # ------------------------------------------------------------ under [tool.preflight]
    @property
    def gpu_given(self) -> bool:
        """Whether the options name the GPU (then it beats the job's own and the setting)."""
        return self.gpu is not None or bool(self.gpu_memory)

    def headroom_for(self, config: Any) -> float:
        return config.headroom if self.headroom is None else self.headroom

    def select_for(self, config: Any) -> list[str]:
        return list(self.select) or list(config.select)

    def ignore_for(self, config: Any) -> list[str]:
        return list(config.ignore) + list(self.ignore)

    def fail_level_for(self, config: Any) -> str:
        return self.fail_level or config.fail_level

    def hub_for(self, config: Any) -> bool:
        return bool(self.hub or getattr(config, "hub", False))


@dataclass(frozen=True)
class EstimateOptions:
    """How one job is sized: the options of `preflight estimate` and `preflight.estimate`
    (the facts of the job are not options: they are the job)."""

    #: the GPU: a catalogue name or a `preflight.hardware.Hardware` (None: capacity unknown)
    gpu: Any = _opt(flag="--gpu", keyword=True)
    #: a GPU known only by its memory (bytes, or "80GiB"), or the memory of `gpu` replaced
    gpu_memory: Any = _opt(flag="--gpu-memory", keyword=True)
    #: fraction of capacity kept free
    headroom: float = _opt(0.2, flag="--headroom", keyword=True)
    #: model FLOP utilisation assumed for compute time (None: 0.4)
    mfu: Optional[float] = _opt(flag="--mfu", keyword=True)
    #: architecture family for activations (None: from the model)
    family: Optional[str] = _opt(flag="--family", keyword=True)
    #: also what would fit: ranked alternatives and limits (`preflight estimate --fit`)
    fit: bool = _opt(False, flag="--fit")
    #: the GPU sized against, resolved from gpu and gpu_memory as the options are built
    hardware: Any = field(default=None, init=False, compare=False)

    def __post_init__(self) -> None:
        headroom_value(self.headroom)
        hw = hardware.lookup(self.gpu) if isinstance(self.gpu, str) else self.gpu
        if self.gpu_memory is not None:
            hw = hardware.custom(size_value("gpu_memory", self.gpu_memory),
                                 name=getattr(hw, "name", None))
        object.__setattr__(self, "hardware", hw)
