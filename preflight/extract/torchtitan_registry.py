"""torchtitan jobs chosen by name: `torchrun … -m torchtitan.train --module llama3 --config
llama3_70b` runs the function `llama3_70b` of `torchtitan/models/llama3/config_registry.py`,
which returns a nested `Trainer.Config(...)` call. That call is read with `ast` (nothing is
imported); fields it leaves out take the dataclass defaults of `torchtitan/config/configs.py`,
read the same way.
"""

from __future__ import annotations

import ast
import operator
import os
from typing import Any, Optional

from preflight import safe_read
from preflight.plan import Fact, Origin, Source

_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
        ast.FloorDiv: operator.floordiv, ast.Pow: operator.pow}
_MISSING = object()


def _num(n: ast.AST) -> Any:
    if isinstance(n, ast.Constant):
        return n.value
    if isinstance(n, ast.BinOp) and type(n.op) in _OPS:
        a, b = _num(n.left), _num(n.right)
        if isinstance(a, int) and isinstance(b, int):
            return _OPS[type(n.op)](a, b)
    if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub):
        v = _num(n.operand)
        return -v if isinstance(v, int) else _MISSING
    return _MISSING


def _name(n: ast.AST) -> str:
    if isinstance(n, ast.Call):
        return _name(n.func)
    if isinstance(n, ast.Attribute):
        return _name(n.value) + "." + n.attr
    if isinstance(n, ast.Name):
        return n.id
    return ""


def _parse(path: str) -> Optional[ast.Module]:
    try:
        return ast.parse(safe_read.read_text(path, 2 * 1024 * 1024, truncate=True))
    except (OSError, SyntaxError, ValueError, RecursionError):
        return None


def dataclass_defaults(path: str, classes: tuple[str, ...]) -> dict[str, tuple[Any, int, int]]:
    """field → (default, line, col) for the named dataclasses of a file."""
    tree = _parse(path)
    out: dict[str, tuple[Any, int, int]] = {}
    if tree is None:
        return out
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name in classes:
            for st in node.body:
                if isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name) and st.value is not None:
                    v = _num(st.value)
                    if v is not _MISSING:
                        out.setdefault(st.target.id, (v, st.lineno, st.col_offset + 1))
    return out


def find_registry(root: str, module: str) -> Optional[str]:
    for sub in ("models", "experiments"):
        p = os.path.join(root, "torchtitan", sub, module, "config_registry.py")
        if os.path.isfile(p):
            return p
    return None


def registry_facts(root: str, module: str, config: str, display_root: str = ""
                   ) -> tuple[list[tuple[str, Fact]], dict[str, Any], list[str]]:
    """Facts of one registry entry; (facts, extras, files read)."""
    reg = find_registry(root, module)
    if reg is None:
        return [], {}, []
    tree = _parse(reg)
    fn = next((n for n in (tree.body if tree else []) if isinstance(n, ast.FunctionDef) and n.name == config), None)
    rel = os.path.relpath(reg) if os.path.abspath(reg).startswith(os.getcwd() + os.sep) else reg
    if fn is None:
        return [(
            "model", Fact.unknown(f"--config {config}: no function {config}() in {rel}",
                                  source=Source(path=rel, line=1, col=1)))], {}, [rel]
    local: dict[str, ast.AST] = {}
    ret: Optional[ast.Call] = None
    for st in ast.walk(fn):
        if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name):
            local[st.targets[0].id] = st.value
        if isinstance(st, ast.Return) and isinstance(st.value, ast.Call):
            ret = st.value
    if ret is None:
        return [], {}, [rel]
    kws: dict[tuple, ast.keyword] = {}

    def walk(call: ast.Call, path: tuple) -> None:
        for kw in call.keywords:
            if kw.arg is None:
                continue
            kws[path + (kw.arg,)] = kw
            v = kw.value
            if isinstance(v, ast.Name) and v.id in local:
                v = local[v.id]
            if isinstance(v, ast.Call):
                walk(v, path + (kw.arg,))

    walk(ret, ())

    def src(node: ast.AST) -> Source:
        return Source(path=rel, line=node.lineno, col=node.col_offset + 1)

    cfg_py = os.path.join(root, "torchtitan", "config", "configs.py")
    defaults = dataclass_defaults(cfg_py, ("TrainingConfig", "ParallelismConfig"))
    cfg_rel = os.path.relpath(cfg_py) if os.path.abspath(cfg_py).startswith(os.getcwd() + os.sep) else cfg_py

    def get(section: str, field: str) -> tuple[Any, Origin, Optional[Source], str]:
        kw = kws.get((section, field))
        if kw is not None:
            v = _num(kw.value)
            if v is not _MISSING:
                return v, Origin.CONFIG, src(kw), f"{config}(): {section}.{field} = {v!r}"
            return _MISSING, Origin.UNKNOWN, src(kw), f"{section}.{field} is not a constant"
        if field in defaults:
            v, line, col = defaults[field]
            return v, Origin.DEFAULT, Source(path=cfg_rel, line=line, col=col), f"torchtitan default {field} = {v!r}"
        return _MISSING, Origin.UNKNOWN, None, f"{field} not found"

    facts: list[tuple[str, Fact]] = []

    def put(name: str, value: Any, origin: Origin, source: Optional[Source], why: str) -> None:
        if value is _MISSING or origin is Origin.UNKNOWN:
            facts.append((name, Fact.unknown(why, source=source)))
        else:
            facts.append((name, Fact(value=value, origin=origin, source=source, reason=why)))

    seq, so, ss, sw = get("training", "max_context_length")
    if seq is _MISSING:
        seq, so, ss, sw = get("training", "seq_len")
    put("seq_len", seq, so, ss, sw)
    tok, to, ts, tw = get("training", "num_tokens_per_microbatch_per_dp_rank")
    lb = kws.get(("training", "local_batch_size"))
    if lb is not None and isinstance(_num(lb.value), int):
        put("micro_batch", _num(lb.value), Origin.CONFIG, src(lb), f"{config}(): training.local_batch_size")
    elif isinstance(tok, int) and isinstance(seq, int) and seq > 0 and tok % seq == 0:
        put("micro_batch", tok // seq, Origin.DERIVED if to is Origin.CONFIG else Origin.DEFAULT, ts,
            f"num_tokens_per_microbatch_per_dp_rank {tok} / max_context_length {seq}")
    step, sto, sts, _ = get("training", "num_tokens_per_train_step")
    if step == -1:
        put("grad_accum", 1, Origin.DEFAULT, sts, "num_tokens_per_train_step = -1: one microbatch per step "
                                                   "and data-parallel rank")
    for field, name in (("tensor_parallel_degree", "tp"), ("pipeline_parallel_degree", "pp")):
        v, o, s, w = get("parallelism", field)
        put(name, v, o, s, w)
    shard, o1, s1, w1 = get("parallelism", "data_parallel_shard_degree")
    rep, o2, s2, _ = get("parallelism", "data_parallel_replicate_degree")
    if isinstance(shard, int) and isinstance(rep, int):
        val = None if shard == 1 else ("hybrid_shard" if rep > 1 else "full_shard")
        put("fsdp", val, o1, s1, f"{w1} (FSDP over the data-parallel ranks)" if val else w1)
        facts.append(("zero_stage", Fact(value=0, origin=Origin.DEFAULT, source=s1,
                                         reason="torchtitan shards with FSDP, not ZeRO")))
    dt, do, ds, _ = get("training", "dtype")
    mpp, mo, ms, mw = get("training", "mixed_precision_param")
    if dt == "bfloat16":
        put("param_dtype", "bf16", do, ds, "training.dtype = bfloat16 (pure bf16)")
        put("mixed_precision", "none", do, ds, "training.dtype = bfloat16: no fp32 copy, no autocast")
    elif mpp in ("bfloat16", "float32"):
        put("mixed_precision", "bf16" if mpp == "bfloat16" else "none", mo, ms, mw)
        if isinstance(shard, int) and shard != 1:
            put("param_dtype", "fp32", Origin.DEFAULT, ds or ms, "FSDP keeps fp32 parameters "
                                                               "(training.dtype float32), casting to mixed_precision_param")
            put("fsdp_mixed_precision", True, Origin.DEFAULT, ds or ms,
                "fully_shard's MixedPrecisionPolicy computes in mixed_precision_param, "
                "without autocast")
    ac = kws.get(("activation_checkpoint",))
    if ac is not None:
        n = _name(ac.value).lower()
        # the registry's SelectiveAC is per-op selective checkpointing (its policy saves
        # every other matmul and the attention kernels' outputs: physics.sac)
        mode = "full" if "full" in n else ("selective" if "selective" in n else ("none" if "noac" in n or "none" in n else None))
        if mode:
            put("activation_checkpointing", mode, Origin.CONFIG, src(ac), f"activation_checkpoint={_name(ac.value)}()")
        if mode == "selective":
            put("selective_policy", "op", Origin.CONFIG, src(ac),
                f"activation_checkpoint={_name(ac.value)}(): op-level selective checkpointing")
    opt = kws.get(("optimizer",))
    if opt is not None:
        n = _name(opt.value).lower()
        val = "adamw" if "adamw" in n else ("adam" if "adam" in n else ("sgd" if "sgd" in n else None))
        if val:
            put("optimizer", val, Origin.CONFIG, src(opt), f"optimizer={_name(opt.value)}(…)")
    extras: dict[str, Any] = {}
    ms_kw = kws.get(("model_spec",))
    if ms_kw is not None:
        v = ms_kw.value
        if isinstance(v, ast.Name) and v.id in local:
            v = local[v.id]
        if isinstance(v, ast.Call) and v.args and isinstance(v.args[0], ast.Constant) and isinstance(v.args[0].value, str):
            flavor = v.args[0].value
            facts.append(("model", Fact(value=f"{module}:{flavor}", origin=Origin.CONFIG, source=src(ms_kw),
                                        reason=f'{_name(v)}("{flavor}")')))
            extras["model_refs"] = [{"kind": "torchtitan", "name": module, "flavor": flavor, "source": src(ms_kw)}]
    files = [rel] + ([cfg_rel] if defaults else [])
    return facts, extras, files


# --------------------------------------------------------------------------- model flavors

#: keyword names torchtitan's model configs use → transformers config fields
_TT_FIELDS = {"dim": "hidden_size", "n_layers": "num_hidden_layers", "n_heads": "num_attention_heads",
              "n_kv_heads": "num_key_value_heads", "vocab_size": "vocab_size",
              "hidden_dim": "intermediate_size", "enable_weight_tying": "tie_word_embeddings",
              "multiple_of": "multiple_of", "ffn_dim_multiplier": "ffn_dim_multiplier"}


def _llama_ffn(dim: int, multiple_of: int, mult: Any) -> int:
    """The Llama SwiGLU hidden size: 2/3 of 4·dim, times the multiplier, rounded up."""
    h = int(2 * 4 * dim / 3)
    if isinstance(mult, (int, float)) and not isinstance(mult, bool):
        h = int(mult * h)
    return multiple_of * ((h + multiple_of - 1) // multiple_of)


def _value(n: ast.AST, env: dict[str, Any]) -> Any:
    if isinstance(n, ast.Name):
        return env.get(n.id, _MISSING)
    if isinstance(n, ast.Constant) and isinstance(n.value, (int, float, bool)):
        return n.value
    if isinstance(n, ast.BinOp) and type(n.op) in _OPS:
        a, b = _value(n.left, env), _value(n.right, env)
        if isinstance(a, int) and isinstance(b, int) and not isinstance(a, bool):
            return _OPS[type(n.op)](a, b)
    if isinstance(n, ast.Call) and _name(n.func).endswith("ffn_hidden_dim") and n.args:
        dim = _value(n.args[0], env)
        kw = {k.arg: _value(k.value, env) for k in n.keywords if k.arg}
        mo = kw.get("multiple_of", 1)
        if isinstance(dim, int) and isinstance(mo, int):
            return _llama_ffn(dim, mo, kw.get("ffn_dim_multiplier"))
    return _num(n)


def flavor_fields(registry: str, flavor: str) -> Optional[tuple[dict[str, Any], Source]]:
    """Model fields of a torchtitan flavor: the module's `{"70B": _70b, …}` table (a function
    returning the model config, or the config call itself), read with `ast`. Returns
    transformers-style fields (hidden_size, num_hidden_layers, …) and where they are written."""
    d = os.path.dirname(registry)
    cands = [os.path.join(d, "__init__.py")] + [os.path.join(d, "model", f) for f in ("args.py", "model.py")]
    for path in cands:
        if not os.path.isfile(path):
            continue
        tree = _parse(path)
        if tree is None:
            continue
        funcs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
        for node in tree.body:
            val = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
            if not isinstance(val, ast.Dict):
                continue
            for k, v in zip(val.keys, val.values):
                if not (isinstance(k, ast.Constant) and k.value == flavor):
                    continue
                body: list[ast.AST] = []
                if isinstance(v, ast.Name) and v.id in funcs:
                    body = list(funcs[v.id].body)
                elif isinstance(v, ast.Call):
                    body = [ast.Expr(value=v)]
                env: dict[str, Any] = {}
                fields: dict[str, Any] = {}
                for st in body:
                    if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name):
                        x = _value(st.value, env)
                        if x is not _MISSING:
                            env[st.targets[0].id] = x
                    for sub in ast.walk(st):
                        if not isinstance(sub, ast.Call):
                            continue
                        for kw in sub.keywords:
                            name = _TT_FIELDS.get(kw.arg or "")
                            if name and name not in fields:
                                x = _value(kw.value, env)
                                if x is not _MISSING:
                                    fields[name] = x
                if "intermediate_size" not in fields and isinstance(fields.get("hidden_size"), int):
                    mo = fields.get("multiple_of")
                    if isinstance(mo, int):
                        fields["intermediate_size"] = _llama_ffn(fields["hidden_size"], mo,
                                                                 fields.get("ffn_dim_multiplier"))
                fields.pop("multiple_of", None)
                fields.pop("ffn_dim_multiplier", None)
                if "num_attention_heads" in fields and "num_key_value_heads" not in fields:
                    fields["num_key_value_heads"] = fields["num_attention_heads"]
                return fields, Source(path=path, line=k.lineno, col=k.col_offset + 1)
    return None
