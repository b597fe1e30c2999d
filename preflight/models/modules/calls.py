"""How the counter evaluates a call: `super().__init__`, the module's own classes and
functions, methods of lists, dicts and modules (`append`, `add_module`,
`register_parameter` …), `torch.nn` layers and `nn.Parameter`, torch's tensor
constructors, builtins and `math`, and transformers models and configs sized from the
catalogue with the parameter formulas."""

from __future__ import annotations

import ast
import math
import re
from typing import Any

from preflight.lang import bounded
from preflight.models import catalog, formulas
from preflight.models.modules.layers import (LAYER_BUILD, LAYER_NEEDS, LAYER_SIGS, NO_PARAM_LAYERS,
                                             TENSOR_CTORS, bind_sig, sig_names)
from preflight.models.modules.library_layers import library_layer
from preflight.models.modules.python_builtins import BUILTINS, check_builtin_args
from preflight.models.modules.values import (MAX_DEPTH, Abort, Bound, Builtin, ClassRef, ConfigObj,
                                             Mod, Param, Tensor, Unknown, deepcopy_value,
                                             merge_into, shape_of, shape_prod)


#: external base classes whose __init__ makes no parameters
_PARAM_FREE_BASE = re.compile(r"(PreTrainedModel|Module|Mixin|Base|ABC|object|Generic|Protocol|"
                              r"Config|PretrainedConfig|HubMixin)$")


class CallsMixin:
    """Calls, library models and `torch.nn` layers (`_Evaluator`'s part)."""

    # ----------------------------------------------------------------- calls
    def _call_args(self, node: ast.Call, env: dict) -> tuple[list, dict]:
        args: list = []
        kwargs: dict = {}
        for a in node.args:
            if isinstance(a, ast.Starred):
                items = self._iterate(self._eval(a.value, env), a)
                if items is None:
                    args.append(Unknown("*args not known"))
                else:
                    args.extend(items)
            else:
                args.append(self._eval(a, env))
        for k in node.keywords:
            v = self._eval(k.value, env)
            if k.arg is not None:
                kwargs[k.arg] = v
            elif isinstance(v, dict):
                kwargs.update(v)
            elif isinstance(v, ConfigObj):
                kwargs.update({**v.defaults, **v.fields})
        return args, kwargs

    def _call(self, node: ast.Call, env: dict) -> Any:
        # super().__init__(...)
        f = node.func
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Call) and \
                isinstance(f.value.func, ast.Name) and f.value.func.id == "super":
            if f.attr == "__init__":
                args, kwargs = self._call_args(node, env)
                self._super_init(env, args, kwargs, node)
            return None
        callee = self._eval(f, env)
        args, kwargs = self._call_args(node, env)
        if isinstance(callee, ClassRef):
            if self._is_module_class(callee.node):
                return self.instantiate(callee, args, kwargs, node)
            # a config dataclass: its fields over its defaults
            fields = dict(self._class_attrs(callee.node))
            init = self._method(callee.node, "__init__")
            if init is None:
                names = [s.target.id for s in callee.node.body
                         if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)]
                fields.update(dict(zip(names, args)))
            fields.update(kwargs)
            return ConfigObj(fields, self.defaults)
        if isinstance(callee, tuple) and callee and callee[0] == "func":
            self.depth += 1
            try:
                if self.depth > MAX_DEPTH:
                    raise Abort("recursion too deep")
                return self._call_function(callee[1], args, kwargs)
            finally:
                self.depth -= 1
        if isinstance(callee, Bound):
            return self._call_bound(callee, args, kwargs, node, env)
        if isinstance(callee, Builtin):
            return self._call_builtin(callee.name, args, kwargs, node)
        if isinstance(callee, Unknown):
            return Unknown(f"{self.code(f)} is not defined in this file")
        return Unknown("call not modelled")

    def _super_init(self, env: dict, args: list, kwargs: dict, node: ast.AST) -> None:
        owner = env.get("__class__")
        obj = env.get("__self__")
        if owner is None or obj is None:
            return
        for b in owner.bases:
            full = self._full(b)
            base = full.split(".")[-1]
            if base in self.classes:
                self._run_init(self.classes[base], obj, args, kwargs, node)
                return
            if full.startswith("torch.nn.") and base != "Module":
                merge_into(obj, self._builtin_layer(base, args, kwargs, node))
                return
            built = library_layer(base, args, kwargs)
            if built is not None:
                merge_into(obj, built)
                return
            if base and not full.startswith("torch.") and not _PARAM_FREE_BASE.search(base):
                # a library layer (transformers' RobertaLMHead …) builds weights preflight
                # does not see: the count cannot be complete
                msg = f"{base}.__init__ (a class from outside the analysed files) builds layers"
                self.note(node, msg)
                obj.params[f"<{base}>"] = Param(Unknown(msg))
                return

    def _call_bound(self, b: Bound, args: list, kwargs: dict, node: ast.AST,
                    env: dict) -> Any:
        obj, name = b.obj, b.name
        if isinstance(obj, list):
            if name == "append":
                obj.append(args[0] if args else None)
            elif name == "extend":
                items = self._iterate(args[0], node) if args else []
                if items is None:
                    obj.append(Unknown("extend with unknown"))
                else:
                    obj.extend(items)
            elif name == "insert" and len(args) == 2:
                obj.insert(args[0], args[1])
            elif name == "copy":
                return list(obj)
            return None
        if isinstance(obj, dict):
            if name == "items":
                return list(obj.items())
            if name == "keys":
                return list(obj.keys())
            if name == "values":
                return list(obj.values())
            if name == "get":
                return obj.get(args[0], args[1] if len(args) > 1 else None)
            if name == "update" and args and isinstance(args[0], dict):
                obj.update(args[0])
            return None
        if isinstance(obj, Mod):
            if name in ("register_buffer", "apply", "to", "train", "eval", "init_weights",
                        "requires_grad_", "reset_parameters", "_init_weights", "post_init",
                        "tie_weights", "half", "float", "bfloat16", "cuda", "cpu"):
                cls = self.classes.get(obj.kind)
                if name in ("init_weights", "_init_weights", "tie_weights", "post_init") \
                        and cls is not None and self._method(cls, name):
                    owner, fn = self._method(cls, name)
                    return self._call_function(fn, args, kwargs, self_obj=obj, owner=owner)
                return obj if name in ("to", "train", "eval", "half", "float", "bfloat16",
                                       "cuda", "cpu", "requires_grad_") else None
            if name == "register_parameter" and len(args) == 2:
                if isinstance(args[1], Param):
                    obj.params[str(args[0])] = args[1]
                return None
            if name == "add_module" and len(args) == 2:
                if isinstance(args[1], Mod):
                    obj.children[str(args[0])] = args[1]
                return None
            if name in ("append", "extend") and obj.kind in ("ModuleList", "Sequential"):
                items = [args[0]] if name == "append" else (self._iterate(args[0], node) or [])
                for it in items:
                    if isinstance(it, Mod):
                        obj.children[str(len(obj.children))] = it
                return None
            if name in ("parameters", "modules", "children", "named_parameters",
                        "named_modules", "numel", "size", "forward", "state_dict"):
                return Unknown(f"{name}() at init")
            cls = self.classes.get(obj.kind)
            if cls is not None:
                found = self._method(cls, name)
                if found:
                    owner, fn = found
                    self.depth += 1
                    try:
                        if self.depth > MAX_DEPTH:
                            raise Abort("recursion too deep")
                        return self._call_function(fn, args, kwargs, self_obj=obj, owner=owner)
                    finally:
                        self.depth -= 1
            return Unknown(f"method {name}")
        if isinstance(obj, Param):
            return obj if name in ("data", "to", "clone", "detach") else None
        if isinstance(obj, ClassRef):
            return Unknown(f"{obj.name}.{name}()")
        return Unknown(f"method {name}")

    def _call_builtin(self, name: str, args: list, kwargs: dict, node: ast.AST) -> Any:
        short = name.split(".")[-1]
        if name.startswith("torch.nn.") and not name.startswith("torch.nn.functional") and \
                not name.startswith("torch.nn.init") and not name.startswith("torch.nn.utils"):
            if short == "Parameter":
                t = args[0] if args else kwargs.get("data")
                if isinstance(t, Tensor):
                    return Param(shape_prod(t.shape), t.shape)
                if isinstance(t, Param):
                    return Param(t.numel, t.shape)
                self.note(node, f"nn.Parameter of an unknown tensor: "
                                f"{self.code(node)}")
                return Param(Unknown("nn.Parameter of unknown tensor"))
            return self._builtin_layer(short, args, kwargs, node)
        if name.startswith("torch.") and short in TENSOR_CTORS:
            if short in ("tensor",):
                v = args[0] if args else None
                return Tensor((len(v),)) if isinstance(v, (list, tuple)) else Tensor(())
            if short == "arange":
                if args and all(isinstance(a, int) for a in args[:3]):
                    return Tensor((len(range(*args[:3])),))
                return Tensor((Unknown("arange"),))
            if short == "full":
                return Tensor(shape_of(args[:1]))
            if short == "eye":
                n = args[0] if args else Unknown("eye")
                m = args[1] if len(args) > 1 else n
                return Tensor((n, m))
            shape = shape_of(args) if args else tuple(kwargs.get("size") or ())
            return Tensor(shape)
        if name.startswith("torch.") and short in ("zeros_like", "ones_like", "randn_like",
                                                   "empty_like"):
            src = args[0] if args else None
            if isinstance(src, (Tensor, Param)):
                return Tensor(src.shape)
            return Tensor((Unknown("like"),))
        if name.startswith("transformers.") or name.split(".")[0] in ("transformers",):
            return self._hf_model(name, args, kwargs, node)
        if short == "OrderedDict":
            src = args[0] if args else []
            try:
                return dict(src)
            except Exception:
                return Unknown("OrderedDict of unknown items")
        if name.startswith("copy.deepcopy") or name == "deepcopy" or name.endswith(".deepcopy"):
            return deepcopy_value(args[0]) if args else None
        if short in BUILTINS and "." not in name:
            try:
                check_builtin_args(short, args)
                return bounded.check_size(BUILTINS[short](*args, **kwargs))
            except bounded.TooLarge as e:
                return Unknown(f"{short}() not computed: {e}")
            except Exception:
                return Unknown(f"{short}() of unknown values")
        if name.startswith("math."):
            fn = getattr(math, short, None)
            if fn is not None and not any(isinstance(a, Unknown) for a in args):
                try:
                    check_builtin_args(short, args)
                    return bounded.check_size(fn(*args))
                except bounded.TooLarge as e:
                    return Unknown(f"math.{short}() not computed: {e}")
                except Exception:
                    pass
            return Unknown(f"math.{short}")
        return Unknown(f"{name} is not defined in this file")

    def _hf_model(self, name: str, args: list, kwargs: dict, node: ast.AST) -> Any:
        short = name.split(".")[-1]
        cls = name.split(".")[-2] if short == "from_pretrained" else short
        shape = None
        if cls.endswith("Config"):
            fields: dict = {}
            if short == "from_pretrained" and args and isinstance(args[0], str):
                hit = catalog.lookup(args[0])
                if hit is None:
                    return Unknown(f"config {args[0]!r} is not in the catalogue")
                fields = dict(hit[1])
            fields.update({k: v for k, v in kwargs.items() if not isinstance(v, Unknown)})
            return ConfigObj(fields, {})
        try:
            if short == "from_pretrained" and args and isinstance(args[0], str):
                hit = catalog.lookup(args[0])
                if hit:
                    shape = formulas.count(hit[0], hit[1], head=formulas.head_of_class(cls))
            elif args and isinstance(args[0], (ConfigObj, dict)):
                cfg = args[0].fields if isinstance(args[0], ConfigObj) else args[0]
                prefix = cls.lower()
                arch = next((a for c, a in formulas.CONFIG_CLASSES.items()
                             if prefix.startswith(c[:-len("Config")].lower())), None)
                if arch:
                    shape = formulas.count(arch, cfg, head=formulas.head_of_class(cls))
        except Exception:
            shape = None
        if shape is None:
            if cls.endswith("Config") or cls.endswith("Tokenizer"):
                return Unknown(cls)
            self.note(node, f"{self.code(node)} is not sized")
            return Mod(kind=cls, params={"_all": Param(Unknown(cls))})
        # expose the input embedding so that tying to it (`x.weight = enc.embeddings.
        # word_embeddings.weight`) shares one parameter
        emb = Param(shape.vocab * shape.hidden, (shape.vocab, shape.hidden))
        out = Mod(kind=cls, params={"_rest": Param(shape.params - emb.numel)})
        leaf = Mod(kind="Embedding", params={"weight": emb})
        if shape.family == "bert":
            out.children["embeddings"] = Mod(kind="Embeddings",
                                             children={"word_embeddings": leaf})
        elif shape.family == "gpt2":
            out.children["wte"] = leaf
        elif shape.family == "t5":
            out.children["shared"] = leaf
        else:
            out.children["embed_tokens"] = leaf
        return out

    # ----------------------------------------------------------------- torch.nn layers
    def _builtin_layer(self, name: str, args: list, kwargs: dict, node: ast.AST) -> Mod:
        code = self.code(node) if isinstance(node, ast.AST) else name
        sig = LAYER_SIGS.get(name)
        m = Mod(kind=name)
        if name not in ("ModuleList", "Sequential", "ModuleDict", "ParameterList",
                        "ParameterDict"):
            # the layer's arguments as written, for the forward's shapes (models.forward)
            m.attrs["call"] = (list(args), dict(kwargs))
        if name in NO_PARAM_LAYERS:
            return m
        if name in ("ModuleList", "Sequential", "ModuleDict", "ParameterList", "ParameterDict"):
            items: Any
            if name == "Sequential":
                items = args
                if len(args) == 1 and isinstance(args[0], dict):
                    items = args[0]
            else:
                items = args[0] if args else kwargs.get("modules", kwargs.get("values", []))
            if isinstance(items, dict):
                pairs = list(items.items())
            elif isinstance(items, (list, tuple)):
                pairs = [(str(i), v) for i, v in enumerate(items)]
            else:
                self.note(node, f"{name} of unknown contents: {code}")
                m.unknown.append(code)
                m.params["_unknown"] = Param(Unknown(name))
                return m
            for k, v in pairs:
                if isinstance(v, Mod):
                    m.children[str(k)] = v
                elif isinstance(v, Param):
                    m.params[str(k)] = v
                elif isinstance(v, Unknown):
                    self.note(node, f"{name} entry not known ({v.reason}): {code}")
                    m.unknown.append(code)
                    m.params[f"_unknown{k}"] = Param(Unknown(name))
            return m
        if sig is None:
            self.note(node, f"nn.{name} is not modelled: {code}")
            m.unknown.append(code)
            m.params["_unknown"] = Param(Unknown(name))
            return m
        a = bind_sig(sig, args, kwargs)
        missing = [k for k, v in a.items() if isinstance(v, Unknown)]
        needed = LAYER_NEEDS.get(name, set(sig_names(sig)))
        bad = [k for k in missing if k in needed]
        if bad:
            reasons = "; ".join(a[k].reason for k in bad)
            self.note(node, f"nn.{name} with unknown {', '.join(bad)} ({reasons}): {code}")
            m.params["_unknown"] = Param(Unknown(name))
            return m
        negative = [k for k in needed if _negative(a.get(k))]
        if negative:
            # a sentinel (`vocab_size: int = -1`, set later from the tokenizer) that
            # torch would refuse: the size the layer is built with is not this one
            self.note(node, f"nn.{name} with {', '.join(f'{k}={a[k]}' for k in negative)} "
                            f"(a size below zero: set elsewhere before the model is built): "
                            f"{code}")
            m.params["_unknown"] = Param(Unknown(name))
            return m
        try:
            LAYER_BUILD[name](m, a)
        except Exception as e:
            self.note(node, f"nn.{name} arguments not understood ({e}): {code}")
            m.params["_unknown"] = Param(Unknown(name))
        return m


def _negative(v: Any) -> bool:
    if isinstance(v, (list, tuple)):
        return any(_negative(x) for x in v)
    return isinstance(v, int) and not isinstance(v, bool) and v < 0
