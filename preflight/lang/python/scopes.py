"""Names and frames: where a name is looked up (the frame of the function being run, the
frames it closes over, the module's globals) and bound; config-like names bound inside
functions are remembered for the facts a script computes there.
"""

from __future__ import annotations

import re
from typing import Any, Optional

from preflight.lang.python.values import MISSING, V

#: names that look like a training setting (kept when bound inside a function)
CONFIG_NAME = re.compile(
    r"(?i)(.*batch.*|.*accum.*|.*seq.*len.*|block_size|max_length|context_length|ctx_len)$")


class ScopesMixin:
    """Looking names up and binding them in the current frame."""

    def lookup(self, name: str) -> Any:
        if self.frames:
            f: Optional[dict] = self.frames[-1]
            hops = 0
            while f is not None and hops < 8:
                if name in f:
                    return f[name]
                f, hops = f.get("\0closure"), hops + 1
        return self.globals.get(name, MISSING)

    def bind(self, name: str, val: Any) -> None:
        if self.frames:
            self.frames[-1][name] = val
            if not self.unbound and isinstance(val, V) and CONFIG_NAME.match(name):
                self.local_config[name] = val
        else:
            self.globals[name] = val

    def scope(self) -> dict[str, Any]:
        return self.frames[-1] if self.frames else self.globals
