"""verl (Volcano Engine RL for LLMs): `python -m verl.trainer.main_ppo key=value …` (PPO,
GRPO, RLOO… on Ray) and `torchrun -m verl.trainer.fsdp_sft_trainer key=value …` (SFT),
configured by Hydra overrides of the configs verl ships (`preflight.lang.overrides`).

A PPO line starts several models on the same GPUs: the **actor** (trained), the
**critic** (trained, when `critic.enable` says so, or by default when
`algorithm.adv_estimator` is `gae`), the **reference** policy (frozen: forward only) and
the **rollout** engine (vLLM / SGLang: inference only). Each trained role is a job of its
own, read from its own keys — `actor_rollout_ref.actor.*` and `actor_rollout_ref.model.*`
for the actor, `critic.*` and `critic.model.*` for the critic; the reference's and the
rollout's keys (`actor_rollout_ref.ref.fsdp_config.param_offload`,
`actor_rollout_ref.rollout.tensor_model_parallel_size`) never size a trained model.

verl's defaults where the line leaves a key out (its shipped `ppo_trainer.yaml`,
`sft_trainer.yaml`): `trainer.nnodes` 1, `trainer.n_gpus_per_node` 8, FSDP with
`reshard_after_forward` (full sharding over every GPU, `fsdp_size: -1`), the trained model
held in fp32 (`model_dtype`) and computed in bf16 (FSDP mixed precision), AdamW, gradient
checkpointing on (since verl 0.2), no LoRA (`lora_rank: 0`), no offload, FlashAttention-2,
prompts of `data.max_prompt_length` (512) plus responses of `data.max_response_length`
(512) tokens per sequence.
"""

from __future__ import annotations

import os
from typing import Any, Optional

from preflight.facts import spellings
from preflight.frameworks import UNKNOWN, Example, Framework, is_int, locate_word, lora_targets
from preflight.lang import hydra, overrides
from preflight.lang.hydra import Unresolved
from preflight.lang.shell.values import reason_of
from preflight.plan import Fact, Invocation, Origin, Source

PPO = "verl.trainer.main_ppo"
SFT = "verl.trainer.fsdp_sft_trainer"
#: advantage estimators that need no value model (verl's `need_critic`)
_NO_CRITIC = ("grpo", "grpo_passk", "reinforce_plus_plus", "reinforce_plus_plus_baseline",
              "remax", "rloo", "opo", "gpg")


class _Line:
    """A verl line's overrides over the config it composes: each key's value, where it is
    written (the override's word, or the shipped config's line when the checkout holds
    verl's configs), and the facts read. `partial`: the line names a config of its own
    that is not read — verl's defaults are then not assumed, only the line's values."""

    def __init__(self, inv: Invocation, origin: Origin, base: Optional[Any] = None,
                 partial: bool = False):
        self.src, self.origin = inv.source, origin
        ovs = overrides.parse(list(inv.args))
        self.values = {o.key.replace("-", "_"): o.value for o in ovs if o.op != "delete"}
        self.base, self.partial = base, partial
        self.facts: list[tuple[str, Fact]] = []

    def _file(self, key: str) -> tuple[bool, Any]:
        if self.base is None:
            return False, None
        d: Any = self.base.cfg
        for k in key.split("."):
            if not isinstance(d, dict) or k not in d:
                return False, None
            d = d[k]
        return (not isinstance(d, (dict, list))), d

    def where(self, key: str) -> Optional[Source]:
        if key not in self.values and self._file(key)[0]:
            return self.base.src(tuple(key.split(".")))
        return locate_word(self.src, f"{key}=") if self.src is not None else None

    def origin_of(self, key: str) -> Origin:
        """The line's origin for an override, config for the shipped config's value."""
        return self.origin if key in self.values else Origin.CONFIG

    def get(self, key: str, default: Any = None) -> tuple[str, Any]:
        """("given", value) | ("unknown", reason) | ("default", default): given by the
        line, or by the config the line composes when it is read."""
        if key not in self.values:
            there, v = self._file(key)
            if there and isinstance(v, Unresolved):
                return "unknown", f"{key}: {v.reason}"
            if there and isinstance(v, str) and "\0" in v:      # an interpolation of a line's unknown
                return "unknown", f"{key}: {reason_of(v) or 'not known statically'}"
            if there:
                return "given", v
            return "default", default
        v = self.values[key]
        if isinstance(v, str) and "\0" in v:
            return "unknown", f"{key}: {reason_of(v) or 'not known statically'}"
        return "given", v

    def put(self, name: str, key: str, conv, default: Any = None, why: str = "") -> None:
        """The fact `name` from `key` (through `conv`), or verl's default for it."""
        state, v = self.get(key, default)
        if state == "unknown":
            self.facts.append((name, Fact.unknown(v, source=self.where(key))))
            return
        value = conv(v) if v is not None else None
        if state == "given":
            if value is None and v is not None:
                self.facts.append((name, Fact.unknown(f"{key}={v}: not a value preflight reads",
                                                      source=self.where(key))))
                return
            if value is None and name not in ("lora", "fsdp"):
                return
            self.facts.append((name, Fact(value=value, origin=self.origin_of(key), source=self.where(key),
                                          reason=f"{key}={v}" if key in self.values else f"{key}: {v}")))
        elif (value is not None or name in ("lora", "fsdp")) and not self.partial:
            self.facts.append((name, Fact(value=value, origin=Origin.DEFAULT, source=self.src,
                                          reason=why or f"verl's default {key}: {default}")))

    def fact(self, name: str, value: Any, origin: Origin, why: str, key: str = "") -> None:
        if origin == Origin.DEFAULT and self.partial:
            return
        if key and origin == self.origin:
            origin = self.origin_of(key)
        self.facts.append((name, Fact(value=value, origin=origin,
                                      source=self.where(key) if key else self.src, reason=why)))


def _int(v: Any) -> Optional[int]:
    return v if is_int(v) else None


def _bool(v: Any) -> Optional[bool]:
    if isinstance(v, bool):
        return v
    if isinstance(v, str) and v.lower() in ("true", "false"):
        return v.lower() == "true"
    return None


def _ckpt(v: Any) -> Optional[str]:
    b = _bool(v)
    return None if b is None else ("full" if b else "none")


def _offload(line: _Line, params_key: str, optim_key: str) -> None:
    """`offload` from an FSDP config's parameter and optimizer offload switches."""
    sp, p = line.get(params_key, False)
    so, o = line.get(optim_key, False)
    for state, reason, key in ((sp, p, params_key), (so, o, optim_key)):
        if state == "unknown":
            line.facts.append(("offload", Fact.unknown(reason, source=line.where(key))))
            return
    p, o = _bool(p), _bool(o)
    if p is None or o is None:
        return
    given = [k for k, s in ((params_key, sp), (optim_key, so)) if s == "given"]
    if p and not o:
        line.facts.append(("offload", Fact.unknown(
            f"{params_key}=True without optimizer offload: parameters (and their gradients) "
            "leave the GPU between uses, the optimizer states stay — not one of the offload "
            "settings preflight sizes", source=line.where(params_key))))
        return
    value = "optimizer+params" if p and o else "optimizer" if o else "none"
    if given:
        line.fact("offload", value, line.origin, " ".join(f"{k}={line.get(k)[1]}" for k in given), given[-1])
    else:
        line.fact("offload", value, Origin.DEFAULT, "verl's default: no parameter or optimizer offload")


def _lora(line: _Line, model: str) -> None:
    state, r = line.get(f"{model}.lora_rank", 0)
    if state == "unknown":
        line.facts.append(("lora", Fact.unknown(r, source=line.where(f"{model}.lora_rank"))))
        return
    if not is_int(r):
        return
    if r <= 0:
        line.fact("lora", False, line.origin if state == "given" else Origin.DEFAULT,
                  f"{model}.lora_rank={r}: no adapter" if state == "given" else
                  "verl's default lora_rank: 0 (no adapter)", f"{model}.lora_rank" if state == "given" else "")
        return
    _, alpha = line.get(f"{model}.lora_alpha", 16)
    _, targets = line.get(f"{model}.target_modules", "all-linear")
    val = {"r": r, "alpha": alpha if isinstance(alpha, (int, float)) and not isinstance(alpha, bool) else None,
           "targets": lora_targets(targets), "base_bits": 16}
    line.fact("lora", val, line.origin, f"{model}.lora_rank={r}", f"{model}.lora_rank")


def _model(line: _Line, key: str) -> None:
    state, v = line.get(key)
    if state == "unknown":
        line.facts.append(("model", Fact.unknown(v, source=line.where(key))))
    elif state == "given" and isinstance(v, str) and v:
        line.fact("model", v, line.origin, f"{key}={v}", key)
    else:
        line.facts.append(("model", Fact.unknown(
            f"{key} not given on the line (verl's shipped value is a placeholder path)", source=line.src)))


def _precision(line: _Line, dtype_key: str) -> None:
    line.put("param_dtype", dtype_key, spellings.dtype, "fp32",
             "verl holds the trained model in fp32 (model_dtype) with FSDP mixed precision")
    line.fact("mixed_precision", "bf16", Origin.DEFAULT,
              "verl's FSDP mixed precision computes in bf16 (param_dtype bf16, reduce in fp32)")
    line.fact("master_weights", False, Origin.DEFAULT,
              "FSDP mixed precision keeps the fp32 weights themselves, no separate master copy")


def _strategy(line: _Line, strategy_key: str, fsdp_key: str, default: str) -> None:
    state, s = line.get(strategy_key, default)
    if state == "unknown":
        line.facts.append(("fsdp", Fact.unknown(s, source=line.where(strategy_key))))
        return
    if s in ("fsdp", "fsdp2"):
        st, r = line.get(f"{fsdp_key}.reshard_after_forward", True)
        value = "shard_grad_op" if r is False else "full_shard"
        how = line.origin if "given" in (state, st) else Origin.DEFAULT
        line.fact("fsdp", value, how, f"{strategy_key}: {s} (FSDP over every GPU, fsdp_size -1)",
                  strategy_key if state == "given" else "")
        line.fact("zero_stage", 0, Origin.DEFAULT, "verl shards with FSDP, not DeepSpeed")
    elif s == "megatron":
        line.fact("fsdp", None, line.origin if state == "given" else Origin.DEFAULT,
                  f"{strategy_key}: megatron (Megatron-LM parallelism, no FSDP)", strategy_key)
        base = strategy_key.rsplit(".", 1)[0]
        line.put("tp", f"{base}.megatron.tensor_model_parallel_size", _int, 1)
        line.put("pp", f"{base}.megatron.pipeline_model_parallel_size", _int, 1)


def _seq(line: _Line) -> None:
    sp, p = line.get("data.max_prompt_length", 512)
    sr, r = line.get("data.max_response_length", 512)
    if "unknown" in (sp, sr):
        key = "data.max_prompt_length" if sp == "unknown" else "data.max_response_length"
        line.facts.append(("seq_len", Fact.unknown(p if sp == "unknown" else r, source=line.where(key))))
        return
    if is_int(p) and is_int(r):
        key = "data.max_response_length" if sr == "given" else "data.max_prompt_length"
        line.facts.append(("seq_len", Fact(
            value=p + r, origin=Origin.DERIVED, source=line.where(key) if "given" in (sp, sr) else line.src,
            reason=f"prompt {p} + response {r} tokens (data.max_prompt_length + data.max_response_length)")))


def _micro(line: _Line, train: str) -> None:
    key = f"{train}.ppo_micro_batch_size_per_gpu"
    state, v = line.get(key)
    if state == "unknown" or v is not None:
        line.put("micro_batch", key, _int)
        return
    sd, dyn = line.get(f"{train}.use_dynamic_bsz", False)
    if sd == "given" and dyn is True:
        line.facts.append(("micro_batch", Fact.unknown(
            f"{train}.use_dynamic_bsz=True: micro-batches are packed to "
            f"{train}.ppo_max_token_len_per_gpu tokens, not a count of sequences",
            source=line.where(f"{train}.use_dynamic_bsz"))))
        return
    if line.partial:
        return
    sg, g = line.get(f"{train}.ppo_micro_batch_size")
    world = _world(line)
    if sg == "given" and is_int(g) and world:
        _global_micro(line, train, g, world)
        return
    line.facts.append(("micro_batch", Fact.unknown(
        f"{key} not given on the line (verl requires it, or use_dynamic_bsz)", source=line.src)))


def _global_micro(line: _Line, train: str, g: int, world: int) -> None:
    """The per-GPU micro-batch of a global `ppo_micro_batch_size`: verl divides it by the
    data-parallel groups (the GPUs over the Ulysses sequence-parallel size). A composed
    config without `ppo_micro_batch_size_per_gpu` is a verl from before that key, whose
    actor then multiplies the quotient by `rollout.n` (each prompt's n responses)."""
    key = f"{train}.ppo_micro_batch_size"
    ss, sp = line.get(f"{train}.ulysses_sequence_parallel_size", 1)
    legacy = train.endswith(".actor") and line.base is not None and \
        not _declared(line, f"{train}.ppo_micro_batch_size_per_gpu")
    sn, n = line.get("actor_rollout_ref.rollout.n", 1) if legacy else ("default", 1)
    for state, v, k in ((ss, sp, f"{train}.ulysses_sequence_parallel_size"),
                        (sn, n, "actor_rollout_ref.rollout.n")):
        if state == "unknown" or not is_int(v) or v < 1:
            line.facts.append(("micro_batch", Fact.unknown(
                v if state == "unknown" else f"{k}={v}: not a size preflight reads",
                source=line.where(k))))
            return
    groups = max(world // sp, 1)
    why = f"{key}={g} over {groups} data-parallel groups ({world} GPUs" + \
        (f" / sequence parallel {sp})" if sp > 1 else ")")
    if legacy:
        why += f", times rollout.n={n} (a verl whose config has no ppo_micro_batch_size_per_gpu)"
    line.fact("micro_batch", max(g // groups, 1) * n, Origin.DERIVED, why, key)


def _declared(line: _Line, key: str) -> bool:
    """Does the composed config have `key` at all (null included)?"""
    d: Any = line.base.cfg
    for k in key.split("."):
        if not isinstance(d, dict) or k not in d:
            return False
        d = d[k]
    return True


def _world(line: _Line) -> Optional[int]:
    _, n = line.get("trainer.nnodes", 1)
    _, g = line.get("trainer.n_gpus_per_node", 8)
    return n * g if is_int(n) and is_int(g) else None


def _common(line: _Line) -> None:
    line.put("nodes", "trainer.nnodes", _int, 1)
    line.put("gpus_per_node", "trainer.n_gpus_per_node", _int, 8)
    _seq(line)


def _role(line: _Line, role: str) -> None:
    """The facts of one trained role of a PPO line."""
    model, train = ("actor_rollout_ref.model", "actor_rollout_ref.actor") if role == "actor" \
        else ("critic.model", "critic")
    fsdp = f"{train}.fsdp_config" if role == "actor" else f"{model}.fsdp_config"
    _common(line)
    _model(line, f"{model}.path")
    _micro(line, train)
    line.put("activation_checkpointing", f"{model}.enable_gradient_checkpointing", _ckpt, True,
             "verl's default enable_gradient_checkpointing: true (since 0.2)")
    _offload(line, f"{fsdp}.param_offload", f"{fsdp}.optimizer_offload")
    _lora(line, model)
    _precision(line, f"{fsdp}.model_dtype")
    _strategy(line, f"{train}.strategy", fsdp, "fsdp")
    line.put("optimizer", f"{train}.optim.optimizer", lambda v: spellings.optimizer_class(str(v)) or
             spellings.optimizer_name(str(v)), "AdamW")
    line.put("attention", "actor_rollout_ref.model.override_config.attn_implementation"
             if role == "actor" else f"{model}.override_config.attn_implementation",
             spellings.attention, "flash_attention_2")


def _critic_trains(line: _Line) -> Optional[bool]:
    """Does the PPO line train a critic (None: cannot be told)?"""
    state, enable = line.get("critic.enable")
    if state == "unknown":
        return None
    if state == "given" and _bool(enable) is not None:
        return _bool(enable)
    # verl's default estimator is gae — unless the line composes a config that is not read
    sa, est = line.get("algorithm.adv_estimator", None if line.partial else "gae")
    if sa == "unknown" or not isinstance(est, str):
        return None
    return est.lower() == "gae" or (est.lower() not in _NO_CRITIC and None)


class Verl(Framework):
    name = "verl"
    title = "verl"
    entry_points = (r"^verl\.trainer\.(main_ppo|fsdp_sft_trainer)$",
                    r"(^|/)verl/trainer/(main_ppo|fsdp_sft_trainer)\.py$")
    launched_by = ("python -m verl.trainer.main_ppo", "torchrun -m verl.trainer.fsdp_sft_trainer")
    reads = (
        "`python -m verl.trainer.main_ppo key=value …`: one job per trained role — the actor "
        "(`actor_rollout_ref.actor.*`, `actor_rollout_ref.model.*`) and, when "
        "`critic.enable` or `algorithm.adv_estimator=gae` (the default) says so, the critic "
        "(`critic.*`, `critic.model.*`); the reference and the rollout engine are never sized",
        "per role: `model.path`, `ppo_micro_batch_size_per_gpu` (or the global "
        "`ppo_micro_batch_size` over the GPUs / `ulysses_sequence_parallel_size`, times "
        "`rollout.n` for the actor of an older verl without the per-GPU key; "
        "`use_dynamic_bsz` makes it unknown), "
        "`enable_gradient_checkpointing`, `fsdp_config.param_offload` / `optimizer_offload` / "
        "`model_dtype` / `reshard_after_forward`, `strategy` (fsdp, fsdp2, megatron with its "
        "tensor / pipeline sizes), `lora_rank` / `lora_alpha` / `target_modules`, "
        "`optim.optimizer`",
        "`trainer.nnodes`, `trainer.n_gpus_per_node`, `data.max_prompt_length` + "
        "`data.max_response_length` (the sequence), verl's shipped defaults for what the line "
        "leaves out",
        "in a checkout that holds verl's configs (`verl/trainer/config/`, a fork): the config "
        "the line composes, with its `--config-path` / `--config-name`, each value at its "
        "file's line; a config of the user's own that is not in the repository: only the "
        "line's values, no defaults assumed",
        "`torchrun -m verl.trainer.fsdp_sft_trainer`: `model.partial_pretrain`, "
        "`data.micro_batch_size_per_gpu`, `data.max_length`, `model.fsdp_config.cpu_offload`, "
        "`model.lora_rank`, `model.enable_gradient_checkpointing`",
    )
    not_read = (
        "the memory the colocated rollout engine (`gpu_memory_utilization`) and the reference "
        "model take beside the trained role on the same GPUs",
        "Ulysses sequence parallelism (`ulysses_sequence_parallel_size`), the critic's value head",
    )

    def launch_python(self, inv: Invocation, origin: Origin) -> Invocation:
        mod = (inv.module or inv.script or "").replace("/", ".").removesuffix(".py")
        mod = mod[mod.index("verl.trainer."):] if "verl.trainer." in mod else mod
        # verl's driver process starts its workers through Ray: the python line's "one
        # process" says nothing of the GPUs
        kept = [(n, f) for n, f in inv.facts
                if not (n in ("nodes", "gpus_per_node") and f.origin == Origin.DEFAULT
                        and mod == PPO)]
        base, partial = _shipped(inv, mod)
        if mod == SFT:
            line = _Line(inv, origin, base, partial)
            _sft(line)
            return inv.model_copy(update={"facts": kept + line.facts})
        jobs: list[Invocation] = []
        roles = ["actor"]
        critic = _critic_trains(_Line(inv, origin, base, partial))
        if critic:
            roles.append("critic")
        for role in roles:
            line = _Line(inv, origin, base, partial)
            _role(line, role)
            label = f"{mod} [{role}]"
            jobs.append(inv.model_copy(update={"script": label, "module": label, "role": role,
                                               "facts": kept + line.facts, "configs": []}))
        first = jobs[0]
        return first.model_copy(update={"roles": jobs[1:]})


#: the config each entry point composes (`@hydra.main(config_path="config", config_name=…)`)
_CONFIG_NAME = {PPO: "ppo_trainer", SFT: "sft_trainer"}


def _shipped(inv: Invocation, mod: str) -> tuple[Optional[Any], bool]:
    """The config the line composes, when the checkout holds it (a verl fork, or verl
    itself: `verl/trainer/config/ppo_trainer.yaml` in the launcher's folder or one above
    it, with `--config-path` / `--config-name` of the line), and whether the line names a
    config of its own that is not read (then verl's defaults are not assumed)."""
    cpath, cname, _ = hydra.cli_config(list(inv.args))
    start = os.path.dirname(os.path.abspath(inv.source.path)) if inv.source and \
        not inv.source.path.startswith("<") else os.getcwd()
    trainer_dir = None
    d = start
    for _ in range(8):
        if os.path.isdir(os.path.join(d, "verl", "trainer", "config")):
            trainer_dir = os.path.join(d, "verl", "trainer")
            break
        if os.path.dirname(d) == d:
            break
        d = os.path.dirname(d)
    own = cpath is not None or cname is not None
    if cpath and "\0" in cpath or cname and "\0" in cname:
        return None, True
    folder = (cpath if cpath and os.path.isabs(cpath) else
              os.path.join(trainer_dir or start, cpath) if cpath else
              os.path.join(trainer_dir, "config") if trainer_dir else None)
    name = cname or _CONFIG_NAME.get(mod, "")
    if folder is None or not os.path.isfile(os.path.join(folder, name + ".yaml")):
        return None, own
    words = [w for w in inv.args if not w.startswith("-")]
    folder = os.path.normpath(folder)
    if not os.path.relpath(folder).startswith(".."):
        folder = os.path.relpath(folder)        # facts name files as the user does
    # the line's values are applied too: the config's interpolations (a critic's
    # `use_dynamic_bsz: ${actor_rollout_ref.actor.use_dynamic_bsz}`) see what the line sets
    comp = hydra.compose(folder, name, words)
    return comp, False


def _sft(line: _Line) -> None:
    _model(line, "model.partial_pretrain")
    line.put("micro_batch", "data.micro_batch_size_per_gpu", _int, 4)
    line.put("seq_len", "data.max_length", _int, 1024)
    line.put("activation_checkpointing", "model.enable_gradient_checkpointing", _ckpt, True,
             "verl's SFT default enable_gradient_checkpointing: true")
    _offload(line, "model.fsdp_config.offload_params", "model.fsdp_config.cpu_offload")
    _lora(line, "model")
    _precision(line, "model.fsdp_config.model_dtype")
    _strategy(line, "model.strategy", "model.fsdp_config", "fsdp2")


_GRPO = """\
#!/bin/bash
set -x
python3 -m verl.trainer.main_ppo \\
    algorithm.adv_estimator=grpo \\
    data.train_batch_size=1024 \\
    data.max_prompt_length=1024 \\
    data.max_response_length=2048 \\
    actor_rollout_ref.model.path=Qwen/Qwen2.5-7B \\
    actor_rollout_ref.actor.ppo_mini_batch_size=256 \\
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4 \\
    actor_rollout_ref.actor.fsdp_config.param_offload=False \\
    actor_rollout_ref.actor.fsdp_config.optimizer_offload=True \\
    actor_rollout_ref.ref.fsdp_config.param_offload=True \\
    actor_rollout_ref.rollout.tensor_model_parallel_size=2 \\
    actor_rollout_ref.rollout.gpu_memory_utilization=0.6 \\
    trainer.n_gpus_per_node=8 \\
    trainer.nnodes=2 $@
"""

_PPO = """\
#!/bin/bash
python3 -m verl.trainer.main_ppo \\
    actor_rollout_ref.model.path=Qwen/Qwen2.5-0.5B-Instruct \\
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=8 \\
    actor_rollout_ref.model.enable_gradient_checkpointing=False \\
    actor_rollout_ref.model.lora_rank=32 \\
    critic.model.path=Qwen/Qwen2.5-0.5B-Instruct \\
    critic.ppo_micro_batch_size_per_gpu=$CRITIC_MB \\
    critic.model.fsdp_config.param_offload=True \\
    trainer.n_gpus_per_node=4
"""

_SFT = """\
#!/bin/bash
torchrun --standalone --nnodes=1 --nproc_per_node=8 \\
     -m verl.trainer.fsdp_sft_trainer \\
    data.micro_batch_size_per_gpu=2 \\
    data.max_length=4096 \\
    model.partial_pretrain=Qwen/Qwen2.5-7B-Instruct \\
    model.lora_rank=16 \\
    trainer.total_epochs=2
"""

ADAPTER = Verl()
Verl.EXAMPLES = [
    Example(title="GRPO: the actor is the one trained job; the reference's offload and the "
                  "rollout's tensor parallelism are not the actor's",
            files={"run_grpo.sh": _GRPO}, paths=["run_grpo.sh"],
            facts={"model": ("Qwen/Qwen2.5-7B", "run_grpo.sh:8", "config"),
                   "micro_batch": (4, "run_grpo.sh:10"),
                   "seq_len": (3072, "run_grpo.sh:7", "derived"),
                   "offload": ("optimizer", "run_grpo.sh:12"),
                   "nodes": (2, "run_grpo.sh:17"),
                   "gpus_per_node": (8, "run_grpo.sh:16"),
                   "activation_checkpointing": ("full", "run_grpo.sh:3", "default"),
                   "fsdp": ("full_shard", "run_grpo.sh:3", "default"),
                   "param_dtype": ("fp32", "run_grpo.sh:3", "default"),
                   "lora": (False, "run_grpo.sh:8", "default")}),
    Example(title="PPO (gae by default): the actor's job, with LoRA and checkpointing off",
            files={"ppo.sh": _PPO}, paths=["ppo.sh"],
            facts={"model": ("Qwen/Qwen2.5-0.5B-Instruct", "ppo.sh:3"),
                   "micro_batch": (8, "ppo.sh:4"),
                   "activation_checkpointing": ("none", "ppo.sh:5"),
                   "lora": ({"r": 32, "alpha": 16, "targets": ["all-linear"], "base_bits": 16}, "ppo.sh:6"),
                   "offload": ("none", "ppo.sh:2", "default"),
                   "gpus_per_node": (4, "ppo.sh:10"),
                   "seq_len": (1024, "ppo.sh:2", "derived")}),
    Example(title="SFT under torchrun: data.micro_batch_size_per_gpu, data.max_length",
            files={"sft.sh": _SFT}, paths=["sft.sh"],
            facts={"model": ("Qwen/Qwen2.5-7B-Instruct", "sft.sh:6"),
                   "micro_batch": (2, "sft.sh:4"), "seq_len": (4096, "sft.sh:5"),
                   "gpus_per_node": (8, "sft.sh:2", "config"),
                   "lora": ({"r": 16, "alpha": 16, "targets": ["all-linear"], "base_bits": 16}, "sft.sh:7"),
                   "fsdp": ("full_shard", "sft.sh:2", "default")}),
]
#: the critic's own job of the PPO example (tests/test_roles.py)
CRITIC_FACTS = {"model": ("Qwen/Qwen2.5-0.5B-Instruct", "ppo.sh:7"), "micro_batch": (UNKNOWN, "ppo.sh:8"),
                "offload": (UNKNOWN, "ppo.sh:9"), "lora": (False, "ppo.sh:7"),
                "activation_checkpointing": ("full", "ppo.sh:2")}
