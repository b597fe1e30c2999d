"""`python -m preflight …`.

`python -m` puts the working directory first on sys.path. Run inside the repository being
checked, that would let the repository's own modules (a `click.py`, a `yaml/` folder)
shadow preflight's dependencies — analysed code imported, which the static path never
does. So the working directory is taken off sys.path before anything else is imported,
unless it is where preflight itself is installed from (a source checkout).
"""

import os
import sys


def _isolate_sys_path() -> None:
    home = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    cwd = os.getcwd()
    keep = []
    for p in sys.path:
        if p in ("", ".") or os.path.abspath(p) == cwd:
            if os.path.abspath(p or ".") == home:
                keep.append(p)
            continue
        keep.append(p)
    sys.path[:] = keep


_isolate_sys_path()

from preflight.cli import main  # noqa: E402 - sys.path is settled first

if __name__ == "__main__":
    main()
