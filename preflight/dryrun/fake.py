"""Fake mode: run the script under `FakeTensorMode` on CPU, for jobs far larger than the
machine. Every tensor carries a shape, a dtype and a (meta) storage but no data, so the
ledger by storage is computed exactly from shapes; memory is not allocated. It is an
estimate: CPU kernels and CPU autocast decide what is saved, and CUDA tensors are
impossible on a CPU-only build, so device moves are ignored.

Patches an unmodified script needs (docs/dryrun.md):
- `Module._apply`: `model.to(...)` swaps parameter objects, which fake tensors refuse
  (weakrefs); here the converted tensor is re-registered as a new Parameter instead.
- CUDA-only scripts run: device moves (`.to("cuda")`, `.cuda()`) and `device="cuda"`
  arguments of any torch function stay on CPU (a TorchFunctionMode); `torch.autocast("cuda")`
  becomes CPU autocast; `torch.cuda.set_device` / `synchronize` / `empty_cache` /
  `reset_peak_memory_stats` do nothing and the memory counters read 0;
  `torch.cuda.is_available()` stays what it is.
- data-dependent values — `.item()`, `float()`, `bool()`, `format()`, `.tolist()` — return
  placeholders (0), so logging and `if loss.isnan():` go on.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

_PATCHED: dict[str, Any] = {}


def _is_fake(t) -> bool:
    from torch._subclasses.fake_tensor import FakeTensor
    return isinstance(t, FakeTensor)


def _strip_cuda(args, kwargs):
    def cpu(d):
        if isinstance(d, torch.device) and d.type == "cuda":
            return torch.device("cpu")
        if isinstance(d, str) and d.startswith("cuda"):
            return "cpu"
        if isinstance(d, int) and not isinstance(d, bool):
            return "cpu"
        return d
    args = tuple(cpu(a) for a in args)
    if "device" in kwargs:
        kwargs = dict(kwargs, device=cpu(kwargs["device"]))
    return args, kwargs


def _module_apply(self: nn.Module, fn, recurse: bool = True):
    if recurse:
        for child in self.children():
            child._apply(fn)
    for name, p in list(self._parameters.items()):
        if p is None:
            continue
        with torch.no_grad():
            new = fn(p)
        if new is not p:
            np_ = nn.Parameter(new, requires_grad=p.requires_grad)
            if p.grad is not None:
                with torch.no_grad():
                    np_.grad = fn(p.grad)
            self._parameters[name] = np_
    for name, b in list(self._buffers.items()):
        if b is not None:
            self._buffers[name] = fn(b)
    return self


class _CudaToCpu:
    """TorchFunctionMode that turns `device="cuda…"` arguments into CPU."""

    def __new__(cls):
        from torch.overrides import TorchFunctionMode

        class Mode(TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                kwargs = kwargs or {}
                if "device" in kwargs:
                    _, kwargs = _strip_cuda((), kwargs)
                return func(*args, **kwargs)

        return Mode()


def _patch_cuda_api() -> None:
    import torch.cuda as tc

    # one function object per name: torch._dynamo's rules refuse a shared one
    def const(value):
        def f(*a, **kw):
            return value
        return f

    for name in ("set_device", "synchronize", "empty_cache", "reset_peak_memory_stats",
                 "reset_max_memory_allocated", "reset_accumulated_memory_stats"):
        setattr(tc, name, const(None))
    for name in ("memory_allocated", "max_memory_allocated", "memory_reserved",
                 "max_memory_reserved"):
        setattr(tc, name, const(0))
    tc.is_bf16_supported = lambda *a, **kw: True
    orig_init = torch.amp.autocast_mode.autocast.__init__

    def autocast_init(self, device_type, *a, **kw):
        if device_type == "cuda":
            device_type = "cpu"
        orig_init(self, device_type, *a, **kw)

    torch.amp.autocast_mode.autocast.__init__ = autocast_init


def enter_fake_mode():
    """Enter FakeTensorMode for the rest of the process and apply the patches."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    T = torch.Tensor
    orig_to = T.to
    orig_item, orig_tolist = T.item, T.tolist
    orig_bool, orig_float, orig_int, orig_format = T.__bool__, T.__float__, T.__int__, T.__format__
    orig_mod_to = nn.Module.to

    def to(self, *a, **kw):
        a, kw = _strip_cuda(a, kw)
        return orig_to(self, *a, **kw)

    def cuda(self, *a, **kw):
        return self

    def item(self):
        if _is_fake(self):
            return False if self.dtype == torch.bool else (1.0 if self.is_floating_point() else 1)
        return orig_item(self)

    def tolist(self):
        if _is_fake(self):
            return _ones_list(tuple(self.shape))
        return orig_tolist(self)

    def boolean(self):
        return False if _is_fake(self) else orig_bool(self)

    def flt(self):
        return 1.0 if _is_fake(self) else orig_float(self)

    def integer(self):
        return 1 if _is_fake(self) else orig_int(self)

    def fmt(self, spec):
        if _is_fake(self):
            return format(1.0 if self.is_floating_point() else 1, spec) if self.dim() == 0 \
                else f"FakeTensor(shape={tuple(self.shape)}, dtype={self.dtype})"
        return orig_format(self, spec)

    def mod_to(self, *a, **kw):
        a, kw = _strip_cuda(a, kw)
        return orig_mod_to(self, *a, **kw)

    def mod_cuda(self, device=None):
        return self

    T.to, T.cuda, T.item, T.tolist = to, cuda, item, tolist
    T.__bool__, T.__float__, T.__int__, T.__format__ = boolean, flt, integer, fmt
    nn.Module._apply = _module_apply
    nn.Module.to, nn.Module.cuda = mod_to, mod_cuda
    # random initialisation does nothing useful on fake tensors but costs nothing either
    _patch_cuda_api()
    mode = FakeTensorMode(allow_non_fake_inputs=True)
    mode.__enter__()
    fmode = _CudaToCpu()
    fmode.__enter__()
    return mode


def _ones_list(shape):
    if not shape:
        return 1
    return [_ones_list(shape[1:]) for _ in range(shape[0])]
