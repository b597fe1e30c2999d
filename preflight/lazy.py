"""The one way a preflight module defers importing another of preflight's modules.

Imports sit at the top of every module. A few modules are dear to import and needed only
on some runs (libcst for `--fix`, the report writers of other formats, the dry run's
torch side): a `preflight check` of one script should not pay for them. Such a module is
named at the top, beside the other imports, as

    verify = lazy("preflight.fix.verify")

and is imported on first attribute access (`verify.check_edit(...)`), through the
standard library's `importlib.util.LazyLoader`. The dependency stays visible where
readers and tools look for it: the architecture test (tests/test_architecture.py) reads
every `lazy("…")` at module level and checks it against the same layers and the same
no-cycle rule as a plain import, and docs/architecture.md lists them.

Only a module can be deferred, never a package: a package's submodule imported by its full
name while the package waits would run twice. Parent packages of the named module are
imported at once (that is how a module is found); their `__init__` modules are kept light
for that reason.
"""

from __future__ import annotations

import importlib.util
import sys
import threading
from types import ModuleType

# reentrant: finding a module imports its parent packages, whose own lazy() names come first
_LOCK = threading.RLock()


def lazy(name: str) -> ModuleType:
    """The module `name`, imported on first attribute access (at once if it already is).

    The same module object is what a later plain `import name` returns, so the first
    attribute access from anywhere loads it exactly once."""
    with _LOCK:
        mod = sys.modules.get(name)
        if mod is not None:
            return mod
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        mod = sys.modules.get(name)
        if mod is not None:
            # finding it imported its parent package, which named it itself meanwhile
            return mod
        if spec.submodule_search_locations is not None:
            # a package's submodule imported by its full name while the package waits would
            # run twice (two copies of its classes): name the module, not its package
            raise ValueError(f"lazy() takes a module, not the package {name!r}")
        loader = importlib.util.LazyLoader(spec.loader)
        spec.loader = loader
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        loader.exec_module(mod)
    parent, _, child = name.rpartition(".")
    if parent and parent in sys.modules:
        # `import a.b` binds b on a; a lazy module is bound the same way on first use
        # elsewhere, and binding it now keeps `a.b` and `lazy("a.b")` one object
        setattr(sys.modules[parent], child, mod)
    return mod
