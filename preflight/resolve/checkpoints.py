"""A safetensors checkpoint's tensors, read from its headers only, and what they count.

A `.safetensors` file begins with an 8-byte little-endian length and a JSON header of that
length naming each tensor's dtype, shape and byte range; the weights follow. Only the
length and the header are read, never the weights: the exact shapes give the exact
parameter count and the dtype the weights are stored in, for any architecture, with or
without a parameter formula. A sharded checkpoint is `model.safetensors.index.json`
(its `weight_map` names the shards) and the shards' headers.

A bad file (truncated, a length field past the file or past `MAX_HEADER`, a header that is
not JSON or not tensors) is a reason in words, never an exception.
"""

from __future__ import annotations

import json
import os
from typing import Optional

from preflight import safe_read

#: the largest header read (safetensors itself refuses headers over 100 MB)
MAX_HEADER = 100_000_000
#: the largest index file read
MAX_INDEX = 16 * 1024 * 1024

SINGLE = "model.safetensors"
INDEX = "model.safetensors.index.json"

#: safetensors dtypes of parameters, and the checkpoint dtype word of each (None: none)
FLOAT_DTYPES = {"F64": None, "F32": "fp32", "F16": "fp16", "BF16": "bf16"}
#: integer tensors a checkpoint may store that are buffers, not parameters
BUFFER_NAMES = ("position_ids", "token_type_ids")

#: tensor name → (dtype, shape)
Tensors = dict[str, tuple[str, list[int]]]


def read_header(path: str) -> tuple[Optional[Tensors], Optional[str]]:
    """The tensors a safetensors file's header declares, or (None, why it is not read)."""
    try:
        size = os.stat(path).st_size
        head = safe_read.read_regular(path, 8, truncate=True)
    except (OSError, ValueError) as e:
        return None, f"cannot read {path}: {e}"
    if len(head) < 8:
        return None, f"{path} is truncated: {len(head)} bytes, not the 8-byte header length"
    n = int.from_bytes(head, "little")
    if n > MAX_HEADER:
        return None, (f"{path}: header length {n:,} bytes is over the {MAX_HEADER:,}-byte "
                      f"limit; not read")
    if n > size - 8:
        return None, (f"{path} is truncated: its header is {n:,} bytes, the file holds "
                      f"{max(size - 8, 0):,} after the length")
    try:
        raw = safe_read.read_regular(path, 8 + n, truncate=True)[8:]
        data = json.loads(raw.decode("utf-8"))
    except (OSError, ValueError, RecursionError) as e:   # UnicodeDecodeError is a ValueError
        return None, f"{path}: the header is not JSON ({e})"
    return tensors_of(data, path)


def tensors_of(data: object, where: str) -> tuple[Optional[Tensors], Optional[str]]:
    """A parsed header (`{name: {"dtype", "shape", "data_offsets"}, "__metadata__": …}`) as
    tensors, or (None, why it is not one)."""
    if not isinstance(data, dict):
        return None, f"{where}: the header is not a JSON object"
    out: Tensors = {}
    for name, info in data.items():
        if name == "__metadata__":
            continue
        shape = info.get("shape") if isinstance(info, dict) else None
        dtype = info.get("dtype") if isinstance(info, dict) else None
        if not isinstance(dtype, str) or not isinstance(shape, list) or not all(
                isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
            return None, f"{where}: tensor {name!r} has no dtype and shape"
        out[str(name)] = (dtype, list(shape))
    return out, None


def read_dir(folder: str) -> tuple[Optional[Tensors], Optional[str], Optional[str]]:
    """(tensors, the file they were read from, None) for the safetensors checkpoint in
    `folder`; (None, the file at fault, why) for a bad one; (None, None, why) for an index
    whose shards are not all there (a cache that holds only the index); (None, None, None)
    for none."""
    single = os.path.join(folder, SINGLE)
    if os.path.isfile(single):
        tensors, why = read_header(single)
        return tensors, single, why
    index = os.path.join(folder, INDEX)
    if not os.path.isfile(index):
        return None, None, None
    shards, why = shards_of(index)
    if shards is None:
        return None, index, why
    out: Tensors = {}
    for shard in shards:
        path = os.path.join(folder, shard)
        if not os.path.isfile(path):
            return None, None, f"{index}: shard {shard} is not in {folder}"
        tensors, why = read_header(path)
        if tensors is None:
            return None, path, why
        out.update(tensors)
    return out, index, None


def shards_of(index: str) -> tuple[Optional[list[str]], Optional[str]]:
    """The shard files an index's `weight_map` names, in order, or (None, why)."""
    try:
        data = json.loads(safe_read.read_text(index, MAX_INDEX))
    except (OSError, ValueError, RecursionError) as e:
        return None, f"cannot read {index}: {e}"
    wmap = data.get("weight_map") if isinstance(data, dict) else None
    if not isinstance(wmap, dict) or not wmap or not all(
            isinstance(v, str) and v and "/" not in v and v not in (".", "..")
            for v in wmap.values()):
        return None, f"{index}: no weight_map of tensor names to shard files"
    return sorted(set(wmap.values())), None


def tally(tensors: Tensors) -> tuple[Optional[int], Optional[str], str]:
    """(parameter count, the dtype most parameters are stored in, how it was counted) of a
    checkpoint's tensors; (None, None, why) when they are not plain parameters (a
    quantised checkpoint's packed integers or 8-bit floats count bytes, not weights)."""
    count, by_dtype, skipped = 0, {}, []
    for name, (dtype, shape) in tensors.items():
        n = 1
        for d in shape:
            n *= d
        if dtype in FLOAT_DTYPES:
            count += n
            by_dtype[dtype] = by_dtype.get(dtype, 0) + n
        elif name.rsplit(".", 1)[-1] in BUFFER_NAMES:
            skipped.append(name)
        else:
            return None, None, (f"tensor {name!r} is stored as {dtype}: a quantised "
                                f"checkpoint, whose tensors are not its parameters")
    if not by_dtype:
        return None, None, "the checkpoint holds no floating-point tensors"
    main = max(by_dtype, key=lambda k: by_dtype[k])
    how = f"{count:,} parameters in {len(tensors) - len(skipped):,} tensors"
    if len(by_dtype) > 1:
        how += " (" + ", ".join(f"{by_dtype[k]:,} {k}" for k in sorted(by_dtype)) + ")"
    if skipped:
        how += f"; buffers not counted: {', '.join(sorted(skipped)[:3])}"
    return count, FLOAT_DTYPES[main], how
