"""JSON config files — DeepSpeed configs (ZeRO stage, offload, precision, batch sizes).

Every fact carries the line and column of its key. `"auto"` values (filled by the Hugging
Face Trainer from its own arguments) become unknowns listed in `extras["auto"]`; assembly
resolves them from the command-line flags of the job. `deepspeed_facts` works on any dict,
so a DeepSpeed config built as a Python dict in a script is read the same way.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Optional

from preflight.lang.positions import json_positions
from preflight.facts import spellings
from preflight.plan import Diagnostic, Extraction, Fact, Origin, Source

DS_KEYS = ("zero_optimization", "train_micro_batch_size_per_gpu", "train_batch_size",
           "gradient_accumulation_steps", "fp16", "bf16", "zero_allow_untested_optimizer",
           "steps_per_print", "gradient_clipping", "wall_clock_breakdown")

#: zero_optimization keys that size DeepSpeed's own buffers (preflight.physics.zero)
ZERO_BUFFER_KEYS = ("reduce_bucket_size", "allgather_bucket_size", "stage3_prefetch_bucket_size",
                    "stage3_max_live_parameters", "contiguous_gradients", "overlap_comm",
                    "sub_group_size")

#: DeepSpeed key path → the HF Trainer argument that fills it when it is "auto"
AUTO_FROM = {
    "micro_batch": "per_device_train_batch_size",
    "grad_accum": "gradient_accumulation_steps",
    "mixed_precision": "bf16/fp16",
    "train_batch_size": "per_device_train_batch_size × gradient_accumulation_steps × world size",
}


def is_deepspeed(cfg: Any) -> bool:
    return isinstance(cfg, dict) and any(k in cfg for k in DS_KEYS)


def deepspeed_facts(cfg: dict, where: Callable[[tuple], Optional[Source]],
                    origin: Origin = Origin.CONFIG) -> tuple[list[tuple[str, Fact]], dict[str, Any]]:
    """Facts of a DeepSpeed config dict; `where(path)` gives the Source of a key path."""
    facts: list[tuple[str, Fact]] = []
    extras: dict[str, Any] = {"auto": {}}

    def put(name: str, value: Any, path: tuple, why: str = "") -> None:
        src = where(path)
        if value == "auto":
            facts.append((name, Fact.unknown(
                f'"auto" in the DeepSpeed config ({".".join(map(str, path))}): filled in by the '
                "Hugging Face Trainer from its arguments", source=src)))
            extras["auto"][name] = src
            return
        facts.append((name, Fact(value=value, origin=origin, source=src,
                                 reason=why or f'{".".join(map(str, path))} = {json.dumps(value)}')))

    if is_deepspeed(cfg):
        facts.append(("fsdp", Fact(value=None, origin=origin, source=where(("zero_optimization",)) or where(()),
                                   reason="DeepSpeed shards with ZeRO, not FSDP")))
    zero = cfg.get("zero_optimization")
    if isinstance(zero, dict):
        st = zero.get("stage", 0)
        if st == "auto" or (isinstance(st, int) and not isinstance(st, bool)):
            put("zero_stage", st, ("zero_optimization", "stage") if "stage" in zero else ("zero_optimization",))
        def dev(key: str) -> Optional[str]:
            o = zero.get(key)
            if isinstance(o, dict):
                d = o.get("device")
                return d if isinstance(d, str) and d.lower() in ("cpu", "nvme") else None
            return None
        opt_dev, par_dev = dev("offload_optimizer"), dev("offload_param")
        if zero.get("cpu_offload") is True:
            opt_dev = opt_dev or "cpu"
        if par_dev:
            put("offload", "optimizer+params", ("zero_optimization", "offload_param", "device"),
                f"offload_param.device = {par_dev}" + (f", offload_optimizer.device = {opt_dev}" if opt_dev else ""))
        elif opt_dev:
            path = ("zero_optimization", "offload_optimizer", "device") if "offload_optimizer" in zero \
                else ("zero_optimization", "cpu_offload")
            put("offload", "optimizer", path, f"offload_optimizer.device = {opt_dev}")
        else:
            put("offload", "none", ("zero_optimization",), "no offload_optimizer / offload_param device")
        buffers = {k: zero[k] for k in ZERO_BUFFER_KEYS if k in zero}
        if buffers:
            facts.append(("zero_buffers", Fact(
                value=buffers, origin=origin, source=where(("zero_optimization",)),
                reason="zero_optimization: " + ", ".join(
                    f"{k} = {json.dumps(v)}" for k, v in buffers.items()))))
    elif is_deepspeed(cfg):
        facts.append(("zero_stage", Fact(value=0, origin=Origin.DEFAULT, source=where(()),
                                         reason="no zero_optimization section: ZeRO disabled")))

    precision_seen = False
    for key in ("bf16", "fp16"):
        sec = cfg.get(key)
        if isinstance(sec, dict) and "enabled" in sec:
            en = sec["enabled"]
            if en == "auto":
                put("mixed_precision", "auto", (key, "enabled"))
                extras["auto_precision_key"] = key
                precision_seen = True
            elif en is True:
                put("mixed_precision", key, (key, "enabled"), f"{key}.enabled = true")
                put("param_dtype", key, (key, "enabled"),
                    f"DeepSpeed holds the model in {key} when {key}.enabled (fp32 master copy in the optimizer)")
                precision_seen = True
    if cfg.get("amp", {}).get("enabled") is True if isinstance(cfg.get("amp"), dict) else False:
        put("mixed_precision", "fp16", ("amp", "enabled"), "amp.enabled = true")
        precision_seen = True
    if not precision_seen and is_deepspeed(cfg):
        src = where(("bf16",)) or where(("fp16",)) or where(())
        facts.append(("mixed_precision", Fact(value="none", origin=Origin.DEFAULT, source=src,
                                              reason="neither bf16 nor fp16 enabled in the DeepSpeed config: fp32")))

    for key, name in (("train_micro_batch_size_per_gpu", "micro_batch"),
                      ("gradient_accumulation_steps", "grad_accum")):
        v = cfg.get(key)
        if v == "auto" or (isinstance(v, int) and not isinstance(v, bool)):
            put(name, v, (key,))
    if "gradient_accumulation_steps" not in cfg and "train_batch_size" not in cfg and is_deepspeed(cfg):
        facts.append(("grad_accum", Fact(value=1, origin=Origin.DEFAULT, source=where(()),
                                         reason="DeepSpeed default gradient_accumulation_steps = 1")))
    tb = cfg.get("train_batch_size")
    if tb == "auto":
        extras["auto"]["train_batch_size"] = where(("train_batch_size",))
    elif isinstance(tb, int) and not isinstance(tb, bool):
        extras["train_batch_size"] = {"value": tb, "source": where(("train_batch_size",))}

    opt = cfg.get("optimizer")
    if isinstance(opt, dict) and isinstance(opt.get("type"), str):
        t = opt["type"]
        name = spellings.deepspeed_optimizer(t, opt.get("params")) or "other"
        put("optimizer", name, ("optimizer", "type"), f'optimizer.type = "{t}"')

    ac = cfg.get("activation_checkpointing")
    if isinstance(ac, dict):
        extras["activation_checkpointing_config"] = where(("activation_checkpointing",))
    if not extras["auto"]:
        extras.pop("auto")
    return facts, extras


def extract(path: str, text: str, args: Optional[list[str]] = None) -> Extraction:
    try:
        cfg = json.loads(text)
    except json.JSONDecodeError as e:
        return Extraction(path=path, kind="json", diagnostics=[Diagnostic(
            code="PF005", name="malformed-config", severity="error",
            message=f"malformed JSON: {e.msg}", path=path, line=e.lineno, col=e.colno,
            fix="fix the JSON syntax (a trailing comma or a missing quote is the usual cause)")])
    except RecursionError:
        return Extraction(path=path, kind="json", diagnostics=[Diagnostic(
            code="PF005", name="malformed-config", severity="error",
            message="JSON nested too deeply to read", path=path, line=1, col=1)])
    except ValueError as e:              # an integer of over 4,300 digits
        from preflight.lang.positions import long_number_position, too_many_digits
        line, col = long_number_position(text) if too_many_digits(e) else (1, 1)
        why = "an integer of over 4,300 digits" if too_many_digits(e) else str(e)
        return Extraction(path=path, kind="json", diagnostics=[Diagnostic(
            code="PF005", name="malformed-config", severity="error",
            message=f"JSON value not read: {why}", path=path, line=line, col=col)])

    if not isinstance(cfg, dict):
        return Extraction(path=path, kind="json")
    _, pos = json_positions(text, cfg)
    from preflight.frameworks import read_document
    return read_document(path, cfg, pos, kind="json")
