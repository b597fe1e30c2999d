"""ZeRO as DeepSpeed allocates it: the buffers beside the sharded model states.

The model-state lines (states.py) hold what every ZeRO stage keeps for the whole run. On
top of them DeepSpeed's ZeRO optimizers allocate (deepspeed/runtime/zero/stage_1_and_2.py
and stage3.py; docs/estimate.md, "ZeRO as DeepSpeed allocates it"):

  stage 1 / 2
    - with `contiguous_gradients` (default true), a reduce bucket of `reduce_bucket_size`
      elements (default 5e8) in the 16-bit dtype, allocated when the backward starts and
      kept through the step; a second one with `overlap_comm` (default false for 1 / 2);
    - inside the step, each rank's gradient partition converted to fp32 (4 B × N / Nd)
      for the optimizer, next to the flattened 16-bit partition it came from (a copy
      under ZeRO-1, a view of the contiguous partition under ZeRO-2);
    - `allgather_bucket_size` allocates nothing: the updated 16-bit partitions are
      gathered in place into the flat parameter buffer.
  stage 3
    - with `contiguous_gradients`, one reduce bucket of `reduce_bucket_size` elements;
    - gathered parameters: the unit in use plus up to `stage3_prefetch_bucket_size`
      elements fetched ahead (default 5e7), never more than `stage3_max_live_parameters`
      (default 1e9) alive at once;
    - inside the step, one sub-group (`sub_group_size`, default 1e9 elements) of the
      gradient partition flattened (16-bit copy) and converted to fp32.

`"auto"` bucket sizes are filled by the Hugging Face Trainer from the model's hidden size
h: `reduce_bucket_size` = h², `stage3_prefetch_bucket_size` = 0.9·h².
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from preflight.physics.inputs import Inputs
from preflight.physics.result import LedgerLine
from preflight.units import fmt_int

#: DeepSpeed's defaults (deepspeed/runtime/zero/config.py); overlap_comm: true for stage 3
DEFAULTS: dict[str, Any] = {
    "reduce_bucket_size": 500_000_000, "allgather_bucket_size": 500_000_000,
    "stage3_prefetch_bucket_size": 50_000_000, "stage3_max_live_parameters": 1_000_000_000,
    "contiguous_gradients": True, "overlap_comm": None, "sub_group_size": 1_000_000_000,
}


@dataclass
class ZeroSettings:
    """The buffer settings in force, and how each was decided (for the lines' notes)."""

    values: dict[str, Any]
    how: dict[str, str] = field(default_factory=dict)    # key → "config" | "default" | "auto"

    def __getitem__(self, key: str) -> Any:
        return self.values[key]

    def said(self, *keys: str) -> str:
        """'reduce_bucket_size = 2e8 (config); overlap_comm = false (default)'."""
        def show(v: Any) -> str:
            if isinstance(v, bool):
                return "true" if v else "false"
            return "unknown" if v is None else f"{v:.3g}" if isinstance(v, (int, float)) else str(v)
        return "; ".join(f"{k} = {show(self.values[k])} ({self.how[k]})" for k in keys)


def settings(x: Inputs) -> ZeroSettings:
    """The job's `zero_optimization` buffer settings over DeepSpeed's defaults."""
    cfg = x.zero_buffers or {}
    out = ZeroSettings(values={})
    for key, default in DEFAULTS.items():
        val, how = cfg.get(key, default), "config" if key in cfg else "default"
        if key == "overlap_comm" and val is None:
            val = x.stage == 3
        if val == "auto":
            h = x.hidden
            fill = {"reduce_bucket_size": 1.0, "stage3_prefetch_bucket_size": 0.9}.get(key)
            if fill is not None:
                val, how = (None if h is None else int(fill * h * h)), \
                    ("auto: unknown without hidden" if h is None
                     else f"auto: {'' if fill == 1.0 else '0.9·'}h² filled by the HF Trainer")
            else:
                val, how = default if default is not None else x.stage == 3, "auto: default"
        if isinstance(DEFAULTS[key], bool) or key == "overlap_comm":
            val = bool(val) if isinstance(val, (bool, int)) else (
                str(val).lower() == "true" if isinstance(val, str) else val)
        elif val is not None:
            try:
                val = int(float(val))
            except (TypeError, ValueError):
                val, how = default, f"default ({key} = {val!r} not understood)"
        out.values[key], out.how[key] = val, how
    return out


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def zero_buffer_lines(x: Inputs, gb: int, wb: int, unit: Optional[int],
                      unit_f: str) -> tuple[list[LedgerLine], list[str]]:
    """DeepSpeed ZeRO's own buffers (the module docstring) for a job on ZeRO stage ≥ 1
    without FSDP. `gb` / `wb`: bytes of a gradient / weight element; `unit`: the largest
    unit ZeRO-3 gathers (its formula in `unit_f`). Returns the lines and missing facts."""
    s = settings(x)
    st, n = x.stage, x.trainable
    lines: list[LedgerLine] = []
    if n is None:
        return [LedgerLine(key="comm", label=f"ZeRO-{st} buffers", bytes=None,
                           note="unknown: needs trainable_params")], ["trainable_params"]
    mp = f" / {x.mp} (tp×pp)" if x.mp > 1 else ""
    n_mp = _ceil(n, x.mp)
    part = _ceil(n_mp, x.dp)
    rb = s["reduce_bucket_size"]
    if not s["contiguous_gradients"]:
        pass            # gradients are reduced from param.grad: no bucket is preallocated
    elif rb is None:
        lines.append(LedgerLine(key="comm", label=f"ZeRO-{st} gradient reduce bucket", bytes=None,
                                lifetime="gradients", note="unknown: reduce_bucket_size is "
                                "\"auto\" and the hidden size is unknown"))
    else:
        k = 2 if (st < 3 and s["overlap_comm"]) else 1
        lines.append(LedgerLine(
            key="comm", label=f"ZeRO-{st} gradient reduce bucket{'s' if k > 1 else ''} "
                              "(contiguous_gradients)",
            bytes=k * gb * rb, lifetime="gradients",
            formula=(f"{k} × " if k > 1 else "") + f"{gb} B × {fmt_int(rb)}",
            note=s.said("reduce_bucket_size", "contiguous_gradients", "overlap_comm")
            + ("; two buffers with overlap_comm" if k > 1 else "")))
    if x.offload in ("optimizer", "optimizer+params"):
        return lines, []            # the fp32 gradient partition is on the host
    if st < 3:
        copy = 0 if st == 2 and s["contiguous_gradients"] else gb
        why = ("a view of ZeRO-2's contiguous gradient partition" if not copy
               else "a flattened 16-bit copy of the partition, then its fp32 conversion")
        lines.append(LedgerLine(
            key="grads", label="fp32 gradient partition for the optimizer (inside the step)",
            bytes=(4 + copy) * part, lifetime="step",
            formula=f"{4 + copy} B × {fmt_int(n)}{mp} / {x.dp} (ZeRO-{st})",
            note=f"DeepSpeed converts each rank's gradient partition to fp32 for the "
                 f"optimizer: {why}; the whole partition in one parameter group assumed"))
    else:
        sub = min(s["sub_group_size"], part)
        lines.append(LedgerLine(
            key="grads", label="fp32 gradient of one sub-group for the optimizer (inside the step)",
            bytes=(4 + gb) * sub, lifetime="step",
            formula=f"({gb} + 4) B × min({fmt_int(s['sub_group_size'])}, "
                    f"{fmt_int(n)}{mp} / {x.dp})",
            note=s.said("sub_group_size") + "; the sub-group's gradients are flattened "
                 "(a 16-bit copy) and converted to fp32"))
    if st >= 3 and unit is not None:
        unit_tp = _ceil(unit, x.tp)
        pre, live = s["stage3_prefetch_bucket_size"], s["stage3_max_live_parameters"]
        if pre is None:
            lines.append(LedgerLine(key="comm", label="gathered parameters (unit in use and "
                                    "prefetched)", bytes=None, note="unknown: "
                                    "stage3_prefetch_bucket_size is \"auto\" and the hidden "
                                    "size is unknown"))
        else:
            elems = max(unit_tp, min(live, unit_tp + pre))
            lines.append(LedgerLine(
                key="comm", label="gathered parameters (unit in use and prefetched)",
                bytes=wb * elems,
                formula=f"{wb} B × max({fmt_int(unit_tp)}, min({fmt_int(live)}, "
                        f"{fmt_int(unit_tp)} + {fmt_int(pre)}))  [{unit_f}]",
                note=s.said("stage3_prefetch_bucket_size", "stage3_max_live_parameters")
                + "; per-block units assumed"))
        lines.append(LedgerLine(
            key="comm", label="unsharded gradient of one unit (before reduce-scatter)",
            bytes=gb * unit_tp, formula=f"{gb} B × {fmt_int(unit)}"
            + (f" / {x.tp} (tp)" if x.tp > 1 else "") + f"  [{unit_f}]"))
    return lines, []

