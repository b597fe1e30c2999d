"""Model references: what a script builds or loads as the model it trains — a hub name
(`from_pretrained`), a config (`XConfig(...)`, `from_config`), a class of its own, a
torchvision builder — with the loading keywords (dtype, attention, 4 / 8-bit) and the input
shape it is called with, for the model-resolution stage."""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING, Any, Optional

from preflight.lang.python import SPLAT, ClassVal, Evaluator, Obj, V, plain, splat_fields, unk
from preflight.extract.py_patterns import alternatives
from preflight.lang.python.arms import exclusive
from preflight.extract.py_patterns.arguments import LIB_DATACLASSES
from preflight.extract.py_patterns.common import FROZEN, auxiliary, dtype_of, kind, last
from preflight.facts import spellings
from preflight.frameworks import NO_MATCH, Call, answers
from preflight.frameworks.peft import bnb
from preflight.models.vision import TORCHVISION_PARAMS as TORCHVISION_BUILDERS

if TYPE_CHECKING:
    from preflight.extract.py_patterns.collector import Patterns

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
            "safetensors", "huggingface_hub", "omegaconf", "hydra", "yaml", "einops",
            "unittest", "mock"}
#: assignment targets that hold something about a model, not the model
_NOT_A_MODEL = re.compile(r"token|loss|optim|data|args|arg\b|config|cfg|conf\b|path|dir|name|"
                          r"kwargs|params|parallel_dims|spec|type|class|cls|"
                          r"loader|dims|engine|plugin|mock|stub|factory|builder|registry|manager")
#: classes named for what they do with a model (load, wrap, shard, describe it), not a model
_NOT_A_MODEL_CLASS = re.compile(r"(Loader|Dims|Engine|Plugin|Mock|Stub|Factory|Builder|"
                                r"Registry|Manager)$")


#: calls that make a model's input tensor from its shape (batch first)
_INPUT_MAKERS = ("torch.randn", "torch.rand", "torch.zeros", "torch.ones", "torch.empty")
#: nn.Module methods that return the module itself
_SELF_METHODS = ("to", "cuda", "cpu", "train", "half", "bfloat16", "float", "double")


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


def on_class_call(pats: Patterns, ev: Evaluator, cls: ClassVal, args: list[V],
                  kwargs: dict[str, V], node: ast.Call) -> V:
    """An instance of a class the script defines: a config dataclass (its fields for
    model resolution) or, assigned to a model-looking name, the model."""
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
        given = {k: x for k, x in kwargs.items() if not k.startswith("\0")}
        fields = splat_fields(fields | {k: unk("", line, col) for k in cls.fields
                                        if k not in fields},
                              set(given) | set(list(cls.fields)[:len(args)]), kwargs, line, col) \
            if SPLAT in kwargs else fields
        fields.update(given)
        obj.kwargs = fields
        config_ref(pats, cls.name, fields, node)
    elif not _NOT_A_MODEL_CLASS.search(cls.name) and looks_like_model(pats, ev, node):
        class_ref(pats, cls.name, args, kwargs, node)
    return V(obj, "derived", line, col, f"instance of {cls.name}")


def looks_like_model(pats: Patterns, ev: Evaluator, node: ast.AST) -> bool:
    """Whether the call is assigned to a name of the trained model (`model = Net(...)`)."""
    st = ev.cur_stmt
    outer = getattr(st, "value", None)
    # `model = Net(...)` or a method chain on it: `model = Net(...).to(device)`
    while isinstance(outer, ast.Call) and outer is not node and \
            isinstance(outer.func, ast.Attribute):
        outer = outer.func.value
    if isinstance(st, ast.Return) and outer is node:
        # `def build(cfg): return Net(cfg)` called as `model = build(cfg)`
        return _returned_to_model(ev, None)
    if isinstance(st, (ast.Assign, ast.AnnAssign)) and outer is node:
        tg = st.targets if isinstance(st, ast.Assign) else [st.target]
        if _wraps_target(ev, st.value, {ev.src(t) for t in tg}):
            # `model = Plugin(...).shard_model(model)`, `model = wrap(model)`: the model
            # loaded before, wrapped; not a new one
            return False
        text = " ".join(ev.src(t) for t in tg).lower()
        if _NOT_A_MODEL.search(text) or FROZEN.search(text):
            # `model_args = ModelArgs()`, `tokenizer_model = …`, `ref_model = …`: not
            # the model being trained
            return False
        if _model_name(text):
            return True
        # `m = Net(cfg); return m` in a helper called as `model = build(cfg)`
        name = tg[0].id if len(tg) == 1 and isinstance(tg[0], ast.Name) else None
        return name is not None and _returned_to_model(ev, name)
    return False


def _model_name(text: str) -> bool:
    """Whether assignment targets name the trained model (`model`, `net`, `gpt`…), and
    not a config, tokenizer or frozen model (`model_args`, `tokenizer_model`, `ref_model`)."""
    if _NOT_A_MODEL.search(text) or FROZEN.search(text):
        return False
    return bool(re.search(r"model|\bnet\b|network|^gpt|transformer", text))


def _returned_to_model(ev: Evaluator, name: Optional[str]) -> bool:
    """Whether the function being run returns `name` (its `return` value itself when
    None) to a caller that assigns it to the trained model's name."""
    fr = ev.frames[-1] if ev.frames else None
    caller, fn = (fr.get("\0caller"), fr.get("\0def")) if fr is not None else (None, None)
    if not isinstance(caller, (ast.Assign, ast.AnnAssign)) or fn is None:
        return False
    if name is not None and not any(isinstance(r, ast.Return) and isinstance(r.value, ast.Name)
                                    and r.value.id == name for r in ast.walk(fn)):
        return False
    tg = caller.targets if isinstance(caller, ast.Assign) else [caller.target]
    value = caller.value
    while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute):
        value = value.func.value          # `model = build(cfg).to(device)`
    if not isinstance(value, ast.Call):
        return False
    return _model_name(" ".join(ev.src(t) for t in tg).lower())


def _wraps_target(ev: Evaluator, value: ast.AST, targets: set[str]) -> bool:
    """Whether a call of the assigned expression's chain takes the assignment's own target
    as an argument (`self.model = Sharder(name).shard_model(self.model, …)`)."""
    node = value
    while isinstance(node, ast.Call):
        for a in list(node.args) + [k.value for k in node.keywords]:
            if ev.src(a) in targets:
                return True
        node = node.func.value if isinstance(node.func, ast.Attribute) else node.func
    return False


def config_ref(pats: Patterns, cls: str, fields: dict, node: ast.AST) -> None:
    # the config describes the model for resolution; the `model` fact names the model
    # itself (the class built from this config), never the config class
    pats.model_refs.append({"kind": "config", "class": cls, "fields": plain(fields),
                            "source": pats.src(node)})
    for k in ("block_size", "max_seq_len", "seq_len", "context_length"):
        if k in fields and isinstance(fields[k], V) and fields[k].known:
            pats.emit("seq_len", fields[k], tier="config")


def class_ref(pats: Patterns, cls: str, args: list, kwargs: dict, node: ast.AST,
              qual: str = "") -> None:
    ref = {"kind": "class", "class": cls, "args": plain(args), "source": pats.src(node)}
    if qual and not qual.startswith("?") and "." in qual:
        ref["qual"] = qual          # the module it is imported from (its attention kernel)
    if kwargs:
        ref["kwargs"] = plain({k: v for k, v in kwargs.items() if not k.startswith("\0")})
    pats.model_refs.append(ref)
    # the model's own class, when no hub name or config names it better (the first
    # one: later ones are usually wrappers around it)
    if any(n == "model" for n, *_ in pats.facts):
        return
    # a class's name is no checkpoint id: derived, said so
    pats.emit("model", V(cls, "derived", node.lineno, node.col_offset + 1,
                         f"the class {cls} instantiated in the script (a class name, not a "
                         f"checkpoint)"), tier="fallback")


def model_input(pats: Patterns, cls: str, x: V) -> None:
    """`model(x)` with `x = torch.randn(batch, 3, 32, 32)` (or rand / zeros / ones /
    empty): the per-sample shape of the input of a model class of the script, which
    sizes the activations of a plain layer stack (models.forward)."""
    # `Net()(x)`, or after methods that return the model itself (`Net().to(dtype)`)
    head, *chain = cls.replace("()", "").split(".")
    if any(m not in _SELF_METHODS for m in chain):
        return
    ref = next((r for r in pats.model_refs if r.get("kind") == "class"
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


def hub_model(pats: Patterns, ev: Evaluator, qual: str, name_v: V, kwargs: dict,
              node: ast.Call) -> None:
    """A model loaded by name: its reference (the first one is the trained model) and,
    for that one, the `model` fact and its loading keywords."""
    line, col = node.lineno, node.col_offset + 1
    cls = last(qual.rsplit(".", 1)[0]) if qual.endswith("from_pretrained") else last(qual)
    kw = {k: plain(v) for k, v in kwargs.items() if not k.startswith("\0")
          and k in ("torch_dtype", "dtype", "attn_implementation", "load_in_4bit",
                    "load_in_8bit", "quantization_config", "trust_remote_code",
                    "use_flash_attention_2", "num_labels", "revision", "low_cpu_mem_usage",
                    "device_map", "config", "use_cache")}
    ref = {"kind": "hub", "name": plain(name_v), "class": cls, "source": pats.src(node),
           "kwargs": kw, "library": qual.lstrip("?").split(".", 1)[0]}
    if qual.endswith(".from_name"):
        # `Config.from_name(name)`: where the class is imported from, for a registry of
        # named models in the repository (resolve.named_configs)
        ref["qual"] = qual.lstrip("?")
    if name_v.known and name_v.origin != "literal":
        ref["origin"] = name_v.origin
    w = alternatives.where(ev)
    ref["choices"] = w.choices if w is not None else ()
    pats.model_refs.append(ref)
    # the first model loaded is the one trained; later loads (a reference or reward
    # model, a reload for merging or evaluation) are references only. A load in another
    # arm of an undecided `if` than an earlier one is the other arm's trained model: one
    # alternative of the `model` fact (`alternatives.settle`)
    first = not any(r["kind"] == "hub" and not r.get("auxiliary")
                    and not exclusive(r.get("choices", ()), ref["choices"])
                    for r in pats.model_refs[:-1])
    if first and _auxiliary_target(pats, ev):
        # `vae = AutoencoderKL.from_pretrained(...)` beside the network trained: not the model
        ref.update(role="secondary", auxiliary=True)
        return
    if not first:
        ref["role"] = "secondary"
        return
    if name_v.known and isinstance(name_v.value, str):
        pats.emit("model", name_v)
    elif not name_v.known:
        pats.emit("model", unk(name_v.reason or "model name not known statically",
                               line, col, name_v.default))
    elif name_v.value is None:
        # `ModelConfig.model_name_or_path` left at its None: the launch must give it
        why = name_v.reason or "a value that defaults to None"
        pats.emit("model", unk(f"the model name is None ({why}): the launch does not give it",
                               name_v.line or line, name_v.col or col))
    model_kwargs(pats, ev, kwargs, node, qual)


def _auxiliary_target(pats: Patterns, ev: Evaluator) -> bool:
    """Whether the statement being walked assigns a network kept beside the trained one."""
    st = ev.cur_stmt
    if not isinstance(st, (ast.Assign, ast.AnnAssign)):
        return False
    tg = st.targets if isinstance(st, ast.Assign) else [st.target]
    return any(auxiliary(ev.src(t)) for t in tg)


def model_kwargs(pats: Patterns, ev: Evaluator, kwargs: dict, node: ast.Call,
                 qual: str = "") -> None:
    """The loading keywords of the trained model: 4 / 8-bit, dtype, attention."""
    nq = len(pats.quant)
    for k, bits in (("load_in_4bit", "int4"), ("load_in_8bit", "int8")):
        v = kwargs.get(k)
        if v is not None and v.known and v.value is True:
            pats.emit("param_dtype", v, value=bits)
            pats.quant.append({"bits": 4 if bits == "int4" else 8})
    q = kwargs.get("quantization_config")
    if q is not None and q.known and isinstance(q.value, Obj):
        bnb(pats, q.value, q)
    quantized = len(pats.quant) > nq or any(
        f[0] == "param_dtype" and f[1].value in ("int4", "int8") for f in pats.facts)
    for k in ("torch_dtype", "dtype"):
        if quantized:
            break
        v = kwargs.get(k)
        if v is None:
            continue
        if v.known:
            x = kind(v)
            if x == "auto":
                pats.emit("param_dtype", unk("torch_dtype=\"auto\": the checkpoint's dtype",
                                             v.line, v.col))
            elif dtype_of(v):
                pats.emit("param_dtype", v, value=dtype_of(v))
        else:
            pats.emit("param_dtype", v)
    v = kwargs.get("attn_implementation")
    if v is not None:
        if v.known and isinstance(v.value, str) and spellings.attention(v.value):
            pats.emit("attention", v, value=spellings.attention(v.value))
        elif not v.known:
            pats.emit("attention", v)
    top = qual.lstrip("?").split(".", 1)[0]
    remote = kwargs.get("trust_remote_code")
    if (v is None or (v.known and v.value is None)) and remote is not None and \
            remote.known and remote.value is True:
        # the checkpoint's own modelling code (its config's auto_map) may be what runs, and
        # it picks its attention itself: transformers' default is not known to hold
        pats.emit("attention", unk("trust_remote_code: a checkpoint that ships its own "
                                   "modelling code picks its attention itself (transformers' "
                                   "sdpa default holds only for the library's own classes)",
                                   node.lineno, node.col_offset + 1), tier="fallback")
    elif (v is None or (v.known and v.value is None)) and \
            kwargs.get("use_flash_attention_2") is None and \
            top in ("transformers", "trl", "peft", ""):   # another library's loader: not this default
        pats.emit("attention", V("sdpa", "default", node.lineno, node.col_offset + 1,
                                 "transformers' default attn_implementation (sdpa where "
                                 "the model supports it)"), tier="fallback")
    if not any(k in kwargs and not (kwargs[k].known and kwargs[k].value is None)
               for k in ("torch_dtype", "dtype", "load_in_4bit", "load_in_8bit",
                         "quantization_config")) and \
            top not in ("transformers", "trl", "peft", ""):
        # transformers' own default depends on its version (4.x: float32; ≥ 5: the
        # checkpoint's dtype): model resolution reads the job's pin and the catalogue.
        # dtype=None is no dtype.
        pats.emit("param_dtype", V("fp32", "default", node.lineno, node.col_offset + 1,
                                   "from_pretrained without a dtype (or dtype=None) "
                                   "loads float32 weights"), tier="fallback")
    v = kwargs.get("use_flash_attention_2")
    if v is not None and v.known and v.value is True:
        pats.emit("attention", v, value="flash")


@answers(*TORCHVISION_BUILDERS)
def torchvision_call(pats: Patterns, ev: Evaluator, c: Call) -> Any:
    """A torchvision classification builder (`torchvision.models.resnet50()`)."""
    name, qual, recv = c.name, c.qual, c.recv
    line, col, kwargs, node = c.line, c.col, c.kwargs, c.node
    if recv in ("torchvision.models", "models") and qual.startswith("torchvision.models.") \
            and name[:1].islower() and name in TORCHVISION_BUILDERS:
        # a torchvision classification builder: the model (sized from its table)
        pats.seen_training_api = True
        pats.model_refs.append({"kind": "torchvision", "name": name,
                                "kwargs": {k: plain(v) for k, v in kwargs.items()
                                           if not k.startswith("\0")},
                                "source": pats.src(node)})
        if not any(n == "model" for n, *_ in pats.facts):
            pats.emit("model", V(f"torchvision.models.{name}", "literal", line, col))
        return None
    return NO_MATCH


@answers("from_pretrained")
def pretrained_call(pats: Patterns, ev: Evaluator, c: Call) -> Any:
    """`X.from_pretrained(name)`: a config, a tokenizer, a saved adapter or the model."""
    name, qual, recv, line = c.name, c.qual, c.recv, c.line
    col, args, kwargs, node = c.col, c.args, c.kwargs, c.node
    if name == "from_pretrained":
        owner = last(recv)
        if owner in ("AutoConfig",) or owner.endswith("Config") and owner not in NOT_MODEL_CONFIGS:
            nm = args[0] if args else kwargs.get("pretrained_model_name_or_path")
            pats.model_refs.append({"kind": "auto_config", "name": plain(nm) if nm else None,
                                    "class": owner, "source": pats.src(node),
                                    "overrides": plain({k: v for k, v in kwargs.items()
                                                        if not k.startswith("\0")})})
            o = Obj(qual, args, kwargs, line, col)
            if nm is not None:
                o.attrs["\0hub"] = nm
            pats.config_objs.append((o, pats.model_refs[-1]))
            return V(o, "derived", line, col, f"{owner}.from_pretrained(...)")
        if "Tokenizer" in owner:
            ml = kwargs.get("model_max_length")
            if ml is not None and ml.known and isinstance(ml.value, int):
                pats.emit("seq_len", ml, tier="tokenizer")
            return None
        if NOT_MODEL_PRETRAINED.search(owner) and not owner.startswith("AutoModel"):
            if owner.startswith("PeftModel") or owner.startswith("AutoPeftModel"):
                pats.emit("lora", unk("a saved PEFT adapter is loaded (settings in its "
                                      "adapter_config.json)", line, col))
            return None
        nm = args[0] if args else kwargs.get("pretrained_model_name_or_path")
        if nm is None:
            nm = unk("no model name given", line, col)
        pats.seen_training_api = True
        hub_model(pats, ev, qual, nm, kwargs, node)
        return None
    return NO_MATCH


#: libraries whose config classes are read by their own tables, never run
_CONFIG_LIBRARIES = frozenset({"transformers", "peft", "trl", "accelerate", "deepspeed",
                               "torch", "omegaconf", "hydra", "lightning", "diffusers"})


@answers("from_config", suffixes=("Config",))
def config_call(pats: Patterns, ev: Evaluator, c: Call) -> Any:
    """`Model.from_config(cfg)`; a model config built (`LlamaConfig(...)`)."""
    name, qual, recv, line = c.name, c.qual, c.recv, c.line
    col, args, kwargs, node = c.col, c.args, c.kwargs, c.node
    if name == "from_config":
        c = args[0] if args else kwargs.get("config")
        pats.seen_training_api = True
        if c is not None and c.known and isinstance(c.value, Obj):
            hub = c.value.attrs.get("\0hub")
            if hub is not None:
                pats.emit("model", hub if hub.known else unk(hub.reason or "", line, col))
            else:
                pats.emit("model", V(_model_class(last(recv), c.value.short), "literal",
                                     line, col, f"{last(recv)}.from_config({c.value.short}(...))"))
        model_kwargs(pats, ev, kwargs, node)
        return None
    if name.endswith("Config") and name not in NOT_MODEL_CONFIGS and name[:1].isupper():
        fields = {k: v for k, v in kwargs.items() if not k.startswith("\0")}
        if "\0unknown" in kwargs:
            fields["**"] = kwargs["\0unknown"]
        elif not qual.startswith("?") and qual.split(".", 1)[0] not in _CONFIG_LIBRARIES:
            # a config class of the repository whose `__init__` sets its fields
            # (`self.vocab_size = kwargs.get("vocab_size", 6400)`): what it sets for these
            # arguments, the arguments themselves winning
            for k, v in ev.init_attributes(qual, args, kwargs, line, col).items():
                if isinstance(v.value, (int, float, str, bool)) or v.value is None:
                    fields.setdefault(k, v)
        config_ref(pats, name, fields, node)
        return V(Obj(qual, args, fields, line, col), "derived", line, col, f"{name}(...)")
    return NO_MATCH


def class_call(pats: Patterns, ev: Evaluator, c: Call) -> None:
    """A model-looking class from a non-library module: handed to model resolution."""
    name, top, args, kwargs, node = c.name, c.top, c.args, c.kwargs, c.node
    # `Plugin(name)(model)` calls an object, not a class: its name is no identifier
    if name[:1].isupper() and name.isidentifier() and top not in LIB_TOPS and \
            not _NOT_A_MODEL_CLASS.search(name) and looks_like_model(pats, ev, node):
        class_ref(pats, name, args, kwargs, node, c.qual)
