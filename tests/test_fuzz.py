"""Property: whatever a job file holds, `preflight check` ends — in bounded time, with a
report (findings for what it could not read), never an exception, a signal or a hang.

Generated Python, shell, JSON, YAML and TOML job files (`tests/fuzz_strategies.py`) go
through the in-process pipeline (a few hundred examples per kind) and, in batches, through
the real CLI in a subprocess. The budget is fixed and the examples derandomised so that CI
runs the same inputs every time; `PREFLIGHT_FUZZ_EXAMPLES` scales it, and `bench/fuzz.py`
runs long campaigns with each input isolated.
"""

import os
import tempfile
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import run_cli
from tests.fuzz_strategies import COMPANION, KINDS
from preflight.options import CheckOptions

EXAMPLES = int(os.environ.get("PREFLIGHT_FUZZ_EXAMPLES", "200"))
CLI_BATCHES = max(2, EXAMPLES // 40)
#: one input, in-process, on a loaded CI machine (a hang shows as this being exceeded)
SLOW_S = 10.0

FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                suppress_health_check=list(HealthCheck))


def _write(d: str, name: str, text: str) -> str:
    os.makedirs(os.path.join(d, ".git"), exist_ok=True)     # the project root: no walk above
    with open(os.path.join(d, "train.py"), "w", encoding="utf-8") as f:
        f.write(COMPANION)
    p = os.path.join(d, name)
    with open(p, "w", encoding="utf-8", errors="surrogatepass") as f:
        f.write(text)
    return p


def _check_in_process(name: str, text: str) -> None:
    from preflight import pipeline
    with tempfile.TemporaryDirectory(prefix="pf-fuzz-") as d:
        p = _write(d, name, text)
        cwd = os.getcwd()
        os.chdir(d)
        try:
            t = time.perf_counter()
            report = pipeline.run([p], CheckOptions(fixes=False))
            took = time.perf_counter() - t
            report.to_json()                     # the report itself is writable
        finally:
            os.chdir(cwd)
    assert took < SLOW_S, f"{name}: {took:.1f} s"


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_in_process_pipeline_survives(kind):
    @FUZZ
    @given(KINDS[kind])
    def prop(file):
        _check_in_process(*file)
    prop()


@settings(max_examples=CLI_BATCHES, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(st.lists(st.one_of(*KINDS.values()), min_size=5, max_size=10))
def test_real_cli_survives_a_directory_of_generated_files(files):
    with tempfile.TemporaryDirectory(prefix="pf-fuzz-cli-") as d:
        for i, (name, text) in enumerate(files):
            sub = os.path.join(d, f"job{i}")
            _write(sub, name, text)
        r = run_cli("check", "--format", "json", ".", cwd=d)
    assert r.returncode in (0, 1), (r.returncode, r.stderr[-2000:])
    assert "internal error" not in r.stderr and "Traceback" not in r.stderr
    assert r.stdout.lstrip().startswith("{")
