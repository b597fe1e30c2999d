"""Small readers the pattern modules share: a dotted name's last part, the plain value of a
dtype-like argument and its dtype spelling, the names of models kept frozen."""

from __future__ import annotations

import re
from typing import Any, Optional

from preflight.lang.python import Dotted, V
from preflight.facts import spellings

#: receivers that name a model kept frozen beside the trained one (DPO / PPO / distillation)
FROZEN = re.compile(r"(^|[._])(ref|reference|reward|rm|teacher|frozen|ema)(_|$|\.|model)")


def last(qual: str) -> str:
    return qual.rsplit(".", 1)[-1]


def kind(v: Any) -> Any:
    """The plain value of a V holding a Dotted/str dtype etc."""
    if isinstance(v, V):
        v = v.value
    if isinstance(v, Dotted):
        return v.name
    return v


def dtype_of(v: V) -> Optional[str]:
    x = kind(v)
    if not isinstance(x, str):
        return None
    return spellings.dtype(x)
