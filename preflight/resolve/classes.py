"""Custom `nn.Module` classes resolved: the file that defines the class (one of the job's
scripts, else a Python file beside the reference or in the search directories), its
arguments as the script passes them (a config object, a transformers model built from a
config), its parameters counted statically (`models.modules`) and, without a transformer
shape, the layer stack its forward applies (`models.forward`)."""

from __future__ import annotations

import ast
import os
from typing import Any, Optional

from preflight import runcache, safe_read
from preflight.lazy import lazy
from preflight.models import formulas
from preflight.plan import Origin, Source
from preflight.resolve.values import (ALL_FIELD_NAMES, MISSING, Resolved, clean_fields, plain_value,
                                      shape_facts_from_fields)

model_forward = lazy("preflight.models.forward")
#: a Python file larger than this is not read for a class (or linked to one)
_MAX_SOURCE_BYTES = 2_000_000
python_extract = lazy("preflight.extract.python")


def _find_module(ref: dict, src: Optional[Source], modules: dict, search_dirs: list[str]):
    """The module (a `modules.Code`) that defines the class `ref` names: one of the job's
    files first, else a Python file beside the reference or in `search_dirs`."""
    # here: the nn.Module counter (a package) only when a class is counted
    from preflight.models.modules import Code, as_code
    cls = ref.get("class")
    cands: list[tuple[Optional[str], Any]] = []     # (its path, the module)
    if ref.get("module") is not None:
        cands.append((None, ref["module"]))
    if src is not None and src.path in (modules or {}):
        cands.append((src.path, modules[src.path]))
    cands.extend((p, m) for p, m in (modules or {}).items() if src is None or p != src.path)
    paths = _imported_from(ref, src)
    if src is not None and src.path:
        paths.append(src.path)
        d = os.path.dirname(src.path) or "."
        runcache.note_file(d)
        try:
            paths.extend(sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".py")))
        except OSError:
            pass
    for d in search_dirs or []:
        runcache.note_file(d)
        try:
            paths.extend(sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".py")))
        except OSError:
            pass
    for path, m in cands:
        try:
            m = as_code(m)
        except (TypeError, SyntaxError, ValueError):
            continue
        if _defines(m, cls):
            return m._replace(linked=_linked(path, m.tree)) if path else m
    seen = set()
    for p in paths:
        ap = os.path.abspath(p)
        if ap in seen or not os.path.isfile(p):
            continue
        seen.add(ap)
        try:
            if os.path.getsize(p) > _MAX_SOURCE_BYTES:
                continue
            text = safe_read.read_text(p)
            if f"class {cls}" not in text:
                continue
            m = Code(text, python_extract.parse(text))  # the tree the evaluator may have parsed
        except Exception:
            continue
        if _defines(m, cls):
            return m._replace(linked=_linked(p, m.tree))
    return None


#: folders above the referencing script where an absolute import's package may start (a
#: script in `scripts/` importing `nanochat.gpt` from the repository root)
_IMPORT_ROOTS_UP = 4


def _imported_from(ref: dict, src: Optional[Source]) -> list[str]:
    """The files the import of the class names (`from nanochat.gpt import GPT` →
    `nanochat/gpt.py`, or the package's `__init__.py`), looked for beside the script and in
    the folders above it (and their `src/`), as Python would find them from the repository
    root; a relative import (`from .model import GPT`) from the script's own folder."""
    qual = str(ref.get("qual") or "")
    if "." not in qual or src is None or not src.path:
        return []
    return _module_files(qual.rsplit(".", 1)[0], src.path)


def _module_files(modname: str, from_path: str) -> list[str]:
    """The files an import of `modname` written in `from_path` may name: the module or the
    package's `__init__.py`, from that file's folder up to the repository root."""
    level = len(modname) - len(modname.lstrip("."))
    parts = [p for p in modname.lstrip(".").split(".") if p]
    if not parts:
        return []
    here = os.path.dirname(os.path.abspath(from_path))
    if level:
        bases = [here]
        for _ in range(level - 1):
            bases = [os.path.dirname(bases[0])]
    else:
        bases, d = [], here
        for _ in range(_IMPORT_ROOTS_UP + 1):
            bases += [d, os.path.join(d, "src")]
            if os.path.isdir(os.path.join(d, ".git")):
                break           # the repository's root: imports never start above it
            d = os.path.dirname(d)
    out = []
    for b in bases:
        for cand in (os.path.join(b, *parts) + ".py", os.path.join(b, *parts, "__init__.py")):
            runcache.note_file(cand)
            if os.path.isfile(cand):
                out.append(os.path.relpath(cand) if not os.path.isabs(from_path) else cand)
    return out


#: modules of the repository linked to the one a class is counted in, at most, and how deep
#: their own imports are followed
_MAX_LINKED, _LINK_DEPTH = 12, 2


def _linked(path: Optional[str], tree: ast.Module) -> tuple:
    """The repository's modules `tree` (read from `path`) imports from, with theirs, as
    (path, text, tree): the classes a counted class derives from or builds
    (`from lingua.transformer import BaseTransformer`) are often in another file."""
    if not path:
        return ()
    out: list[tuple] = []
    seen = {os.path.abspath(path)}
    todo = [(path, tree, 0)]
    while todo and len(out) < _MAX_LINKED:
        p, t, depth = todo.pop(0)
        for st in t.body:
            if not isinstance(st, ast.ImportFrom) or len(out) >= _MAX_LINKED:
                continue
            modname = "." * st.level + (st.module or "")
            cands = _module_files(modname, p)
            if not cands and st.module is None and st.level:
                # `from . import layers`: the names are modules of the package
                cands = [c for a in st.names for c in _module_files("." * st.level + a.name, p)]
            for cand in cands[:1]:
                ap = os.path.abspath(cand)
                if ap in seen:
                    continue
                seen.add(ap)
                try:
                    if os.path.getsize(cand) > _MAX_SOURCE_BYTES:
                        continue
                    text = safe_read.read_text(cand)
                    sub = python_extract.parse(text)
                except Exception:  # noqa: BLE001 - a module that does not read is not linked
                    continue
                out.append((cand, text, sub))
                if depth + 1 < _LINK_DEPTH:
                    todo.append((cand, sub, depth + 1))
    return tuple(out)


def _defines(module: Any, cls: str) -> bool:
    return any(isinstance(s, ast.ClassDef) and s.name == cls for s in module.tree.body)


def _hf_module_arg(pa: dict) -> Any:
    """`RobertaModel(RobertaConfig.from_dict({...}))` passed into a custom class: the
    transformers model as a counted module (its input embedding reachable as
    `embeddings.word_embeddings.weight` / `embed_tokens.weight` for a tied head)."""
    # here: the nn.Module counter (a package) only when a class is counted
    from preflight.models.modules import Mod, Param
    name = str(pa.get("call") or "").rsplit(".", 1)[-1]
    head = formulas.head_of_class(name)
    if head is None or name.startswith("Auto"):
        return None
    cfg = None
    for a in list(pa.get("args") or []) + [(pa.get("kwargs") or {}).get("config")]:
        if isinstance(a, dict) and "call" in a:
            kw = a.get("kwargs") if isinstance(a.get("kwargs"), dict) and a.get("kwargs") else None
            a0 = (a.get("args") or [None])[0]
            cfg = kw or (a0 if isinstance(a0, dict) and "call" not in a0 else None)
            if cfg:
                break
    if not cfg:
        return None
    cfg, missing = clean_fields(cfg)
    arch = formulas.normalise_arch(str(cfg.get("model_type") or ""))
    if arch is None or missing and set(missing) & ALL_FIELD_NAMES:
        return None
    try:
        shape = formulas.count(arch, cfg, head=head)
    except Exception:  # noqa: BLE001 - no formula: the class stays unknown
        return None
    emb = shape.vocab * shape.hidden
    w = Param(emb, (shape.vocab, shape.hidden))
    word = Mod(kind="Embedding", params={"weight": w})
    return Mod(kind=name, params={"_rest": Param(shape.params - emb)},
               children={"embeddings": Mod(kind="Embeddings", children={"word_embeddings": word}),
                         "embed_tokens": word})


def _bind_init(module: Any, cls: str, args: list, kwargs: dict) -> dict:
    """Known int arguments of `cls(*args, **kwargs)` by its __init__ parameter names."""
    out: dict = {}
    for s in module.tree.body:
        if not (isinstance(s, ast.ClassDef) and s.name == cls):
            continue
        for st in s.body:
            if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)) and st.name == "__init__":
                names = [p.arg for p in st.args.args][1:]
                for n, a in zip(names, args):
                    v = plain_value(a)
                    if isinstance(v, int) and not isinstance(v, bool):
                        out[n] = v
                for k, a in kwargs.items():
                    v = plain_value(a)
                    if isinstance(v, int) and not isinstance(v, bool):
                        out[str(k)] = v
                return out
    return out


def _undecided(cls: str, ref: dict, alternatives: list[dict]) -> Optional[str]:
    """Why the config a class is built from cannot be told: an argument is not known and
    the script builds configs of different shapes before it (`GPT({"small": Cfg(...),
    "large": Cfg(...)}[args.size])` with a size the launch does not give). None when
    nothing is undecided."""
    passed = list(ref.get("args") or []) + list((ref.get("kwargs") or {}).values())
    if not any(plain_value(a) is MISSING for a in passed):
        return None
    shapes: list[dict] = []
    for fields in alternatives:
        sf = shape_facts_from_fields(clean_fields(fields)[0])
        if sf and sf not in shapes:
            shapes.append(sf)
    if len(shapes) < 2:
        return None
    alts = "; ".join(", ".join(f"{k} {v}" for k, v in sf.items() if k != "kv_heads")
                     for sf in shapes[:6])
    return (f"{cls} is built from one of {len(shapes)} configs the script makes, and which "
            f"one is not known statically: {alts}")


def resolve_class(ref: dict, src: Optional[Source], config_fields: Optional[dict],
                  modules: dict, search_dirs: list[str],
                  alternatives: Optional[list[dict]] = None) -> Resolved:
    """A class of the repository sized from its source. `config_fields` are the fields of
    the last model config the script built; a config object passed as an argument wins over
    them, and `alternatives` (the configs built since the previous class) make the size
    unknown when the argument that picks one is not known."""
    cls = ref.get("class") or "?"
    res = Resolved(ref=ref, origin=Origin.DERIVED, source=src, name=cls)
    why = _undecided(cls, ref, alternatives or [])
    if why is not None:
        res.unknown = why
        return res
    module = _find_module(ref, src, modules, search_dirs)
    fields = dict(config_fields or {})
    passed_config = False
    res.shape_facts = shape_facts_from_fields(fields)
    if module is None:
        res.unknown = f"class {cls} is not defined in the analysed files"
        return res
    # here: the nn.Module counter (a package) only when a class is counted
    from preflight.models.modules import CONFIG, Unknown as _Unknown

    def arg(a: Any) -> Any:
        nonlocal fields, passed_config
        pa = plain_value(a)
        if pa is MISSING:
            return _Unknown("argument not known statically")
        if isinstance(pa, dict) and "call" in pa:      # an object the script built
            kw = pa.get("kwargs") if isinstance(pa.get("kwargs"), dict) else {}
            pargs = pa.get("args")
            a0 = pargs[0] if isinstance(pargs, (list, tuple)) and pargs else None
            if not kw and isinstance(a0, dict) and "call" not in a0 and \
                    str(pa["call"]).endswith(("from_dict", "Config")):
                kw = a0          # RobertaConfig.from_dict({...}), SomeConfig({...})
            if kw and not passed_config or not fields:
                # the config object passed is the one the model is built from (not the last
                # one the script made); a field passed but not known stays unknown: the
                # config class's default is not what the script passes
                passed_config = passed_config or bool(kw)
                fields = {k: (v if plain_value(v) is not MISSING else
                              _Unknown(f"{k} is not known statically"))
                          for k, v in kw.items()}
            built = _hf_module_arg(pa)
            if built is not None:      # a transformers model built from a config: counted
                return built
            return CONFIG
        if isinstance(pa, dict) and pa and all(isinstance(k, str) for k in pa) and \
                not passed_config:
            # a section of a composed configuration (`LMTransformer(args.model)` of an
            # OmegaConf config): read as the config object the class is built from
            passed_config = True
            fields = {k: (v if plain_value(v) is not MISSING else
                          _Unknown(f"{k} is not known statically"))
                      for k, v in pa.items()}
            return CONFIG
        return pa

    args = [arg(a) for a in ref.get("args") or []]
    kwargs = {str(k): arg(v) for k, v in (ref.get("kwargs") or {}).items()}
    res.shape_facts = shape_facts_from_fields(fields)
    # `TransformerModel(ntoken, ninp, nhead, nhid, nlayers)`: the sizes by the names of
    # the class's own __init__ parameters (at least two of them, as for a config); beside a
    # config object, the ones it does not say (`Wrapper(num_tokens=256, layers=Cfg(...))`)
    bound = _bind_init(module, cls, ref.get("args") or [], ref.get("kwargs") or {})
    sf = shape_facts_from_fields(bound)
    if not res.shape_facts:
        if len(set(sf) - {"kv_heads"}) >= 2:
            res.shape_facts = sf
    else:
        for k, v in sf.items():
            res.shape_facts.setdefault(k, v)
    built = None
    if isinstance(ref.get("expr"), str) and ref["expr"].strip():
        # here: the nn.Module counter (a package) only when a class is counted
        from preflight.models.modules import count_expression
        n, pieces = count_expression(module, ref["expr"], fields)
    else:
        # here: the nn.Module counter (a package) only when a class is counted
        from preflight.models.modules import build_modules
        n, pieces, built = build_modules(module, cls, fields, args=args or None,
                                         kwargs=kwargs or None)
    _own_attributes(res, built)
    if n is None:
        res.unknown = f"cannot size {cls} statically: " + "; ".join(pieces[:5])
        return res
    if n == 0:
        # a wrapper whose layers come in as arguments, or layers built where preflight does
        # not see: a model has parameters, so this count is not its size
        res.unknown = (f"{cls}: no parameters found in its source (its layers come from "
                       f"arguments or code preflight does not follow)")
        return res
    res.params = n
    res.reason = f"{cls}: counted from its source (nn.Module layers)" + \
        (f"; {res.reason}" if res.reason else "")
    if built is not None and not res.shape_facts:
        # no transformer shape: the layers as its forward applies them size the activations
        res.stack = _layer_stack(cls, built, ref.get("input_shape"))
    if fields:
        res.reason += " with " + ", ".join(f"{k}={v}" for k, v in sorted(fields.items())
                                           if isinstance(v, (int, bool)))
    return res


def _own_attributes(res: Resolved, built: Optional[tuple]) -> None:
    """A shape fact the class's `__init__` sets on itself from its argument overrides the
    argument: `self.vocab_size = next_multiple_of_n(vocab_size, n=128)` pads the vocabulary
    the embedding is built with."""
    if built is None or not res.shape_facts:
        return
    own = shape_facts_from_fields(built[0].attrs)
    changed = {k: v for k, v in own.items() if k in res.shape_facts and res.shape_facts[k] != v
               and k != "kv_heads"}
    for k, v in changed.items():
        was, res.shape_facts[k] = res.shape_facts[k], v
        res.reason = (res.reason + "; " if res.reason else "") + \
            f"{k} {was} → {v}: as {res.name}.__init__ sets it on itself"


def _layer_stack(cls: str, built: tuple, input_shape: Any) -> Any:
    """The `layer_stack` value of a custom module, or the reason (a str) it is unknown."""
    from dataclasses import asdict

    if not isinstance(input_shape, list) or not input_shape:
        return (f"{cls}: the shape of the tensor the script gives the model is not known "
                f"(e.g. x = torch.randn(batch_size, 3, 32, 32); model(x))")
    root, classes = built
    ops, why = model_forward.read_forward(root, classes, tuple(input_shape))
    if ops is None:
        return f"{cls}: its forward cannot be followed: {why}"
    shapes = model_forward.param_shapes(root)
    return {"class": cls, "input_shape": list(input_shape),
            "param_shapes": [list(s) for s in shapes] if shapes is not None else None,
            "ops": [{**asdict(o), "saved": [list(s) for s in o.saved],
                     "per_batch": [list(s) for s in o.per_batch]} for o in ops]}
