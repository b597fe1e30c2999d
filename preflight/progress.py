"""A one-line progress indicator on stderr, for long runs in a terminal only. Below the
stages that draw it (reading files, checking jobs): it knows nothing of what it counts."""

from __future__ import annotations

import os
import sys
import time
from typing import Iterable, Iterator, Optional, TextIO, TypeVar

T = TypeVar("T")

#: Fewer items than this finish too fast for an indicator to help...
MIN_ITEMS = 20
#: ...unless they take longer than this many seconds: then it is drawn from that moment.
DELAY = 2.0


def _is_tty(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def progress(iterable: Iterable[T], total: Optional[int] = None, *,
             stream: Optional[TextIO] = None, label: str = "checking",
             min_items: int = MIN_ITEMS, interval: float = 0.1,
             delay: float = DELAY) -> Iterator[T]:
    """Yield every item of `iterable`; while doing so, redraw `preflight: checking 12/40`
    on `stream` (stderr) when it is a terminal and `total` ≥ `min_items`, or once the
    items have taken `delay` seconds. The line is erased at the end, so the report that
    follows starts on a clean line. PREFLIGHT_NO_PROGRESS=1 turns it off."""
    stream = sys.stderr if stream is None else stream
    if total is None:
        try:
            total = len(iterable)  # type: ignore[arg-type]
        except TypeError:
            total = None
    if total is None or total < 2 or not _is_tty(stream) or os.environ.get("PREFLIGHT_NO_PROGRESS"):
        yield from iterable
        return
    start = time.monotonic()
    last = 0.0
    width = 0
    done = 0
    try:
        for item in iterable:
            now = time.monotonic()
            if (total >= min_items or now - start >= delay) and (now - last >= interval or not width):
                text = f"preflight: {label} {done}/{total}"
                width = max(width, len(text))
                stream.write("\r" + text.ljust(width))
                stream.flush()
                last = now
            yield item
            done += 1
    finally:
        if width:
            stream.write("\r" + " " * width + "\r")
            stream.flush()
