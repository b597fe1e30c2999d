"""`$(( … ))` with bash's semantics: signed 64-bit wraparound, truncating division, a
budget; a long expression no longer drops its launcher. Expected values are bash's own
(and are checked against the bash on this machine when there is one)."""

import json
import shutil
import subprocess
import time

import pytest

from preflight.lang.shell.arith import ArithError, evaluate
from tests.conftest import run_cli

# expression → what bash 5 prints for `echo $((expression))`
BASH = {
    "2**62*8": 0,
    "-7/2": -3,
    "-7%2": -1,
    "7/-2": -3,
    "2**63": -9223372036854775808,
    "2**64": 0,
    "9**9**9": -2123029214124047543,
    "1<<63": -9223372036854775808,
    "-9223372036854775807-1": -9223372036854775808,
    "(-9223372036854775807-1)/-1": -9223372036854775808,
    "9223372036854775807+1": -9223372036854775808,
    "18446744073709551617": 1,
    "16#ff + 2#101 + 0x10 + 010": 255 + 5 + 16 + 8,
    "1 ? 2 : 3": 2,
    "0 || 5 && 1": 1,
    "~0 ^ 6 | 1": -7,
    "3 > 2 == 1": 1,
    "8 / 2 / 2": 2,
    "2 ** 3 ** 2": 512,
    "- - 5": 5,
    "!0 + !7": 1,
    "": 0,
}


@pytest.mark.parametrize("expr,value", sorted(BASH.items()))
def test_bash_arithmetic(expr, value):
    assert evaluate(expr) == value
    bash = shutil.which("bash")
    if bash:   # the machine's bash agrees (the table above was taken from it)
        out = subprocess.run([bash, "-c", f"echo $(({expr}))"], capture_output=True,
                             text=True, timeout=10).stdout.strip()
        assert out == str(value)


@pytest.mark.parametrize("expr,why", [
    ("1/0", "division by 0"),
    ("2**-1", "exponent less than 0"),
    ("1 << 64", "shift by 64"),
    ("(" * 300 + "1" + ")" * 300, "nested over 200"),
    ("+".join(["1"] * 5000), "over 4096 tokens"),
    ("1 +", "operand expected"),
    ("08", "value too great for base"),
])
def test_what_bash_rejects_or_the_budget_refuses_is_an_error_with_the_reason(expr, why):
    with pytest.raises(ArithError, match=why.replace("(", r"\(")):
        evaluate(expr)


def test_a_tower_is_computed_in_microseconds_not_forever():
    t = time.perf_counter()
    assert evaluate("3**(2**62)") == evaluate("3**4611686018427387904")
    with pytest.raises(ArithError, match="exponent less than 0"):   # 9**9**9 wrapped < 0
        evaluate("9**9**9**9")
    assert time.perf_counter() - t < 0.1


def test_long_expressions_keep_the_launcher(tmp_path):
    (tmp_path / "train.py").write_text(
        "import torch\nimport argparse\np = argparse.ArgumentParser()\n"
        "p.add_argument('--batch_size', type=int, default=4)\nargs = p.parse_args()\n")
    long = "+".join(["1"] * 1000)
    huge = "+".join(["1"] * 5000)
    (tmp_path / "run.sh").write_text(
        "#!/bin/bash\n"
        f"N=$(({long}))\n"
        f"K=$(({huge}))\n"
        "M=$((9**9**9))\n"
        "torchrun --nproc_per_node=$((N/500)) --nnodes=1 train.py --batch_size $((-7/2+5))\n")
    r = run_cli("check", "--format", "json", "run.sh", cwd=str(tmp_path))
    assert "internal error" not in r.stderr
    jobs = json.loads(r.stdout)["jobs"]
    assert [j["entry"] for j in jobs] == ["train.py"]
    facts = jobs[0]["facts"]
    assert facts["gpus_per_node"]["value"] == 2          # 1000 / 500
    assert facts["micro_batch"]["value"] == 2            # bash: -7/2 = -3, +5 = 2
