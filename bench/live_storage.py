"""An independent memory instrument for CPU: the bytes of every live tensor storage,
sampled after every dispatched op.

It knows nothing of preflight's ledger or of the dry run's accounting. A
`TorchDispatchMode` sees each op's inputs and outputs; every storage it has not seen is
recorded with its size, and a weak reference to the storage's Python object (torch keeps
one per StorageImpl while the storage lives) removes it when the storage is freed. After
each op the live total is compared with the running maximum, so transients that live for
one op (the logit gradients, a recompute's working set, an optimizer's temporaries) are
seen. Views share their base's storage and are counted once.

The current phase is a label the caller sets (`tracker.phase = "backward"`); the tracker
remembers the peak of each phase and the phase of the overall peak.

    with LiveStorages() as t:
        model = build()            # parameters created under the mode are counted
        t.phase = "forward"; loss = model(x).loss
        t.phase = "backward"; loss.backward()
    t.peak, t.peak_phase, t.phase_peaks
"""

from __future__ import annotations

import weakref
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves


class LiveStorages(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.live: dict[int, int] = {}        # StorageImpl address → bytes
        self.current = 0
        self.peak = 0
        self.peak_phase = ""
        self.phase = "setup"
        self.phase_peaks: dict[str, int] = {}
        self._refs: dict[int, Any] = {}

    # ------------------------------------------------------------------ bookkeeping
    def _freed(self, key: int) -> None:
        n = self.live.pop(key, None)
        self._refs.pop(key, None)
        if n is not None:
            self.current -= n

    def track(self, t: torch.Tensor) -> None:
        if t.device.type == "meta":
            return
        try:
            st = t.untyped_storage()
        except (RuntimeError, NotImplementedError):     # sparse and other storage-less tensors
            return
        key = st._cdata
        n = st.nbytes()
        old = self.live.get(key)
        if old is not None:
            if old != n:                                  # resized in place (out= ops)
                self.live[key] = n
                self.current += n - old
            return
        self.live[key] = n
        self.current += n
        self._refs[key] = weakref.ref(st, lambda _r, k=key: self._freed(k))

    def sample(self) -> None:
        if self.current > self.phase_peaks.get(self.phase, -1):
            self.phase_peaks[self.phase] = self.current
        if self.current > self.peak:
            self.peak, self.peak_phase = self.current, self.phase

    def reset_peak(self) -> None:
        """Start a new measurement window (e.g. the steady-state step) from what is live."""
        self.peak, self.peak_phase, self.phase_peaks = self.current, self.phase, {}

    # ------------------------------------------------------------------ the mode
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        for a in tree_leaves((args, kwargs or {})):
            if isinstance(a, torch.Tensor):
                self.track(a)
        out = func(*args, **(kwargs or {}))
        for o in tree_leaves(out):
            if isinstance(o, torch.Tensor):
                self.track(o)
        self.sample()
        return out
