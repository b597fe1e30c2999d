"""The forward pass of a plain layer stack, read statically: each layer it applies, in order,
with the tensors that layer saves for backward, per sample.

A custom `nn.Module` (or `nn.Sequential`) of `nn.Linear`, `nn.Conv1d/2d`, activations,
norms, pooling, dropout and flatten has no transformer table; its activations follow from
the shapes. Given the per-sample input shape (the tensor the script passes to the model),
`read_forward` walks the class's `forward` — assignments, `return`, calls of its
sub-modules and of `torch` / `F` functions, `for block in self.blocks`, `x.flatten(1)`,
`x.view(x.size(0), -1)` — and records, per layer, what autograd saves:

    Linear, Conv           the input (the weight gradient needs it)
    ReLU, Tanh, Sigmoid,   the output (in place: the input, modified)
    Softmax
    GELU, SiLU, LeakyReLU  the input
    MaxPool                the input and the argmax indices (int64, output-sized)
    AvgPool, Adaptive-     the input
    AvgPool
    BatchNorm (training)   the input, and the batch mean and inverse std (fp32, per channel,
                           once per batch)
    LayerNorm              the input, and mean and rstd per row (fp32)
    Dropout (p > 0)        the mask (1 byte on CUDA)
    Flatten, view, reshape nothing (a view)

A tensor two layers save (a ReLU's output is also the next Linear's input) is one tensor.
Anything else — an unknown layer, a shape that does not line up, control flow — stops the
reading with the reason: the stack is then not sized, never guessed.
"""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass, field
from typing import Any, Optional

from preflight.models.modules import Mod, Unknown, distinct_params

#: layers that save their output / their input (elementwise, shape-preserving)
_SAVE_OUTPUT = {"ReLU", "ReLU6", "Tanh", "Sigmoid", "Softmax", "LogSoftmax", "ELU", "Hardtanh"}
_SAVE_INPUT = {"GELU", "SiLU", "LeakyReLU", "Mish", "Softplus", "Hardswish", "Hardsigmoid",
               "PReLU"}
#: torch / F functions and tensor methods of the same kinds
_FN_OUTPUT = {"relu": "ReLU", "relu_": "ReLU", "tanh": "Tanh", "sigmoid": "Sigmoid",
              "softmax": "Softmax", "log_softmax": "LogSoftmax", "elu": "ELU", "relu6": "ReLU6"}
_FN_INPUT = {"gelu": "GELU", "silu": "SiLU", "leaky_relu": "LeakyReLU", "mish": "Mish",
             "softplus": "Softplus", "hardswish": "Hardswish"}


@dataclass
class Op:
    """One layer applied in the forward: per-sample element counts."""

    label: str
    inp: int                       # input elements (its gradient is made in backward)
    out: int                       # output elements (the gradient it receives)
    saved: list[tuple[int, int, str]] = field(default_factory=list)  # (tensor id, elems, kind)
    per_batch: list[tuple[int, str]] = field(default_factory=list)   # (elems, kind), per batch
    params: int = 0                # parameters whose gradient this layer makes
    needs_input_grad: bool = True


@dataclass
class _T:
    shape: tuple
    tid: int
    grad: bool = True              # derived from a parameter (the model input is not)

    @property
    def numel(self) -> int:
        return math.prod(self.shape)


class _Stop(Exception):
    pass


#: statements of one line (anything else in a forward is control flow)
_SIMPLE = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr, ast.Pass, ast.Delete,
           ast.Assert, ast.Raise, ast.Import, ast.ImportFrom, ast.Global, ast.Nonlocal,
           ast.Break, ast.Continue, *((ast.TypeAlias,) if hasattr(ast, "TypeAlias") else ()))


_BATCH = object()      # x.size(0) / x.shape[0]: the batch dimension


class _Reader:
    def __init__(self, classes: dict) -> None:
        self.classes = classes
        self.ops: list[Op] = []
        self.next_id = 1
        self.depth = 0

    def new(self, shape: tuple, grad: bool = True) -> _T:
        self.next_id += 1
        return _T(tuple(shape), self.next_id, grad)

    # ------------------------------------------------------------------ modules
    def apply(self, m: Any, args: list, kwargs: dict) -> Any:
        if not isinstance(m, Mod):
            raise _Stop("a call of something that is not a layer")
        if not args or not isinstance(args[0], _T):
            raise _Stop(f"{m.kind} called without a tensor preflight can follow")
        x = args[0]
        k = m.kind
        if k == "Sequential":
            for child in m.children.values():
                x = self.apply(child, [x], {})
            return x
        if k in self.classes:
            return self.run_forward(m, self.classes[k], args, kwargs)
        call_args, call_kw = m.attrs.get("call", ([], {}))
        return self.layer(k, x, call_args, call_kw, m)

    def layer(self, k: str, x: _T, a: list, kw: dict, m: Optional[Mod] = None) -> _T:
        def arg(i: int, name: str, default: Any = None) -> Any:
            v = kw.get(name, a[i] if i < len(a) else default)
            if isinstance(v, Unknown):
                raise _Stop(f"{k}: {name} not known ({v.reason})")
            return v

        params = sum(p.numel for p in m.params.values() if isinstance(p.numel, int)) if m else 0
        inplace = bool(kw.get("inplace", False))
        if k == "Identity":
            return x
        if k in ("Flatten",):
            return self.flatten(x, arg(0, "start_dim", 1), arg(1, "end_dim", -1))
        if k == "Linear":
            i, o = arg(0, "in_features"), arg(1, "out_features")
            if not x.shape or x.shape[-1] != i:
                raise _Stop(f"Linear({i}, {o}) applied to a tensor of shape {x.shape}")
            y = self.new(x.shape[:-1] + (o,))
            self.ops.append(Op(f"Linear({i}, {o}) input", x.numel, y.numel,
                               [(x.tid, x.numel, "act")], params=params,
                               needs_input_grad=x.grad))
            return y
        if k in ("Conv1d", "Conv2d"):
            n = 1 if k == "Conv1d" else 2
            cin, cout = arg(0, "in_channels"), arg(1, "out_channels")
            ks = _tup(arg(2, "kernel_size"), n)
            st = _tup(arg(3, "stride", 1), n)
            pad = arg(4, "padding", 0)
            dil = _tup(arg(5, "dilation", 1), n)
            if len(x.shape) != n + 1 or x.shape[0] != cin:
                raise _Stop(f"{k}({cin}, {cout}) applied to a tensor of shape {x.shape}")
            if pad == "same":
                sp = x.shape[1:]
            else:
                pd = _tup(0 if pad == "valid" else pad, n)
                sp = tuple(_out_len(L, kk, s, p, d) for L, kk, s, p, d in
                           zip(x.shape[1:], ks, st, pd, dil))
            y = self.new((cout, *sp))
            self.ops.append(Op(f"{k}({cin}, {cout}) input", x.numel, y.numel,
                               [(x.tid, x.numel, "act")], params=params,
                               needs_input_grad=x.grad))
            return y
        if k in ("MaxPool1d", "MaxPool2d", "AvgPool1d", "AvgPool2d"):
            n = 1 if k.endswith("1d") else 2
            ks = _tup(arg(0, "kernel_size"), n)
            stv = arg(1, "stride", None)
            st = ks if stv is None else _tup(stv, n)
            pd = _tup(arg(2, "padding", 0), n)
            dil = _tup(arg(3, "dilation", 1), n) if k.startswith("Max") else (1,) * n
            if kw.get("ceil_mode") or len(x.shape) != n + 1:
                raise _Stop(f"{k} on a tensor of shape {x.shape} (or ceil_mode) not modelled")
            sp = tuple(_out_len(L, kk, s, p, d) for L, kk, s, p, d in
                       zip(x.shape[1:], ks, st, pd, dil))
            y = self.new((x.shape[0], *sp))
            saved = [(x.tid, x.numel, "act")]
            if k.startswith("Max"):
                saved.append((self.new(y.shape).tid, y.numel, "i64"))
            self.ops.append(Op(f"{k} input" + (" and indices" if k.startswith("Max") else ""),
                               x.numel, y.numel, saved, needs_input_grad=x.grad))
            return y
        if k in ("AdaptiveAvgPool1d", "AdaptiveAvgPool2d"):
            n = 1 if k.endswith("1d") else 2
            size = _tup(arg(0, "output_size"), n)
            if len(x.shape) != n + 1 or any(s is None for s in size):
                raise _Stop(f"{k} on a tensor of shape {x.shape} not modelled")
            y = self.new((x.shape[0], *size))
            self.ops.append(Op(f"{k} input", x.numel, y.numel, [(x.tid, x.numel, "act")],
                               needs_input_grad=x.grad))
            return y
        if k in ("BatchNorm1d", "BatchNorm2d"):
            c = arg(0, "num_features")
            if not x.shape or x.shape[0] != c:
                raise _Stop(f"{k}({c}) applied to a tensor of shape {x.shape}")
            y = self.new(x.shape)
            self.ops.append(Op(f"{k}({c}) input and batch statistics", x.numel, y.numel,
                               [(x.tid, x.numel, "act")], per_batch=[(2 * c, "f32")],
                               params=params, needs_input_grad=x.grad))
            return y
        if k == "LayerNorm":
            ns = _tup(arg(0, "normalized_shape"), 1)
            if tuple(x.shape[-len(ns):]) != tuple(ns):
                raise _Stop(f"LayerNorm{ns} applied to a tensor of shape {x.shape}")
            rows = x.numel // math.prod(ns)
            y = self.new(x.shape)
            self.ops.append(Op("LayerNorm input, mean and rstd", x.numel, y.numel,
                               [(x.tid, x.numel, "act"), (self.new((rows,)).tid, 2 * rows, "f32")],
                               params=params, needs_input_grad=x.grad))
            return y
        if k in ("Dropout", "Dropout1d", "Dropout2d"):
            p = arg(0, "p", 0.5)
            if not isinstance(p, (int, float)):
                raise _Stop(f"{k}: p not known")
            if p == 0:
                return x
            y = self.new(x.shape)
            self.ops.append(Op(f"{k} mask", x.numel, y.numel,
                               [(self.new(x.shape).tid, x.numel, "mask")],
                               needs_input_grad=x.grad))
            return y
        if k in _SAVE_OUTPUT or k in _SAVE_INPUT:
            y = x if inplace else self.new(x.shape, x.grad)
            saved = (y if k in _SAVE_OUTPUT else x)
            self.ops.append(Op(f"{k} {'output' if k in _SAVE_OUTPUT else 'input'}", x.numel,
                               y.numel, [(saved.tid, saved.numel, "act")], params=params,
                               needs_input_grad=x.grad))
            return y
        raise _Stop(f"nn.{k} is not modelled in a layer stack's forward")

    def flatten(self, x: _T, start: Any, end: Any = -1) -> _T:
        # dims of the batched tensor: 0 is the batch
        if not isinstance(start, int) or not isinstance(end, int):
            raise _Stop("flatten with unknown dimensions")
        full = (None,) + x.shape
        s = start % len(full)
        e = end % len(full)
        if s == 0:
            raise _Stop("flatten over the batch dimension not modelled")
        shape = full[1:s] + (math.prod(full[s:e + 1]),) + full[e + 1:]
        return _T(tuple(shape), x.tid, x.grad)

    def view(self, x: _T, dims: list) -> _T:
        if not dims:
            raise _Stop("view without a shape")
        if dims[0] is _BATCH or (dims[0] == -1 and len(dims) > 1 and -1 not in dims[1:]):
            rest = list(dims[1:])
        else:
            raise _Stop("view / reshape that does not keep the batch dimension first")
        if any(not isinstance(d, int) for d in rest):
            raise _Stop("view / reshape with unknown sizes")
        if rest.count(-1) > 1:
            raise _Stop("view / reshape with two -1 sizes")
        known = math.prod(d for d in rest if d != -1)
        if -1 in rest:
            if known == 0 or x.numel % known:
                raise _Stop("view / reshape sizes do not divide the tensor")
            rest[rest.index(-1)] = x.numel // known
        if math.prod(rest) != x.numel:
            raise _Stop(f"view / reshape to {rest} of a tensor of shape {x.shape}")
        return _T(tuple(rest), x.tid, x.grad)

    # ------------------------------------------------------------------ forward bodies
    def run_forward(self, obj: Mod, cls: ast.ClassDef, args: list, kwargs: dict) -> Any:
        self.depth += 1
        if self.depth > 20:
            raise _Stop("modules nested too deep")
        fn = next((s for s in cls.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))
                   and s.name == "forward"), None)
        if fn is None:
            raise _Stop(f"{obj.kind} has no forward method in the analysed file")
        names = [p.arg for p in fn.args.args]
        # `*args`, or a bare `*` before keyword-only parameters
        if len(names) - 1 < len(args) or fn.args.vararg is not None or fn.args.kwonlyargs:
            raise _Stop(f"{obj.kind}.forward's arguments not modelled")
        env: dict[str, Any] = {names[0]: obj}
        for n, a in zip(names[1:], args):
            env[n] = a
        try:
            out = self.block(fn.body, env)
        finally:
            self.depth -= 1
        if out is None:
            raise _Stop(f"{obj.kind}.forward returns nothing preflight can follow")
        return out

    def block(self, body: Any, env: dict) -> Any:
        for st in body:
            if isinstance(st, ast.Return):
                return self.expr(st.value, env) if st.value is not None else None
            if isinstance(st, ast.Assign) and len(st.targets) == 1 and \
                    isinstance(st.targets[0], ast.Name):
                env[st.targets[0].id] = self.expr(st.value, env)
            elif isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant) and \
                    isinstance(st.value.value, (str, bytes)):
                continue                                               # a docstring
            elif isinstance(st, _SIMPLE):
                raise _Stop("a statement of the forward is not modelled")
            elif isinstance(st, ast.For) and isinstance(st.target, ast.Name) and not st.orelse:
                it = self.expr(st.iter, env)
                if not isinstance(it, Mod) or it.kind not in ("ModuleList", "Sequential"):
                    raise _Stop("a loop over something other than a list of layers")
                for child in it.children.values():
                    env[st.target.id] = child
                    r = self.block(st.body, env)
                    if r is not None:
                        return r
            else:
                raise _Stop("control flow in the forward is not modelled")
        return None

    def expr(self, e: ast.expr, env: dict) -> Any:
        if isinstance(e, ast.Name):
            if e.id in env:
                return env[e.id]
            raise _Stop(f"`{e.id}` is not known in the forward")
        if isinstance(e, ast.Constant) and (isinstance(e.value, bool) or e.value is None):
            raise _Stop(f"`{e.value}` is not known in the forward")
        if isinstance(e, ast.Constant) and type(e.value) is int:
            return e.value
        if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub):
            v = self.expr(e.operand, env)
            if isinstance(v, int):
                return -v
        if isinstance(e, ast.BinOp):
            a, b = self.expr(e.left, env), self.expr(e.right, env)
            if isinstance(a, int) and isinstance(b, int):
                if isinstance(e.op, ast.Mult):
                    return a * b
                if isinstance(e.op, ast.Add):
                    return a + b
                if isinstance(e.op, ast.FloorDiv) and b:
                    return a // b
            if isinstance(a, _T) and isinstance(b, _T) and a.shape == b.shape and \
                    isinstance(e.op, ast.Add):
                return self.new(a.shape, a.grad or b.grad)        # a residual sum saves nothing
            raise _Stop("an arithmetic expression of the forward is not modelled")
        if isinstance(e, ast.Attribute):
            base = self.expr(e.value, env)
            if isinstance(base, Mod):
                if e.attr in base.children:
                    return base.children[e.attr]
                raise _Stop(f"self.{e.attr} is not a layer preflight built")
            raise _Stop(f"attribute {e.attr} not modelled")
        if isinstance(e, ast.Subscript) and isinstance(e.value, ast.Attribute) and \
                e.value.attr == "shape":
            idx = e.slice
            if isinstance(idx, ast.Constant) and type(idx.value) is int and idx.value == 0:
                return _BATCH
            raise _Stop("a shape other than the batch size read in the forward")
        if isinstance(e, (ast.Tuple, ast.List)):
            return [self.expr(el.value if isinstance(el, ast.Starred) else el, env)
                    for el in e.elts]
        if isinstance(e, ast.Call):
            return self.call(e, env)
        raise _Stop("an expression of the forward is not modelled")

    def call(self, e: ast.Call, env: dict) -> Any:
        args = [self.expr(a, env) for a in e.args if not isinstance(a, ast.Starred)]
        kwargs = {k.arg: self.expr(k.value, env) for k in e.keywords if k.arg is not None}
        f = e.func
        if isinstance(f, ast.Attribute):
            name = f.attr
            recv = _dotted(f.value)
            if recv in ("torch", "F", "nn.functional", "torch.nn.functional"):
                if not args or not isinstance(args[0], _T):
                    raise _Stop(f"{recv}.{name} without a tensor")
                return self.function(name, args[0], args[1:], kwargs)
            base = self.expr(f.value, env)
            if isinstance(base, _T):
                if name in ("size",) and args == [0]:
                    return _BATCH
                return self.function(name, base, args, kwargs)
            if isinstance(base, Mod):
                if name in base.children:
                    return self.apply(base.children[name], args, kwargs)
                raise _Stop(f"self.{name}(...) is not a layer preflight built")
        callee = self.expr(f, env)
        return self.apply(callee, args, kwargs)

    def function(self, name: str, x: _T, args: list, kwargs: dict) -> _T:
        if name in ("flatten",):
            return self.flatten(x, args[0] if args else kwargs.get("start_dim", 0),
                                args[1] if len(args) > 1 else kwargs.get("end_dim", -1))
        if name in ("view", "reshape"):
            dims = args[0] if len(args) == 1 and isinstance(args[0], list) else args
            return self.view(x, dims)
        if name in ("contiguous",):
            return x
        if name in _FN_OUTPUT or name in _FN_INPUT:
            k = _FN_OUTPUT.get(name) or _FN_INPUT[name]
            inplace = name.endswith("_") or kwargs.get("inplace") is True
            return self.layer(k, x, [], {"inplace": inplace})
        if name in ("max_pool2d", "max_pool1d", "avg_pool2d", "avg_pool1d"):
            k = {"max_pool2d": "MaxPool2d", "max_pool1d": "MaxPool1d",
                 "avg_pool2d": "AvgPool2d", "avg_pool1d": "AvgPool1d"}[name]
            return self.layer(k, x, args, kwargs)
        if name in ("dropout",):
            p = args[0] if args else kwargs.get("p", 0.5)
            if kwargs.get("training") is False:
                return x
            return self.layer("Dropout", x, [p], {})
        raise _Stop(f"{name}(...) in the forward is not modelled")


def _dotted(e: Any) -> str:
    if isinstance(e, ast.Name):
        return e.id
    if isinstance(e, ast.Attribute):
        inner = _dotted(e.value)
        return f"{inner}.{e.attr}" if inner else ""
    return ""


def _tup(v: Any, n: int) -> tuple:
    if isinstance(v, (list, tuple)):
        if len(v) != n:
            raise _Stop("a layer size of the wrong length")
        return tuple(v)
    if not isinstance(v, int):
        raise _Stop("a layer size not known statically")
    return (v,) * n


def _out_len(L: int, k: int, s: int, p: int, d: int) -> int:
    if not all(isinstance(v, int) for v in (L, k, s, p, d)) or s <= 0:
        raise _Stop("a convolution or pooling size not known statically")
    return (L + 2 * p - d * (k - 1) - 1) // s + 1


def param_shapes(root: Mod) -> Optional[list[tuple]]:
    """The shape of every distinct parameter of the module tree (None if one is unknown)."""
    out: list[tuple] = []
    for p in distinct_params(root):
        if not p.shape or not all(isinstance(n, int) for n in p.shape):
            return None
        out.append(tuple(p.shape))
    return out


def read_forward(root: Mod, classes: dict, input_shape: tuple) -> tuple[Optional[list[Op]], str]:
    """The layers `root`'s forward applies to one sample of `input_shape` (the batch
    dimension left out), in order; (None, why) when the forward cannot be followed."""
    r = _Reader(classes)
    x = _T(tuple(input_shape), 1, grad=False)
    try:
        if root.kind in classes:
            out = r.run_forward(root, classes[root.kind], [x], {})
        else:
            out = r.apply(root, [x], {})
    except _Stop as e:
        return None, str(e)
    except (RecursionError, ValueError, TypeError, ZeroDivisionError, AttributeError) as e:
        return None, f"forward not modelled ({type(e).__name__})"
    if not isinstance(out, _T):
        return None, "the forward does not return one tensor"
    if not r.ops:
        return None, "the forward applies no layer preflight knows"
    return r.ops, ""
