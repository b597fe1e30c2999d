"""What bitsandbytes' quantised matmuls keep for backward, by the version that runs.

A frozen quantised linear needs no weight gradient, but its autograd Function decides
what it keeps (bitsandbytes/autograd/_functions.py):

- 4-bit (`MatMul4Bit`, QLoRA): before 0.43.2 the forward stores its input on the context
  whenever the input or the weight requires grad (`ctx.tensors = (A, B)`, 0.42.0 line
  523); 0.43.2 keeps only the quantised weight (`ctx.tensors = (None, B)`, "fix QLoRA mem
  bug: delete useless buffered activation", #1270, 2024-07-16). So before 0.43.2 each
  4-bit linear keeps its input until its backward, like a 16-bit linear whose weight
  trains.
- 8-bit (`MatMul8bitLt`, LLM.int8): every version keeps its input when the input requires
  grad (`ctx.tensors = (CAt, subA, A)`). Before 0.45.0 the forward also computes the
  int8 transposed copy of the input for a weight gradient (`F.double_quant`, 0.44.1) and
  keeps it as well: 1 byte per element, per linear; 0.45.0 ("LLM.int8() Refactoring:
  Part 1", #1401) computes it only when the weight requires grad (`CAt = None`). The
  per-column scales of that copy (`SCAt`, 4 bytes per input feature) and the outlier
  columns (`subA`, as many as the data has above the threshold) are not counted.

The context's tensors bypass autograd's saved-tensor hooks, so non-reentrant activation
checkpointing does not free them (reentrant checkpointing runs the forward without
grad, where they are not kept); the ledger assumes reentrant checkpointing and says so.

The version is a fact (`bitsandbytes_version`: `--bitsandbytes`, or the job's nearest
requirement pin); when it is not known the current behaviour (≥ 0.45.0) is assumed and
the ledger says what the older versions add.
"""

from __future__ import annotations

import re
from typing import Optional

#: the first release whose MatMul4Bit keeps no input (#1270)
INPUT_DROPPED_4BIT = (0, 43, 2)
#: the first release whose MatMul8bitLt keeps no int8 copy of the input for a frozen weight
CAT_DROPPED_8BIT = (0, 45, 0)


def parse_version(text: Optional[str]) -> Optional[tuple[int, int, int]]:
    """(major, minor, micro) of a version string ("0.42.0", "==0.43.1", "0.45.0.dev0"),
    or None when it names none."""
    if not isinstance(text, str):
        return None
    m = re.match(r"\s*(?:==|===|~=)?\s*v?(\d+)(?:\.(\d+))?(?:\.(\d+))?", text)
    if not m:
        return None
    return int(m.group(1)), int(m.group(2) or 0), int(m.group(3) or 0)


def keeps_input(base_bits: int, version: Optional[str]) -> bool:
    """Whether a frozen `base_bits`-bit linear keeps its input for backward (an unknown
    version: the current behaviour)."""
    if base_bits == 8:
        return True
    if base_bits != 4:
        return False
    v = parse_version(version)
    return v is not None and v < INPUT_DROPPED_4BIT


def keeps_int8_copy(base_bits: int, version: Optional[str]) -> bool:
    """Whether a frozen 8-bit linear also keeps the int8 transposed copy of its input."""
    v = parse_version(version)
    return base_bits == 8 and v is not None and v < CAT_DROPPED_8BIT


def version_matters(base_bits: int) -> tuple[int, int, int]:
    """The release before which a `base_bits` base keeps more (see the module)."""
    return INPUT_DROPPED_4BIT if base_bits == 4 else CAT_DROPPED_8BIT


def dotted(v: tuple[int, int, int]) -> str:
    return ".".join(str(n) for n in v)
