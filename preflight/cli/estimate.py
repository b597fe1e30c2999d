"""`preflight estimate` — the ledger for a job given by explicit flags (or by files).

    preflight estimate --params 7e9 --optimizer adamw --precision bf16-mixed \
        --world-size 8 --zero 3 --micro-batch 4 --seq-len 2048 \
        --layers 32 --hidden 4096 --heads 32 --gpu H100-80GB

Values are read as strings and checked here, so that a bad value is one line on stderr
and exit 2 (click's own type errors print the whole usage block).
Exit 0 when every job fits (or its fit cannot be told), 1 when a job does not fit or the
given files formed no job, 2 for a bad flag.
"""

from __future__ import annotations

import json
from typing import Any, Optional

import click

from preflight.cli import options as _options
from preflight.facts import names, spellings
from preflight.lazy import lazy
from preflight.units import parse_count
from preflight.version import DISTRIBUTION as DIST

# the estimator's stages load when an estimate runs, not for `--help` or another command
api = lazy("preflight.api")
fact_values = lazy("preflight.fact_values")
hardware = lazy("preflight.hardware")
options_types = lazy("preflight.options")
pipeline = lazy("preflight.pipeline")
project_config = lazy("preflight.config")
result = lazy("preflight.result")

#: --flag → (fact name, kind). kind: count (≥ 1), count0 (≥ 0), posint (≥ 1), enum name.
_INT_FLAGS = {
    "params": "count", "trainable_params": "count", "micro_batch": "posint", "seq_len": "posint",
    "grad_accum": "posint", "layers": "posint", "hidden": "posint", "heads": "posint",
    "kv_heads": "posint", "ffn_hidden": "posint", "vocab": "posint", "world_size": "posint",
    "nodes": "posint", "gpus_per_node": "posint", "tp": "posint", "pp": "posint",
    "experts": "posint", "experts_per_token": "posint", "expert_ffn_hidden": "posint",
    "expert_parallel": "posint",
}


#: flags that change a model's shape: with --model they override its config before the
#: parameters are counted, so the count and the shape always describe one model
_SHAPE_FLAGS = ("layers", "hidden", "heads", "kv_heads", "ffn_hidden", "vocab", "experts",
                "experts_per_token", "expert_ffn_hidden")


def _lora_flags(opts: dict) -> Optional[dict]:
    """--lora-r / --lora-base-bits / --lora-targets as a LoRA reference for model resolution
    (which counts the adapters on the model's own linear layers, as peft does)."""
    if opts.get("lora_r") is None:
        for f in ("lora_base_bits", "lora_targets"):
            if opts.get(f) is not None:
                _fail(f"--{f.replace('_', '-')} needs --lora-r")
        return None
    r = _int("lora_r", opts["lora_r"], "posint")
    bits = 16
    if opts.get("lora_base_bits") is not None:
        bits = int(_choice("lora-base-bits", opts["lora_base_bits"], ("4", "8", "16")))
    targets = None
    if opts.get("lora_targets"):
        targets = [t.strip() for t in opts["lora_targets"].split(",") if t.strip()]
    return {"kind": "lora", "r": r, "targets": targets, "base_bits": bits, "source": None}


def _expert_parallel_fits(facts: list) -> None:
    """--ep against the experts the command line knows (--experts, or --model's): it must
    divide them, else a one-line error. Without them the files may still say (the ledger
    then names what it lacks)."""
    given = {n: f.value for n, f in facts if f.known}
    ep, experts = given.get("expert_parallel"), given.get("experts")
    if ep is not None and ep > 1 and experts and experts % ep:
        _fail(f"--ep: expert parallelism {ep} does not divide the {experts} experts")


def _consistent(opts: dict, resolved: Optional[list], shape: dict) -> None:
    """--params / --trainable-params against the model the other flags describe: equal, or a
    one-line error (never a silent mix of one model's count with another's shape)."""
    if not resolved:
        return
    got = {n: f.value for n, f in resolved if getattr(f, "known", True)}
    n = got.get("params")
    if opts.get("params") is not None and n is not None:
        given = _int("params", opts["params"], "count")
        if given != n:
            what = opts["model"] + (" with " + ", ".join(
                f"--{k.replace('_', '-')} {v}" for k, v in shape.items()) if shape else "")
            _fail(f"--params {given:,} contradicts --model {what} ({n:,} parameters): "
                  f"drop --params, or give the shape flags of the model you mean")


def _fail(msg: str) -> None:
    raise click.ClickException(msg)


def _int(flag: str, text: str, kind: str) -> int:
    try:
        v = parse_count(text)
    except ValueError as e:
        _fail(f"--{flag.replace('_', '-')}: {e}")
    if v < 1:
        _fail(f"--{flag.replace('_', '-')} must be at least 1, got {text}")
    return v


def _liger_opts(opts: dict) -> dict:
    """The `liger` fact from --liger-layers / --liger-release ({} when neither is given)."""
    out: dict = {}
    if opts.get("liger_layers") is None and opts.get("liger_release") is None:
        return out
    # only --liger-*: `lazy()` would load the package `preflight.physics` on every start-up
    from preflight.physics.liger import LAYER_KERNELS, release

    if opts.get("liger_layers") is not None:
        said = [t.strip().lower() for t in opts["liger_layers"].split(",") if t.strip()]
        layers = [] if said == ["none"] else said
        for t in layers:
            _choice("liger-layers", t, LAYER_KERNELS)
        out["layers"] = layers
    if opts.get("liger_release") is not None:
        if release(opts["liger_release"]) is None:
            _fail(f"--liger-release: {opts['liger_release']!r} is not a version (0.5.2)")
        out["release"] = opts["liger_release"].strip()
    return out


def _choice(flag: str, text: str, allowed) -> str:
    t = text.strip().lower().replace("-", "_") if flag != "precision" else text.strip().lower()
    if t not in allowed:
        _fail(f"--{flag}: {text!r} is not one of {', '.join(sorted(set(allowed)))}")
    return t


def _float(flag: str, text: str, lo: float, hi: Optional[float] = None,
           lo_open: bool = False) -> float:
    try:
        v = float(text)
    except ValueError:
        _fail(f"--{flag}: not a number: {text!r}")
    if v != v or (v <= lo if lo_open else v < lo) or (hi is not None and v > hi):
        rng = f"{'>' if lo_open else '≥'} {lo:g}" + (f" and ≤ {hi:g}" if hi is not None else "")
        _fail(f"--{flag} must be {rng}, got {text}")
    return v


def _resolve_model(name: str, overrides: Optional[dict] = None,
                   lora: Optional[dict] = None, hub: bool = False) -> Optional[list]:
    """Facts for a model name (the project's `[tool.preflight.models]`, a local directory
    or the Hugging Face cache, the offline catalogue, and with `hub` or `[tool.preflight]
    hub = true` the Hugging Face hub), its shape changed by `overrides` (shape facts);
    None when it does not resolve."""
    import os

    # only --model resolves a name: `lazy()` would load the package `preflight.resolve`
    # on every start-up
    from preflight.resolve.entry import facts_for_name

    config = project_config.load_project_config(os.getcwd())
    return facts_for_name(name, project_models=config.models, overrides=overrides, lora=lora,
                          hub=hub or config.hub)


@click.command()
@click.argument("paths", nargs=-1)
@click.option("--params", metavar="N", help="Parameter count: 7e9, 7B, 6738415616.")
@click.option("--trainable-params", metavar="N", help="Trainable parameter count (default: all).")
@click.option("--model", metavar="NAME", help="A model name; sets the architecture family (and, with the "
                              "catalogue, its shape).")
@click.option("--optimizer", metavar="NAME", help="adamw, adam, sgd, sgd_momentum, adamw8bit, paged_adamw_8bit, "
                                  "paged_adamw_32bit, adafactor, lion, lamb, adagrad, rmsprop.")
@click.option("--precision", metavar="MODE", help="fp32, bf16-mixed, fp16-mixed (16-bit weights + fp32 master), "
                                  "bf16, fp16 (pure), bf16-autocast, fp16-autocast (fp32 weights).")
@click.option("--param-dtype", metavar="DTYPE", help="fp32, bf16, fp16, int8, int4 (instead of --precision).")
@click.option("--mixed-precision", metavar="DTYPE", help="bf16, fp16, fp8, none (instead of --precision).")
@click.option("--micro-batch", metavar="N", help="Per-GPU micro-batch size.")
@click.option("--seq-len", metavar="N", help="Sequence length in tokens.")
@click.option("--grad-accum", metavar="N", help="Gradient accumulation steps.")
@click.option("--layers", metavar="N", help="Transformer layers.")
@click.option("--hidden", metavar="N", help="Hidden size.")
@click.option("--heads", metavar="N", help="Attention heads.")
@click.option("--kv-heads", metavar="N", help="Key/value heads (GQA).")
@click.option("--ffn-hidden", metavar="N", help="MLP width.")
@click.option("--vocab", metavar="N", help="Vocabulary size.")
@click.option("--experts", metavar="N", help="Mixture of experts: routed experts per MoE layer.")
@click.option("--top-k", "--experts-per-token", "experts_per_token", metavar="K",
              help="Mixture of experts: experts each token is routed to.")
@click.option("--expert-ffn-hidden", metavar="N",
              help="Mixture of experts: one expert's MLP width (default: --ffn-hidden).")
@click.option("--ep", "--expert-parallel", "expert_parallel", metavar="N",
              help=_options.fact_help("expert_parallel") + " Default: 1.")
@click.option("--world-size", metavar="N", help="Total GPUs.")
@click.option("--nodes", metavar="N", help="Nodes.")
@click.option("--gpus-per-node", metavar="N", help="GPUs per node.")
@click.option("--zero", "zero", metavar="STAGE", help="ZeRO stage 0–3.")
@click.option("--fsdp", metavar="STRATEGY", help="full_shard, shard_grad_op, hybrid_shard, no_shard.")
@click.option("--offload", metavar="WHAT", help="none, optimizer, optimizer+params.")
@click.option("--tp", metavar="N", help="Tensor-parallel degree.")
@click.option("--pp", metavar="N", help="Pipeline-parallel degree.")
@click.option("--sp", is_flag=True, default=None, help="Sequence parallelism (with --tp).")
@click.option("--checkpointing", metavar="MODE",
              help="Activation checkpointing: none, selective (Megatron's: the attention "
                   "scores recomputed), selective_op (op-level: torchtitan's "
                   "selective_ac_option = 'op', the outputs of every other matmul and of "
                   "the attention kernel kept), full.")
@click.option("--attention", metavar="IMPL", help="eager, sdpa, flash.")
@click.option("--lora-r", metavar="R", help="LoRA rank (marks the base weights frozen; give "
                               "--trainable-params for the adapter count).")
@click.option("--lora-base-bits", metavar="BITS", help="Frozen base weights at 4, 8 or 16 bits (QLoRA: 4).")
@click.option("--lora-targets", metavar="NAMES", help="LoRA target modules, comma-separated (default: "
                                   "the attention projections of --model's architecture).")
@click.option("--dropout", metavar="P", help=_options.fact_help("dropout") + " Default: the "
              "model's config when it is read, else masks are kept.")
@click.option("--lora-dropout", metavar="P", help=_options.fact_help("lora_dropout") + " Default: "
              "the LoRA config's lora_dropout when it is read, else 0.")
@click.option("--reference-copies", metavar="N", help=_options.fact_help("reference_copies") +
              " Default: what the job's trainer says (TRL's DPOTrainer without ref_model: 1), "
              "else 0.")
@click.option("--lora-adapter-dtype", metavar="DTYPE",
              help=_options.fact_help("lora_adapter_dtype") + " Default: what the script's "
              "peft call says (fp32 unless autocast_adapter_dtype=False), else the compute "
              "dtype.")
@click.option("--bitsandbytes", "bitsandbytes_version", metavar="VERSION",
              help=_options.fact_help("bitsandbytes_version") + " Default: the job's "
              "requirement pin when one names a release, else the current release.")
@click.option("--autocast-device", metavar="DEVICE", help=_options.fact_help("autocast_device")
              + " Default: cuda.")
@click.option("--device", metavar="DEVICE", help=_options.fact_help("device") + " Default: "
              "cuda (torch.optim's step counts on the host unless fused/capturable).")
@click.option("--model-cast", is_flag=True, default=None,
              help=_options.fact_help("model_cast")[:-1] + " (default: created or loaded in its "
              "dtype; rotary tables stay fp32).")
@click.option("--optimizer-fused", is_flag=True, default=None,
              help=_options.fact_help("optimizer_fused"))
@click.option("--loss-kernel", metavar="KERNEL", help=_options.fact_help("loss_kernel")[:-1]
              + " (default: standard). liger: what Liger patches follows the model's "
              "model_type; a type it does not cover keeps the standard loss.")
@click.option("--liger-layers", metavar="LIST", help="With --loss-kernel liger: the layer "
              "kernels Liger applies, comma-separated from rms_norm, swiglu, geglu, rope, or none "
              "(default: its patch's defaults for the model_type).")
@click.option("--liger-release", metavar="VERSION", help="With --loss-kernel liger: the "
              "Liger-Kernel release installed, e.g. 0.5.2 (default: the newest read, 0.8.2).")
@click.option("--cuda-module-loading", metavar="MODE",
              help=_options.fact_help("cuda_module_loading")[:-1] + " (default: lazy).")
@click.option("--expandable-segments", is_flag=True, default=None,
              help=_options.fact_help("expandable_segments")[:-1] + " (default: off, "
              "torch's default).")
@click.option("--implementation", metavar="IMPL",
              help=_options.fact_help("model_implementation")[:-1] + " (default: "
              "transformers; a litgpt job's config says litgpt).")
@click.option("--family", metavar="FAMILY", help="Architecture family for activations: gpt2 or llama "
                                "(default: from --model).")
@click.option("--gpu", metavar="NAME", help="GPU name: H100, A100-40GB, 4090, MI300X, …")
@click.option("--gpu-memory", metavar="SIZE", help="GPU memory, e.g. 80GiB or 40GB (overrides the catalogue's).")
@click.option("--headroom", metavar="FRACTION", default="0.2", show_default=True,
              help="Fragmentation / headroom margin as a fraction of capacity.")
@click.option("--mfu", metavar="FRACTION", help="Model FLOP utilisation assumed for compute time (default 0.4).")
@click.option("--t1", metavar="SECONDS", help="Measured step time on 1 GPU (s), equal global batch.")
@click.option("--tk", metavar="SECONDS", help="Measured step time on k GPUs (s).")
@click.option("--k", "k", metavar="N", help="GPUs of the --tk measurement.")
@click.option("--fit", "fit", is_flag=True,
              help="Also show what would fit: ranked alternatives (change, peak, % of capacity, "
                   "step time, efficiency) and the largest micro-batch, fewest GPUs and longest "
                   "sequence that fit.")
@click.option("--hub", is_flag=True,
              help="Ask the Hugging Face hub for a model nothing offline sizes: its config.json "
                   "and safetensors headers (never the weights), kept in the hub's cache "
                   f"(needs huggingface_hub: pip install '{DIST}[hub]'). Never while "
                   "HF_HUB_OFFLINE=1. Default: off, or [tool.preflight] hub = true.")
@click.option("--format", "fmt", metavar="FORMAT", default="text", help="text or json.")
@click.option("--set", "sets", multiple=True, metavar="FACT=VALUE",
              help="Fill a fact of the given files' jobs (micro_batch=4). Repeatable.")
def estimate(paths: tuple[str, ...], **opts: Any) -> int:
    """Print the per-GPU memory ledger and the scaling walls."""
    # not at the top: a stored result of `preflight check` is told from a run by
    # `preflight.plan` not being imported (tests/test_runcache.py), and a lazy placeholder
    # would sit in sys.modules
    from preflight.plan import Fact, Origin, Source, in_cell

    fmt = _choice("format", opts.pop("fmt") or "text", ("text", "json"))
    src = Source(path="<command line>")
    facts: list[tuple[str, Fact]] = []
    try:
        set_pairs = fact_values.set_facts(list(opts.pop("sets", ()) or ()))
    except ValueError as e:
        _fail(f"--set: {e}")
    facts += set_pairs

    def put(name: str, value: Any) -> None:
        facts.append((name, Fact(value=value, origin=Origin.CLI, source=src)))

    shape = {n: _int(n, opts[n], "posint") for n in _SHAPE_FLAGS if opts.get(n) is not None}
    lora = _lora_flags(opts)
    lora_from_model = False
    hub = bool(opts.pop("hub", False))
    if opts.get("model"):
        resolved = _resolve_model(opts["model"], shape or None, lora, hub)
        lora_from_model = bool(lora) and any(n == "trainable_params" and f.known
                                             for n, f in resolved or [])
        if resolved is None and opts.get("params") is None:
            _fail(f"--model: {opts['model']!r} does not resolve to a known model; "
                  f"give --params (and the shape flags) instead" +
                  ("" if hub else ", or --hub to ask the Hugging Face hub"))
        _consistent(opts, resolved, shape)
        facts += resolved or []
        put("model", opts["model"])
    for name, kind in _INT_FLAGS.items():
        if opts.get(name) is not None:
            put(name, _int(name, opts[name], kind))
    _expert_parallel_fits(facts)
    if opts.get("zero") is not None:
        z = opts["zero"].strip()
        if z not in ("0", "1", "2", "3"):
            _fail(f"--zero must be 0, 1, 2 or 3, got {z}")
        put("zero_stage", int(z))
    if opts.get("optimizer"):
        o = spellings.optimizer_name(opts["optimizer"])
        if o is None:
            _fail(f"--optimizer: {opts['optimizer']!r} is not one of "
                  f"{', '.join(sorted(set(spellings.OPTIMIZER_NAMES.values()) - {'other'}))}")
        put("optimizer", o)
    if opts.get("precision"):
        pd, mx = spellings.PRECISION_MODES[_choice("precision", opts["precision"],
                                                   spellings.PRECISION_MODES)]
        put("param_dtype", pd)
        put("mixed_precision", mx)
        if pd != "fp32" and mx != "none":      # "-mixed": 16-bit weights with fp32 masters
            put("master_weights", True)
    if opts.get("param_dtype"):
        put("param_dtype", _choice("param-dtype", opts["param_dtype"], names.PARAM_DTYPES))
    if opts.get("mixed_precision"):
        put("mixed_precision", _choice("mixed-precision", opts["mixed_precision"],
                                       names.MIXED_PRECISIONS))
    if opts.get("fsdp"):
        put("fsdp", _choice("fsdp", opts["fsdp"], names.FSDP_STRATEGIES))
    if opts.get("offload"):
        o = opts["offload"].strip().lower()
        if o not in names.OFFLOADS:
            _fail(f"--offload: {o!r} is not one of {', '.join(names.OFFLOADS)}")
        put("offload", o)
    if opts.get("sp") is not None:
        put("sp", bool(opts["sp"]))
    if opts.get("checkpointing"):
        ck = _choice("checkpointing", opts["checkpointing"], names.CHECKPOINTING_FLAGS)
        if ck == names.SELECTIVE_OP:
            # the contract's mode is selective; its policy, op-level, a fact of its own
            put("activation_checkpointing", "selective")
            put("selective_policy", "op")
        else:
            put("activation_checkpointing", ck)
    if opts.get("attention"):
        put("attention", _choice("attention", opts["attention"], names.ATTENTIONS))
    if lora and not lora_from_model:
        # no model shape to count adapters on: the base is frozen, the adapter count unknown
        # unless --trainable-params gives it
        put("lora", {"r": lora["r"], "alpha": None, "targets": lora["targets"] or [],
                     "base_bits": lora["base_bits"], "modules_to_save": []})
    if opts.get("dropout") is not None:
        put("dropout", _options.fact_value("dropout", "dropout", opts["dropout"]))
    if opts.get("lora_dropout") is not None:
        put("lora_dropout", _options.fact_value("lora-dropout", "lora_dropout",
                                                opts["lora_dropout"]))
    if opts.get("reference_copies") is not None:
        put("reference_copies", _options.fact_value("reference-copies", "reference_copies",
                                                    opts["reference_copies"]))
    if opts.get("lora_adapter_dtype") is not None:
        put("lora_adapter_dtype", _options.fact_value(
            "lora-adapter-dtype", "lora_adapter_dtype",
            opts["lora_adapter_dtype"].strip().lower()))
    if opts.get("bitsandbytes_version") is not None:
        # only --bitsandbytes: `lazy()` would load the package `preflight.physics` on every
        # start-up
        from preflight.physics.bnb import parse_version

        bv = opts["bitsandbytes_version"].strip()
        if parse_version(bv) is None:
            _fail(f"--bitsandbytes: {bv!r} is not a release number (e.g. 0.42.0)")
        put("bitsandbytes_version", bv.lstrip("=v "))
    if opts.get("autocast_device") is not None:
        put("autocast_device", _options.fact_value("autocast-device", "autocast_device",
                                                   opts["autocast_device"].strip().lower()))
    if opts.get("cuda_module_loading"):
        put("cuda_module_loading", _choice("cuda-module-loading", opts["cuda_module_loading"],
                                           names.MODULE_LOADINGS))
    if opts.get("loss_kernel"):
        put("loss_kernel", _choice("loss-kernel", opts["loss_kernel"], names.LOSS_KERNELS))
    liger = _liger_opts(opts)
    if liger:
        put("liger", liger)
    if opts.get("implementation"):
        put("model_implementation", _choice("implementation", opts["implementation"],
                                            names.IMPLEMENTATIONS))
    if opts.get("device") is not None:
        put("device", _choice("device", opts["device"], names.AUTOCAST_DEVICES))
    for flag in ("model_cast", "optimizer_fused", "expandable_segments"):
        if opts.get(flag):
            put(flag, True)
    family = None
    if opts.get("family"):
        family = _choice("family", opts["family"], names.FAMILIES)

    headroom = _float("headroom", opts["headroom"], 0.0, 0.95)
    mfu = _float("mfu", opts["mfu"], 0.0, 1.0, lo_open=True) if opts.get("mfu") else None

    hw = None
    if opts.get("gpu") is not None and not opts["gpu"].strip():
        _fail("--gpu: empty GPU name (give a name such as H100-80GB)")
    try:
        if opts.get("gpu"):
            hw = hardware.lookup(opts["gpu"])
        if opts.get("gpu_memory"):
            hw = hardware.custom(_options.gpu_memory(opts["gpu_memory"]),
                                 name=hw.name if hw else None)
    except hardware.UnknownGPU as e:
        _fail(f"--gpu: {e}")
    if hw is not None:
        put("gpu", hw.name)

    measured = [opts.get("t1"), opts.get("tk"), opts.get("k")]
    meas: Optional[tuple[float, str]] = None
    if any(m is not None for m in measured):
        if not all(m is not None for m in measured):
            _fail("--t1, --tk and --k go together")
        # only --t1/--tk/--k: `lazy()` would load the package `preflight.physics` on every
        # start-up
        from preflight.physics.walls import efficiency_from_measurements

        t1 = _float("t1", opts["t1"], 0.0, lo_open=True)
        tk = _float("tk", opts["tk"], 0.0, lo_open=True)
        k = _int("k", opts["k"], "posint")
        e = efficiency_from_measurements(t1, tk, k)
        meas = (e, f"S = t1/tk = {t1:g}/{tk:g} = {t1 / tk:g}; E = S/k = {t1 / tk:g}/{k}")

    command = (click.get_current_context().obj or {}).get("command")
    sizing = options_types.EstimateOptions(gpu=hw, headroom=headroom, mfu=mfu, family=family,
                             fit=bool(opts.get("fit")))
    report = _report(list(paths), command, facts, sizing, set_pairs, hub)
    for jr in report.jobs:
        if meas is not None and jr.estimate is not None:
            jr.estimate.walls.measured_efficiency, jr.estimate.walls.measured = meas
        if sizing.fit:
            # only --fit plans: `preflight.plan_fit` is a package, which `lazy()` cannot name
            from preflight.plan_fit import plan_fit

            jr.fit = plan_fit(jr.job.plan, hw if hw is not None else jr.hardware, headroom,
                              mfu=mfu)
    if fmt == "json":
        click.echo(json.dumps(report.to_json(), indent=2))
    else:
        # the ledger's text: `lazy()` would load the package `preflight.physics` on every
        # start-up (`--help`, another command)
        from preflight.physics.text import render

        for d in report.diagnostics:
            click.echo(f"{in_cell(d.path, d.cell)}:{d.line}:{d.col}: {d.code} {d.message}", err=True)
        for jr in report.jobs:
            for d in jr.diagnostics:
                click.echo(f"{in_cell(d.path, d.cell)}:{d.line}:{d.col}: {d.code} {d.message}", err=True)
            click.echo(render(jr.estimate, title=jr.job.entry or ""))
            if jr.fit is not None:
                # only --fit prints the table: `lazy()` would load the package
                # `preflight.plan_fit` on every start-up
                from preflight.plan_fit.table import render_text as fit_table

                click.echo(fit_table(jr.fit, jr.job.entry or ""))
    # files were given and none formed a job: say so through the exit code
    if (paths or command) and not report.jobs:
        return 1
    over = any(jr.estimate is not None and jr.estimate.ledger.verdict() == "does not fit"
               for jr in report.jobs)
    return 1 if over else 0


def _report(paths: list[str], command: Optional[list[str]], facts: list, sizing: Any,
            sets: list = (), hub: bool = False) -> Any:
    """One job from the flags alone, or the jobs of the given files with the flags on top
    (a flag is the strongest source), sized and checked in one pass. `sizing`: the
    command's `EstimateOptions`; `hub`: --hub."""
    # as in `estimate`: `preflight.plan` stays out of sys.modules until an estimate runs
    from preflight.plan import Job, merge

    if not paths and not command:
        plan = merge(facts)
        est = api.estimate(plan, sizing)
        return result.Report(jobs=[result.JobResult(job=Job(plan=plan), estimate=est)])
    return pipeline.run(list(paths), options_types.CheckOptions(
        command=command, gpu=sizing.hardware, headroom=sizing.headroom, overrides=facts,
        mfu=sizing.mfu, family=sizing.family, sets=sets, fixes=False, hub=hub))
