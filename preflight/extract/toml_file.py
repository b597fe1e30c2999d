"""TOML config files — torchtitan job configs ([model], [training], [parallelism],
[activation_checkpoint], mixed precision). `pyproject.toml` is left to the project config.

tomllib keeps no positions, so a line scan maps `[table]` + `key =` to line and column
(one key per line, which is how these files are written; a key the scan misses falls back
to its table's header line).
"""

from __future__ import annotations

import os
import re
from typing import Any, Optional

from preflight.facts import spellings
from preflight.plan import Diagnostic, Extraction, Fact, Origin, Source

try:
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

_HEADER = re.compile(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(?:#.*)?$")
_KEY = re.compile(r'^\s*("?[A-Za-z0-9_.\-"]+"?)\s*=')


def toml_positions(text: str) -> dict[tuple, tuple[int, int]]:
    pos: dict[tuple, tuple[int, int]] = {}
    table: tuple = ()
    for n, line in enumerate(text.splitlines(), 1):
        m = _HEADER.match(line)
        if m:
            table = tuple(p.strip().strip('"') for p in m.group(1).split("."))
            pos.setdefault(table, (n, line.index("[") + 1))
            continue
        m = _KEY.match(line)
        if m:
            key = tuple(p.strip('"') for p in m.group(1).split("."))
            pos.setdefault(table + key, (n, m.start(1) + 1))
    return pos


_AC = {"selective": "selective", "full": "full", "none": "none", "op": "selective"}


def extract(path: str, text: str, args: Optional[list[str]] = None) -> Extraction:
    try:
        cfg = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        m = re.search(r"line (\d+), column (\d+)", str(e))
        line, col = (int(m.group(1)), int(m.group(2))) if m else (1, 1)
        msg = re.sub(r"\s*\(at line \d+, column \d+\)", "", str(e))
        return Extraction(path=path, kind="toml", diagnostics=[Diagnostic(
            code="PF005", name="malformed-config", severity="error",
            message=f"malformed TOML: {msg}", path=path, line=line, col=col)])
    if os.path.basename(path) == "pyproject.toml" or not any(
            k in cfg for k in ("training", "parallelism", "model", "activation_checkpoint")):
        return Extraction(path=path, kind="toml")
    pos = toml_positions(text)

    def src(p: tuple) -> Source:
        q = p
        while q and q not in pos:
            q = q[:-1]
        line, col = pos.get(q, (1, 1))
        return Source(path=path, line=line, col=col)

    facts: list[tuple[str, Fact]] = []

    def put(name: str, value: Any, p: tuple, why: str = "", origin: Origin = Origin.CONFIG) -> None:
        facts.append((name, Fact(value=value, origin=origin, source=src(p),
                                 reason=why or f"[{p[0]}] {'.'.join(p[1:])} = {value!r}")))

    def sec(name: str) -> dict:
        v = cfg.get(name)
        return v if isinstance(v, dict) else {}

    def is_int(v: Any) -> bool:
        return isinstance(v, int) and not isinstance(v, bool)

    model, training, par = sec("model"), sec("training"), sec("parallelism")
    refs: list[dict] = []
    if isinstance(model.get("name"), str):
        name = model["name"] + (f":{model['flavor']}" if isinstance(model.get("flavor"), str) else "")
        put("model", name, ("model", "flavor") if "flavor" in model else ("model", "name"))
        refs.append({"kind": "torchtitan", "name": model["name"], "flavor": model.get("flavor"),
                     "source": src(("model", "name"))})
    for key in ("local_batch_size", "batch_size"):
        if is_int(training.get(key)):
            put("micro_batch", training[key], ("training", key))
            break
    seq_key = "seq_len" if is_int(training.get("seq_len")) else (
        "max_context_length" if is_int(training.get("max_context_length")) else None)
    if seq_key:
        put("seq_len", training[seq_key], ("training", seq_key))
        tok = training.get("num_tokens_per_microbatch_per_dp_rank")
        if not any(n == "micro_batch" for n, _ in facts) and is_int(tok) and tok % training[seq_key] == 0:
            put("micro_batch", tok // training[seq_key], ("training", "num_tokens_per_microbatch_per_dp_rank"),
                f"num_tokens_per_microbatch_per_dp_rank {tok} / {seq_key} {training[seq_key]}", Origin.DERIVED)
    mpp = training.get("mixed_precision_param")
    if spellings.autocast_dtype(mpp):
        put("mixed_precision", spellings.autocast_dtype(mpp), ("training", "mixed_precision_param"))
    tp = par.get("tensor_parallel_degree")
    pp = par.get("pipeline_parallel_degree")
    if is_int(tp):
        put("tp", tp, ("parallelism", "tensor_parallel_degree"))
    if is_int(pp):
        put("pp", pp, ("parallelism", "pipeline_parallel_degree"))
    if par.get("enable_async_tensor_parallel") is True or (is_int(tp) and tp > 1):
        put("sp", bool(is_int(tp) and tp > 1), ("parallelism", "tensor_parallel_degree"),
            "torchtitan tensor parallelism shards activations along the sequence", Origin.DEFAULT)
    shard, rep = par.get("data_parallel_shard_degree", -1), par.get("data_parallel_replicate_degree", 1)
    if is_int(shard) and is_int(rep):
        if shard == 1:
            put("fsdp", None, ("parallelism", "data_parallel_shard_degree"), "data_parallel_shard_degree = 1: no FSDP")
        elif rep > 1:
            put("fsdp", "hybrid_shard", ("parallelism", "data_parallel_replicate_degree"))
        else:
            put("fsdp", "full_shard", ("parallelism", "data_parallel_shard_degree") if "data_parallel_shard_degree" in par
                else ("parallelism",), f"data_parallel_shard_degree = {shard}: FSDP over the data-parallel ranks",
                Origin.CONFIG if "data_parallel_shard_degree" in par else Origin.DEFAULT)
        put("zero_stage", 0, ("parallelism",), "torchtitan shards with FSDP, not ZeRO", Origin.DEFAULT)
        if isinstance(mpp, str) and shard != 1:
            put("param_dtype", "fp32", ("training", "mixed_precision_param"),
                "FSDP keeps fp32 parameters and casts to mixed_precision_param", Origin.DEFAULT)
    ac = sec("activation_checkpoint")
    if isinstance(ac.get("mode"), str) and ac["mode"].lower() in _AC:
        put("activation_checkpointing", _AC[ac["mode"].lower()], ("activation_checkpoint", "mode"))
    opt = sec("optimizer")
    if isinstance(opt.get("name"), str):
        n = opt["name"].lower()
        put("optimizer", spellings.optimizer_name(n) or "other", ("optimizer", "name"))
    extras: dict[str, Any] = {"recipe": "torchtitan"}
    if refs:
        extras["model_refs"] = refs
    parallel = {k: par[k] for k in ("data_parallel_replicate_degree", "data_parallel_shard_degree",
                                    "tensor_parallel_degree", "pipeline_parallel_degree",
                                    "context_parallel_degree", "expert_parallel_degree") if is_int(par.get(k))}
    if parallel:
        extras["parallel_degrees"] = {k: {"value": v, "source": src(("parallelism", k))} for k, v in parallel.items()}
    # pipeline micro-batches per step = local batch / pipeline_parallel_microbatch_size
    size = par.get("pipeline_parallel_microbatch_size")
    batch = training.get("local_batch_size", training.get("batch_size"))
    if is_int(size) and is_int(batch) and size > 0:
        extras["pipeline_microbatches"] = {
            "value": max(1, batch // size),
            "source": src(("parallelism", "pipeline_parallel_microbatch_size"))}
    return Extraction(path=path, kind="torchtitan", facts=facts, extras=extras)
