"""Settings made under a choice the reading cannot decide.

The evaluator runs both arms of an `if` (and every arm of a `match`) whose test it cannot
decide (`if args.fp16:` with the script's arguments unknown, `if torch.cuda.is_bf16_supported():`)
and tells the collector which undecided choices surround each setting it hands over
(`Evaluator.choices`). A setting made inside one arm is one alternative of the job, not what
it certainly runs. At the end of the file, per fact:

- the arms agree (`AdamW` in both, `model.to(bf16)` after the choice) — the value stands;
- they disagree (`autocast(fp16)` under `if args.fp16`, `autocast(bf16)` under `elif
  args.bf16`), or one arm sets a setting whose absence is itself a value (a
  `model.half()` under `if args.fp16` alone): the fact is unknown, its reason naming each
  alternative with its condition, the alternatives kept as its default;
- different optimizers built in the arms of a choice inside a loop (over the parameters:
  `GaLoreAdamW8bit` for the projected matrices, `Adam8bit` for the rest) all run: the
  optimizer is `other`, derived, with both named.

A setting made after the choice, outside it, is what the job runs (the last word), and
values read from the command line decide their branches before any of this applies.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional

from preflight.lang.python import V, plain, unk

if TYPE_CHECKING:
    from preflight.extract.py_patterns.collector import Patterns

#: facts whose absence in an arm is itself a value (no autocast is no mixed precision, no
#: cast leaves fp32 weights, no checkpointing call is none, no FSDP wrap is no FSDP: None):
#: a setting made in one arm only is still one alternative
ABSENCE_IS_VALUE = {"mixed_precision": "none", "param_dtype": "fp32",
                    "activation_checkpointing": "none", "fsdp": None, "lora": False}
#: the API a hint's other arm may take instead: a hint read under an undecided choice
#: (`DDP(...)` under `if strategy == "ddp"`) stands only when the file never names it
RIVALS = {"fsdp": re.compile(r"FullyShardedDataParallel|\bFSDP\b|fully_shard")}
#: tiers that are no setting of the script's training API (fallbacks, hints, module names)
_NOT_API = ("fallback", "hint", "global")


@dataclass(frozen=True)
class Where:
    """The undecided choices around one emitted setting, and whether it sits in a loop."""

    choices: tuple[str, ...]
    in_loop: bool
    #: made while walking a function no call reaches (its parameters unknown)
    unbound: bool = False


def where(ev: Any) -> Optional[Where]:
    """The choices around the evaluator's current statement; None outside any."""
    if ev is None or not getattr(ev, "choices", None):
        return None
    return Where(tuple(ev.choices), getattr(ev, "loops", 0) > 0,
                 bool(getattr(ev, "unbound", False)))


def _key(v: V) -> str:
    return repr(plain(v))


def _other_arm(choice: str) -> str:
    """`` `x` is true (line 3)`` ↔ `` `x` is false (line 3)`` (the `if`'s two arms)."""
    if " is true (line " in choice:
        return choice.replace(" is true (line ", " is false (line ", 1)
    if " is false (line " in choice:
        return choice.replace(" is false (line ", " is true (line ", 1)
    return ""


def settle(pats: Patterns) -> None:
    """Replace the settings of each fact that depend on an undecided choice by what can be
    said: the value, an unknown with its alternatives, or `other` for mixed optimizers."""
    by_name: dict[str, list[int]] = {}
    for i, (name, v, tier, _) in enumerate(pats.facts):
        if tier not in _NOT_API:
            by_name.setdefault(name, []).append(i)
    drop: set[int] = set()
    add: list[tuple[int, tuple]] = []
    for name, idx in by_name.items():
        known = [i for i in idx if pats.facts[i][1].known]
        cond = [i for i in known if pats.facts[i][3] is not None]
        if not cond or pats.facts[known[-1]][3] is None:
            # nothing chosen, or the last word is said outside every choice
            continue
        values = {_key(pats.facts[i][1]) for i in known}
        # an arm that sets the fact to a value known only at run time is an alternative too
        values |= {"\0unknown" for i in idx if not pats.facts[i][1].known
                   and pats.facts[i][3] is not None}
        has_absent = name in ABSENCE_IS_VALUE and not _covered(pats, cond, idx)
        if len(values) == 1 and not has_absent:
            continue
        last = pats.facts[cond[-1]][1]
        if name == "optimizer" and len(values) > 1 and all(pats.facts[i][3].in_loop for i in cond):
            shown = ", ".join(sorted({str(plain(pats.facts[i][1])) for i in known}))
            out = V("other", "derived", last.line, last.col,
                    f"different optimizers for different parameters ({shown}), chosen per "
                    f"parameter in a loop")
            out.path = last.path
        else:
            out = _unknown(pats, name, known, has_absent, last, idx)
        drop.update(known)
        # the script chooses between settings of its own: what runs is not known, and no
        # default read elsewhere (a loader's checkpoint dtype) stands in for it
        bound = not any(pats.facts[i][3].unbound for i in cond)
        add.append((cond[-1], (name, out, "overrules" if not out.known and bound else "api",
                               None)))
    text = getattr(pats.ev, "text_for_checks", "") or ""
    for i, (name, v, tier, w) in enumerate(pats.facts):
        rival = RIVALS.get(name)
        if tier == "hint" and w is not None and v.known and rival is not None and \
                rival.search(text):
            # a hint read in one arm of an undecided choice (`DDP(...)` under `if strategy
            # == ddp`) says nothing of the job that runs
            u = unk(f"{name}: {v.reason or plain(v)} only if {w.choices[-1]}", v.line, v.col)
            u.path = v.path
            u.default = {"alternatives": [plain(v)]}
            add.append((i, (name, u, tier, w)))
            drop.add(i)
    if not drop:
        return
    at = dict(add)
    facts = []
    for i, f in enumerate(pats.facts):
        if i in at:
            facts.append(at[i])
        if i not in drop:
            facts.append(f)
    pats.facts = facts


def _covered(pats: Patterns, cond: list[int], idx: list[int]) -> bool:
    """Whether every arm of the innermost choice around the conditional settings sets the
    fact (an `if` with an `else` that sets it too): then its absence never runs."""
    arms = {pats.facts[i][3].choices[-1] for i in cond}
    every = {c for i in idx if pats.facts[i][3] is not None for c in pats.facts[i][3].choices}
    return all(_other_arm(a) in every for a in arms) and all(_other_arm(a) for a in arms)


def _unknown(pats: Patterns, name: str, known: list[int], has_absent: bool,
             last: V, idx: list[int]) -> V:
    alts: list[Any] = []
    said: list[str] = []
    for i in known:
        v, w = pats.facts[i][1], pats.facts[i][3]
        p = plain(v)
        if p not in alts:
            alts.append(p)
        when = f"if {w.choices[-1]}" if w is not None else "otherwise"
        said.append(f"{p!r} {when}")
    for i in idx:
        v, w = pats.facts[i][1], pats.facts[i][3]
        if not v.known and w is not None:
            said.append(f"unknown if {w.choices[-1]} ({(v.reason or '')[:80]})")
    absent = ABSENCE_IS_VALUE.get(name)
    if has_absent and absent not in alts:
        alts.append(absent)
        said.append(f"{absent!r} otherwise")
    u = unk(f"{name} depends on a choice not known statically: {'; '.join(dict.fromkeys(said))}",
            last.line, last.col)
    u.path = last.path
    u.default = {"alternatives": alts}
    return u
