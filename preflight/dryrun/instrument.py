"""Instrumentation imported into the child process that runs the user's script.

Lives in an importable module (not `__main__`): `runpy` replaces `__main__` and
`torch.compile` then fails to find hook code. Everything is installed globally, so the
script runs unmodified:

- `Optimizer.__init__` is wrapped: snapshot "model_init" before the first optimizer is
  built, "optimizer_init" after.
- global module forward pre-hook / forward hook: the *root* forward is the one that starts
  when no other module forward is active. Between its pre-hook and its hook a
  `saved_tensors_hooks` context records every tensor autograd saves (by storage).
- end of backward: a hook on the root output queues an engine callback that runs when the
  whole backward pass is done.
- global optimizer step pre/post hooks: grads are complete in the pre-hook; the post-hook
  measures the optimizer state, writes the result and ends the process with `os._exit(0)`
  — an exception would be swallowed by scripts that wrap their loop in `except:`.
- a watchdog thread ends hangs.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import threading
import time
import traceback
from typing import Any, Optional

import torch
from torch import nn

from preflight.dryrun.devmem import NO_CUDA, ProcessMemory, Sampler
from preflight.dryrun.result import PhaseMemory, RankLedger

_tls = threading.local()


def storage_key(t: torch.Tensor) -> Optional[tuple[int, int]]:
    """A key for the tensor's storage that works on real, meta and fake tensors
    (`data_ptr()` is 0 on meta / fake). None when the tensor has no storage."""
    t = local_tensor(t)
    try:
        st = t.untyped_storage()
    except Exception:  # noqa: BLE001 - sparse / nested / exotic subclasses
        return None
    return (st._cdata, st.nbytes())


def local_tensor(t: torch.Tensor) -> torch.Tensor:
    """FSDP2 / tensor-parallel DTensors: the local shard (what this rank holds)."""
    loc = getattr(t, "_local_tensor", None)
    return loc if isinstance(loc, torch.Tensor) else t


def unique_bytes(tensors, exclude: Optional[set] = None) -> int:
    seen: dict[int, int] = {}
    for t in tensors:
        if t is None:
            continue
        k = storage_key(t)
        if k is None or (exclude and k[0] in exclude):
            continue
        seen[k[0]] = k[1]
    return sum(seen.values())


#: how allocators say they ran out: CUDA ("out of memory"), the CPU allocator
#: ("DefaultCPUAllocator: can't allocate memory: you tried to allocate …"), errno 12
_OOM_WORDS = ("out of memory", "can't allocate memory", "cannot allocate memory")


def _is_oom(exc: BaseException) -> bool:
    oom = getattr(torch, "OutOfMemoryError", None)
    if oom is not None and isinstance(exc, oom):
        return True
    if isinstance(exc, MemoryError):
        return True
    text = str(exc).lower()
    return isinstance(exc, RuntimeError) and any(w in text for w in _OOM_WORDS)


class SavedCounter:
    """Counts the bytes autograd saves for backward between `start()` and `stop()`, by
    unique storage: parameters (and views of them, and FSDP2's unsharded parameters) and
    the module's buffers are excluded; autocast's low-precision weight copies are counted
    apart. Tensors kept alive by non-reentrant activation checkpointing (the inputs of the
    checkpointed region, which autograd never sees) are added through `record`."""

    def __init__(self):
        self.saved: dict[int, int] = {}
        self.copies: dict[int, int] = {}
        self.exclude: set[int] = set()
        self._keep: list = []
        self._ctx = None

    def start(self, module: Optional[nn.Module] = None) -> None:
        self.saved, self.copies = {}, {}
        # keep the excluded tensors referenced while counting: a buffer the forward replaces
        # would otherwise free its storage, and a new activation could reuse its address
        self._keep = list(_module_tensors(module)) if module is not None else []
        self.exclude = {k[0] for k in (storage_key(t) for t in self._keep) if k}
        self._ctx = torch.autograd.graph.saved_tensors_hooks(self._pack, _unpack)
        self._ctx.__enter__()
        _ACTIVE.append(self)

    @property
    def active(self) -> bool:
        return self._ctx is not None

    def on_top(self) -> bool:
        """Whether our hooks are the innermost ones (so that popping them is safe)."""
        try:
            top = torch._C._autograd._top_saved_tensors_default_hooks(False)
        except Exception:  # noqa: BLE001
            return True
        return top is not None and top[0] == self._pack

    def stop(self) -> bool:
        ok = True
        if self._ctx is not None:
            ok = self.on_top()
            if ok:
                self._ctx.__exit__(None, None, None)
            self._ctx = None
        self._keep = []
        if self in _ACTIVE:
            _ACTIVE.remove(self)
        return ok

    @property
    def saved_bytes(self) -> int:
        return sum(self.saved.values())

    @property
    def copy_bytes(self) -> int:
        return sum(self.copies.values())

    def _pack(self, t):
        try:
            self.record(t)
        except Exception:  # noqa: BLE001 - never break the user's forward
            pass
        return t

    def record(self, t) -> None:
        if not isinstance(t, torch.Tensor):
            return
        if isinstance(t, nn.Parameter) or (t.requires_grad and t.grad_fn is None):
            return   # a parameter (or FSDP2's unsharded parameter)
        base = t._base
        if base is not None and (isinstance(base, nn.Parameter)
                                 or (base.requires_grad and base.grad_fn is None)):
            return   # a view of a parameter
        k = storage_key(t)
        if k is None or k[0] in self.exclude:
            return
        if _is_autocast_copy(t):
            self.copies[k[0]] = k[1]
        else:
            self.saved[k[0]] = k[1]


#: counters currently recording (the checkpoint wrapper reports to the innermost)
_ACTIVE: list[SavedCounter] = []


def patch_checkpoint() -> None:
    """Non-reentrant `torch.utils.checkpoint.checkpoint` keeps its inputs alive in a closure,
    out of autograd's sight: record them as saved activations."""
    import torch.utils.checkpoint as cp
    if getattr(cp.checkpoint, "_preflight", False):
        return
    orig = cp.checkpoint

    def checkpoint(function, *args, **kwargs):
        if _ACTIVE and torch.is_grad_enabled():
            for a in list(args) + list(kwargs.values()):
                _ACTIVE[-1]._pack(a)
        return orig(function, *args, **kwargs)

    checkpoint._preflight = True  # type: ignore[attr-defined]
    checkpoint.__wrapped__ = orig  # type: ignore[attr-defined]
    checkpoint.__doc__ = orig.__doc__
    cp.checkpoint = checkpoint


class Recorder:
    """The measurement state of one process."""

    def __init__(self, out_path: str, device: str, timeout: Optional[float] = None):
        self.out_path = out_path
        self.device = device
        self.cuda = device == "cuda" and torch.cuda.is_available()
        self.ledger = RankLedger(device=device)
        self.t0 = time.time()
        self.phase = "load"
        self.roots: list[nn.Module] = []        # modules seen as root of a grad-enabled forward
        self.optimizers: list[torch.optim.Optimizer] = []
        self.done = False
        self.lock = threading.Lock()
        self.timeout = timeout
        self.counter = SavedCounter()           # the current root forward
        self.loss_counter = SavedCounter()      # after the root forward, until backward
        self._handles: list[Any] = []
        self._stepped = False
        # the process's device memory (nvidia-smi's figure): noted before CUDA is initialised
        self.devmem: Optional[ProcessMemory] = None
        self.sampler: Optional[Sampler] = None
        self._dev_index = 0
        if self.cuda:
            self.devmem = ProcessMemory()
            self.devmem.start(cuda_initialised=torch.cuda.is_initialized())
        else:
            self.ledger.process_unavailable = (
                "fake mode: nothing is allocated on a device" if device == "fake" else NO_CUDA)

    # ---------------------------------------------------------------- memory snapshots
    def snapshot(self, phase: str) -> None:
        if any(m.phase == phase for m in self.ledger.memory):
            return
        m = PhaseMemory(phase=phase, rss=_rss())
        dev = self.cuda_device() if self.cuda else None
        if dev is not None:
            torch.cuda.synchronize(dev)
            m.allocated = torch.cuda.memory_allocated(dev)
            m.peak = torch.cuda.max_memory_allocated(dev)
            m.reserved = torch.cuda.memory_reserved(dev)
            torch.cuda.reset_peak_memory_stats(dev)
            self.record_process(m, dev)
        elif self.cuda:
            # nothing on the GPU yet (CUDA is not initialised: no context either)
            m.allocated = m.peak = m.reserved = m.process = m.process_peak = 0
        self.ledger.memory.append(m)

    def record_process(self, m: PhaseMemory, dev) -> None:
        """The process's device memory at the end of the phase and its largest reading in
        the phase (a sampler polls from the first phase that has a device on), and
        mem_get_info's device-wide used memory beside it."""
        try:
            free, total = torch.cuda.mem_get_info(dev)
            m.device_used = int(total - free)
        except Exception:  # noqa: BLE001 - a cross-check only
            pass
        if self.devmem is None:
            return
        index = dev.index if dev.index is not None else torch.cuda.current_device()
        if self.sampler is None:
            self._dev_index = index
            self.sampler = Sampler(lambda: self.devmem.read(index))
            self.sampler.start()
        m.process = self.devmem.read(index)
        self.sampler.note(m.process)
        m.process_peak = self.sampler.take()
        self.note_process(m.process_peak, index)

    def note_process(self, n: Optional[int], index: int) -> None:
        L = self.ledger
        if n is not None:
            L.process_peak = n if L.process_peak is None else max(L.process_peak, n)
            L.process_unavailable = None
        L.process_source = self.devmem.source
        if L.process_source and "delta" in L.process_source:
            L.process_baseline = self.devmem.baseline_of(index)

    def close_process(self) -> None:
        """At the end (also after an OOM, from inside the allocator: NVML only, no CUDA
        call): the readings since the last phase, and why there are none if so."""
        if self.devmem is None:
            return
        if self.sampler is not None:
            self.sampler.stop()
            self.note_process(self.sampler.take(), self._dev_index)
        if self.ledger.process_peak is None:
            self.ledger.process_unavailable = (self.devmem.unavailable
                                               or "NVML gave no reading for the device")

    def cuda_device(self):
        """The GPU this rank trains on: where its parameters are; else (CUDA initialised)
        cuda:LOCAL_RANK under torchrun, or the current device; else None. Never initialises
        CUDA itself (under torchrun that would put every rank's context on GPU 0)."""
        for t in self.model_params() + self.opt_params():
            t = local_tensor(t)
            if t.is_cuda:
                return t.device
        if torch.cuda.is_initialized():
            local = os.environ.get("LOCAL_RANK")
            if local is not None and local.isdigit() and int(local) < torch.cuda.device_count():
                return torch.device("cuda", int(local))     # torchrun's convention
            return torch.device("cuda", torch.cuda.current_device())
        return None

    # ---------------------------------------------------------------- optimizer
    def wrap_optimizer_init(self) -> None:
        orig = torch.optim.Optimizer.__init__
        rec = self

        def __init__(opt, *a, **kw):
            if not rec.optimizers:
                rec.snapshot("model_init")
            orig(opt, *a, **kw)
            # only the outermost __init__ of subclasses that call super().__init__
            if not any(o is opt for o in rec.optimizers):
                rec.optimizers.append(opt)
                if len(rec.optimizers) == 1:
                    rec.snapshot("optimizer_init")

        torch.optim.Optimizer.__init__ = __init__  # type: ignore[method-assign]

    def step_pre(self, opt, args, kwargs) -> None:
        if _compiling():
            return
        if self._stepped:
            # a second step before we could stop: stop now
            self.finish("ok")
        self.close_loss_window()
        self.phase = "step"
        self._grads = self.grad_bytes()

    def step_post(self, opt, args, kwargs) -> None:
        if _compiling() or self._stepped:
            return
        self._stepped = True
        self.snapshot("step")
        # a closure (`optimizer.step(closure)`, Lightning's automatic optimisation) runs the
        # forward and backward inside the step: the gradients exist only after it
        self.ledger.grads = max(self._grads, self.grad_bytes())
        self.measure_states()
        self.finish("ok")

    # ---------------------------------------------------------------- forward / backward
    def fwd_pre(self, module, args) -> None:
        if _compiling():
            return
        depth = getattr(_tls, "depth", 0)
        _tls.depth = depth + 1
        if depth != 0 or not torch.is_grad_enabled() or self.done or _in_backward():
            return      # nested, no_grad (evaluation), or a checkpoint's recompute
        self.close_loss_window()
        if not any(m is module for m in self.roots):
            self.roots.append(module)
        self.phase = "forward"
        if not self.ledger.forwards:
            self.snapshot("optimizer_init" if self.optimizers else "model_init")
        self.counter.start(module)
        _tls.saved_ctx = self.counter

    def fwd_post(self, module, args, output) -> None:
        if _compiling():
            return
        depth = getattr(_tls, "depth", 1) - 1
        _tls.depth = max(depth, 0)
        ctx = getattr(_tls, "saved_ctx", None)
        if depth != 0 or ctx is None:
            return
        ctx.stop()
        _tls.saved_ctx = None
        if output is None:      # the forward raised (always_call hooks still run)
            return
        self.ledger.forwards += 1
        act = self.counter.saved_bytes
        self.ledger.activations_per_forward.append(act)
        self.ledger.activations = max(self.ledger.activations, act)
        self.ledger.autocast_copies = max(self.ledger.autocast_copies, self.counter.copy_bytes)
        if self.ledger.forwards == 1:
            self.snapshot("forward")
        out = _first_grad_tensor(output)
        if out is not None:
            out.register_hook(self._on_output_grad)
            # the loss (often the largest: fp32 log-softmax over the vocabulary) is computed
            # outside the model's forward; count what it saves until backward starts
            self.loss_counter.start(module)
        self.phase = "backward"

    def close_loss_window(self) -> None:
        if not self.loss_counter.active:
            return
        if self.loss_counter.stop():
            self.ledger.loss_activations = max(self.ledger.loss_activations,
                                               self.loss_counter.saved_bytes)
        elif "loss window" not in " ".join(self.ledger.notes):
            self.ledger.notes.append("loss window not measured: the script changed the "
                                     "saved-tensor hooks between forward and backward")

    def wrap_backward(self) -> None:
        rec = self
        orig_tensor_backward = torch.Tensor.backward
        orig_backward = torch.autograd.backward

        def tensor_backward(self_, *a, **kw):
            rec.close_loss_window()
            return orig_tensor_backward(self_, *a, **kw)

        def backward(*a, **kw):
            rec.close_loss_window()
            return orig_backward(*a, **kw)

        torch.Tensor.backward = tensor_backward  # type: ignore[method-assign]
        torch.autograd.backward = backward

    def _on_output_grad(self, grad):
        torch.autograd.Variable._execution_engine.queue_callback(self._backward_done)
        return grad

    def _backward_done(self) -> None:
        if not any(m.phase == "backward" for m in self.ledger.memory):
            self.snapshot("backward")
        self.phase = "between"

    # ---------------------------------------------------------------- states
    def model_params(self) -> list[nn.Parameter]:
        seen: dict[int, nn.Parameter] = {}
        for m in self.roots:
            for p in m.parameters():
                seen[id(p)] = p
        return list(seen.values())

    def opt_params(self) -> list[torch.Tensor]:
        out = []
        for opt in self.optimizers:
            for g in opt.param_groups:
                out.extend(g["params"])
        return out

    def grad_bytes(self) -> int:
        ts = [p.grad for p in self.model_params() + self.opt_params()]
        return unique_bytes(local_tensor(g) for g in ts if g is not None)

    def measure_states(self) -> None:
        mp = self.model_params()
        op = self.opt_params()
        params = mp if mp else op
        L = self.ledger
        L.params = unique_bytes(params)
        L.param_count = sum(local_tensor(p).numel() for p in params)
        L.trainable_params = sum(local_tensor(p).numel() for p in params if p.requires_grad)
        model_keys = {k[0] for k in (storage_key(p) for p in params) if k}
        master = [p for p in op if (k := storage_key(p)) and k[0] not in model_keys]
        L.master = unique_bytes(master)
        state = []
        for opt in self.optimizers:
            for st in opt.state.values():
                for v in st.values():
                    if isinstance(v, torch.Tensor):
                        state.append(v)
        L.optimizer = unique_bytes(state)
        L.optimizers = [type(o).__name__ for o in self.optimizers]

    # ---------------------------------------------------------------- the end
    def finish(self, status: str, error: Optional[str] = None) -> None:
        """Write the result, wait for the other ranks, and end the process now."""
        with self.lock:
            if self.done:
                return
            self.done = True
        L = self.ledger
        L.status = status
        if status != "ok" or L.phase is None:
            L.phase = self.phase if status != "ok" else "step"
        if error:
            L.error = error
        if status in ("error", "oom", "timeout", "no_step") and self.optimizers:
            try:
                if not L.params:
                    self.measure_states()
                    L.grads = self.grad_bytes()
            except Exception:  # noqa: BLE001
                pass
        L.max_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        try:
            self.close_process()
        except Exception:  # noqa: BLE001 - the report must be written whatever happens
            pass
        L.wall_s = round(time.time() - self.t0, 3)
        self.write()
        if status == "ok":
            _barrier(timeout=30.0)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0 if status in ("ok",) else 3)

    def write(self) -> None:
        try:
            import torch.distributed as dist
            if dist.is_available() and dist.is_initialized():
                self.ledger.rank = dist.get_rank()
                self.ledger.world_size = dist.get_world_size()
        except Exception:  # noqa: BLE001
            pass
        tmp = self.out_path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(self.ledger.model_dump(), f)
        os.replace(tmp, self.out_path)

    # ---------------------------------------------------------------- install
    def install(self) -> None:
        from torch.optim.optimizer import (register_optimizer_step_post_hook,
                                           register_optimizer_step_pre_hook)
        from torch.nn.modules.module import (register_module_forward_hook,
                                             register_module_forward_pre_hook)
        self.wrap_optimizer_init()
        self.wrap_backward()
        patch_checkpoint()
        self._handles += [
            register_optimizer_step_pre_hook(self.step_pre),
            register_optimizer_step_post_hook(self.step_post),
            register_module_forward_pre_hook(self.fwd_pre),
            register_module_forward_hook(self.fwd_post, always_call=True),
        ]
        if self.cuda:
            try:
                torch._C._cuda_attach_out_of_memory_observer(self._on_oom)
            except Exception:  # noqa: BLE001 - older / different builds
                pass
        if self.timeout:
            threading.Thread(target=self._watchdog, daemon=True).start()

    def _on_oom(self, device, alloc, device_alloc, device_free) -> None:
        # Called by the CUDA caching allocator before it raises: the script may swallow
        # the exception, so the OOM is recorded here, with the phase it happened in.
        self.finish("oom", f"CUDA out of memory: tried to allocate {alloc} bytes "
                           f"({device_alloc} allocated, {device_free} free) in {self.phase}")

    def _watchdog(self) -> None:
        time.sleep(self.timeout)
        self.finish("timeout", f"no optimizer step before the timeout "
                               f"(stuck in {self.phase})")

    def on_exception(self, exc: BaseException) -> None:
        status = "oom" if _is_oom(exc) else "error"
        line = "".join(traceback.format_exception_only(type(exc), exc)).strip().splitlines()
        try:
            self.ledger.traceback = user_frames(exc)
        except Exception:  # noqa: BLE001 - the report must be written whatever happens
            pass
        self.finish(status, line[-1] if line else type(exc).__name__)


# ---------------------------------------------------------------- helpers
_HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))     # the preflight package


def user_frames(exc: BaseException, keep: int = 8) -> list[str]:
    """The traceback of `exc` as `path:line in function: source`, innermost last, without
    preflight's frames and the interpreter's machinery (runpy, importlib); library frames
    (torch, transformers) are kept — the failing call often lies there. At most `keep`."""
    out = []
    for fs in traceback.extract_tb(exc.__traceback__):
        f = os.path.abspath(fs.filename)
        if f.startswith(_HERE + os.sep) or fs.filename.startswith("<frozen") \
                or os.path.basename(f) == "runpy.py":
            continue
        try:
            shown = os.path.relpath(f)
        except ValueError:
            shown = f
        if shown.startswith(".." + os.sep):
            # a library's frame: its path inside site-packages (torch/nn/modules/linear.py)
            parts = f.split(os.sep + "site-packages" + os.sep, 1)
            shown = parts[1] if len(parts) == 2 else f
        src = f": {fs.line.strip()}" if fs.line else ""
        out.append(f"{shown}:{fs.lineno} in {fs.name}{src}")
    return out[-keep:]


def _compiling() -> bool:
    try:
        return torch.compiler.is_compiling()
    except Exception:  # noqa: BLE001
        return False


def _in_backward() -> bool:
    """True while the autograd engine runs (activation checkpointing recomputes forwards
    inside backward; those are not new micro-steps)."""
    try:
        return torch._C._current_graph_task_id() != -1
    except Exception:  # noqa: BLE001
        return False


def _unpack(t):
    return t


def _rss() -> Optional[int]:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except Exception:  # noqa: BLE001
        return None


def _module_tensors(m: nn.Module):
    yield from m.parameters()
    yield from m.buffers()


def _first_grad_tensor(out):
    if isinstance(out, torch.Tensor):
        return out if out.requires_grad else None
    if isinstance(out, dict) or hasattr(out, "values") and callable(out.values):
        out = list(out.values())
    if isinstance(out, (list, tuple)):
        for o in out:
            t = _first_grad_tensor(o)
            if t is not None:
                return t
    return None


_VIEW_FNS = frozenset({"TBackward0", "ViewBackward0", "TransposeBackward0", "PermuteBackward0",
                       "ExpandBackward0", "UnsqueezeBackward0", "SqueezeBackward0",
                       "SliceBackward0", "AsStridedBackward0", "UnsafeViewBackward0",
                       "AliasBackward0", "SelectBackward0"})


def _is_autocast_copy(t: torch.Tensor) -> bool:
    """A low-precision copy of a parameter made by autocast (or a view of one): the chain
    view* → ToCopyBackward0 → AccumulateGrad of an nn.Parameter."""
    fn = t.grad_fn
    for _ in range(6):
        if fn is None:
            return False
        name = type(fn).__name__
        if name == "ToCopyBackward0":
            for nxt, _ in fn.next_functions:
                if nxt is not None and type(nxt).__name__ == "AccumulateGrad":
                    return isinstance(getattr(nxt, "variable", None), nn.Parameter)
            return False
        if name not in _VIEW_FNS or not fn.next_functions:
            return False
        fn = fn.next_functions[0][0]
    return False


def _barrier(timeout: float) -> None:
    """Wait for the other ranks to finish writing, but never hang on it."""
    try:
        import torch.distributed as dist
        if not (dist.is_available() and dist.is_initialized()):
            return
    except Exception:  # noqa: BLE001
        return
    th = threading.Thread(target=lambda: _safe(dist.barrier), daemon=True)
    th.start()
    th.join(timeout)


def _safe(fn):
    try:
        fn()
    except Exception:  # noqa: BLE001
        pass
