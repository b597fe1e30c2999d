"""EasyR1-style verl forks: `python3 -m verl.trainer.main config=run.yaml key.sub=value …`,
one YAML merged over the trainer's dataclass defaults, then the line's `key=value` words
(OmegaConf's `from_cli`). The document nests the roles under `worker`: the **actor**
(`worker.actor.*`, trained), the reference (`worker.ref.*`, frozen) and the rollout
engine (`worker.rollout.*`, inference only); only the actor is sized — the reference's
and the rollout's keys (`worker.ref.offload`, `worker.rollout.tensor_parallel_size`) are
never read as the trained model's.

The defaults where the document leaves a key out (the fork's `ActorConfig`, `FSDPConfig`,
`DataConfig`, `TrainerConfig`): 1 node of 8 GPUs, FSDP full sharding, the actor held in
fp32 and computed in bf16, AdamW, gradient checkpointing on, dynamic batching on, no LoRA
(`lora.rank: 0`), prompts of 512 plus responses of 512 tokens.
"""

from __future__ import annotations

from typing import Any

from preflight.facts import spellings
from preflight.frameworks import UNKNOWN, ConfigOut, Example, Framework, get_path, is_int, read_overrides
from preflight.plan import Fact, Invocation, Origin

ACTOR = ("worker", "actor")


def _given(cfg: dict, *p: str) -> bool:
    d: Any = cfg
    for k in p:
        if not isinstance(d, dict) or k not in d:
            return False
        d = d[k]
    return True


def _put(cfg: dict, o: ConfigOut, name: str, p: tuple, conv, default: Any, why: str) -> None:
    """The fact `name` from the key at `p` through `conv`, or the fork's default for it."""
    if _given(cfg, *p):
        v = get_path(cfg, *p)
        value = conv(v)
        if value is None and v is not None:
            o.unknown(name, p, f"{'.'.join(p)}: {v!r} is not a value preflight reads")
        elif value is not None or name in ("fsdp", "lora"):
            o.put(name, value, p, f"{'.'.join(p)}: {v}")
    elif default is not None:
        o.default(name, default, p[:1], why)


def _line_unknown(o: ConfigOut, name: str, p: tuple, why: str) -> None:
    """A fact the line's words change but do not decide alone (one of the two lengths, one
    offload switch): unknown, and it overrules the document's value it replaces."""
    o.facts.append((name, Fact.unknown(why, source=o.src(p)).model_copy(update={"over": o.origin})))


def _bool(v: Any) -> Any:
    return v if isinstance(v, bool) else None


def _read(cfg: dict, o: ConfigOut) -> None:
    a = ACTOR
    m = get_path(cfg, *a, "model", "model_path")
    if isinstance(m, str) and m:
        # the model fact only, no model reference: a line's `model_path=` override (read
        # apart from the document) must be the one resolved
        o.put("model", m, a + ("model", "model_path"), f"worker.actor.model.model_path: {m}")
    mb = a + ("micro_batch_size_per_device_for_update",)
    dyn = get_path(cfg, *a, "dynamic_batching")
    # dynamic batching packs each micro-batch to micro × the longest sequence's tokens:
    # the memory of `micro` sequences of the full length at most
    how = " (dynamic batching: packed to as many tokens as that many full-length sequences)" \
        if dyn is not False else ""
    _put(cfg, o, "micro_batch", mb, lambda v: v if is_int(v) and v > 0 else None, 4,
         "the fork's default micro_batch_size_per_device_for_update: 4" + how)
    _seq(cfg, o)
    _put(cfg, o, "nodes", ("trainer", "nnodes"), lambda v: v if is_int(v) else None, 1,
         "the fork's default trainer.nnodes: 1")
    _put(cfg, o, "gpus_per_node", ("trainer", "n_gpus_per_node"), lambda v: v if is_int(v) else None, 8,
         "the fork's default trainer.n_gpus_per_node: 8")
    _put(cfg, o, "activation_checkpointing", a + ("model", "enable_gradient_checkpointing"),
         lambda v: None if _bool(v) is None else ("full" if v else "none"), "full",
         "the fork's default enable_gradient_checkpointing: true")
    _put(cfg, o, "fsdp", a + ("fsdp", "enable_full_shard"),
         lambda v: None if _bool(v) is None else ("full_shard" if v else "shard_grad_op"), "full_shard",
         "the fork's default fsdp.enable_full_shard: true (FSDP over every GPU)")
    o.default("zero_stage", 0, a, "the fork shards with FSDP, not DeepSpeed")
    _put(cfg, o, "param_dtype", a + ("fsdp", "torch_dtype"), spellings.dtype, "fp32",
         "the fork holds the trained actor in fp32 when fsdp.torch_dtype is not set")
    _put(cfg, o, "mixed_precision", a + ("fsdp", "mp_param_dtype"),
         lambda v: (spellings.precision(v) or (None,))[0], "bf16",
         "the fork's FSDP mixed precision computes in bf16 (mp_param_dtype)")
    _put(cfg, o, "optimizer", a + ("optim", "strategy"), spellings.optimizer_name, "adamw",
         "the fork's default optim.strategy: adamw")
    _offload(cfg, o)
    _lora(cfg, o)


def _seq(cfg: dict, o: ConfigOut) -> None:
    p, r = ("data", "max_prompt_length"), ("data", "max_response_length")
    pv, rv = get_path(cfg, *p), get_path(cfg, *r)
    if o.partial and pv is None and rv is None:
        return
    if o.partial and (pv is None or rv is None):
        _line_unknown(o, "seq_len", p if pv is not None else r, "the line gives one of "
                      "data.max_prompt_length / max_response_length, the config the other: "
                      "their sum is not read across the two")
        return
    pv, rv = 512 if pv is None else pv, 512 if rv is None else rv
    if is_int(pv) and is_int(rv):
        o.put("seq_len", pv + rv, r if _given(cfg, *r) else p, f"prompt {pv} + response {rv} tokens "
              "(data.max_prompt_length + data.max_response_length)", Origin.DERIVED)


def _offload(cfg: dict, o: ConfigOut) -> None:
    a = ACTOR
    cpu = get_path(cfg, *a, "fsdp", "enable_cpu_offload")
    if cpu is True:
        o.put("offload", "optimizer+params", a + ("fsdp", "enable_cpu_offload"),
              "fsdp.enable_cpu_offload: true (FSDP CPUOffload: parameters, gradients and the "
              "optimizer step on the CPU)")
        return
    pk, ok = a + ("offload", "offload_params"), a + ("offload", "offload_optimizer")
    pv, ov = get_path(cfg, *pk), get_path(cfg, *ok)
    if not (_given(cfg, *pk) or _given(cfg, *ok)):
        o.default("offload", "none", a, "the fork's default: no parameter or optimizer offload")
        return
    if o.partial and not (_given(cfg, *pk) and _given(cfg, *ok)):
        _line_unknown(o, "offload", pk if _given(cfg, *pk) else ok, "the line sets one of "
                      "offload_params / offload_optimizer, the config the other: not read across the two")
        return
    if not isinstance(pv or False, bool) or not isinstance(ov or False, bool):
        o.unknown("offload", pk, f"offload_params {pv!r}, offload_optimizer {ov!r}: not switches")
        return
    if pv and not ov:
        o.unknown("offload", pk, "offload_params: true without offload_optimizer: not one of "
                  "the offload settings preflight sizes")
        return
    o.put("offload", "optimizer+params" if pv and ov else "optimizer" if ov else "none",
          pk if _given(cfg, *pk) else ok, f"offload_params: {bool(pv)}, offload_optimizer: {bool(ov)}")


def _lora(cfg: dict, o: ConfigOut) -> None:
    p = ACTOR + ("model", "lora")
    if not _given(cfg, *p, "rank"):
        o.default("lora", False, ACTOR, "the fork's default lora.rank: 0 (no adapter)")
        return
    r = get_path(cfg, *p, "rank")
    if is_int(r) and r <= 0:
        o.put("lora", False, p + ("rank",), f"worker.actor.model.lora.rank: {r} (no adapter)")
        return
    # the line's rank alone: its alpha (which sizes nothing) is the config's, not read here
    alpha = get_path(cfg, *p, "alpha") if _given(cfg, *p, "alpha") or o.partial else 64
    o.lora(r, alpha, get_path(cfg, *p, "target_modules") or "all-linear", 16,
           p + ("rank",), f"worker.actor.model.lora.rank: {r}")


class EasyR1(Framework):
    name = "easyr1"
    title = "EasyR1 (verl fork)"
    entry_points = (r"^verl\.trainer\.main$", r"(^|/)verl/trainer/main\.py$")
    launched_by = ("python3 -m verl.trainer.main config=run.yaml key=value …",)
    reads = (
        "the actor only (`worker.actor.*`): `model.model_path`, "
        "`micro_batch_size_per_device_for_update` (with `dynamic_batching`, the same token "
        "count), `model.enable_gradient_checkpointing`, `model.lora.rank` / `alpha` / "
        "`target_modules`, `fsdp.enable_full_shard` / `enable_cpu_offload` / `torch_dtype` / "
        "`mp_param_dtype`, `offload.offload_params` / `offload_optimizer`, `optim.strategy`",
        "`data.max_prompt_length` + `data.max_response_length` (the sequence), "
        "`trainer.nnodes`, `trainer.n_gpus_per_node`; the line's `key=value` words over the "
        "`config=` document; the fork's dataclass defaults for what both leave out",
    )
    not_read = (
        "the critic (`worker.critic.*`, trained with `algorithm.adv_estimator: gae`), the "
        "reference model and the rollout engine's memory beside the actor",
        "gradient accumulation (`global_batch_size` × `rollout.n` over the GPUs and the "
        "micro-batch), Ulysses sequence parallelism (`ulysses_size`), `adamw_bf16`",
    )

    def claims(self, cfg: dict, path: str) -> bool:
        actor = get_path(cfg, *ACTOR)
        return isinstance(actor, dict) and any(
            k in actor for k in ("micro_batch_size_per_device_for_update", "global_batch_size")) \
            and isinstance(actor.get("model"), dict) and "model_path" in actor["model"]

    def read_config(self, cfg: dict, out: ConfigOut) -> None:
        _read(cfg, out)

    def launch_python(self, inv: Invocation, origin: Origin) -> Invocation:
        # the driver starts its workers through Ray: a `python` line's one process says
        # nothing of the GPUs
        kept = [(n, f) for n, f in inv.facts
                if not (n in ("nodes", "gpus_per_node", "world_size", "fsdp", "zero_stage")
                        and f.origin == Origin.DEFAULT)]
        words = [a for a in inv.args if "=" in a and not a.startswith("-")
                 and a.split("=", 1)[0] != "config"]
        facts = read_overrides(self.read_config, words, inv.source, origin) if words else []
        return inv.model_copy(update={"facts": kept + facts})


ADAPTER = EasyR1()

_CONFIG = """\
data:
  max_prompt_length: 1024
  max_response_length: 2048
worker:
  actor:
    global_batch_size: 128
    micro_batch_size_per_device_for_update: 2
    model:
      model_path: Qwen/Qwen2.5-7B-Instruct
      lora:
        rank: 0
        alpha: 64
    offload:
      offload_params: true
      offload_optimizer: true
  ref:
    offload:
      offload_params: false
  rollout:
    n: 5
    tensor_parallel_size: 2
trainer:
  n_gpus_per_node: 8
"""

_LINE = """\
MODEL=Qwen/Qwen3-4B
python3 -m verl.trainer.main \\
    config=run.yaml \\
    worker.actor.model.model_path=${MODEL} \\
    worker.actor.model.lora.rank=32 \\
    trainer.n_gpus_per_node=2
"""

_HALF = """\
python3 -m verl.trainer.main config=run.yaml \\
    data.max_response_length=4096 \\
    worker.actor.offload.offload_params=false
"""

EasyR1.EXAMPLES = [
    Example(title="the actor's keys; the reference's offload and the rollout's parallelism "
                  "are not the actor's",
            files={"run.yaml": _CONFIG}, paths=["run.yaml"],
            facts={"model": ("Qwen/Qwen2.5-7B-Instruct", "run.yaml:9"),
                   "micro_batch": (2, "run.yaml:7"),
                   "seq_len": (3072, "run.yaml:3", "derived"),
                   "offload": ("optimizer+params", "run.yaml:14"),
                   "lora": (False, "run.yaml:11"),
                   "gpus_per_node": (8, "run.yaml:23"),
                   "nodes": (1, "run.yaml:22", "default"),
                   "activation_checkpointing": ("full", "run.yaml:4", "default"),
                   "param_dtype": ("fp32", "run.yaml:4", "default")}),
    Example(title="the line's key=value words over the config= document",
            files={"run.yaml": _CONFIG, "train.sh": _LINE}, paths=["train.sh"],
            facts={"model": ("Qwen/Qwen3-4B", "train.sh:4"),
                   "lora": ({"r": 32, "alpha": None, "targets": ["all-linear"], "base_bits": 16}, "train.sh:5"),
                   "gpus_per_node": (2, "train.sh:6"),
                   "micro_batch": (2, "run.yaml:7"),
                   "offload": ("optimizer+params", "run.yaml:14")}),
    Example(title="one length or one offload switch on the line: unknown, never the "
                  "document's sum or pair it changes",
            files={"run.yaml": _CONFIG, "half.sh": _HALF}, paths=["half.sh"],
            facts={"seq_len": (UNKNOWN, "half.sh:2"), "offload": (UNKNOWN, "half.sh:3"),
                   "micro_batch": (2, "run.yaml:7")}),
]
