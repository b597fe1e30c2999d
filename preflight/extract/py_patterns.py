"""Training-API patterns: which calls, keywords and names in a script become which facts.

The evaluator (`evaluator.py`) hands every call it can name to `Patterns.on_call` with the
evaluated arguments; this module maps them to the facts of docs/facts.md (spellings from preflight.facts.spellings)
and collects the model references for the model-resolution stage.
"""

from __future__ import annotations

import ast
import re
from typing import Any, Optional

from preflight import runcache
from preflight.facts import spellings
from preflight.models.vision import TORCHVISION_PARAMS as TORCHVISION_BUILDERS
from preflight.frameworks._hf_common import CLASSES as HF_CLASSES
from preflight.frameworks._hf_common import DEFAULTS as HF_DEFAULTS
from preflight.frameworks.trl import BASE_DEFAULTS as TRL_BASE
from preflight.frameworks.trl import CONFIGS as TRL_CONFIGS
from preflight.frameworks.trl import DEFAULTS as TRL_DEFAULTS
from preflight.extract.evaluator import _SPAWN as _SPAWN_QUALS
from preflight.extract.evaluator import (UNK, ArgsNS, ClassVal, DCInst, Dotted, Evaluator, FuncVal,
                                         Obj, V,
                                         current_path, literal_or_str, plain, unk)

# --------------------------------------------------------------------------- tables

OPTIMIZER_MODULES = ("torch.optim", "bitsandbytes", "bnb", "transformers", "deepspeed", "apex",
                     "lion_pytorch", "torch_optimizer", "timm", "came_pytorch", "?", "")
SEQ_KW = ("max_seq_length", "max_length", "model_max_length", "block_size", "seq_len",
          "seq_length", "max_seq_len", "context_length", "sequence_length", "cutoff_len")
#: library dataclasses whose defaults we know (and whose fields carry training facts): the
#: Hugging Face Trainer's and TRL's adapters own their classes and defaults
TRAINING_ARGS = HF_CLASSES | TRL_CONFIGS | {"_BaseConfig", "BaseConfig"}
LIB_DATACLASSES = TRAINING_ARGS | {"ModelConfig", "ScriptArguments", "DatasetMixtureConfig",
                                   "ModelArguments"}
_TRL_FLAGS = TRL_CONFIGS
LIB_FIELD_TYPES = {"per_device_train_batch_size": "int", "per_device_eval_batch_size": "int",
                   "gradient_accumulation_steps": "int", "bf16": "bool", "fp16": "bool",
                   "gradient_checkpointing": "bool", "tf32": "bool", "optim": "str",
                   "use_liger_kernel": "bool",
                   "use_peft": "bool", "lora_r": "int", "lora_alpha": "int",
                   "load_in_4bit": "bool", "load_in_8bit": "bool", "packing": "bool",
                   "max_length": "int", "max_seq_length": "int", "learning_rate": "float",
                   "lora_target_modules": "list", "lora_modules_to_save": "list",
                   "deepspeed": "str", "fsdp": "str", "model_name_or_path": "str",
                   "attn_implementation": "str", "dtype": "str", "torch_dtype": "str"}


def library_defaults(cls: str) -> dict[str, Any]:
    if cls in TRL_DEFAULTS:
        return TRL_DEFAULTS[cls]
    if cls in TRAINING_ARGS:
        return TRL_BASE if cls in TRL_CONFIGS else HF_DEFAULTS
    return {}


NOT_MODEL_CONFIGS = {"LoraConfig", "BitsAndBytesConfig", "GenerationConfig", "PeftConfig",
                     "PromptTuningConfig", "PrefixTuningConfig", "IA3Config", "AdaLoraConfig",
                     "DeepSpeedConfig", "HfDeepSpeedConfig", "ProjectConfiguration",
                     "DataLoaderConfiguration", "GradientAccumulationPlugin", "GPTQConfig",
                     "AwqConfig", "QuantoConfig", "TorchAoConfig", "DatasetConfig",
                     "DatasetMixtureConfig"} | LIB_DATACLASSES
NOT_MODEL_PRETRAINED = re.compile(
    r"(Tokenizer\w*|Config|Processor|FeatureExtractor|ImageProcessor|PeftModel\w*|"
    r"GenerationConfig|AutoPeftModel\w*|Pipeline|Dataset\w*)$")
LIB_TOPS = {"torch", "transformers", "trl", "peft", "accelerate", "deepspeed", "lightning",
            "pytorch_lightning", "datasets", "numpy", "np", "os", "sys", "math", "json",
            "bitsandbytes", "wandb", "logging", "argparse", "time", "random", "tqdm", "apex",
            "flash_attn", "evaluate", "dataclasses", "typing", "functools", "pathlib",
            "collections", "itertools", "contextlib", "re", "shutil", "subprocess", "inspect",
            "copy", "pickle", "torchvision", "sklearn", "pandas", "fire", "tokenizers",
            "safetensors", "huggingface_hub", "omegaconf", "hydra", "yaml", "einops"}
#: assignment targets that hold something about a model, not the model
_NOT_A_MODEL = re.compile(r"token|loss|optim|data|args|arg\b|config|cfg|conf\b|path|dir|name|"
                          r"kwargs|params|parallel_dims|spec|type|class|cls")
#: receivers that name a model kept frozen beside the trained one (DPO / PPO / distillation)
_FROZEN = re.compile(r"(^|[._])(ref|reference|reward|rm|teacher|frozen|ema)(_|$|\.|model)")
_EVALISH = re.compile(r"eval|valid|\bval\b|val_|_val|test|dev_", re.I)
_GLOBAL_FACTS = [
    (re.compile(r"^(per_device_train_batch_size|micro_batch_size|micro_bsz|batch_size|"
                r"train_batch_size|mbs|bsz|batch_size_per_device|device_batch_size)$", re.I),
     "micro_batch"),
    (re.compile(r"^(gradient_accumulation_steps|grad_accum(_steps)?|accumulation_steps|"
                r"gradient_accumulate_every|grad_accumulation_steps|accumulate_grad_batches|"
                r"accum_steps|gradient_accumulation|gradient_accumulation_iters|"
                r"grad_accum_iters)$", re.I), "grad_accum"),
    (re.compile(r"^(block_size|seq_len|seq_length|max_seq_len|max_seq_length|context_length|"
                r"sequence_length|ctx_len|max_length|model_max_length|bptt)$", re.I), "seq_len"),
]


#: calls that make a model's input tensor from its shape (batch first)
_INPUT_MAKERS = ("torch.randn", "torch.rand", "torch.zeros", "torch.ones", "torch.empty")
#: nn.Module methods that return the module itself
_SELF_METHODS = ("to", "cuda", "cpu", "train", "half", "bfloat16", "float", "double")


def _last(qual: str) -> str:
    return qual.rsplit(".", 1)[-1]


def _kind(v: Any) -> Any:
    """The plain value of a V holding a Dotted/str dtype etc."""
    if isinstance(v, V):
        v = v.value
    if isinstance(v, Dotted):
        return v.name
    return v


def _model_class(owner: str, config_cls: str) -> str:
    """The model class `Owner.from_config(XConfig(...))` builds: the owner itself, or for an
    auto class the architecture's class (`AutoModelForCausalLM` + `LlamaConfig` →
    `LlamaForCausalLM`)."""
    if not owner.startswith("AutoModel") or not config_cls.endswith("Config") \
            or config_cls == "Config":
        return owner
    arch = config_cls[: -len("Config")]
    head = owner[len("AutoModel"):]
    return f"{arch}{head}" if head else f"{arch}Model"


def dtype_of(v: V) -> Optional[str]:
    x = _kind(v)
    if not isinstance(x, str):
        return None
    return spellings.dtype(x)


#: platform probes whose answer is fixed on the GPUs preflight sizes jobs for (NVIDIA CUDA,
#: AMD ROCm, which torch also reports as `cuda`)
_PLATFORM_PROBES = {"torch.cuda.is_available": True, "torch.xpu.is_available": False,
                    "torch.backends.mps.is_available": False, "torch.mps.is_available": False,
                    "transformers.is_torch_xpu_available": False,
                    "transformers.is_torch_npu_available": False,
                    "transformers.utils.is_torch_xpu_available": False,
                    "transformers.utils.is_torch_npu_available": False,
                    "accelerate.utils.is_xpu_available": False,
                    "accelerate.utils.is_npu_available": False,
                    "accelerate.utils.is_mps_available": False}


def _artifact_exists(ev: Evaluator, path: str, line: int, col: int) -> Optional[V]:
    """`os.path.exists("data/x/meta.pkl")` for a file of the job's checkout: true when it is
    there; when it is not, unknown if a script beside it names it (a data-preparation step
    writes it before training), false if none does. None (an opaque call) for paths outside
    the working directory or in a folder the checkout does not have."""
    import os
    from preflight.safe_read import within
    if not path or os.path.isabs(path) or ".." in path.split("/") or "\0" in path:
        return None
    cwd = os.getcwd()
    if os.path.exists(path) and within(path, (cwd,)):
        return V(True, "derived", line, col, f"{path} is in the checkout")
    folder = os.path.dirname(path) or "."
    if not os.path.isdir(folder) or not within(folder, (cwd,)):
        return None
    base = os.path.basename(path)
    runcache.note_file(folder)
    try:
        names = sorted(os.listdir(folder))[:200]
    except OSError:
        return None
    for n in names:
        if not n.endswith((".py", ".sh")):
            continue
        try:
            text = ev.read_file(os.path.join(folder, n)) if ev.read_file else None
        except (OSError, ValueError):
            text = None
        if text and base in text:
            return unk(f"{path} is not in the checkout; {os.path.join(folder, n)} writes it "
                       f"when it is run", line, col)
    return V(False, "derived", line, col,
             f"{path} is not in the checkout and no script in {folder}/ writes it")


#: a comment beside a module-level number that says which setting it is
_COMMENT_FACTS = [
    (re.compile(r"\s*(micro[- _]?batch|batch size per (gpu|device|rank)|per[- ](gpu|device) "
                r"batch)", re.I), "micro_batch"),
    (re.compile(r"\s*(sequence|context) length\b", re.I), "seq_len"),
    (re.compile(r"\s*gradient accumulation steps\b", re.I), "grad_accum"),
]

#: an argparse help text saying the flag is the number of nodes
_NODES_HELP = re.compile(r"\bnumber of (compute |machines? ?/? ?)?nodes\b", re.I)


def _is_len(node: ast.AST) -> bool:
    """`len(tokenizer)`."""
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
        node.func.id == "len" and len(node.args) == 1


def _rounded_len(node: ast.AST) -> Optional[int]:
    """M for `M * math.ceil(len(tokenizer) / M)` (factors in either order, an `int(...)`
    around it): the tokenizer's length rounded up to a multiple of M."""
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
            node.func.id == "int" and len(node.args) == 1:
        node = node.args[0]
    if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult)):
        return None
    for k, c in ((node.left, node.right), (node.right, node.left)):
        if not (isinstance(k, ast.Constant) and isinstance(k.value, (int, float))):
            continue
        if isinstance(c, ast.Call) and ast.unparse(c.func) in ("math.ceil", "ceil") and \
                len(c.args) == 1 and isinstance(c.args[0], ast.BinOp) and \
                isinstance(c.args[0].op, ast.Div) and _is_len(c.args[0].left) and \
                isinstance(c.args[0].right, ast.Constant) and c.args[0].right.value == k.value \
                and float(k.value).is_integer() and k.value > 1:
            return int(k.value)
    return None


class Patterns:
    """Collects facts and model references while the evaluator walks the file."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.facts: list[tuple[str, V, str, Optional[str]]] = []   # name, V, tier, note
        self.model_refs: list[dict] = []
        self.lora_refs: list[dict] = []
        self.quant: list[dict] = []
        self.pending: dict[str, dict] = {}
        self.seen_training_api = False
        self.saw_precision = False
        self.saw_optimizer_step = False
        self.saw_training_args = False
        #: a loss that keeps no full logits (Liger), where it was asked for
        self.fused_loss: Optional[dict] = None
        self.unbound = False
        #: `model.resize_token_embeddings(...)`: a "resize" model ref, finished in `finish`
        self.resize: Optional[dict] = None
        #: where torch autocast is entered (its dtype is the compute's, not the weights')
        self.autocast_at: Optional[tuple[int, int]] = None

    # ----------------------------------------------------------------- emission
    def _fsdp_strategy(self, s: Optional[V], line: int, col: int, default_reason: str) -> None:
        """`sharding_strategy=` of FSDP(...) or Lightning's FSDPStrategy(...): FULL_SHARD when
        absent, the named strategy when known, unknown (with its reason) otherwise."""
        if s is None:
            self.emit("fsdp", V("full_shard", "default", line, col, default_reason))
        elif s.known:
            nm = _kind(s)
            fs = spellings.fsdp_strategy(nm) if isinstance(nm, str) else None
            if fs:
                self.emit("fsdp", s, value=fs)
        else:
            self.emit("fsdp", s)

    def emit(self, name: str, v: V, tier: str = "api", reason: Optional[str] = None,
             value: Any = UNK, origin: Optional[str] = None, at: Optional[ast.AST] = None) -> None:
        """Record a fact. `value`/`origin` override the V's; `at` overrides its position."""
        if value is not UNK or origin is not None or reason or at is not None:
            line, col = (at.lineno, at.col_offset + 1) if at is not None else (v.line, v.col)
            nv = V(v.value if value is UNK else value, origin or v.origin, line, col,
                   reason if reason is not None else v.reason, v.default,
                   v.path if at is None else None)
            if not v.known and value is not UNK:
                nv.origin = origin or "derived"
            v = nv
        if self.unbound and not v.known and name != "model" and \
                "parameter `" in (v.reason or ""):
            # a helper never called from the entry point, walked with unknown parameters:
            # its known settings count, its unknowns are only noise
            return
        self.facts.append((name, v, tier, None))

    def src(self, v: Any) -> dict:
        from preflight.plan import Source
        if isinstance(v, V):
            return Source(path=v.path or self.path, line=v.line, col=v.col)
        return Source(path=current_path() or self.path, line=getattr(v, "lineno", 0),
                      col=getattr(v, "col_offset", -1) + 1)

    # ----------------------------------------------------------------- hooks
    def on_pending(self, ev: Evaluator, name: str, cur: V, rhs: V, st: ast.AST) -> None:
        self.pending[name] = {"value": plain(cur), "op": {"FloorDiv": "//", "Div": "/",
                                                          "Mult": "*", "Add": "+", "Sub": "-"}
                              .get(type(st.op).__name__, type(st.op).__name__),
                              "by": rhs.reason, "line": st.lineno, "col": st.col_offset + 1}

    def on_exec(self, ev: Evaluator, arg: V, node: ast.Call) -> None:
        """nanoGPT: `exec(open('configurator.py').read())` — a Python config file given as a
        positional argument is applied to the globals, then `--key=value` overrides."""
        text = ev.src(node)
        if "open(" not in text:
            return
        if ev.frames:
            return
        from preflight.extract.evaluator import resolve_path
        for a in ev.argv:
            if not a.startswith("--"):
                if ev.read_file is None:
                    continue
                found = resolve_path(ev.path, a)
                ev.references.append(a)
                if found is None:
                    ev.notes.append((node.lineno, node.col_offset + 1,
                                     f"config file {a} named on the command line was not found"))
                    continue
                ctext = ev.read_file(found)
                if ctext is None:
                    continue
                try:
                    ctree = ast.parse(ctext)
                except SyntaxError as e:
                    ev.notes.append((node.lineno, node.col_offset + 1,
                                     f"config file {a}: syntax error at line {e.lineno}"))
                    continue
                saved = ev.lines
                ev.lines = ctext.splitlines()
                before = dict(ev.globals)
                try:
                    ev.exec_block(ctree.body)
                finally:
                    ev.lines = saved
                for k, val in list(ev.globals.items()):
                    if isinstance(val, V) and before.get(k) is not val:
                        val.origin = "config" if val.known else val.origin
                        val.path = found
                        val.reason = f"set in {a}"
            else:
                body = a[2:]
                if "=" not in body:
                    continue
                k, raw = body.split("=", 1)
                old = ev.globals.get(k)
                if not isinstance(old, V):
                    continue
                val = literal_or_str(raw)
                line, col = (old.line, old.col) if old.path is None else (node.lineno, node.col_offset + 1)
                ev.globals[k] = V(val, "cli", line, col, f"--{k}={raw} on the command line")
                ev.used_cli.add(k)

    def on_field_set(self, ev: Evaluator, inst: DCInst, attr: str, val: V, node: ast.AST) -> None:
        if inst.lib in TRAINING_ARGS:
            self._training_field(ev, inst, attr, val)

    def on_dataclass(self, ev: Evaluator, inst: DCInst, node: ast.AST) -> None:
        self.seen_training_api = True
        if inst.lib in TRAINING_ARGS:
            self.saw_training_args = True
        if inst.lib in TRAINING_ARGS:
            for k in list(inst.fields):
                self._training_field(ev, inst, k, inst.fields[k])
            if inst.lib in _TRL_FLAGS:
                bf = inst.fields.get("bf16")
                fp = inst.fields.get("fp16")
                if bf is not None and bf.known and bf.value is None:
                    if fp is not None and fp.known and not fp.value:
                        self.emit("mixed_precision", bf, value="bf16", origin="default",
                                  reason=f"{inst.lib}: bf16 defaults to True when fp16 is not set")
        if inst.lib in TRAINING_ARGS:
            ds = inst.fields.get("deepspeed")
            if ds is not None and ds.known and ds.value:
                for k in ("bf16", "fp16"):
                    f = inst.fields.get(k)
                    if f is not None and f.known and f.value is True:
                        self.emit("param_dtype", f, value=k, origin="derived",
                                  reason=f"{k}=True with DeepSpeed ({plain(ds)}): DeepSpeed "
                                         f"keeps {k} weights, fp32 master copies in the "
                                         "optimizer")

    def _training_field(self, ev: Evaluator, inst: DCInst, k: str, v: V) -> None:
        if not isinstance(v, V):
            return
        if k == "per_device_train_batch_size":
            self.emit("micro_batch", v)
        elif k == "gradient_accumulation_steps":
            self.emit("grad_accum", v)
        elif k in ("bf16", "fp16"):
            self.saw_precision = True
            if v.known and v.value is True:
                self.emit("mixed_precision", v, value=k)
            elif v.known and v.value is False:
                other = inst.fields.get("fp16" if k == "bf16" else "bf16")
                if other is None or (other.known and other.value is False):
                    if k == "bf16" or other is None:
                        self.emit("mixed_precision", v, value="none",
                                  reason=(v.reason or "") + "; neither bf16 nor fp16 set")
            elif not v.known:
                self.emit("mixed_precision", v)
        elif k == "optim":
            self._optim_string(v)
        elif k == "use_liger_kernel" and v.known and v.value is True:
            # Liger's fused linear cross-entropy: the full logits are never materialised
            self.fused_loss = {"line": v.line, "what": f"use_liger_kernel=True ({v.origin})"}
        elif k == "gradient_checkpointing":
            if v.known and v.value is False and v.origin == "default" and any(
                    n == "activation_checkpointing" for n, *_ in self.facts):
                # the field's default does not turn off what the script already turned on
                # (`prepare_model_for_kbit_training`, `model.gradient_checkpointing_enable()`)
                return
            if v.known:
                self.emit("activation_checkpointing", v, value="full" if v.value else "none")
            else:
                self.emit("activation_checkpointing", v)
        elif k in ("max_seq_length", "max_length", "model_max_length", "max_seq_len"):
            if v.known and v.value is not None:
                self.emit("seq_len", v, tier="api")
        elif k == "deepspeed":
            if v.known and isinstance(v.value, str) and v.value:
                ev.references.append(v.value)
            elif v.known and isinstance(v.value, dict):
                self._deepspeed_dict(v)
        elif k == "fsdp":
            if v.known and isinstance(v.value, str):
                words = v.value.split()
                fs = next((spellings.fsdp_strategy(w) for w in words
                           if not w.isdigit() and spellings.fsdp_strategy(w)), None)
                if fs:
                    self.emit("fsdp", v, value=fs)
                if "offload" in words:
                    self.emit("offload", v, value="optimizer+params")
        elif k == "attn_implementation":
            if v.known and isinstance(v.value, str) and spellings.attention(v.value):
                self.emit("attention", v, value=spellings.attention(v.value))

    def _optim_string(self, v: V) -> None:
        if v.known and isinstance(v.value, str):
            self.emit("optimizer", v, value=spellings.optimizer_name(v.value) or "other")
        elif not v.known:
            self.emit("optimizer", v)

    def on_class_call(self, ev: Evaluator, cls: ClassVal, args: list[V], kwargs: dict[str, V],
                      node: ast.Call) -> V:
        line, col = node.lineno, node.col_offset + 1
        obj = Obj(cls.name, args, kwargs, line, col)
        if cls.name.endswith("Config") or cls.name.endswith("Args") and cls.is_dataclass:
            fields = {}
            for fname, (st, vnode, ann) in cls.fields.items():
                if vnode is not None:
                    d = ev._field_default(fname, st, vnode)
                    if d.known:
                        fields[fname] = d
            for i, a in enumerate(args):
                names = list(cls.fields)
                if i < len(names):
                    fields[names[i]] = a
            fields.update({k: x for k, x in kwargs.items() if not k.startswith("\0")})
            obj.kwargs = fields
            self._config_ref(cls.name, fields, node)
        elif self._looks_like_model(ev, node):
            self._class_ref(cls.name, args, kwargs, node)
        return V(obj, "derived", line, col, f"instance of {cls.name}")

    # ----------------------------------------------------------------- model references
    def _looks_like_model(self, ev: Evaluator, node: ast.AST) -> bool:
        st = ev.cur_stmt
        outer = getattr(st, "value", None)
        # `model = Net(...)` or a method chain on it: `model = Net(...).to(device)`
        while isinstance(outer, ast.Call) and outer is not node and \
                isinstance(outer.func, ast.Attribute):
            outer = outer.func.value
        if isinstance(st, (ast.Assign, ast.AnnAssign)) and outer is node:
            tg = st.targets if isinstance(st, ast.Assign) else [st.target]
            text = " ".join(ev.src(t) for t in tg).lower()
            if _NOT_A_MODEL.search(text) or _FROZEN.search(text):
                # `model_args = ModelArgs()`, `tokenizer_model = …`, `ref_model = …`: not
                # the model being trained
                return False
            return bool(re.search(r"model|\bnet\b|network|^gpt|transformer", text))
        return False

    def _config_ref(self, cls: str, fields: dict, node: ast.AST) -> None:
        # the config describes the model for resolution; the `model` fact names the model
        # itself (the class built from this config), never the config class
        self.model_refs.append({"kind": "config", "class": cls, "fields": plain(fields),
                                "source": self.src(node)})
        for k in ("block_size", "max_seq_len", "seq_len", "context_length"):
            if k in fields and isinstance(fields[k], V) and fields[k].known:
                self.emit("seq_len", fields[k], tier="config")

    def _class_ref(self, cls: str, args: list, kwargs: dict, node: ast.AST) -> None:
        ref = {"kind": "class", "class": cls, "args": plain(args), "source": self.src(node)}
        if kwargs:
            ref["kwargs"] = plain({k: v for k, v in kwargs.items() if not k.startswith("\0")})
        self.model_refs.append(ref)
        # the model's own class, when no hub name or config names it better (the first
        # one: later ones are usually wrappers around it)
        if any(n == "model" for n, *_ in self.facts):
            return
        self.emit("model", V(cls, "literal", node.lineno, node.col_offset + 1,
                             "a model class instantiated in the script"), tier="fallback")

    def _model_input(self, cls: str, x: V) -> None:
        """`model(x)` with `x = torch.randn(batch, 3, 32, 32)` (or rand / zeros / ones /
        empty): the per-sample shape of the input of a model class of the script, which
        sizes the activations of a plain layer stack (models.forward)."""
        # `Net()(x)`, or after methods that return the model itself (`Net().to(dtype)`)
        head, *chain = cls.replace("()", "").split(".")
        if any(m not in _SELF_METHODS for m in chain):
            return
        ref = next((r for r in self.model_refs if r.get("kind") == "class"
                    and r.get("class") == head), None)
        if ref is None or "input_shape" in ref or not x.known or not isinstance(x.value, Obj):
            return
        o = x.value
        if o.qual not in _INPUT_MAKERS:
            return
        dims = list(o.args)
        if len(dims) == 1 and dims[0].known and isinstance(dims[0].value, (list, tuple)):
            dims = [V(d, "literal", x.line, x.col) for d in dims[0].value]
        vals = [d.value if isinstance(d, V) and d.known else None for d in dims]
        if len(vals) >= 2 and all(isinstance(v, int) and not isinstance(v, bool) and v > 0
                                  for v in vals):
            ref["input_shape"] = vals[1:]

    def _hub_model(self, ev: Evaluator, qual: str, name_v: V, kwargs: dict, node: ast.Call) -> None:
        line, col = node.lineno, node.col_offset + 1
        cls = _last(qual.rsplit(".", 1)[0]) if qual.endswith("from_pretrained") else _last(qual)
        kw = {k: plain(v) for k, v in kwargs.items() if not k.startswith("\0")
              and k in ("torch_dtype", "dtype", "attn_implementation", "load_in_4bit",
                        "load_in_8bit", "quantization_config", "trust_remote_code",
                        "use_flash_attention_2", "num_labels", "revision", "low_cpu_mem_usage",
                        "device_map", "config", "use_cache")}
        ref = {"kind": "hub", "name": plain(name_v), "class": cls, "source": self.src(node),
               "kwargs": kw, "library": qual.lstrip("?").split(".", 1)[0]}
        if name_v.known and name_v.origin != "literal":
            ref["origin"] = name_v.origin
        self.model_refs.append(ref)
        # the first model loaded is the one trained; later loads (a reference or reward
        # model, a reload for merging or evaluation) are references only
        first = not any(r["kind"] == "hub" for r in self.model_refs[:-1])
        if not first:
            ref["role"] = "secondary"
            return
        if name_v.known and isinstance(name_v.value, str):
            self.emit("model", name_v)
        elif not name_v.known:
            self.emit("model", unk(name_v.reason or "model name not known statically",
                                   line, col, name_v.default))
        self._model_kwargs(ev, kwargs, node, qual)

    def _model_kwargs(self, ev: Evaluator, kwargs: dict, node: ast.Call, qual: str = "") -> None:
        nq = len(self.quant)
        for k, bits in (("load_in_4bit", "int4"), ("load_in_8bit", "int8")):
            v = kwargs.get(k)
            if v is not None and v.known and v.value is True:
                self.emit("param_dtype", v, value=bits)
                self.quant.append({"bits": 4 if bits == "int4" else 8})
        q = kwargs.get("quantization_config")
        if q is not None and q.known and isinstance(q.value, Obj):
            self._bnb(q.value, q)
        quantized = len(self.quant) > nq or any(
            f[0] == "param_dtype" and f[1].value in ("int4", "int8") for f in self.facts)
        for k in ("torch_dtype", "dtype"):
            if quantized:
                break
            v = kwargs.get(k)
            if v is None:
                continue
            if v.known:
                x = _kind(v)
                if x == "auto":
                    self.emit("param_dtype", unk("torch_dtype=\"auto\": the checkpoint's dtype",
                                                 v.line, v.col))
                elif dtype_of(v):
                    self.emit("param_dtype", v, value=dtype_of(v))
            else:
                self.emit("param_dtype", v)
        v = kwargs.get("attn_implementation")
        if v is not None:
            if v.known and isinstance(v.value, str) and spellings.attention(v.value):
                self.emit("attention", v, value=spellings.attention(v.value))
            elif not v.known:
                self.emit("attention", v)
        top = qual.lstrip("?").split(".", 1)[0]
        if (v is None or (v.known and v.value is None)) and \
                kwargs.get("use_flash_attention_2") is None and \
                top in ("transformers", "trl", "peft", ""):   # another library's loader: not this default
            self.emit("attention", V("sdpa", "default", node.lineno, node.col_offset + 1,
                                     "transformers' default attn_implementation (sdpa where "
                                     "the model supports it)"), tier="fallback")
        if not any(k in kwargs and not (kwargs[k].known and kwargs[k].value is None)
                   for k in ("torch_dtype", "dtype", "load_in_4bit", "load_in_8bit",
                             "quantization_config")) and \
                top not in ("transformers", "trl", "peft", ""):
            # transformers' own default depends on its version (4.x: float32; ≥ 5: the
            # checkpoint's dtype): model resolution reads the job's pin and the catalogue.
            # dtype=None is no dtype.
            self.emit("param_dtype", V("fp32", "default", node.lineno, node.col_offset + 1,
                                       "from_pretrained without a dtype (or dtype=None) "
                                       "loads float32 weights"), tier="fallback")
        v = kwargs.get("use_flash_attention_2")
        if v is not None and v.known and v.value is True:
            self.emit("attention", v, value="flash")

    def _bnb(self, o: Obj, at: V) -> None:
        if any(q.get("obj") is o for q in self.quant):
            return
        for k, bits in (("load_in_4bit", "int4"), ("load_in_8bit", "int8")):
            v = o.kwargs.get(k)
            if v is not None and v.known and v.value is True:
                self.emit("param_dtype", v, value=bits,
                          reason=f"BitsAndBytesConfig({k}=True)")
                self.quant.append({"bits": 4 if bits == "int4" else 8,
                                   "kwargs": plain(o.kwargs), "obj": o})

    # ----------------------------------------------------------------- calls
    def on_patch(self, ev: Evaluator, qual: str, node: ast.Call) -> None:
        """A call that monkey-patches the model's attention: `replace_llama_attn_with_flash_attn()`,
        `apply_flash_attention_patch()` (→ flash), `…_with_xformers_attn()` (→ sdpa: no s² matrix)."""
        name = _last(qual).lower()
        if not re.search(r"replace|patch|monkey", name):
            return
        kind = "flash" if "flash" in name else ("sdpa" if re.search(r"xformers|sdpa|mem_eff", name)
                                                else None)
        if kind:
            self.emit("attention", V(kind, "literal", node.lineno, node.col_offset + 1,
                                     f"{_last(qual)}() patches the attention"), tier="attn")

    def on_call(self, ev: Evaluator, qual: str, args: list[V], kwargs: dict[str, V],
                node: ast.Call, kwnodes: dict[str, ast.AST]) -> Optional[V]:
        name = _last(qual)
        recv = qual[: -len(name) - 1] if "." in qual else ""
        line, col = node.lineno, node.col_offset + 1
        top = qual.lstrip("?").split(".", 1)[0]

        def kw(k: str, pos: Optional[int] = None) -> Optional[V]:
            if k in kwargs:
                return kwargs[k]
            if pos is not None and pos < len(args):
                return args[pos]
            return None

        if qual.endswith("()") and args:
            self._model_input(qual[:-2], args[0])
        # ---- environment
        if qual in ("os.environ.get", "os.getenv", "os.environ.setdefault"):
            key = args[0] if args else None
            d = kw("default", 1)
            kname = key.value if key is not None and key.known else "?"
            got = ev.env_value(kname, line, col, d if qual != "os.environ.setdefault" else None)
            if got is not None:
                return got
            out = unk(f"environment variable {kname} (set when the job is launched)", line, col)
            if d is not None and d.known:
                out.default = plain(d)
            return out
        # ---- probes of the platform: preflight sizes jobs on CUDA (or ROCm) GPUs
        if qual.lstrip("?") in _PLATFORM_PROBES:
            return V(_PLATFORM_PROBES[qual.lstrip("?")], "derived", line, col,
                     f"{qual.lstrip('?')}() on the CUDA / ROCm GPUs preflight sizes jobs for")
        if qual == "os.path.join" and args and not kwargs and all(
                a.known and isinstance(a.value, str) and "\0" not in a.value for a in args):
            import os.path
            return V(os.path.join(*[a.value for a in args]), "derived", line, col,
                     "os.path.join of known parts")
        if qual in ("os.path.exists", "os.path.isfile") and args and args[0].known and \
                isinstance(args[0].value, str):
            got = _artifact_exists(ev, args[0].value, line, col)
            if got is not None:
                return got
        if recv in ("torchvision.models", "models") and qual.startswith("torchvision.models.") \
                and name[:1].islower() and name in TORCHVISION_BUILDERS:
            # a torchvision classification builder: the model (sized from its table)
            self.seen_training_api = True
            self.model_refs.append({"kind": "torchvision", "name": name,
                                    "kwargs": {k: plain(v) for k, v in kwargs.items()
                                               if not k.startswith("\0")},
                                    "source": self.src(node)})
            if not any(n == "model" for n, *_ in self.facts):
                self.emit("model", V(f"torchvision.models.{name}", "literal", line, col))
            return None
        if qual in _SPAWN_QUALS:
            # the script starts its own processes, one per GPU of the node: however it is
            # launched, its processes per node are `nprocs`
            n = kw("nprocs", 2)
            if n is not None and n.known and isinstance(n.value, int) and n.value >= 1:
                self.emit("gpus_per_node", n, reason=f"mp.spawn(nprocs={n.value})")
            elif n is not None:
                self.emit("gpus_per_node", unk(f"the script's mp.spawn starts `nprocs` "
                                               f"processes per node: {n.reason}", line, col),
                          tier="overrules")
            return None
        if name == "resize_token_embeddings" and not _FROZEN.search(recv):
            self._resize(args, kwargs, node)
            return None
        # ---- argparse / dataclass parsers
        if name in ("parse_args", "parse_known_args", "parse_intermixed_args"):
            if "HfArgumentParser" in recv or "TrlParser" in recv:
                return None
            ns = V(ArgsNS(), "derived", line, col)
            if name == "parse_known_args":
                return V((ns, unk("unknown arguments", line, col)), "derived", line, col)
            return ns
        if name in ("parse_args_into_dataclasses", "parse_args_and_config", "parse_dict",
                    "parse_yaml_file", "parse_json_file"):
            recv_v = ev.ev(node.func.value) if isinstance(node.func, ast.Attribute) else None
            classes = self._parser_classes(recv_v)
            if classes is None:
                return None
            from_cli = name in ("parse_args_into_dataclasses", "parse_args_and_config")
            if name in ("parse_yaml_file", "parse_json_file", "parse_dict"):
                values = self._args_file(ev, name, args, kwargs, node)
                if values is None:
                    return V(tuple(unk(f"arguments read from a file at run time ({name})",
                                       line, col) for _ in classes), "derived", line, col)
                insts = []
                for c in classes:
                    inst = ev.dc_instance(c, line, col, from_cli=False)
                    for k, v in values.items():
                        if k in inst.fields or inst.lib:
                            inst.fields[k] = v
                    self.on_dataclass(ev, inst, node)
                    insts.append(V(inst, "derived", line, col))
                return V(tuple(insts), "derived", line, col)
            insts = []
            for c in classes:
                inst = ev.dc_instance(c, line, col, from_cli=from_cli)
                self.on_dataclass(ev, inst, node)
                insts.append(V(inst, "derived", line, col))
            if "--config" in " ".join(ev.argv) and name == "parse_args_and_config":
                ev.notes.append((line, col, "values from the --config file are not read by the "
                                            "Python extractor"))
            return V(tuple(insts), "derived", line, col)
        if name in TRAINING_ARGS and not qual.startswith("?"):
            inst = ev.dc_instance(Dotted(qual), line, col, from_cli=False,
                                  kwargs={k: v for k, v in kwargs.items() if not k.startswith("\0")})
            self._relocate_defaults(inst, node)
            self.on_dataclass(ev, inst, node)
            return V(inst, "derived", line, col)
        # ---- optimizers
        if spellings.optimizer_class(name) and (
                top in OPTIMIZER_MODULES or qual.startswith("?")
                or any(m in qual for m in ("optim", "bnb", "bitsandbytes"))):
            val = spellings.optimizer_class(name)
            if val == "sgd":
                m = kw("momentum", 2)
                if m is not None and m.known and isinstance(m.value, (int, float)) and m.value > 0:
                    val = "sgd_momentum"
                elif m is not None and not m.known:
                    self.emit("optimizer", unk(f"SGD momentum {m.reason}", line, col))
                    return None
            if name == "FusedAdam":
                m = kw("adam_w_mode")
                if m is not None and m.known and m.value is False:
                    val = "adam"
            self.emit("optimizer", V(val, "literal", line, col))
            for k in ("fused", "capturable"):
                f = kw(k)
                if f is not None and f.known and f.value is True:
                    # step counts on the parameters' device (torch.optim)
                    self.emit("optimizer_fused", V(True, "literal", line, col))
            self.seen_training_api = True
            return None
        if name == "create_optimizer" and "optim" in qual:
            return None
        if name == "step" and "optim" in recv.lower():
            self.saw_optimizer_step = True
            return None
        # ---- precision
        if name == "autocast":
            self.saw_precision = True
            if self.autocast_at is None:
                self.autocast_at = (line, col)
            en = kw("enabled")
            if en is not None and en.known and en.value is False:
                return None
            # the device's op lists decide what some modules save (CPU autocast keeps pow
            # in 16 bits)
            where = (V("cuda", "literal", line, col) if "cuda.amp" in qual else
                     V("cpu", "literal", line, col) if "cpu.amp" in qual else
                     kw("device_type", 0))
            if where is not None and where.known and where.value in ("cuda", "cpu"):
                self.emit("autocast_device", where)
            d = kw("dtype")
            if d is None and "cuda.amp" not in qual and len(args) > 1:
                d = args[1]
            if d is not None:
                if d.known and dtype_of(d):
                    mp = dtype_of(d)
                    self.emit("mixed_precision", d, value=mp if mp != "fp32" else "none",
                              reason=f"torch autocast dtype at line {line}"
                              if d.origin != "literal" else None)
                elif not d.known:
                    self.emit("mixed_precision", unk(f"autocast dtype: {d.reason}", line, col,
                                                     d.default))
                return None
            dev = kw("device_type", 0) if "cuda.amp" not in qual else V("cuda")
            if dev is not None and dev.known and dev.value == "cpu":
                self.emit("mixed_precision", V("bf16", "default", line, col,
                                               "CPU autocast defaults to bfloat16"))
            else:
                self.emit("mixed_precision", V("fp16", "default", line, col,
                                               "CUDA autocast defaults to float16"))
            return None
        if name in ("GradScaler", "ShardedGradScaler"):
            self.saw_precision = True
            en = kw("enabled")
            if en is None or (en.known and en.value):
                self.emit("mixed_precision", V("fp16", "derived", line, col,
                                               "a GradScaler scales fp16 losses"), tier="hint")
            return None
        if name in ("half", "bfloat16", "to") and isinstance(node.func, ast.Attribute) \
                and _FROZEN.search(ev.src(node.func.value).lower()):
            # a reference / reward / teacher model is not trained: its dtype is not the
            # trained weights' (and no optimizer updates it)
            return None
        if name in ("half", "bfloat16") and not args and self._modelish(recv, ev, node):
            self.saw_precision = True
            self.emit("param_dtype", V("fp16" if name == "half" else "bf16", "literal", line, col))
            self.emit("model_cast", V(True, "literal", line, col))
            return None
        if name == "to" and self._modelish(recv, ev, node):
            dev = args[0] if args else kwargs.get("device")
            where = _kind(dev) if dev is not None and dev.known else None
            if isinstance(where, str) and where.split(":")[0] in ("cpu", "cuda"):
                # where the model (and its optimizer) runs: `model.to("cpu")`, `.to(device)`
                self.emit("device", dev, value=where.split(":")[0], at=node)
            for a, an in zip(list(args) + [kwargs.get("dtype")],
                             list(node.args) + [getattr(kwnodes.get("dtype"), "value", None)]):
                if a is not None and a.known and isinstance(a.value, Dotted) and dtype_of(a):
                    self.saw_precision = True
                    self.emit("param_dtype", a, value=dtype_of(a), at=node)
                    # a cast of the whole model casts its floating-point buffers too
                    self.emit("model_cast", a, value=True, at=node)
                elif a is not None and not a.known and an is not None and \
                        "dtype" in ev.src(an).lower():
                    # `model.to(ptdtype)` with a dtype only known at run time
                    self.saw_precision = True
                    self.emit("param_dtype", unk(f"model cast to {ev.src(an)}: {a.reason}",
                                                 line, col, a.default))
            return None
        if name == "set_default_dtype" and args:
            if dtype_of(args[0]):
                self.saw_precision = True
                self.emit("param_dtype", args[0], value=dtype_of(args[0]))
            return None
        if name == "MixedPrecision" or name == "MixedPrecisionPolicy":
            d = kw("param_dtype", 0)
            mp = spellings.autocast_dtype(_kind(d)) if d is not None and d.known else None
            if mp:
                self.saw_precision = True
                self.emit("mixed_precision", d, value=mp)
            return None
        if name in ("Accelerator",):
            self.seen_training_api = True
            mp = kw("mixed_precision")
            if mp is not None:
                self.saw_precision = True
                if mp.known and isinstance(mp.value, str):
                    val = spellings.mixed_precision(mp.value)
                    if val:
                        self.emit("mixed_precision", mp, value=val)
                elif not mp.known:
                    self.emit("mixed_precision", mp)
            ga = kw("gradient_accumulation_steps")
            if ga is not None and (not ga.known or ga.value is not None):
                self.emit("grad_accum", ga)
            return None
        # ---- Lightning
        if name in ("Trainer", "Fabric") and (top in ("lightning", "pytorch_lightning", "L", "pl")
                                             or "lightning" in qual or
                                             any(k in kwargs for k in ("precision", "devices",
                                                                       "accumulate_grad_batches",
                                                                       "strategy", "num_nodes"))):
            self.seen_training_api = True
            self._lightning(ev, kwargs, node)
            return None
        if name == "Trainer" or name.endswith("Trainer"):
            self.seen_training_api = True
            m = kwargs.get("model")
            if m is not None and m.known and isinstance(m.value, str):
                self._hub_model(ev, qual, m, {}, node)
            pc = kwargs.get("peft_config")
            if pc is not None and pc.known and isinstance(pc.value, Obj) and pc.value.short == "LoraConfig":
                pass
            q = kwargs.get("quantization_config")
            if q is not None and q.known and isinstance(q.value, Obj):
                self._bnb(q.value, q)
            return None
        # ---- models
        if name == "from_pretrained":
            owner = _last(recv)
            if owner in ("AutoConfig",) or owner.endswith("Config") and owner not in NOT_MODEL_CONFIGS:
                nm = args[0] if args else kwargs.get("pretrained_model_name_or_path")
                self.model_refs.append({"kind": "auto_config", "name": plain(nm) if nm else None,
                                        "class": owner, "source": self.src(node),
                                        "overrides": plain({k: v for k, v in kwargs.items()
                                                            if not k.startswith("\0")})})
                o = Obj(qual, args, kwargs, line, col)
                if nm is not None:
                    o.attrs["\0hub"] = nm
                return V(o, "derived", line, col, f"{owner}.from_pretrained(...)")
            if "Tokenizer" in owner:
                ml = kwargs.get("model_max_length")
                if ml is not None and ml.known and isinstance(ml.value, int):
                    self.emit("seq_len", ml, tier="tokenizer")
                return None
            if NOT_MODEL_PRETRAINED.search(owner) and not owner.startswith("AutoModel"):
                if owner.startswith("PeftModel") or owner.startswith("AutoPeftModel"):
                    self.emit("lora", unk("a saved PEFT adapter is loaded (settings in its "
                                          "adapter_config.json)", line, col))
                return None
            nm = args[0] if args else kwargs.get("pretrained_model_name_or_path")
            if nm is None:
                nm = unk("no model name given", line, col)
            self.seen_training_api = True
            self._hub_model(ev, qual, nm, kwargs, node)
            return None
        if name == "from_name" and (_last(recv).endswith("Config") or _last(recv) == "GPT"):
            # litgpt: `Config.from_name("pythia-160m")` / `GPT.from_name(...)` name the model
            nm = args[0] if args else kwargs.get("name")
            if nm is not None:
                self.seen_training_api = True
                self._hub_model(ev, qual, nm, {}, node)
            return V(Obj(qual, args, kwargs, line, col), "derived", line, col, f"{_last(recv)}.from_name(...)")
        if name == "from_config":
            c = args[0] if args else kwargs.get("config")
            self.seen_training_api = True
            if c is not None and c.known and isinstance(c.value, Obj):
                hub = c.value.attrs.get("\0hub")
                if hub is not None:
                    self.emit("model", hub if hub.known else unk(hub.reason or "", line, col))
                else:
                    self.emit("model", V(_model_class(_last(recv), c.value.short), "literal",
                                         line, col, f"{_last(recv)}.from_config({c.value.short}(...))"))
            self._model_kwargs(ev, kwargs, node)
            return None
        if name.endswith("Config") and name not in NOT_MODEL_CONFIGS and name[:1].isupper():
            fields = {k: v for k, v in kwargs.items() if not k.startswith("\0")}
            if "\0unknown" in kwargs:
                fields["**"] = kwargs["\0unknown"]
            self._config_ref(name, fields, node)
            return V(Obj(qual, args, fields, line, col), "derived", line, col, f"{name}(...)")
        if name == "BitsAndBytesConfig":
            o = Obj(qual, args, kwargs, line, col)
            self._bnb(o, V(o, "literal", line, col))
            return V(o, "derived", line, col)
        if name == "LoraConfig":
            self._lora(kwargs, node)
            return None
        if name == "get_peft_config" and args and args[0].known and isinstance(args[0].value, DCInst):
            f = args[0].value.fields
            use = f.get("use_peft")
            if use is not None and use.known:
                if use.value:
                    self._lora({"r": f.get("lora_r"), "lora_alpha": f.get("lora_alpha"),
                                "target_modules": f.get("lora_target_modules"),
                                "modules_to_save": f.get("lora_modules_to_save")}, node,
                               via=use)
                else:
                    self.emit("lora", use, value=None, reason="use_peft is False")
            return None
        if name == "get_quantization_config" and args and args[0].known and \
                isinstance(args[0].value, DCInst):
            f = args[0].value.fields
            o = Obj("BitsAndBytesConfig", [], {k: f[k] for k in ("load_in_4bit", "load_in_8bit")
                                               if k in f}, line, col)
            self._bnb(o, V(o))
            return V(o, "derived", line, col)
        if name in ("prepare_model_for_kbit_training", "prepare_model_for_int8_training"):
            # peft turns gradient checkpointing on unless told not to
            g = kw("use_gradient_checkpointing")
            if g is None:
                self.emit("activation_checkpointing", V("full", "default", line, col,
                                                        f"{name}: use_gradient_checkpointing defaults "
                                                        "to True"))
            elif g.known:
                self.emit("activation_checkpointing", g, value="full" if g.value else "none")
            else:
                self.emit("activation_checkpointing", g)
            return None
        if ((name == "Fire" and top == "fire") or (name == "run" and top == "typer") or
                (name in ("CLI", "auto_cli") and (top == "jsonargparse" or qual.startswith("?")))) \
                and args and args[0].known and isinstance(args[0].value, FuncVal):
            # python-fire, typer.run, jsonargparse.CLI: the command line becomes the
            # function's keyword arguments
            fn = args[0].value
            cli: dict[str, V] = {}
            params = [a.arg for a in fn.node.args.args + fn.node.args.kwonlyargs]
            for p_ in params:
                hit = ev.cli_lookup([p_])
                if hit is not None:
                    raw = hit[1]
                    val = True if raw is None else literal_or_str(raw)
                    d = fn.node.args
                    cli[p_] = V(val, "cli", fn.node.lineno, fn.node.col_offset + 1,
                                f"--{hit[0]} {raw if raw is not None else ''} on the command line".replace(" on", " on", 1))
                    ev.used_cli.add(hit[0])
            ev.call_function(fn, [], cli, line, col)
            return V(None)
        # ---- batch / sequence
        if name == "DataLoader":
            self.seen_training_api = True
            b = kw("batch_size", 1)
            if b is not None and not self._evalish(ev, node, args):
                if b.known and b.value is None:
                    return None
                self.emit("micro_batch", b, tier="dataloader")
            return None
        if re.search(r"tokeni[sz]er", recv, re.I) or re.search(r"tokeni[sz]er", name, re.I):
            ml = kwargs.get("max_length")
            if ml is not None and (not ml.known or isinstance(ml.value, int)):
                self.emit("seq_len", ml, tier="tokenizer")
            return None
        # ---- parallelism
        if name in ("DistributedDataParallel", "DDP"):
            self.seen_training_api = True
            self.emit("fsdp", V(None, "derived", line, col, "the model is wrapped in DDP, not FSDP"),
                      tier="hint")
            return None
        if name in ("FullyShardedDataParallel", "FSDP"):
            self.seen_training_api = True
            self._fsdp_strategy(kw("sharding_strategy"), line, col,
                                "FSDP's default sharding_strategy is FULL_SHARD")
            off = kw("cpu_offload")
            if off is not None and off.known and isinstance(off.value, Obj):
                p = off.value.kwargs.get("offload_params") or (off.value.args[0] if off.value.args else None)
                if p is not None and p.known and p.value:
                    self.emit("offload", p, value="optimizer+params")
            mp = kw("mixed_precision")
            del mp
            return None
        if name == "fully_shard":
            self.seen_training_api = True
            r = kw("reshard_after_forward")
            if r is not None and r.known and r.value is False:
                self.emit("fsdp", r, value="shard_grad_op")
            else:
                self.emit("fsdp", V("full_shard", "literal" if r is not None else "default",
                                    line, col, None if r is not None else
                                    "fully_shard reshards after forward by default (FULL_SHARD)"))
            mp = kw("mp_policy")
            del mp
            return None
        if name == "initialize" and "deepspeed" in qual:
            self.seen_training_api = True
            c = kw("config") or kw("config_params")
            if c is not None and c.known:
                if isinstance(c.value, dict):
                    self._deepspeed_dict(c)
                elif isinstance(c.value, str):
                    ev.references.append(c.value)
            elif c is not None:
                self.emit("zero_stage", unk(f"DeepSpeed config: {c.reason}", line, col))
            return None
        if name == "parallelize_module":
            self.emit("tp", unk("tensor parallel over a device mesh whose size is set at launch",
                                line, col), tier="hint")
            return None
        if name == "init_device_mesh":
            shape = kw("mesh_shape", 1)
            names = kw("mesh_dim_names", 2)
            if shape is not None and names is not None and shape.known and names.known and \
                    isinstance(shape.value, (list, tuple)) and isinstance(names.value, (list, tuple)):
                for sv, nv in zip(shape.value, names.value):
                    n = plain(nv)
                    if n in ("tp", "pp"):
                        sv = sv if isinstance(sv, V) else V(sv, shape.origin, shape.line, shape.col)
                        self.emit(n, sv)
            return None
        if name in ("DeepSpeedStrategy", "FSDPStrategy", "DDPStrategy", "ModelParallelStrategy"):
            self._lightning_strategy_obj(name, kwargs, node)
            return V(Obj(qual, args, kwargs, line, col), "derived", line, col)
        # ---- activation checkpointing
        if name in ("gradient_checkpointing_enable", "enable_gradient_checkpointing"):
            if ev.conds:
                # `if args.grad_ckpt: model.gradient_checkpointing_enable()`: on or off
                u = unk(f"{name}() runs only if {ev.conds[-1]}, not known statically",
                        line, col)
                u.default = {"alternatives": ["full", None]}
                self.emit("activation_checkpointing", u)
            else:
                self.emit("activation_checkpointing", V("full", "literal", line, col))
            return None
        if name in ("checkpoint", "checkpoint_sequential") and "checkpoint" in recv or \
                name in ("checkpoint_wrapper", "apply_activation_checkpointing"):
            if name == "checkpoint" and "utils" not in qual and not qual.startswith("?checkpoint"):
                if not re.search(r"torch|checkpoint$", recv):
                    return None
            self.emit("activation_checkpointing", V("full", "literal", line, col,
                                                    f"{name}(...) in the model code"))
            return None
        # ---- attention
        if name == "scaled_dot_product_attention":
            self.emit("attention", V("sdpa", "literal", line, col), tier="attn")
            return None
        if name.startswith("flash_attn") and ("func" in name or top == "flash_attn"):
            self.emit("attention", V("flash", "literal", line, col), tier="attn")
            return None
        if name == "softmax":
            text = ev.src(node)
            if re.search(r"@|matmul|bmm|einsum|att|score", text):
                self.emit("attention", V("eager", "derived", line, col,
                                         "attention computed by hand (softmax of q·kᵀ)"),
                          tier="fallback")
            return None
        # attn_implementation on anything else
        v = kwargs.get("attn_implementation")
        if v is not None and v.known and isinstance(v.value, str) and spellings.attention(v.value):
            self.emit("attention", v, value=spellings.attention(v.value))
        # a model-looking class from a non-library module: hand it to model resolution
        if name[:1].isupper() and top not in LIB_TOPS and self._looks_like_model(ev, node):
            self._class_ref(name, args, kwargs, node)
        return None

    def _relocate_defaults(self, inst: DCInst, node: ast.AST) -> None:
        pass

    def _args_file(self, ev: Evaluator, meth: str, args: list, kwargs: dict,
                   node: ast.AST) -> Optional[dict[str, V]]:
        """`parser.parse_json_file(sys.argv[1])`: read the JSON/YAML arguments file (never
        run anything) → {field: V(origin config, pointing into that file)}."""
        a = args[0] if args else (kwargs.get("json_file") or kwargs.get("yaml_file")
                                  or kwargs.get("args"))
        if a is None or not a.known:
            return None
        if meth == "parse_dict":
            if isinstance(a.value, dict):
                return {k: v for k, v in a.value.items() if isinstance(k, str)}
            return None
        if not isinstance(a.value, str):
            return None
        from preflight.extract.evaluator import resolve_path
        rel = a.value
        ev.references.append(rel)
        found = resolve_path(ev.path, rel)
        if found is None or ev.read_file is None:
            ev.notes.append((node.lineno, node.col_offset + 1,
                             f"arguments file {rel} was not found; its values are unknown"))
            return None
        text = ev.read_file(found)
        if text is None:
            return None
        try:
            if meth == "parse_json_file":
                import json
                data = json.loads(text)
            else:
                import yaml
                data = yaml.safe_load(text)
        except Exception as e:  # noqa: BLE001 - a malformed file is reported, not raised
            ev.notes.append((node.lineno, node.col_offset + 1,
                             f"arguments file {rel} could not be read: {type(e).__name__}"))
            return None
        if not isinstance(data, dict):
            return None
        lines = text.splitlines()
        out: dict[str, V] = {}
        for k, v in data.items():
            ln, cl = 1, 1
            for i, s in enumerate(lines, 1):
                j = s.find(f'"{k}"')
                if j < 0 and s.lstrip().startswith(f"{k}:"):
                    j = s.find(str(k))
                if j >= 0:
                    ln, cl = i, j + 1
                    break
            out[str(k)] = V(v, "config", ln, cl, f"{k} in {rel}", None, found)
        return out

    def _parser_classes(self, recv_v: Optional[V]) -> Optional[list]:
        if recv_v is None or not recv_v.known or not isinstance(recv_v.value, Obj):
            return None
        o = recv_v.value
        if o.short not in ("HfArgumentParser", "TrlParser") and "add_parser" not in o.qual:
            return None
        a = o.args[0] if o.args else o.kwargs.get("dataclass_types")
        if a is None or not a.known:
            return None
        items = a.value if isinstance(a.value, (list, tuple)) else [a]
        out = []
        for it in items:
            x = it.value if isinstance(it, V) else it
            if isinstance(x, (ClassVal, Dotted)):
                out.append(x)
            else:
                return None
        return out

    def _modelish(self, recv: str, ev: Evaluator, node: ast.AST) -> bool:
        """Whether a method's receiver is a model: by its name as written (`model.to`), or by
        what it evaluates to — a transformers model class (`LlamaForCausalLM(config)`) or a
        class the job instantiates as its model (`M().bfloat16()`)."""
        written = recv.lower().lstrip("?")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            written += " " + ev.src(node.func.value).lower()
        if re.search(r"model|\bnet\b|network|module", written):
            return True
        if "from_pretrained" in recv or "from_config" in recv:
            return True
        cls = _last(recv.lstrip("?").removesuffix("()"))
        if re.search(r"(For[A-Z]\w+|LMHeadModel|Model)$", cls):
            return True
        return any(r.get("kind") == "class" and r.get("class") == cls for r in self.model_refs)

    def _evalish(self, ev: Evaluator, node: ast.Call, args: list) -> bool:
        st = ev.cur_stmt
        text = ""
        if isinstance(st, (ast.Assign, ast.AnnAssign)):
            tg = st.targets if isinstance(st, ast.Assign) else [st.target]
            text = " ".join(ev.src(t) for t in tg)
        if node.args:
            text += " " + ev.src(node.args[0])
        return bool(_EVALISH.search(text))

    def _lora(self, kwargs: dict, node: ast.AST, via: Optional[V] = None) -> None:
        line, col = node.lineno, node.col_offset + 1
        r = kwargs.get("r")
        alpha = kwargs.get("lora_alpha")
        targets = kwargs.get("target_modules")
        mts = kwargs.get("modules_to_save")

        def val(v: Optional[V], default: Any) -> Any:
            if v is None:
                return default
            return plain(v) if v.known else {"unknown": v.reason}

        rv = val(r, 8)
        d = {"r": rv, "alpha": val(alpha, 8), "targets": val(targets, None),
             "base_bits": 16, "modules_to_save": val(mts, None) or []}
        if isinstance(d["targets"], str) and targets is not None and targets.origin == "cli":
            # a list written on a command line (fire reads `'[q_proj,v_proj]'` as a list)
            from preflight.frameworks import lora_targets
            d["targets"] = lora_targets(d["targets"])
        elif isinstance(d["targets"], str):
            d["targets"] = [d["targets"]]      # peft: one name, `all-linear`, or a regex
        if d["targets"] is None:
            d["targets"] = []
        self.lora_refs.append({"kind": "lora", **d, "source": self.src(node)})
        origins = {v.origin for v in (r, alpha, targets, via) if v is not None}
        origin = "cli" if "cli" in origins else ("literal" if origins <= {"literal"} else "derived")
        if origins <= {"default"} and origins:
            origin = "default"
        reasons = [f"{k}={plain(v)!r} ({v.origin}, line {v.line})" for k, v in
                   (("r", r), ("lora_alpha", alpha)) if v is not None and v.origin != "literal"]
        if isinstance(rv, dict):
            self.emit("lora", unk(f"LoRA rank: {rv.get('unknown')}", line, col))
            return
        self.emit("lora", V(d, origin, line, col, "; ".join(reasons) or None))

    def _deepspeed_dict(self, c: V) -> None:
        d = c.value

        def get(*keys: str) -> Optional[V]:
            cur: Any = d
            for k in keys:
                if isinstance(cur, V):
                    cur = cur.value
                if not isinstance(cur, dict) or k not in cur:
                    return None
                cur = cur[k]
            return cur if isinstance(cur, V) else V(cur, c.origin, c.line, c.col)

        def fact(name: str, v: Optional[V], value: Any = UNK) -> None:
            if v is None:
                return
            if v.known and v.value == "auto":
                self.emit(name, unk("DeepSpeed \"auto\": filled in by the HF Trainer at run time",
                                    v.line, v.col))
            else:
                self.emit(name, v, value=value)

        st = get("zero_optimization", "stage")
        fact("zero_stage", st)
        if get("zero_optimization") is not None and st is None:
            self.emit("zero_stage", V(0, "default", c.line, c.col, "zero_optimization without "
                                                                   "a stage (DeepSpeed default 0)"))
        if get("zero_optimization") is None:
            self.emit("zero_stage", V(0, "default", c.line, c.col, "no zero_optimization section"))
        offp = get("zero_optimization", "offload_param", "device")
        offo = get("zero_optimization", "offload_optimizer", "device")
        if offp is not None and offp.known and offp.value in ("cpu", "nvme"):
            self.emit("offload", offp, value="optimizer+params")
        elif offo is not None and offo.known and offo.value in ("cpu", "nvme"):
            self.emit("offload", offo, value="optimizer")
        elif offo is not None or offp is not None:
            self.emit("offload", (offo or offp), value="none")
        fact("micro_batch", get("train_micro_batch_size_per_gpu"))
        fact("grad_accum", get("gradient_accumulation_steps"))
        for sec, mp in (("bf16", "bf16"), ("fp16", "fp16")):
            e = get(sec, "enabled")
            if e is not None and e.known and e.value is True:
                self.saw_precision = True
                kv = getattr(d, "key_v", {}).get(sec) if isinstance(d, dict) else None
                if kv is not None and kv.known:
                    # the section's name is itself a value (a parameter default, a flag)
                    why = f'{sec}.enabled = true, the key "{sec}" from {kv.reason or kv.origin}'
                    self.emit("mixed_precision", kv, value=mp, reason=why)
                else:
                    self.emit("mixed_precision", e, value=mp)
                self.emit("param_dtype", kv if kv is not None and kv.known else e, value=mp, origin="derived",
                          reason=f"DeepSpeed {sec}: the model runs in {mp} (fp32 master "
                                 "weights in the optimizer)")
            elif e is not None and not e.known:
                self.emit("mixed_precision", e)
        t = get("optimizer", "type")
        if t is not None and t.known and isinstance(t.value, str):
            params = {k: v.value for k in ("adam_w_mode", "torch_adam")
                      if (v := get("optimizer", "params", k)) is not None and v.known}
            self.emit("optimizer", t, value=spellings.deepspeed_optimizer(t.value, params) or "other")

    def _lightning(self, ev: Evaluator, kwargs: dict, node: ast.AST) -> None:
        p = kwargs.get("precision")
        if p is not None:
            self.saw_precision = True
            if p.known:
                mp = spellings.precision(p.value)
                if mp:
                    self.emit("mixed_precision", p, value=mp[0])
                    if mp[1]:
                        self.emit("param_dtype", p, value=mp[1])
            else:
                self.emit("mixed_precision", p)
        ga = kwargs.get("accumulate_grad_batches")
        if ga is not None:
            self.emit("grad_accum", ga)
        nn = kwargs.get("num_nodes")
        if nn is not None and (not nn.known or isinstance(nn.value, int)):
            self.emit("nodes", nn)
        dv = kwargs.get("devices")
        if dv is not None and dv.known and isinstance(dv.value, int) and dv.value > 0:
            self.emit("gpus_per_node", dv)
        s = kwargs.get("strategy")
        if s is not None and s.known:
            if isinstance(s.value, str):
                sv = s.value
                if sv.startswith("deepspeed"):
                    m = re.search(r"stage_(\d)", sv)
                    if m:
                        self.emit("zero_stage", s, value=int(m.group(1)))
                    if "offload" in sv:
                        self.emit("offload", s, value="optimizer+params" if sv.endswith(
                            "offload") and "3" in sv else "optimizer")
                elif sv.startswith("fsdp"):
                    self.emit("fsdp", s, value="full_shard")
                elif sv.startswith("ddp"):
                    self.emit("fsdp", s, value=None, tier="hint")

    def _lightning_strategy_obj(self, name: str, kwargs: dict, node: ast.AST) -> None:
        line, col = node.lineno, node.col_offset + 1
        if name == "DeepSpeedStrategy":
            st = kwargs.get("stage")
            self.emit("zero_stage", st if st is not None else
                      V(2, "default", line, col, "DeepSpeedStrategy default stage 2"))
            oo, op = kwargs.get("offload_optimizer"), kwargs.get("offload_parameters")
            if op is not None and op.known and op.value:
                self.emit("offload", op, value="optimizer+params")
            elif oo is not None and oo.known and oo.value:
                self.emit("offload", oo, value="optimizer")
        elif name == "FSDPStrategy":
            self._fsdp_strategy(kwargs.get("sharding_strategy"), line, col,
                                "FSDPStrategy default FULL_SHARD")
            ac = kwargs.get("activation_checkpointing_policy") or kwargs.get("activation_checkpointing")
            if ac is not None and ac.known and ac.value:
                self.emit("activation_checkpointing", ac, value="full")
            off = kwargs.get("cpu_offload")
            if off is not None and off.known and off.value is True:
                self.emit("offload", off, value="optimizer+params")

    def _resize(self, args: list[V], kwargs: dict[str, V], node: ast.Call) -> None:
        """`resize_token_embeddings(n)`: a known `n` is the new vocabulary; `len(tokenizer)`
        (with `pad_to_multiple_of=M`, or written `M * math.ceil(len(tokenizer) / M)`) is the
        base vocabulary plus the tokens the script adds, rounded up to M."""
        n = args[0] if args else kwargs.get("new_num_tokens")
        arg = node.args[0] if node.args else next(
            (k.value for k in node.keywords if k.arg == "new_num_tokens"), None)
        m = kwargs.get("pad_to_multiple_of")
        ref: dict[str, Any] = {"kind": "resize", "source": self.src(node)}
        if n is not None and n.known and isinstance(n.value, int) and not isinstance(n.value, bool):
            ref["vocab"] = n.value
        elif arg is not None and (_rounded_len(arg) or _is_len(arg)):
            mult = _rounded_len(arg) or 1
            if m is not None and m.known and isinstance(m.value, int) and m.value > 1:
                mult = m.value
            ref["multiple"] = mult
        else:
            return
        if self.resize is None:
            self.resize = ref

    def _tokens_added(self, ev: Evaluator) -> Optional[tuple[str, int]]:
        """(file, line) of the first place the job adds tokens to its tokenizer
        (`add_special_tokens({...})`, `add_tokens([...])`, a tokenizer loaded with
        `pad_token=` / `additional_special_tokens=`), in the script or a module it calls."""
        trees = [(self.path, ev.tree)] + [(m.path, m.tree) for m in ev.modules.values()
                                          if m is not None]
        for path, tree in trees:
            for n in ast.walk(tree):
                if not isinstance(n, ast.Call) or not isinstance(n.func, ast.Attribute):
                    continue
                attr = n.func.attr
                if attr in ("add_special_tokens", "add_tokens") and n.args:
                    return path, n.lineno
                if attr == "from_pretrained" and "Tokenizer" in ast.unparse(n.func.value) and \
                        any(k.arg in ("pad_token", "additional_special_tokens")
                            for k in n.keywords):
                    return path, n.lineno
        return None

    def _nodes_flag(self, ev: Evaluator) -> None:
        """A script flag documented as the number of nodes (`--world-size`, help "number
        of nodes for distributed training", in scripts that spawn one process per GPU
        themselves) gives the nodes the job runs on."""
        for dest, info in ev.argparse.items():
            h = info["kw"].get("help")
            if not (isinstance(h, ast.Constant) and isinstance(h.value, str)
                    and _NODES_HELP.search(h.value)):
                continue
            v = ev.arg_value(dest, info["line"], info["col"])
            if v.known and isinstance(v.value, int) and not isinstance(v.value, bool) \
                    and v.value >= 1:
                self.emit("nodes", v, reason=f"--{dest.replace('_', '-')} {v.value}: "
                                             f"{h.value.strip()!r} (the flag's help)")

    # ----------------------------------------------------------------- the end
    def finish(self, ev: Evaluator) -> None:
        """Fallbacks: module-level config names (nanoGPT style), hand-written attention,
        what a training script without any precision/LoRA/checkpointing setting implies."""
        if self.saw_training_args:
            # with a Trainer, the batch per device is TrainingArguments'; a DataLoader built
            # in the script feeds evaluation or a custom loop on the side
            self.facts = [(n, v, "hint" if tier == "dataloader" else tier, x)
                          for n, v, tier, x in self.facts]
        have = {n for n, v, tier, _ in self.facts if tier not in ("fallback", "hint") and v.known}
        have_any = {n for n, _, tier, _ in self.facts if tier not in ("fallback", "hint")}
        # a name's value is no fallback for a setting the script makes, unknown, at the API
        # (`DataLoader(batch_size=args.batch_size)` after `args.batch_size //= ngpus`)
        said = have_any
        for gname, val in ev.globals.items():
            if not isinstance(val, V):
                continue
            for rx, fact in _GLOBAL_FACTS:
                if fact in said or not rx.match(gname):
                    continue
                if val.known and not isinstance(val.value, (int,)) or isinstance(val.value, bool):
                    continue
                if val.known and val.value is None:
                    continue
                self.emit(fact, val, tier="global")
                have.add(fact)
                said.add(fact)
        # a short name the script documents in its comment (`B = 64  # micro batch size`)
        for gname, val in ev.globals.items():
            if not (isinstance(val, V) and val.known and isinstance(val.value, int)) or \
                    isinstance(val.value, bool) or val.path or not 0 < val.line <= len(ev.lines):
                continue
            text = ev.lines[val.line - 1]
            if not re.match(rf"\s*{re.escape(gname)}\s*=", text) or "#" not in text:
                continue
            comment = text.split("#", 1)[1]
            for rx, fact in _COMMENT_FACTS:
                if fact not in said and rx.match(comment):
                    self.emit(fact, val, tier="global",
                              reason=f"{gname} = {val.value}: #{comment.rstrip()}")
                    have.add(fact)
                    said.add(fact)
        argp = {d: ev.arg_value(d, 0, 0) for d in ev.argparse_order
                if any(rx.match(d) for rx, _ in _GLOBAL_FACTS)}
        for lname, val in list(ev.local_config.items()) + list(argp.items()):
            for rx, fact in _GLOBAL_FACTS:
                if fact in said or not rx.match(lname):
                    continue
                if not val.known or not isinstance(val.value, int) or isinstance(val.value, bool):
                    continue
                self.emit(fact, val, tier="global")
                have.add(fact)
                said.add(fact)
        self._nodes_flag(ev)
        if "grad_accum" in self.pending and "grad_accum" not in have:
            pass
        for key, info in self.pending.items():
            fact = next((f for rx, f in _GLOBAL_FACTS if rx.match(key)), None)
            if fact:
                info["fact"] = fact
            by = info.get("by") or ""
            m = re.search(r"environment variable (\w+)", by)
            if m:
                info["env"] = m.group(1)      # e.g. WORLD_SIZE: known once the launcher is
            ev.pending_out[key] = info
        bits = min((q["bits"] for q in self.quant), default=16)
        if bits != 16:
            for ref in self.lora_refs:
                ref["base_bits"] = bits
            for _, v, _, _ in self.facts:
                if isinstance(v.value, dict) and "base_bits" in v.value and "r" in v.value:
                    v.value["base_bits"] = bits
        for q in self.quant:
            q.pop("obj", None)
        if self.resize is not None:
            if "multiple" in self.resize:
                added = self._tokens_added(ev)
                self.resize["added"] = added is not None
                if added is not None:
                    self.resize["added_at"] = f"{added[0]}:{added[1]}"
            self.model_refs.append(self.resize)
        if not self.seen_training_api and not have:
            return
        line, col = 1, 1
        have |= have_any
        if "optimizer" in have or self.seen_training_api:
            if "lora" not in have and not self.lora_refs:
                if re.search(r"peft|lora", ev.text_for_checks, re.I):
                    self.emit("lora", unk("the script mentions PEFT/LoRA but its settings are "
                                          "made outside this file", line, col), tier="fallback")
                else:
                    self.emit("lora", V(None, "default", line, col,
                                        "no LoRA / PEFT configuration in the script"),
                              tier="fallback")
            if "activation_checkpointing" not in have and not re.search(
                    r"gradient_checkpointing|checkpoint_wrapper|activation_checkpointing|"
                    r"utils\.checkpoint|checkpoint_sequential", ev.text_for_checks):
                self.emit("activation_checkpointing",
                          V("none", "default", line, col,
                            "no gradient checkpointing found in the script"), tier="fallback")
            # a script that mentions precision settings the evaluator did not reach (an
            # early return, code behind an unknown call) gets no "none" default
            mentions_precision = re.search(r"bf16|fp16|float16|half\(|autocast|mixed_precision",
                                           ev.text_for_checks)
            if not self.saw_precision and "mixed_precision" not in have and not mentions_precision:
                self.emit("mixed_precision", V("none", "default", line, col,
                                               "no autocast / mixed-precision setting found in "
                                               "the script"), tier="fallback")
            if self.autocast_at is not None and "param_dtype" not in have_any and \
                    not re.search(r"\.half\(|\.bfloat16\(|torch_dtype|set_default_dtype",
                                  ev.text_for_checks):
                # autocast computes in half precision over the weights the model was built
                # with; nothing in the script casts them
                self.emit("param_dtype", V("fp32", "default", *self.autocast_at,
                                           "torch autocast over a model built in fp32 (no cast "
                                           "of the weights in the script)"), tier="fallback")
            if not self.saw_precision and "param_dtype" not in have and not mentions_precision:
                self.emit("param_dtype", V("fp32", "default", line, col,
                                           "no half-precision weights found in the script"),
                          tier="fallback")
            if "grad_accum" not in have and "grad_accum" not in self.pending and \
                    self.saw_optimizer_step and "micro_batch" in have:
                self.emit("grad_accum", V(1, "default", line, col,
                                          "no gradient accumulation found in the script"),
                          tier="fallback")
