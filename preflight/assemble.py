"""Merge the facts of a job's files into one TrainingPlan (docs/design.md precedence).

Order of candidates (ties at one origin go to the later one): config files, the launcher
file's own facts (#SBATCH), the launch line's facts, then the script's arguments read as
well-known framework flags. After merging: DeepSpeed `"auto"` values are resolved from the
Hugging Face flags of the line, world size is derived from nodes × GPUs per node, and the
consistency checks (PF4xx) run with both places of a conflict in the finding.
"""

from __future__ import annotations

import os
import re
from typing import Any, Optional

from preflight import safe_read
from preflight.config import load_project_config
from preflight.extract import extract_file
from preflight.extract.launch_env import launch_env
from preflight.extract.pool import key as pool_key
from preflight.extract.python import syntax_tree
from preflight.frameworks import get
from preflight.lang import pyconfig
from preflight.lang.notebook import VIRTUAL
from preflight.lang.shell.lines import locate_flag
from preflight.lazy import lazy
from preflight.models.param_tensors import with_catalogue_tensors
# flags only the Hugging Face TrainingArguments (and its subclasses) define
from preflight.frameworks.hf_trainer import MARKERS as HF_MARKERS
from preflight.frameworks import megatron as megatron_adapter
from preflight.plan import (Diagnostic, Extraction, Fact, Job, JobSpec, Origin, Source,
                            TrainingPlan, merge)
from preflight.project import find_root
from preflight.resolve.pinned import pinned_facts

extract_flags = lazy("preflight.extract.flags")
torchtitan_registry = lazy("preflight.extract.torchtitan_registry")
hydra_app = lazy("preflight.extract.hydra_app")

#: the user's own explicit sources (a script's PF003 they settle is dropped)
EXPLICIT = (Origin.CLI, Origin.CONFIG)
#: a script's "nothing found" defaults: they do not fill a DeepSpeed "auto" outside the Trainer
WEAK = (Origin.DEFAULT, Origin.ASSUMED)


def _extract(path: str, args: Optional[list[str]], cache: dict[str, Extraction],
             env: Optional[dict] = None) -> Extraction:
    key = pool_key(path, args, env)
    if key not in cache:
        cache[key] = extract_file(path, args=args, env=env)
    return cache[key]


def run_context(spec: JobSpec, path: str) -> tuple[Optional[list[str]], Optional[dict]]:
    """How `path` runs in the job: the entry script gets the launch line's arguments and
    the environment its launcher sets; every other file is read as it is."""
    inv = spec.invocation
    if inv is None or not path.endswith(".py"):
        return None, None
    if path != spec.entry:
        # a Python config named on the line (`tools/train.py cfg.py --cfg-options a=1`): the
        # line's arguments are what its framework applies to it
        mine = os.path.normpath(path)
        named = any(w.endswith(".py") and (mine == os.path.normpath(w) or mine.endswith(
            os.sep + os.path.normpath(w))) for w in (a.split("=", 1)[-1] for a in inv.args))
        if not named:
            return None, None
        try:
            text = safe_read.read_text(path, 512 * 1024, truncate=True)
        except OSError:
            return None, None
        # a script the line names (`deepy.py train.py …`) runs with its own arguments
        return (list(inv.args), None) if text and pyconfig.is_config_module(text) else (None, None)
    return list(inv.args), launch_env(inv)


def _default(name: str, value: Any, reason: str, source: Optional[Source] = None,
             origin: Origin = Origin.DEFAULT) -> tuple[str, Fact]:
    return name, Fact(value=value, origin=origin, source=source, reason=reason)


def assemble(spec: JobSpec, cache: Optional[dict[str, Extraction]] = None,
             sets: Optional[list[tuple[str, Fact]]] = None, *,
             only_contributing: bool = False, hub: bool = False) -> Job:
    """One job's plan. `sets` are the user's `--set FACT=VALUE` facts: the strongest
    source, taken before anything is derived from them. `only_contributing` (the files
    came from a directory walk, not from the user): the job lists only the modules that
    gave it something (`_contributing`). `hub`: a model nothing offline sizes may be asked
    of the Hugging Face hub (`--hub`, `[tool.preflight] hub`)."""
    cache = {} if cache is None else cache
    inv = spec.invocation
    exts: list[Extraction] = []
    config_pairs: list[tuple[str, Fact]] = []
    launcher_pairs: list[tuple[str, Fact]] = []
    script_pairs: list[tuple[str, Fact]] = []
    app_files: list[str] = []
    for path in spec.files:
        is_entry = path == spec.entry
        args, env = run_context(spec, path)
        e = _extract(path, args, cache, env)
        if e.kind == "python" and not is_entry and path.lower().endswith(".ipynb"):
            # a notebook that only launches this job (`!python other.py …`): its own cells'
            # facts, model loads and findings are its own job's, not the launched script's;
            # its cells still place the launch line's facts
            e = e.model_copy(update={"facts": [], "diagnostics": [], "extras": {
                k: v for k, v in e.extras.items() if k in _NOTEBOOK_LAYOUT}})
        exts.append(e)
        if e.kind == "shell":
            launcher_pairs += e.facts          # #SBATCH header and the like
        elif e.kind == "python":
            script_pairs += e.facts
            if is_entry:
                script_pairs += _script_deepspeed(path, args, e)
                app = _hydra_app(spec, path, args, env)
                if app is not None:       # a Hydra app: its composed config, as launched
                    exts.append(app)
                    config_pairs += app.facts
                    app_files += [f for f in app.references if f not in app_files]
        else:
            config_pairs += e.facts
    diags: list[Diagnostic] = []
    seen: set[tuple] = set()
    for e in exts:
        for d in e.diagnostics:
            k = (d.code, d.path, d.line, d.col, d.message)
            if k not in seen:
                seen.add(k)
                diags.append(d)

    line_pairs: list[tuple[str, Fact]] = list(inv.facts) if inv is not None else []
    flag_pairs: list[tuple[str, Fact]] = []
    flags: dict[str, Any] = {}
    megatron = False
    framework: Optional[str] = None
    if inv is not None and inv.args:
        args = []
        for a in inv.args:   # array items like "--fp8-format hybrid" reach argparse as one word
            args.extend(a.split() if a.startswith("--") and " " in a else [a])
        flag_pairs, info = extract_flags.flag_facts(args, inv.source,
                                                    script=inv.module or inv.script or "")
        flags, megatron, framework = info["flags"], info["megatron"], info["framework"]
        if any(e.path == spec.entry and e.extras.get("own_optimizer") for e in exts):
            # the script builds the optimizer itself (no trainer reads `--optim`): the flag
            # names nothing that runs
            flag_pairs = [(n, f) for n, f in flag_pairs if n != "optimizer"]
    titan_model = _torchtitan_flag_refs(flags, inv, exts)
    if titan_model:
        r = titan_model[0]
        flag_pairs.append(("model", Fact(value=f"{r['name']}:{r['flavor']}" if r["flavor"] else r["name"],
                                         origin=Origin.CLI, source=r["source"], reason=r["reason"])))
    hf = framework in (None, "hf_trainer") and (any(k.replace("-", "_") in HF_MARKERS for k in flags) or any(
        e.kind == "python" and e.path == spec.entry and e.extras.get("trainer_args") for e in exts))
    files = list(spec.files) + [f for f in app_files if f not in spec.files]
    if inv is not None and (inv.module or "").startswith("torchtitan") and "config" in flags \
            and "module" in flags and flags["config"][0] and flags["module"][0]:
        rf, rx, rfiles = torchtitan_registry.registry_facts(
            find_root(spec.entry), str(flags["module"][0]), str(flags["config"][0]))
        if rfiles:
            exts.append(Extraction(path=rfiles[0], kind="torchtitan", facts=rf, extras=rx))
            config_pairs += rf
            files += [f for f in rfiles if f not in files]

    project_pairs = [(k, Fact(value=v, origin=Origin.PROJECT, source=None,
                              reason="[[tool.preflight.jobs]] in pyproject.toml"))
                     for k, v in (spec.overrides or {}).items()]

    flag_pairs += list(sets or [])
    pairs = script_pairs + config_pairs + launcher_pairs + line_pairs + flag_pairs + project_pairs
    entry_text = _entry_text(spec, exts)
    if inv is None and entry_text and not any(n in ("gpus_per_node", "world_size") for n, _ in pairs):
        project_pairs.append(("gpus_per_node", Fact(
            value=1, origin=Origin.ASSUMED,
            reason="no launcher found for the script: assumed run as `python script.py`, one process")))
        pairs.append(project_pairs[-1])
    if entry_text and _RAY_DRIVER.search(entry_text):
        pairs = _ray_layout(pairs, inv)
    pairs = _framework_defaults(pairs, hf, megatron, flags, inv, entry_text) + pairs
    if megatron and not any(n == "attention" and f.known for n, f in pairs):
        pairs = _megatron_attention(flags, inv, spec) + pairs
    if entry_text and not any(n == "zero_stage" for n, _ in pairs) and not _mentions_deepspeed(
            entry_text, exts, flags, inv):
        pairs.append(("zero_stage", Fact(value=0, origin=Origin.DEFAULT, source=inv.source if inv else None,
                                         reason="no DeepSpeed anywhere in the job's files: no ZeRO")))
    if framework not in (None, "hf_trainer", "megatron"):
        # the defaults a framework's own script applies where its flags are absent
        stated = {n for n, f in pairs if f.known and f.origin not in WEAK}
        # after the script's own "nothing found" defaults: the framework knows better
        fw_defaults = [(n, Fact(value=v, origin=Origin.DEFAULT, source=inv.source, reason=why))
                       for n, v, why in get(framework).flag_defaults(flags, inv.module or inv.script or "")
                       if n not in stated]
        pairs = pairs + fw_defaults
        # an adapter or a quantised base the framework's script applies by default is a model
        # reference as much as one its flags name
        flag_pairs = flag_pairs + [(n, f) for n, f in fw_defaults if n in ("lora", "param_dtype")]
    plan = merge(pairs)

    extra_pairs = _resolve_auto(plan, exts, hf, diags)
    extra_pairs += _model_facts(exts, spec, plan, diags, _flag_refs(line_pairs + flag_pairs, line_pairs),
                                (_megatron_refs(flags, inv) if megatron else [])
                                + _torchtitan_flag_refs(flags, inv, exts), flags, hub)
    pairs, extra_pairs = _lora_completed(pairs, extra_pairs)
    if extra_pairs:
        plan = merge(pairs + extra_pairs)
    derived = _derive(plan, exts, flags, megatron, framework, spec.entry)
    if derived:
        plan = merge(pairs + extra_pairs + derived)
    finished = _world_size_dependent(plan, exts) + pinned_facts(plan, spec.entry)
    if finished:
        derived += finished
    # the catalogue's tensor count for the named model: the estimator receives numbers
    plan = with_catalogue_tensors(merge(_no_adapter(pairs + extra_pairs + derived)))
    diags = [d for d in diags if not _settled(d, plan)]
    if only_contributing:
        files, exts = _contributing(spec, files, exts, plan)
    return Job(entry=spec.entry, files=files, plan=plan, diagnostics=diags, extractions=exts)


#: extras every Python extraction carries, which say nothing about the job by themselves
_PLAIN_EXTRAS = {"classes", "names", "model_refs", "tree"}
#: what a notebook's extraction keeps when it only launches the job: how its cells map to
#: lines, and the files its `%%writefile` cells write — nothing its kernel code reads
_NOTEBOOK_LAYOUT = {"notebook", "notebook_files", "names", "names_unknown", "trains"}


def _contributing(spec: JobSpec, files: list[str], exts: list[Extraction],
                  plan: TrainingPlan) -> tuple[list[str], list[Extraction]]:
    """The job's files less the Python modules besides its entry that gave it nothing: no
    fact, no finding, no model class the job counts, nothing a rule reads. An imported
    helper is read (it may define the model) but is listed only when it is part of the
    answer."""
    asked = {r.get("class") for e in exts for r in (e.extras.get("model_refs") or [])
             if isinstance(r, dict) and r.get("class")}
    sources = {os.path.abspath(f.source.path) for cands in plan.candidates.values()
               for f in cands if f is not None and f.source is not None and f.source.path}

    def idle(e: Extraction) -> bool:
        return (e.kind == "python" and e.path != spec.entry and not e.facts
                and not e.diagnostics and not e.invocations and not e.references
                and not asked & set(e.extras.get("classes") or ())
                and not any(v for k, v in e.extras.items() if k not in _PLAIN_EXTRAS)
                and os.path.abspath(e.path) not in sources)

    drop = {e.path for e in exts if idle(e)}
    if not drop:
        return files, exts
    return [f for f in files if f not in drop], [e for e in exts if e.path not in drop]


# --------------------------------------------------------------------------- defaults


def _hydra_app(spec: JobSpec, path: str, args: Optional[list[str]],
               env: Optional[dict]) -> Optional[Extraction]:
    """The composed config of an entry script that is a Hydra app (`hydra_app`)."""
    inv = spec.invocation
    src = inv.source if inv is not None else None
    # a launch command given after `--` has the pseudo path "<command>": its words are cli
    origin = Origin.CLI if src is None or src.path.startswith("<") else Origin.CONFIG
    return hydra_app.app_extraction(path, list(args or []), src, origin, env)


def _script_deepspeed(path: str, args: Optional[list[str]], e: Extraction) -> list[tuple[str, Fact]]:
    """A DeepSpeed config written as a dict in the entry script (read by the extractor from
    its syntax tree, with the same launch-line arguments, when the script names DeepSpeed
    keys)."""
    found = e.extras.get("script_deepspeed")
    if not found:
        return []
    facts, extras = found
    if extras:
        e.extras.setdefault("deepspeed_dict", extras)
        for k in ("auto", "train_batch_size"):
            if k in extras and k not in e.extras:
                e.extras[k] = extras[k]
    return list(facts)


#: a script that drives a Ray cluster: its workers, not the launch line's process, hold the
#: GPUs
_RAY_DRIVER = re.compile(r"^[ \t]*(?:import|from)[ \t]+ray\b|\bray\.init\(", re.M)


def _ray_layout(pairs: list[tuple[str, Fact]], inv) -> list[tuple[str, Fact]]:
    """A bare `python` line's one process (nodes 1, GPUs 1: a default) says nothing of a
    Ray driver's GPUs, which its workers take on the cluster: unknown, with the reason."""
    weak = ("nodes", "gpus_per_node", "world_size")
    out = [(n, f) for n, f in pairs
           if not (n in weak and f.origin in (Origin.DEFAULT, Origin.ASSUMED) and f.value == 1)]
    if len(out) == len(pairs):
        return pairs
    for n in ("nodes", "world_size"):
        if not any(m == n for m, _ in out):
            out.append((n, Fact.unknown(
                "the script drives a Ray cluster (`ray.init`, `import ray`): its workers, not "
                "the launch line's one process, take the GPUs, as many as its own settings ask",
                source=inv.source if inv is not None else None)))
    return out


def _mentions_deepspeed(entry_text: str, exts: list[Extraction], flags: dict[str, Any], inv) -> bool:
    """Does anything of the job name DeepSpeed (the script, a config, a flag, the module run)?"""
    if "deepspeed" in entry_text.lower() or any(k.lower().startswith(("deepspeed", "ds_", "zero")) for k in flags):
        return True
    if any(e.kind == "deepspeed" or e.extras.get("deepspeed") or e.extras.get("deepspeed_engine") for e in exts):
        return True
    return inv is not None and "deepspeed" in f"{inv.module or ''} {' '.join(inv.configs)}".lower()


def _entry_text(spec: JobSpec, exts: list[Extraction]) -> str:
    if spec.entry and (spec.entry.lower().endswith(".ipynb") or VIRTUAL in spec.entry):
        # a notebook's code cells, or a file its `%%writefile` cell writes: the text read
        return next((e.text or "" for e in exts if e.path == spec.entry), "")
    if not spec.entry or not spec.entry.endswith(".py"):
        return ""
    try:
        return safe_read.read_text(spec.entry, 512 * 1024, truncate=True)
    except (OSError, ValueError):
        return ""


def _framework_defaults(pairs: list[tuple[str, Fact]], hf: bool, megatron: bool,
                        flags: dict[str, Any], inv, entry_text: str = "") -> list[tuple[str, Fact]]:
    have = {n for n, f in pairs}
    known = {n for n, f in pairs if f.known}
    src = inv.source if inv is not None else None
    out: list[tuple[str, Fact]] = []
    if hf:
        why = "Hugging Face TrainingArguments default"
        # TRL's configs turn gradient checkpointing on by default: no TrainingArguments default then
        trl = "from trl" in entry_text or "import trl" in entry_text
        if "activation_checkpointing" not in known and not trl:
            out.append(_default("activation_checkpointing", "none", f"{why}: gradient_checkpointing=False", src))
        if "optimizer" not in known:
            out.append(_default("optimizer", "adamw", f"{why}: optim=adamw_torch", src))
        if "micro_batch" not in have:
            out.append(_default("micro_batch", 8, f"{why}: per_device_train_batch_size=8", src))
        if "grad_accum" not in have:
            out.append(_default("grad_accum", 1, f"{why}: gradient_accumulation_steps=1", src))
        if inv is not None and inv.launcher == "accelerate" and not any(
                n == "fsdp" and f.origin in (Origin.CLI, Origin.CONFIG) for n, f in pairs):
            # the Trainer shards with FSDP when its arguments or the accelerate launch
            # config say so; `accelerate launch` without a config (or flag) reads the
            # machine's default config, which may
            out.append(("fsdp", Fact.unknown(
                "accelerate launch without --config_file or --use_fsdp: the machine's "
                "default accelerate config decides (~/.cache/huggingface/accelerate/"
                "default_config.yaml)", source=src).model_copy(update={"over": Origin.LITERAL})))
    if megatron:
        why = "Megatron-LM default"
        for name, val, r in (("tp", 1, "--tensor-model-parallel-size 1"), ("pp", 1, "--pipeline-model-parallel-size 1"),
                             ("zero_stage", 0, "no --use-distributed-optimizer"), ("fsdp", None, "no --use-torch-fsdp2"),
                             ("activation_checkpointing", "none", "no --recompute-granularity"),
                             ("optimizer", "adamw", "--optimizer adam (decoupled weight decay)"),
                             ("micro_batch", 1, "--micro-batch-size 1")):
            if name not in known:
                out.append(_default(name, val, f"{why}: {r}", src))
        mp = next((f.value for n, f in reversed(pairs) if n == "mixed_precision" and f.known), None)
        if "param_dtype" not in known:
            pd = {"bf16": "bf16", "fp16": "fp16"}.get(mp or "")
            if mp == "fp8":
                pd = "bf16" if "bf16" in flags else ("fp16" if "fp16" in flags else None)
            if pd:
                out.append(("param_dtype", Fact(value=pd, origin=Origin.DERIVED, source=src,
                                                reason=f"Megatron-LM holds the model in {pd} with --{pd} "
                                                       "(fp32 main parameters in the optimizer)")))
            elif mp is None:
                out.append(_default("mixed_precision", "none", f"{why}: fp32 without --bf16/--fp16", src))
                out.append(_default("param_dtype", "fp32", f"{why}: fp32 without --bf16/--fp16", src))
        if mp in ("bf16", "fp16") and "master_weights" not in known:
            # Megatron's 16-bit optimizer wrapper keeps fp32 main parameters, distributed
            # optimizer or not
            out.append(("master_weights", Fact(value=True, origin=Origin.DERIVED, source=src,
                                               reason=f"Megatron-LM --{mp}: fp32 main parameters in "
                                                      "the optimizer")))
    return out


def _megatron_attention(flags: dict[str, Any], inv, spec: JobSpec) -> list[tuple[str, Fact]]:
    """Megatron's attention when the line names none: from the repository's own Megatron
    arguments (found above the launcher or the entry script) and the flags given."""
    starts = [p for p in (inv.source.path if inv is not None and inv.source else None,
                          spec.entry) if p]
    text = None
    for start in starts:
        d = os.path.dirname(os.path.abspath(start))
        for _ in range(4):
            for rel in megatron_adapter.ARGUMENT_FILES:
                p = os.path.join(d, rel)
                if text is None and os.path.isfile(p):
                    text = safe_read.read_text(p)
            d = os.path.dirname(d)
    got = megatron_adapter.attention_default(flags, text)
    if got is None:
        return []
    return [_default("attention", got[0], f"Megatron-LM default: {got[1]}",
                     inv.source if inv is not None else None)]


def _resolve_auto(plan: TrainingPlan, exts: list[Extraction], hf: bool,
                  diags: list[Diagnostic]) -> list[tuple[str, Fact]]:
    out: list[tuple[str, Fact]] = []
    for e in exts:
        auto = e.extras.get("auto") or {}
        for name, src in auto.items():
            if name == "train_batch_size":
                continue
            if name == "mixed_precision":
                f = plan.facts.get("mixed_precision")
                if f is not None and f.known and (hf or f.origin not in WEAK):
                    pd = plan.facts.get("param_dtype")
                    if f.value in ("bf16", "fp16") and e.extras.get("deepspeed") and (
                            pd is None or not pd.known or pd.origin in (Origin.DEFAULT, Origin.ASSUMED, Origin.CATALOG)):
                        out.append(("param_dtype", Fact(
                            value=f.value, origin=Origin.DERIVED, source=src,
                            reason=f'DeepSpeed "auto" precision resolved to {f.value} ({f.reason or f.source}); '
                                   "DeepSpeed holds the model in that dtype")))
                    continue
                if hf:
                    out.append(("mixed_precision", Fact(value="none", origin=Origin.DEFAULT, source=src,
                                                        reason='"auto" with neither --bf16 nor --fp16: fp32')))
                    continue
            elif plan.known(name) and (hf or plan.fact(name).origin not in WEAK):
                continue
            if not hf:
                diags.append(Diagnostic.at(
                    "PF401", f'DeepSpeed "{name}" is "auto" and nothing in the job resolves it '
                             "(the Hugging Face Trainer fills \"auto\" from its arguments; no Trainer "
                             "command line was found)", src, name="deepspeed-auto-unresolved", severity="warning",
                    fix="set the value in the JSON, or check the job with the command that runs it "
                        "(preflight check -- deepspeed train.py --deepspeed ds.json …)"))
    return out


def _flag_refs(flag_pairs: list[tuple[str, Fact]],
               line_pairs: Optional[list[tuple[str, Fact]]] = None) -> list[dict]:
    """Model references made on the launch line: flags (`--model_name_or_path`, LoRA, 4-bit)
    and the facts a framework reads from the line (`actor_rollout_ref.model.path=…`); a
    dtype such a framework fixes (`line_pairs`) is the one the model is loaded in."""
    refs: list[dict] = []
    # a dtype the line's framework fixes is the one the model is loaded in (not
    # from_pretrained's default)
    dtype = next((f.value for n, f in line_pairs or [] if n == "param_dtype" and f.known
                  and f.value in ("fp32", "bf16", "fp16")), None)
    words = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}
    for name, f in flag_pairs:
        if not f.known:
            continue
        if name == "model" and isinstance(f.value, str):
            refs.append({"kind": "hub", "name": f.value, "source": f.source})
            if dtype:
                refs[-1]["kwargs"] = {"dtype": words[dtype]}
        elif name == "lora" and isinstance(f.value, dict):
            refs.append({"kind": "lora", "r": f.value.get("r"), "alpha": f.value.get("alpha"),
                         "targets": f.value.get("targets", []), "source": f.source,
                         "train_untargeted": bool(f.value.get("train_untargeted")),
                         # a framework's default adapter stays a default once resolved
                         **({"origin": f.origin} if f.origin is Origin.DEFAULT else {})})
        elif name == "param_dtype" and f.value in ("int4", "int8"):
            refs.append({"kind": "quant", "bits": 4 if f.value == "int4" else 8, "source": f.source})
    return refs


def _torchtitan_flag_refs(flags: dict[str, Any], inv, exts: list[Extraction]) -> list[dict]:
    """`-m torchtitan.train … --model.name llama3 --model.flavor 70B`: the command line
    overrides the TOML's `[model]` fields one by one, as torchtitan's own parser does."""
    if inv is None or not (inv.module or "").startswith("torchtitan") or \
            not any(k in flags for k in ("model.name", "model.flavor")):
        return []
    toml = next((r for e in exts for r in e.extras.get("model_refs", []) or []
                 if isinstance(r, dict) and r.get("kind") == "torchtitan"), {})
    name = flags["model.name"][0] if "model.name" in flags else toml.get("name")
    flavor = flags["model.flavor"][0] if "model.flavor" in flags else toml.get("flavor")
    if not isinstance(name, str) or not name or "\0" in name or (isinstance(flavor, str) and "\0" in flavor):
        return []
    key = "model.flavor" if "model.flavor" in flags else "model.name"
    shown = " ".join(f"--{k} {flags[k][0]}" for k in ("model.name", "model.flavor") if k in flags)
    return [{"kind": "torchtitan", "name": name, "flavor": flavor if isinstance(flavor, str) else None,
             "source": locate_flag(inv.source, f"--{key}"), "reason": shown}]


def _megatron_refs(flags: dict[str, Any], inv) -> list[dict]:
    """The model a Megatron-LM command line describes (--num-layers, --hidden-size, …)."""
    args: dict[str, Any] = {}
    for key, (val, _) in flags.items():
        if val is None:
            args[f"--{key}"] = True
        elif "\x00" in str(val):
            args[f"--{key}"] = {"unknown": f"--{key} is not known statically"}
        else:
            try:
                args[f"--{key}"] = int(val)
            except (TypeError, ValueError):
                args[f"--{key}"] = val
    if not any(k in args for k in ("--num-layers", "--hidden-size")):
        return []
    return [{"kind": "megatron", "args": args, "source": inv.source if inv is not None else None}]


def _model_facts(exts: list[Extraction], spec: JobSpec, plan: TrainingPlan,
                 diags: list[Diagnostic], extra_refs: Optional[list[dict]] = None,
                 first_refs: Optional[list[dict]] = None,
                 flags: Optional[dict[str, Any]] = None,
                 hub: bool = False) -> list[tuple[str, Fact]]:
    # the launch line's model arguments (Megatron) describe the model before any script ref
    refs: list = list(first_refs or [])
    for e in exts:
        refs.extend(e.extras.get("model_refs", []) or [])
    def key(r: dict) -> tuple:      # a name not known statically is a dict: compare its text
        n = r.get("name") if r.get("kind") != "lora" else r.get("r")   # the flags' rank counts
        return r.get("kind"), n if isinstance(n, (str, type(None))) else repr(n)
    seen = {key(r) for r in refs if isinstance(r, dict)}
    for r in extra_refs or []:
        if key(r) not in seen:
            refs.append(r)
    if not refs:
        return []
    # a checkpoint named only by a default (`def __init__(self, model_name="gpt2")`) gives
    # way to one a config or the command line states (LightningCLI's `model.model_name`,
    # which the script receives as that argument)
    hubs = [r for r in refs if isinstance(r, dict) and r.get("kind") == "hub"
            and isinstance(r.get("name"), str)]
    stated = {r["name"] for r in hubs if r.get("origin") != "default"}
    if stated:
        refs = [r for r in refs if not (isinstance(r, dict) and r.get("kind") == "hub" and
                                        r.get("origin") == "default" and
                                        isinstance(r.get("name"), str) and
                                        r["name"] not in stated)]
    # of several checkpoints named, the one the job's `model` fact settles on (the flag
    # over the config file) is the one sized
    mf = plan.facts.get("model")
    if mf is not None and mf.known and isinstance(mf.value, str) and len(stated) > 1:
        first = [r for r in refs if isinstance(r, dict) and r.get("kind") == "hub"
                 and r.get("name") == mf.value]
        refs = first + [r for r in refs if not any(r is x for x in first)]
    # here: the resolve package only for a model to resolve (never in the walk's worker)
    from preflight.resolve.documented import PLACEHOLDER, documented_model
    from preflight.resolve.entry import resolve
    if spec.entry and any(isinstance(r, dict) and r.get("kind") == "hub" and
                          isinstance(r.get("name"), str) and PLACEHOLDER.match(r["name"])
                          for r in refs):
        # `--model_name_or_path <your_path>` as a README documents the command: the model
        # its prose names, inferred
        words = ["--" + str(k) for k in (flags or {})]
        for i, r in enumerate(refs):
            if isinstance(r, dict) and r.get("kind") == "hub" and isinstance(r.get("name"), str) \
                    and PLACEHOLDER.match(r["name"]):
                got = documented_model(r["name"], spec.entry, words)
                if got is not None:
                    refs[i] = {**r, "name": got[0], "inferred": {"source": got[1],
                                                                "reason": got[2]}}
    dirs = []
    for f in spec.files:
        d = os.path.dirname(os.path.abspath(f))
        if d not in dirs:
            dirs.append(d)
    project_models: dict = {}
    try:
        project_models = dict(getattr(load_project_config(dirs[0] if dirs else "."), "models", {}) or {})
    except Exception:  # noqa: BLE001 - project config is optional here
        project_models = {}
    try:
        # a model class defined in the job's scripts is counted on their `ast` trees, for
        # the files that define one of the classes asked for
        classes = {r.get("class") for r in refs if isinstance(r, dict) and r.get("class")}
        modules = {}
        for e in exts:
            if e.kind == "python" and classes & set(e.extras.get("classes") or ()):
                m = syntax_tree(e)
                if m is not None:
                    modules[e.path] = m
        res = resolve(refs, search_dirs=dirs, project_models=project_models, params_override=None,
                      modules=modules, hub=hub)
    except Exception as e:  # noqa: BLE001 - a resolver failure must not stop the job
        diags.append(Diagnostic(code="PF004", name="unknown-model", severity="warning",
                                message=f"model could not be resolved: {type(e).__name__}: {e}"))
        return []
    pairs: list[tuple[str, Fact]] = []
    if isinstance(res, tuple):
        facts = res[0]
        for d in (res[1] if len(res) > 1 else []) or []:
            if isinstance(d, Diagnostic):
                diags.append(d)
    else:
        facts = getattr(res, "facts", res)
        for d in getattr(res, "diagnostics", []) or []:
            if isinstance(d, Diagnostic):
                diags.append(d)
    if isinstance(facts, dict):
        facts = list(facts.items())
    for item in facts or []:
        if isinstance(item, tuple) and len(item) == 2 and isinstance(item[1], Fact):
            pairs.append(item)
    return pairs


# --------------------------------------------------------------------------- derivation


def _derive(plan: TrainingPlan, exts: list[Extraction], flags: dict[str, Any],
            megatron: bool, framework: Optional[str] = None,
            entry: str = "") -> list[tuple[str, Fact]]:
    out: list[tuple[str, Fact]] = []
    nodes, gpn, ws = plan.fact("nodes"), plan.fact("gpus_per_node"), plan.fact("world_size")
    nv, gv, wv = (nodes.value if nodes.known else None, gpn.value if gpn.known else None,
                  ws.value if ws.known else None)
    nodes_assumed = nodes.origin is Origin.ASSUMED
    nodes_inferred = nodes.origin is Origin.INFERRED
    if "nodes" not in plan.facts:
        nodes_assumed = not (isinstance(wv, int) and isinstance(gv, int) and gv == wv)
        if isinstance(wv, int) and isinstance(gv, int) and gv == wv:
            out.append(("nodes", Fact(value=1, origin=Origin.DERIVED, source=ws.source,
                                      reason=f"world_size {wv} = gpus_per_node {gv}")))
            nv = 1
        elif isinstance(wv, int) and isinstance(gv, int) and 0 < gv < wv and wv % gv == 0 \
                and gpn.origin not in (Origin.ASSUMED, Origin.DEFAULT):
            # `mpirun -np 16 -npernode 8`: the processes the launch starts, so many per node
            nodes_assumed = False
            out.append(("nodes", Fact(value=wv // gv, origin=Origin.DERIVED, source=ws.source,
                                      reason=f"world_size {wv} / gpus_per_node {gv}")))
            nv = wv // gv
        else:
            doc = None
            if isinstance(wv, int) and wv > 1 and gv is None:
                # 16 processes and no launcher saying how many per node: the count the
                # repository's documentation gives beside the command, inferred
                from preflight.resolve.documented import documented_nodes
                doc = documented_nodes(entry, wv)
            if doc is not None:
                nodes_assumed, nodes_inferred = False, True
                out.append(("nodes", Fact(value=doc[0], origin=Origin.INFERRED, source=doc[1],
                                          reason=doc[2])))
                nv = doc[0]
            else:
                out.append(("nodes", Fact(value=1, origin=Origin.ASSUMED,
                                          reason="no launcher or config of the job names more than one node")))
                nv = 1
    if wv is None and isinstance(nv, int) and isinstance(gv, int):
        wv = nv * gv
        out.append(("world_size", Fact(value=wv, origin=Origin.DERIVED, source=gpn.source or nodes.source,
                                       reason=f"nodes {nv} × gpus_per_node {gv}")))
    elif wv is None and "world_size" not in plan.facts and "gpus_per_node" in plan.facts \
            and not gpn.known and gpn.source is not None:
        # `torchrun --nproc_per_node=$(nvidia-smi -L | wc -l)`: the count the launch
        # computes, said where it is computed rather than "not found"
        out.append(("world_size", Fact.unknown(f"nodes × gpus_per_node, and gpus_per_node "
                                               f"is not known: {gpn.reason}",
                                               source=gpn.source)))
    elif isinstance(wv, int) and isinstance(nv, int) and gv is None and nv > 0 and wv % nv == 0 \
            and not nodes_assumed:
        # (GPUs per node are not derived from an assumed node count: 16 GPUs may be 2 × 8)
        gv = wv // nv
        # from a node count a document gives: as weak as that count
        out.append(("gpus_per_node", Fact(value=gv, origin=Origin.INFERRED if nodes_inferred
                                          else Origin.DERIVED, source=ws.source,
                                          reason=f"world_size {wv} / nodes {nv}")))
    if any(e.extras.get("deepspeed_engine") for e in exts):
        mp, pd = plan.fact("mixed_precision"), plan.facts.get("param_dtype")
        if mp.known and mp.value in ("bf16", "fp16") and (
                pd is None or not pd.known or pd.origin in (Origin.DEFAULT, Origin.ASSUMED, Origin.CATALOG)):
            out.append(("param_dtype", Fact(value=mp.value, origin=Origin.DERIVED, source=mp.source,
                                            reason=f"DeepSpeed's {mp.value} engine holds the model in {mp.value} "
                                                   "(fp32 master weights in the optimizer)")))
    registry = any(e.kind == "python" and "torchtitan" in e.path.replace(os.sep, "/") for e in exts) and \
        not any(e.kind == "torchtitan" for e in exts)
    if not registry:
        for name, val, why in (("tp", 1, "no tensor parallelism configured"),
                               ("pp", 1, "no pipeline parallelism configured")):
            if name not in plan.facts:
                out.append((name, Fact(value=val, origin=Origin.DEFAULT, reason=why)))
    if wv == 1:
        for name, val, why in (("zero_stage", 0, "one process: no DeepSpeed ZeRO configured"),
                               ("fsdp", None, "one process: no FSDP configured")):
            if name not in plan.facts:
                out.append((name, Fact(value=val, origin=Origin.DEFAULT, reason=why)))
    # grad accumulation from a global batch size (Megatron --global-batch-size, litgpt global_batch_size)
    if not plan.known("grad_accum") and isinstance(wv, int):
        gb, gsrc = None, None
        # a framework's global-batch flag (Megatron --global-batch-size, OpenRLHF --train_batch_size)
        gflags = get(framework).global_batch_flag if framework else ()
        gflags = {g.replace("-", "_") for g in ((gflags,) if isinstance(gflags, str) else gflags) if g}
        gkey = next((k for k in flags if {k.replace("-", "_"), k.rsplit(".", 1)[-1].replace("-", "_")} & gflags),
                    None)
        if gkey is not None:
            try:
                gb = int(flags[gkey][0])
            except (TypeError, ValueError):
                gb = None
        what = "global batch"
        for e in exts:
            g = e.extras.get("global_batch_size")
            if isinstance(g, dict) and isinstance(g.get("value"), int):
                gb, gsrc = g["value"], g.get("source")
            t = e.extras.get("train_batch_size")
            if gb is None and isinstance(t, dict) and isinstance(t.get("value"), int):
                # DeepSpeed without gradient_accumulation_steps: it derives the steps from
                # train_batch_size / (train_micro_batch_size_per_gpu × data-parallel size)
                gb, gsrc, what = t["value"], t.get("source"), "DeepSpeed train_batch_size"
        mb = plan.value("micro_batch")
        tp, pp = plan.value("tp", 1) or 1, plan.value("pp", 1) or 1
        if isinstance(gb, int) and isinstance(mb, int) and isinstance(tp, int) and isinstance(pp, int) \
                and wv % (tp * pp) == 0:
            dp = wv // (tp * pp)
            if mb * dp > 0 and gb % (mb * dp) == 0:
                out.append(("grad_accum", Fact(value=gb // (mb * dp), origin=Origin.DERIVED,
                                               source=gsrc or plan.source("micro_batch"),
                                               reason=f"{what} {gb} / (micro_batch {mb} × data-parallel {dp})")))
    return out


def _settled(d: Diagnostic, plan: TrainingPlan) -> bool:
    """A script's "not known statically" (PF003) that the job settles: the value comes from
    the command line or a config file, or was finished at that very line (a world-size
    division completed with the launcher's world size)."""
    name = (d.data or {}).get("fact") if d.code == "PF003" else None
    f = plan.facts.get(name) if name else None
    if f is None or not f.known:
        return False
    if f.origin in EXPLICIT:
        return True
    return f.source is not None and (f.source.path, f.source.line) == (d.path, d.line)


def _lora_completed(pairs: list[tuple[str, Fact]], extra: list[tuple[str, Fact]]
                    ) -> tuple[list[tuple[str, Fact]], list[tuple[str, Fact]]]:
    """A launch line's LoRA flags (`--lora_r 64`) name the rank of the adapter the script's
    `LoraConfig` builds; the script says its targets (`target_modules=find_all_linear_names
    (model)`). The adapter model resolution completed from the script's config replaces the
    line's partial one, said with the line's origin."""
    got = next((f for n, f in extra if n == "lora" and f.known and isinstance(f.value, dict)
                and f.value.get("targets")), None)
    if got is None:
        return pairs, extra
    line = [f for n, f in pairs if n == "lora" and f.known and isinstance(f.value, dict)
            and f.origin is Origin.CLI and not f.value.get("targets")
            and f.value.get("r") == got.value.get("r")
            and f.value.get("base_bits") in (None, 16, got.value.get("base_bits"))]
    if not line:
        return pairs, extra
    done = got.model_copy(update={"origin": Origin.CLI, "reason": "; ".join(
        x for x in (line[-1].reason, got.reason) if x)})
    return ([(n, f) for n, f in pairs if not (n == "lora" and f in line)],
            [(n, done if f is got else f) for n, f in extra])


NO_ADAPTER = "no LoRA/PEFT adapter found in the job's files"


def _no_adapter(pairs: list[tuple[str, Fact]]) -> list[tuple[str, Fact]]:
    """`lora` is false when no adapter is used (a dict when one is): a "none found" default
    from any file becomes false, and a job where nothing mentions adapters gets one."""
    out: list[tuple[str, Fact]] = []
    seen = False
    for name, f in pairs:
        if name == "lora":
            seen = True
            if f.known and f.value is None:
                f = f.model_copy(update={"value": False, "reason": NO_ADAPTER
                                         if f.origin is Origin.DEFAULT else f.reason})
        out.append((name, f))
    if not seen:
        out.append(("lora", Fact(value=False, origin=Origin.DEFAULT, reason=NO_ADAPTER)))
    return out


_OPS = {"//": lambda a, b: a // b, "*": lambda a, b: a * b,
        "/": lambda a, b: a // b if a % b == 0 else None}
#: environment variables a launcher sets, and the plan fact that holds their value
_ENV_FACTS = {"WORLD_SIZE": "world_size", "LOCAL_WORLD_SIZE": "gpus_per_node"}


def _world_size_dependent(plan: TrainingPlan, exts: list[Extraction]) -> list[tuple[str, Fact]]:
    """Finish a script's computation that waits for the launcher (nanoGPT:
    `gradient_accumulation_steps //= ddp_world_size` with the world size from WORLD_SIZE;
    a config's batch over all GPUs, detectron2's `SOLVER.IMS_PER_BATCH`, divided by it)."""
    out: list[tuple[str, Fact]] = []
    for e in exts:
        for key, info in (e.extras.get("world_size_dependent") or {}).items():
            if not isinstance(info, dict):
                continue
            name, env, val, op = info.get("fact"), info.get("env"), info.get("value"), info.get("op")
            by = _ENV_FACTS.get(env or "")
            if not name or by is None or op not in _OPS or isinstance(val, bool) \
                    or not isinstance(val, int):
                continue
            src = Source(path=str(info.get("path") or e.path), line=int(info.get("line") or 1),
                         col=int(info.get("col") or 1))
            cur = plan.facts.get(name)
            if cur is not None and cur.known and not (cur.source and cur.source.path == e.path
                                                      and cur.source.line == src.line):
                continue            # set elsewhere (a flag, a config): that value stands
            ws = plan.fact(by)
            if not ws.known or not isinstance(ws.value, int) or ws.value <= 0:
                continue
            res = _OPS[op](val, ws.value)
            if res is None or res <= 0:
                continue
            assumed = any(plan.fact(n).origin is Origin.ASSUMED for n in (by, "gpus_per_node"))
            out.append((name, Fact(value=res, origin=Origin.ASSUMED if assumed else Origin.DERIVED,
                                   source=src,
                                   reason=f"{key} {val} {op} {env} {ws.value} ({by}: "
                                          f"{ws.source or ws.reason or ws.origin.value})")))
    return out
