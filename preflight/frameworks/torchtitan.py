"""torchtitan: `torchrun … -m torchtitan.train --job.config_file job.toml` (or `run_train.sh`
with `CONFIG_FILE=…`) and its TOML job config; model flavors from the model module's
registry (`--module llama3 --config llama3_8b`).

`[model] name / flavor`, `[training] local_batch_size` (or tokens per microbatch),
`seq_len`, `mixed_precision_param`, `[parallelism]` degrees (FSDP over the
data-parallel shard degree, HSDP with a replicate degree, TP with sequence-sharded
activations, PP), `[activation_checkpoint] mode`, `[optimizer] name`.
"""

from __future__ import annotations

from preflight.facts import spellings
from preflight.frameworks import UNKNOWN, ConfigOut, Example, Framework, is_int
from preflight.plan import Origin

_AC = {"full": "full", "none": "none"}
#: torchtitan's default `selective_ac_option` (torchtitan/config_manager.py at 9dec370 and
#: e7c0cae): "2", every second block checkpointed
_SAC_DEFAULT = "2"


def _read(cfg: dict, o: ConfigOut) -> None:
    def sec(name: str) -> dict:
        v = cfg.get(name)
        return v if isinstance(v, dict) else {}

    model, training, par = sec("model"), sec("training"), sec("parallelism")
    if isinstance(model.get("name"), str):
        name = model["name"] + (f":{model['flavor']}" if isinstance(model.get("flavor"), str) else "")
        o.put("model", name, ("model", "flavor") if "flavor" in model else ("model", "name"))
        o.model_refs.append({"kind": "torchtitan", "name": model["name"], "flavor": model.get("flavor"),
                             "source": o.src(("model", "name"))})
    for key in ("local_batch_size", "batch_size"):
        if is_int(training.get(key)):
            o.put("micro_batch", training[key], ("training", key))
            break
    seq_key = "seq_len" if is_int(training.get("seq_len")) else (
        "max_context_length" if is_int(training.get("max_context_length")) else None)
    if seq_key:
        o.put("seq_len", training[seq_key], ("training", seq_key))
        tok = training.get("num_tokens_per_microbatch_per_dp_rank")
        if not any(n == "micro_batch" for n, _ in o.facts) and is_int(tok) and tok % training[seq_key] == 0:
            o.put("micro_batch", tok // training[seq_key], ("training", "num_tokens_per_microbatch_per_dp_rank"),
                f"num_tokens_per_microbatch_per_dp_rank {tok} / {seq_key} {training[seq_key]}", Origin.DERIVED)
    mpp = training.get("mixed_precision_param")
    if spellings.autocast_dtype(mpp):
        o.put("mixed_precision", spellings.autocast_dtype(mpp), ("training", "mixed_precision_param"))
    tp = par.get("tensor_parallel_degree")
    pp = par.get("pipeline_parallel_degree")
    if is_int(tp):
        o.put("tp", tp, ("parallelism", "tensor_parallel_degree"))
    if is_int(pp):
        o.put("pp", pp, ("parallelism", "pipeline_parallel_degree"))
    if par.get("enable_async_tensor_parallel") is True or (is_int(tp) and tp > 1):
        o.put("sp", bool(is_int(tp) and tp > 1), ("parallelism", "tensor_parallel_degree"),
            "torchtitan tensor parallelism shards activations along the sequence", Origin.DEFAULT)
    shard, rep = par.get("data_parallel_shard_degree", -1), par.get("data_parallel_replicate_degree", 1)
    if is_int(shard) and is_int(rep):
        if shard == 1:
            o.put("fsdp", None, ("parallelism", "data_parallel_shard_degree"), "data_parallel_shard_degree = 1: no FSDP")
        elif rep > 1:
            o.put("fsdp", "hybrid_shard", ("parallelism", "data_parallel_replicate_degree"))
        else:
            o.put("fsdp", "full_shard", ("parallelism", "data_parallel_shard_degree") if "data_parallel_shard_degree" in par
                else ("parallelism",), f"data_parallel_shard_degree = {shard}: FSDP over the data-parallel ranks",
                Origin.CONFIG if "data_parallel_shard_degree" in par else Origin.DEFAULT)
        o.put("zero_stage", 0, ("parallelism",), "torchtitan shards with FSDP, not ZeRO", Origin.DEFAULT)
        if shard != 1 and mpp is None and model:
            o.put("mixed_precision", "bf16", ("training",) if training else ("model",),
                  "training.mixed_precision_param defaults to bfloat16 (FSDP's mixed-precision policy)",
                  Origin.DEFAULT)
        if (isinstance(mpp, str) or mpp is None and model) and shard != 1:
            o.put("param_dtype", "fp32", ("training", "mixed_precision_param") if mpp else ("training",),
                  "FSDP keeps fp32 parameters and casts to mixed_precision_param", Origin.DEFAULT)
            # torchtitan/config/configs.py: mixed_precision_param "takes effect via fully_shard
            # when data_parallel_shard_degree > 1", via torch.autocast only without sharding
            o.put("fsdp_mixed_precision", True, ("training", "mixed_precision_param") if mpp
                  else ("training",), "fully_shard's MixedPrecisionPolicy computes in "
                  "mixed_precision_param, without autocast", Origin.DEFAULT)
    gbs = training.get("global_batch_size", -1)
    if is_int(gbs) and gbs > 0:
        o.extras["global_batch_size"] = {"value": gbs, "source": o.src(("training", "global_batch_size"))}
    elif model and (training or gbs == -1):
        o.put("grad_accum", 1, ("training", "global_batch_size") if "global_batch_size" in training else ("training",),
              "training.global_batch_size unset: local batch × data-parallel degree, no accumulation",
              Origin.DEFAULT)
    if model:
        flex = model.get("use_flex_attn") is True or str(model.get("attn_type", "")).lower() == "flex"
        o.put("attention", "sdpa", ("model",), "torchtitan attention: " + (
            "FlexAttention" if flex else "scaled_dot_product_attention (no s × s scores kept)"), Origin.DEFAULT)
    _checkpointing(sec("activation_checkpoint"), o)
    opt = sec("optimizer")
    if isinstance(opt.get("name"), str):
        n = opt["name"].lower()
        o.put("optimizer", spellings.optimizer_name(n) or "other", ("optimizer", "name"))
    parallel = {k: par[k] for k in ("data_parallel_replicate_degree", "data_parallel_shard_degree",
                                    "tensor_parallel_degree", "pipeline_parallel_degree",
                                    "context_parallel_degree", "expert_parallel_degree") if is_int(par.get(k))}
    if parallel:
        o.extras["parallel_degrees"] = {k: {"value": v, "source": o.src(("parallelism", k))}
                                        for k, v in parallel.items()}
    # pipeline micro-batches per step = local batch / pipeline_parallel_microbatch_size
    size = par.get("pipeline_parallel_microbatch_size")
    batch = training.get("local_batch_size", training.get("batch_size"))
    if is_int(size) and is_int(batch) and size > 0:
        o.extras["pipeline_microbatches"] = {
            "value": max(1, batch // size),
            "source": o.src(("parallelism", "pipeline_parallel_microbatch_size"))}


def _checkpointing(ac: dict, o: ConfigOut) -> None:
    """`[activation_checkpoint] mode`: "selective" is op-level with `selective_ac_option =
    "op"` (the policy of `physics.sac`); a number N checkpoints every N-th block fully and
    leaves the others unchecked, which is not sized (said unknown)."""
    mode = ac.get("mode")
    if not isinstance(mode, str):
        return
    if mode.lower() in _AC:
        o.put("activation_checkpointing", _AC[mode.lower()], ("activation_checkpoint", "mode"))
        return
    if mode.lower() == "op":
        o.put("activation_checkpointing", "selective", ("activation_checkpoint", "mode"))
        o.put("selective_policy", "op", ("activation_checkpoint", "mode"),
              "mode = op: op-level selective checkpointing")
        return
    if mode.lower() != "selective":
        return
    given = "selective_ac_option" in ac
    opt = str(ac.get("selective_ac_option", _SAC_DEFAULT)).strip().lower()
    at = ("activation_checkpoint", "selective_ac_option" if given else "mode")
    if opt == "op":
        o.put("activation_checkpointing", "selective", ("activation_checkpoint", "mode"))
        o.put("selective_policy", "op", at,
              "mode = selective, selective_ac_option = op: op-level selective checkpointing")
    elif opt.isdigit():
        o.unknown("activation_checkpointing", at, (
            f"mode = selective, selective_ac_option = {opt}"
            + ("" if given else " (torchtitan's default)")
            + f": one block in {opt} fully checkpointed, the others not (layer-level "
              "selective checkpointing), which the estimator does not size"))
    else:
        o.unknown("activation_checkpointing", at,
                  f"selective_ac_option {opt!r} is neither 'op' nor a layer frequency")


class Torchtitan(Framework):
    name = "torchtitan"
    title = "torchtitan"
    reads = (
        "TOML job config: `[model] name` / `flavor` (resolved through the model module's "
        "flavor table or the catalogue), `[training] local_batch_size`, `seq_len`, "
        "`mixed_precision_param` (under FSDP: fully_shard's mixed precision, 16-bit "
        "compute without autocast), `[parallelism]` shard / replicate / tensor / pipeline "
        "degrees, `[activation_checkpoint] mode` and `selective_ac_option` ('op': "
        "op-level selective checkpointing), `[optimizer] name`",
        "`--job.config_file`, `CONFIG_FILE=… ./run_train.sh`, `--module` / `--config` registry "
        "entries, `--training.*` / `--parallelism.*` flags",
    )
    not_read = ("Float8 / MX training settings (`[float8]`, `[mx]`) beyond the precision named",
                "context parallelism's activation split")

    def claims(self, cfg: dict, path: str) -> bool:
        return path.lower().endswith(".toml") and any(
            isinstance(cfg.get(k), dict) for k in ("training", "parallelism", "model", "activation_checkpoint"))

    def read_config(self, cfg: dict, o: ConfigOut) -> None:
        _read(cfg, o)


_TOML = """\
[job]
description = "Llama 3 8B"

[model]
name = "llama3"
flavor = "8B"

[training]
local_batch_size = 2
seq_len = 8192
mixed_precision_param = "bfloat16"

[parallelism]
data_parallel_shard_degree = -1
tensor_parallel_degree = 2

[activation_checkpoint]
mode = "selective"
selective_ac_option = "op"
"""

ADAPTER = Torchtitan()
Torchtitan.EXAMPLES = [
    Example(title="TOML job config run by torchrun -m torchtitan.train",
            files={"train_configs/llama3_8b.toml": _TOML},
            command="torchrun --nproc_per_node 8 -m torchtitan.train --job.config_file "
                    "train_configs/llama3_8b.toml",
            facts={"model": ("llama3:8B", "train_configs/llama3_8b.toml:6"),
                   "micro_batch": (2, "train_configs/llama3_8b.toml:9"),
                   "seq_len": (8192, "train_configs/llama3_8b.toml:10"),
                   "mixed_precision": ("bf16", "train_configs/llama3_8b.toml:11"),
                   "tp": (2, "train_configs/llama3_8b.toml:15"),
                   "fsdp": ("full_shard", "train_configs/llama3_8b.toml:14"),
                   "activation_checkpointing": ("selective", "train_configs/llama3_8b.toml:18"),
                   "selective_policy": ("op", "train_configs/llama3_8b.toml:19"),
                   "gpus_per_node": (8, "<command>:1", "cli")}),
    Example(title="layer-level selective checkpointing (torchtitan's default option): unknown",
            files={"job.toml": "[model]\nname = \"llama3\"\nflavor = \"8B\"\n\n"
                               "[activation_checkpoint]\nmode = \"selective\"\n"},
            paths=["job.toml"],
            facts={"activation_checkpointing": (UNKNOWN, "job.toml:6")}),
]
