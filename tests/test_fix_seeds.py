"""`check --diff` / `--fix` on every bundled example that does not fit (or scales badly)
and on every seed scenario (the six misconceptions, cases A/B/C), through the real CLI in
a git repository: the diff equals its golden file, `git apply` takes it, and afterwards
`preflight check` reports the job as fitting with the same global batch."""

import json
import os
import shutil
import subprocess

import pytest

from preflight.rules._common import hf_cli_launch, hf_cli_script
from tests.conftest import ROOT, run_cli

EXAMPLES = os.path.join(ROOT, "examples")
GOLDEN = os.path.join(ROOT, "tests", "fixtures", "fix")
#: the findings that say a job does not fit (or only inside the headroom)
DOES_NOT_FIT = {"PF101", "PF102", "PF104", "PF105", "PF107", "PF109", "PF112"}
UPDATE = bool(os.environ.get("PREFLIGHT_UPDATE_GOLDEN"))


def _git(d, *args):
    subprocess.run(["git", *args], cwd=d, check=True, capture_output=True,
                   env=dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t",
                            GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t"))


def _example(name):
    def make(d):
        shutil.copytree(os.path.join(EXAMPLES, name), d, dirs_exist_ok=True)
        return ["."]
    return make


def _batch_one(d):
    _example("7b-full-finetune-ddp")(d)
    p = os.path.join(d, "train.py")
    src = open(p).read().replace("per_device_train_batch_size=4", "per_device_train_batch_size=1")
    open(p, "w").write(src)
    return ["."]


def _bf16_launch(d):
    open(os.path.join(d, "train.py"), "w").write(hf_cli_script("meta-llama/Llama-2-7b-hf"))
    open(os.path.join(d, "launch.sh"), "w").write(
        hf_cli_launch("torchrun --nproc_per_node 8", "--bf16 True"))
    return ["--gpu", "H100-80GB", "launch.sh"]


def _rule_example(module, cls):
    def make(d):
        import importlib
        ex = getattr(importlib.import_module(f"preflight.rules.{module}"), cls).INVALID[0]
        for name, text in ex.files.items():
            open(os.path.join(d, name), "w").write(text)
        return ["--gpu", ex.gpu, "--", *ex.command.split()]
    return make


SCENARIOS = {
    # misconception 1, case A: full fine-tune of a 7B model under DDP
    "7b-full-finetune-ddp": _example("7b-full-finetune-ddp"),
    # misconception 4, case B: ZeRO-3 on an activation problem
    "long-context-1.3b": _example("long-context-1.3b"),
    # misconception 5: 125M on 64 GPUs, micro-batch 1
    "small-model-64-gpus": _example("small-model-64-gpus"),
    # misconception 2: batch 1 does not shrink the states
    "batch-one": _batch_one,
    # misconception 3: bf16 given on the launcher line as the fix
    "bf16-launch": _bf16_launch,
    # misconception 6: inside the headroom margin
    "inside-headroom": _rule_example("pf112_inside_headroom", "InsideHeadroom"),
    # case C: the logits of a 256k vocabulary
    "single-tensor": _rule_example("pf109_single_tensor_exceeds_capacity",
                                   "SingleTensorExceedsCapacity"),
}


def _split(args):
    """(options and paths, the command after --)."""
    if "--" in args:
        i = args.index("--")
        return args[:i], args[i:]
    return args, []


def _check_json(d, args):
    head, cmd = _split(args)
    r = run_cli("check", "--format", "json", "--exit-zero", *head, *cmd, cwd=d)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def _jobs(data):
    return [j for j in data["jobs"] if j.get("ledger", {}).get("lines")]


def _global_batch(job):
    f = {k: v["value"] for k, v in job["facts"].items()}
    ws = f.get("world_size") or 1
    mp = (f.get("tp") or 1) * (f.get("pp") or 1)
    return f["micro_batch"] * (f.get("grad_accum") or 1) * (ws // mp)


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_fix_makes_the_job_fit(name, tmp_path):
    d = str(tmp_path / name)
    os.makedirs(d)
    args = SCENARIOS[name](d)
    _git(d, "init", "-q", ".")
    _git(d, "add", "-A")
    _git(d, "commit", "-qm", "job")
    before = _jobs(_check_json(d, args))
    assert before and any(j["ledger"]["verdict"] != "fits" or any(
        x["code"].startswith("PF3") for x in j["diagnostics"]) for j in before)
    batches = {j["entry"]: _global_batch(j) for j in before}

    fixed = str(tmp_path / "fixed")
    shutil.copytree(d, fixed)                  # the same repository, for --fix

    head, cmd = _split(args)
    r = run_cli("check", "--diff", *head, *cmd, cwd=d)
    assert r.returncode == 1, r.stderr
    # the edit was re-checked before it was shown: the job fits after it, same batch
    after_lines = [ln for ln in r.stderr.splitlines() if "after the edit" in ln]
    assert after_lines and all(" fits on " in ln and "unchanged" in ln for ln in after_lines)
    patch = r.stdout
    golden = os.path.join(GOLDEN, f"{name}.diff")
    if UPDATE:
        os.makedirs(GOLDEN, exist_ok=True)
        open(golden, "w").write(patch)
    assert patch == open(golden).read()

    with open(os.path.join(str(tmp_path), "fix.patch"), "w") as fh:
        fh.write(patch)
    _git(d, "apply", "--check", os.path.join(str(tmp_path), "fix.patch"))
    _git(d, "apply", os.path.join(str(tmp_path), "fix.patch"))

    after = _jobs(_check_json(d, args))
    for j in after:
        assert j["ledger"]["verdict"] == "fits", (j["entry"], j["ledger"]["verdict"])
        assert _global_batch(j) == batches[j["entry"]]
        assert not [x for x in j["diagnostics"] if x["code"] in DOES_NOT_FIT
                    or x["code"].startswith("PF3")], j["diagnostics"]
    # nothing more to do
    r = run_cli("check", "--diff", *head, *cmd, cwd=d)
    assert r.stdout == "" and r.returncode == 0, r.stdout

    # --fix writes exactly what the diff showed, after re-checking it
    r = run_cli("check", "--fix", *head, *cmd, cwd=fixed)
    assert "preflight: fixed " in r.stderr and "not fixed" not in r.stderr, r.stderr
    assert [ln for ln in r.stderr.splitlines() if "after the edit" in ln] == after_lines
    for name in os.listdir(d):
        if os.path.isfile(os.path.join(d, name)):
            assert open(os.path.join(fixed, name)).read() == \
                open(os.path.join(d, name)).read(), name


def test_fix_writes_what_diff_shows(tmp_path):
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    for d in (a, b):
        _example("7b-full-finetune-ddp")(d)
        _git(d, "init", "-q", ".")
        _git(d, "add", "-A")
        _git(d, "commit", "-qm", "job")
    r = run_cli("check", "--diff", ".", cwd=a)
    with open(str(tmp_path / "p"), "w") as fh:
        fh.write(r.stdout)
    _git(a, "apply", str(tmp_path / "p"))
    r = run_cli("check", "--fix", ".", cwd=b)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "fixed train.py" in r.stderr and "All checks passed" in r.stdout
    for f in ("train.py", "launch.sh"):
        assert open(os.path.join(a, f)).read() == open(os.path.join(b, f)).read()


def test_fix_rechecks_its_edit_and_refuses_one_that_does_not_fit(tmp_path):
    """An edit is judged on the job as the edited files make it, before anything is
    written: one that does not fit, or changes the global batch, is refused with why."""
    from preflight import api
    from preflight.fix import fix_job
    from preflight.fix.verify import recheck

    for name in ("7b-full-finetune-ddp", "7b-zero3"):
        _example(name)(str(tmp_path / name))
    cwd = os.getcwd()
    os.chdir(str(tmp_path))
    try:
        (ddp,) = api.check(["7b-full-finetune-ddp"]).jobs
        (z3,) = api.check(["7b-zero3"]).jobs
        before = {p: open(p).read() for p in ddp.job.files + z3.job.files}
        bigger = fix_job(ddp.job, {"micro_batch": 8}, "micro-batch 8")
        batch = fix_job(z3.job, {"micro_batch": 2}, "micro-batch 2")
        good = ddp.fix
        checks = recheck([(ddp, bigger), (z3, batch)], lambda tree: api.check(
            [tree("7b-full-finetune-ddp"), tree("7b-zero3")]))
        assert [c.ok for c in checks] == [False, False]
        assert checks[0].verdict == "does not fit"
        assert checks[0].why == "the edit does not make it fit; nothing written"
        assert checks[1].verdict == "fits" and checks[1].batch_after != checks[1].batch_before
        assert "global batch" in checks[1].why and "global batch" in checks[1].line()
        (ok,) = recheck([(ddp, good)], lambda tree: api.check([tree("7b-full-finetune-ddp")]))
        assert ok.ok and ok.verdict == "fits" and ok.batch_after == ok.batch_before
        assert ok.line().startswith("after the edit 7b-full-finetune-ddp/train.py fits on ")
        # the re-checks ran in a temporary tree: the files here are untouched
        assert {p: open(p).read() for p in before} == before
    finally:
        os.chdir(cwd)
