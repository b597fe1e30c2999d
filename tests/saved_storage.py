"""What autograd keeps for backward, counted by storage: the instrument the activation
tables are checked against (transformers models on the CPU)."""

from __future__ import annotations

import gc
import weakref

import torch


def saved_bytes(model, ids) -> int:
    """Bytes of the distinct storages the forward of `model` on `ids` saves for backward,
    the model's parameters left out."""
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    seen: dict[int, int] = {}

    def pack(t):
        st = t.untyped_storage()
        if st.data_ptr() not in params:
            seen[st.data_ptr()] = st.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model(input_ids=ids)
    return sum(seen.values())


def saved_bytes_alive(model, ids) -> int:
    """`saved_bytes` once the forward is over: a tensor saved by a node no path from the
    output reaches (a router's group selection, which yields only indices) is freed with
    that node, which a weak reference tells."""
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    seen: dict[int, list] = {}

    def pack(t):
        st = t.untyped_storage()
        if st.data_ptr() not in params:
            seen.setdefault(st.data_ptr(), []).append((st.nbytes(), weakref.ref(t)))
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = model(input_ids=ids).last_hidden_state
    gc.collect()
    total = sum(max(n for n, ref in refs if ref() is not None)
                for refs in seen.values() if any(ref() is not None for _, ref in refs))
    del out
    return total
