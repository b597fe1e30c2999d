"""Terminal manners of the text output: short first lines, words not jargon, a shared fix
printed once, --statistics, --quiet, concise's summary, and a demo without a make error."""

import re
import subprocess

from tests.conftest import ROOT, run_cli

EXAMPLES = ["examples/7b-full-finetune-ddp/", "examples/7b-zero3/",
            "examples/long-context-1.3b/", "examples/small-model-64-gpus/"]
PATH_AT_START = re.compile(r"^(\S+?\.(?:py|json|ya?ml|toml|sh))(?::\d+)*: ")


def test_no_line_over_120_characters_except_paths():
    r = run_cli("check", *EXAMPLES)
    assert r.returncode == 1
    lines = r.stdout.splitlines()
    assert len(lines) > 20
    for ln in lines:
        m = PATH_AT_START.match(ln)
        rest = len(ln) - (len(m.group(1)) if m else 0)
        assert rest <= 120, ln


def test_first_line_of_a_finding_and_details_under_it():
    out = run_cli("check", "examples/7b-full-finetune-ddp").stdout
    first = [ln for ln in out.splitlines() if ": PF102 " in ln][0]
    assert len(first) <= 120
    i = out.splitlines().index(first)
    assert out.splitlines()[i + 1].startswith("    training holds 100.4 GiB of model states")


def test_words_not_internal_jargon():
    out = run_cli("check", *EXAMPLES).stdout
    assert not re.search(r"\bcase [ABC]\b|case-[ABC]|misconception \d", out), out


def test_a_shared_fix_is_printed_once():
    out = run_cli("check", "examples/7b-full-finetune-ddp").stdout
    fixes = [ln for ln in out.splitlines() if ln.startswith("  fix: ")]
    assert len(fixes) == 3 and fixes[0].startswith("  fix: shard the states: ")
    assert out.count("  fix: shard the states: ") == 1
    assert fixes[1:] == ["  fix: the same as for PF102 (line 7) above"] * 2


def test_statistics():
    r = run_cli("check", "--statistics", *EXAMPLES)
    assert r.returncode == 1
    assert r.stdout.splitlines() == [
        "1  PF101  error    state-exceeds-capacity",
        "1  PF102  warning  weights-fit-states-do-not",
        "1  PF105  warning  mixed-precision-states",
        "1  PF106  warning  sharding-without-state-problem",
        "1  PF107  error    activations-exceed-capacity",
        "1  PF301  warning  low-scaling-efficiency",
        "Found 6 findings (2 errors, 4 warnings) in 4 jobs.",
    ]


def test_quiet_prints_findings_only():
    r = run_cli("check", "-q", "examples/7b-zero3")
    assert (r.returncode, r.stdout) == (0, "")
    r = run_cli("check", "--quiet", "examples/7b-full-finetune-ddp")
    assert r.returncode == 1
    assert "Found" not in r.stdout and "[" not in r.stdout.splitlines()[-1]
    assert r.stdout.count(": PF1") == 3


def test_concise_says_one_line_even_when_clean():
    r = run_cli("check", "--format", "concise", "examples/7b-zero3")
    assert (r.returncode, r.stdout) == (0, "All checks passed (1 job).\n")
    r = run_cli("check", "--format", "concise", "examples/7b-full-finetune-ddp")
    assert r.stdout.splitlines()[-1] == "Found 3 findings (1 error, 2 warnings) in 1 job."
    assert len(r.stdout.splitlines()) == 4


def test_make_demo_recipe_succeeds_when_findings_are_expected():
    # --no-print-directory: under an outer make (CI runs `make test`) make -n would end
    # with "Leaving directory"
    recipe = subprocess.run(["make", "--no-print-directory", "-n", "demo"], cwd=ROOT,
                            capture_output=True, text=True,
                            timeout=60).stdout.strip().splitlines()[-1]
    assert "preflight check examples/7b-full-finetune-ddp" in recipe
    cp = subprocess.run(["sh", "-c", recipe], cwd=ROOT, capture_output=True, text=True,
                        timeout=120, env={"PATH": "/usr/bin:/bin", "NO_COLOR": "1"})
    assert cp.returncode == 0, cp.stderr
    assert "Found 3 findings" in cp.stdout
