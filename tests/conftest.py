import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(os.path.dirname(ROOT), "shared")


def run_cli(*args: str, cwd: str | None = None, input: str | None = None,
            env: dict | None = None) -> subprocess.CompletedProcess:
    """Run the real CLI in a subprocess (python -m preflight)."""
    e = dict(os.environ)
    e.pop("PREFLIGHT_DEBUG", None)
    e["NO_COLOR"] = "1"
    if env:
        e.update(env)
    return subprocess.run([sys.executable, "-m", "preflight", *args], cwd=cwd or ROOT,
                          input=input, capture_output=True, text=True, env=e, timeout=120)


@pytest.fixture
def cli():
    return run_cli
