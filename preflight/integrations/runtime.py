"""The check both training callbacks run: facts read from live objects → the estimator and
the rules of `preflight check` → a report, a logged ledger, and a decision.

Nothing here imports torch or a training framework: it reads attributes of the objects it
is handed (parameters' `numel()`, `dtype`, `requires_grad`; an optimizer's class and
`param_groups`; a model's `config` and `peft_config`). Facts are `Origin.RUNTIME`, the
strongest source: they are what the job really holds, not what its files say.

Unknown is said, never guessed: a fact the live objects do not tell (the sequence length
of a Trainer's batches) stays unknown with the reason and the way to give it
(`seq_len=` on the callback), and the verdict is "unknown" unless the known lines alone
exceed the capacity.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from typing import Any, Iterable, Optional, TextIO

from preflight.lazy import lazy
from preflight.plan import Fact, Job, Origin, Source, TrainingPlan
from preflight.report import render     # the writers themselves are imported when asked for

# a training script imports the callback before it builds its model: the estimator, the
# rules and the report writers are imported when the callback first checks the job
api = lazy("preflight.api")
engine = lazy("preflight.engine")
hardware = lazy("preflight.hardware")
project_config = lazy("preflight.config")
report_common = lazy("preflight.report.common")
resolve_values = lazy("preflight.resolve.values")
result = lazy("preflight.result")
spellings = lazy("preflight.facts.spellings")

class WillNotFit(RuntimeError):
    """Raised by a training callback before the first optimizer step when the job will not
    fit the device; `report` holds the findings, `str(err)` says them with their fixes."""

    def __init__(self, message: str, report: Any):
        super().__init__(message)
        self.report = report


def dtype_name(dtype: Any) -> Optional[str]:
    """`torch.bfloat16` → "bf16" (None for a dtype that is not a weight dtype)."""
    return spellings.DTYPES.get(str(dtype).replace("torch.", ""))


def unwrap_optimizer(opt: Any) -> Any:
    """accelerate's AcceleratedOptimizer, Lightning's wrappers: the torch optimizer inside."""
    for _ in range(4):
        inner = getattr(opt, "optimizer", None)
        if inner is None or inner is opt:
            break
        opt = inner
    return opt


def optimizer_fact(opt: Any) -> Optional[str]:
    """The optimizer fact of a live optimizer, from its class (SGD by its momentum)."""
    if opt is None:
        return None
    opt = unwrap_optimizer(opt)
    name = type(opt).__name__
    if name == "SGD":
        groups = getattr(opt, "param_groups", None) or [{}]
        return "sgd_momentum" if any(g.get("momentum", 0) for g in groups) else "sgd"
    return spellings.optimizer_class(name)


def _numel(p: Any) -> int:
    """Elements of a parameter as the model defines it: bitsandbytes packs two 4-bit weights
    in one byte and keeps the original shape on `quant_state`."""
    qs = getattr(p, "quant_state", None)
    shape = getattr(qs, "shape", None)
    if shape is not None:
        n = 1
        for s in shape:
            n *= int(s)
        return n
    return int(p.numel())


def _quant_bits(p: Any) -> Optional[int]:
    cls = type(p).__name__
    if cls == "Params4bit":
        return 4
    if cls == "Int8Params" or str(getattr(p, "dtype", "")).endswith("int8"):
        return 8
    return None


def model_facts(model: Any) -> tuple[dict[str, Any], list[str]]:
    """Facts of a live model: parameter count, trainable count and tensors, weight dtype,
    LoRA adapters (peft), quantised base, the architecture's shape from its config.
    Returns (facts, notes)."""
    facts: dict[str, Any] = {}
    notes: list[str] = []
    params = list(model.parameters())          # shared (tied) parameters once
    total = trainable = tensors = 0
    by_dtype: dict[str, int] = {}
    quant: set[int] = set()
    for p in params:
        n = _numel(p)
        total += n
        if p.requires_grad:
            trainable += n
            tensors += 1
        bits = _quant_bits(p)
        if bits:
            quant.add(bits)
        else:
            dt = dtype_name(p.dtype)
            if dt:
                by_dtype[dt] = by_dtype.get(dt, 0) + n
    facts["params"] = total
    facts["trainable_params"] = trainable
    facts["trainable_tensors"] = tensors
    where = {getattr(getattr(p, "device", None), "type", None) for p in params}
    if len(where) == 1 and next(iter(where)) in ("cpu", "cuda"):
        # where the model runs: torch.optim's host-side step counts are device memory on
        # a CPU run
        facts["device"] = next(iter(where))
    if by_dtype:
        main = max(by_dtype, key=by_dtype.get)          # the weights' dtype, by count
        facts["param_dtype"] = main
        if len(by_dtype) > 1:
            notes.append("parameters in several dtypes: " + ", ".join(
                f"{k} {v:,}" for k, v in sorted(by_dtype.items())) + f"; sized as {main}")
    cfg = getattr(model, "config", None)
    cfg_dict = cfg.to_dict() if hasattr(cfg, "to_dict") else (cfg if isinstance(cfg, dict) else None)
    if isinstance(cfg_dict, dict):
        facts.update(resolve_values.shape_facts_from_fields(cfg_dict))
        name = cfg_dict.get("_name_or_path") or cfg_dict.get("model_type")
        if name:
            facts["model"] = str(name)
    peft = getattr(model, "peft_config", None)
    if isinstance(peft, dict) and peft:
        conf = next(iter(peft.values()))
        r = getattr(conf, "r", None)
        if isinstance(r, int):
            targets = getattr(conf, "target_modules", None)
            facts["lora"] = {
                "r": r, "alpha": getattr(conf, "lora_alpha", None),
                "targets": sorted(targets) if isinstance(targets, (set, list, tuple)) else (
                    [targets] if isinstance(targets, str) else []),
                "base_bits": min(quant) if quant else 16,
                "modules_to_save": list(getattr(conf, "modules_to_save", None) or []),
                "dropout": getattr(conf, "lora_dropout", None)}
            # the adapters' own dtype (peft's autocast_adapter_dtype keeps them fp32)
            names = {"torch.float32": "fp32", "torch.bfloat16": "bf16", "torch.float16": "fp16"}
            adt = {names.get(str(q.dtype)) for n, q in model.named_parameters() if "lora_" in n}
            if len(adt) == 1 and None not in adt:
                facts["lora"]["adapter_dtype"] = adt.pop()
    elif quant:
        facts["param_dtype"] = "int4" if min(quant) == 4 else "int8"
    return facts, notes


def device_capacity(model: Any) -> tuple[Optional[int], Optional[str]]:
    """(total memory in bytes, device name) of the CUDA device the model's parameters are
    on; (None, None) on CPU or when torch cannot say."""
    try:
        p = next(iter(model.parameters()))
    except (StopIteration, AttributeError, TypeError):
        return None, None
    dev = getattr(p, "device", None)
    if getattr(dev, "type", None) != "cuda":
        return None, None
    import torch  # the model is on a GPU: torch is already imported by the job
    props = torch.cuda.get_device_properties(dev)
    return int(props.total_memory), str(props.name)


@dataclass
class RuntimeCheck:
    """What the callbacks share: collect facts, check, log, decide.

    gpu / gpu_memory: the device to size against instead of the one the model is on (a
        catalogue name; bytes or "80GiB") — e.g. to check on CPU a job meant for a GPU.
    headroom: fraction of capacity kept free (default `[tool.preflight]`, else 0.2).
    seq_len, micro_batch: facts the live objects may not tell.
    on_will_not_fit: "raise" (WillNotFit before the first step) or "warn".
    stream: where the ledger and findings are written (stderr; None: nowhere).
    json_path: also write the report's JSON contract there.
    """

    gpu: Optional[str] = None
    gpu_memory: Any = None
    headroom: Optional[float] = None
    seq_len: Optional[int] = None
    micro_batch: Optional[int] = None
    on_will_not_fit: str = "raise"
    stream: Optional[TextIO] = field(default_factory=lambda: sys.stderr)
    json_path: Optional[str] = None
    report: Any = None

    def __post_init__(self) -> None:
        if self.on_will_not_fit not in ("raise", "warn"):
            raise ValueError(f"on_will_not_fit must be 'raise' or 'warn', not {self.on_will_not_fit!r}")

    def run(self, facts: dict[str, Any], unknown: dict[str, str], model: Any,
            where: str, main_process: bool = True, notes: Iterable[str] = ()) -> Any:
        """Check the job described by `facts` (values) and `unknown` (name → reason);
        returns the report (also on `self.report`) or raises WillNotFit."""
        config = project_config.load_project_config(os.getcwd())
        headroom = self.headroom if self.headroom is not None else config.headroom
        src = Source(path=where)
        if self.seq_len is not None:
            facts["seq_len"] = self.seq_len
        if self.micro_batch is not None:
            facts["micro_batch"] = self.micro_batch
        plan = TrainingPlan()
        for name, value in facts.items():
            if value is not None:
                plan.facts[name] = Fact(value=value, origin=Origin.RUNTIME, source=src)
        for name, why in unknown.items():
            if name not in plan.facts:
                plan.facts[name] = Fact.unknown(why, src)
        hw, gpu_name = self._hardware(model, config)
        if gpu_name:
            plan.facts["gpu"] = Fact(value=gpu_name, origin=Origin.RUNTIME, source=src)
        est = api.estimate(plan, gpu=hw, headroom=headroom)
        est.ledger.assumptions.extend(notes)
        job = Job(entry=where, files=[where], plan=plan)
        ctx = engine.RuleContext(plan=plan, estimate=est, job=job, config=config,
                                 gpu_name=gpu_name, headroom=headroom)
        diags = engine.dedupe_sort(engine.run_rules(ctx, None, config.select, config.ignore))
        self.report = result.Report(jobs=[result.JobResult(job=job, estimate=est,
                                                           diagnostics=diags, gpu=gpu_name)])
        if main_process:
            self._log(self.report)
        if self.report.jobs[0].fits is False and self.on_will_not_fit == "raise":
            raise WillNotFit(self._why(self.report), self.report)
        return self.report

    def _hardware(self, model: Any, config: Any) -> tuple[Any, Optional[str]]:
        mem = self.gpu_memory
        if isinstance(mem, str):
            mem = project_config.parse_size(mem)
        if self.gpu or mem:
            hw = hardware.lookup(self.gpu) if self.gpu else None
            if mem:
                hw = hardware.custom(int(mem), name=hw.name if hw else None)
            return hw, _shown(hw)
        total, name = device_capacity(model)
        if total:
            return hardware.custom(total, name=name), name
        if config.gpu or config.gpu_memory:
            hw = hardware.lookup(config.gpu) if config.gpu else None
            if config.gpu_memory:
                hw = hardware.custom(int(config.gpu_memory), name=hw.name if hw else None)
            return hw, _shown(hw)
        return None, None

    def _log(self, report: Any) -> None:
        if self.json_path:
            with open(self.json_path, "w", encoding="utf-8") as fh:
                json.dump(report.to_json(), fh, indent=2)
        if self.stream is None:
            return
        text = render(report, "text", color=False, show_ledger=True)
        self.stream.write("preflight: the job as it starts training\n" + text)
        self.stream.flush()

    @staticmethod
    def _why(report: Any) -> str:
        job = report.jobs[0]
        lines = [f"preflight: {report_common.verdict(job).text}"]
        for d in job.diagnostics:
            lines.append(f"  {d.code} {' '.join(d.message.split())}")
            if d.fix:
                lines.append(f"    fix: {d.fix}")
        lines.append("  (stopped before the first optimizer step; "
                     "on_will_not_fit='warn' only warns)")
        return "\n".join(lines)


def _shown(hw: Any) -> Optional[str]:
    """A card's name; one known only by its memory reads "a 79.6 GiB device"."""
    if hw is None:
        return None
    if hw.name == "custom":
        return f"a {report_common.gib(hw.usable_bytes)} device"
    return hw.name


def where_trained() -> str:
    """The training script (relative to the current directory) for the report's location."""
    script = sys.argv[0] if sys.argv and sys.argv[0].endswith(".py") else ""
    return os.path.relpath(script) if script else "<training job>"


def first(values: Iterable[Any]) -> Any:
    for v in values:
        if v is not None:
            return v
    return None
