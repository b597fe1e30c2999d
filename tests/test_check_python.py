"""`preflight check` on Python scripts through the real CLI: nothing runs, bad input is a
located finding, the other files are still checked."""
import json
import os
import shutil

from tests.conftest import run_cli

FIX = os.path.join(os.path.dirname(__file__), "fixtures", "python")


def _json(r):
    assert "Traceback" not in r.stderr, r.stderr
    return json.loads(r.stdout)


def test_nothing_is_executed(tmp_path):
    for name in ("side_effects.py", "sidefx_mod.py"):
        shutil.copy(os.path.join(FIX, name), tmp_path / name)
    before = sorted(os.listdir(tmp_path))
    r = run_cli("check", "--format", "json", "--exit-zero", "side_effects.py", cwd=str(tmp_path),
                env={"PYTHONPATH": os.path.dirname(os.path.dirname(os.path.abspath(__file__)))})
    out = _json(r)
    assert r.returncode == 0
    assert out["jobs"][0]["facts"]["optimizer"]["value"] == "adamw"
    assert out["jobs"][0]["facts"]["optimizer"]["source"] == "side_effects.py:13:13"
    assert sorted(os.listdir(tmp_path)) == before        # no PREFLIGHT_MARKER_* file appeared
    assert not any(p.startswith("PREFLIGHT_MARKER") for p in os.listdir(os.getcwd()))


def test_launch_command_arguments_reach_the_script(tmp_path):
    shutil.copy(os.path.join(FIX, "accelerate_loop.py"), tmp_path / "train.py")
    r = run_cli("check", "--format", "json", "--exit-zero", "--", "accelerate", "launch",
                "train.py", "--mixed_precision", "bf16", cwd=str(tmp_path))
    facts = _json(r)["jobs"][0]["facts"]
    assert facts["mixed_precision"]["value"] == "bf16"
    assert facts["mixed_precision"]["origin"] == "cli"
    assert facts["micro_batch"] == {"value": 16, "origin": "literal", "source": "train.py:33:70"}


def test_bad_inputs_are_findings_and_other_files_go_on(tmp_path):
    (tmp_path / "broken.py").write_text("import torch\n\nx = (1,\ny = 2\n")
    (tmp_path / "empty.py").write_text("")
    (tmp_path / "latin1.py").write_bytes(b"import torch\nname = '\xe9t\xe9'\n")
    (tmp_path / "binary.py").write_bytes(b"\x7fELF\x00\x01\x02torch" * 100)
    big = "import torch\n" + "".join(f"v{i} = {i} * 2  # padding padding padding\n"
                                     for i in range(140_000))
    (tmp_path / "big.py").write_text(big)
    assert os.path.getsize(tmp_path / "big.py") > 5_000_000
    shutil.copy(os.path.join(FIX, "plain_loop.py"), tmp_path / "good.py")
    names = ["broken.py", "empty.py", "latin1.py", "binary.py", "big.py", "good.py"]
    r = run_cli("check", "--format", "json", "--exit-zero", *names, cwd=str(tmp_path))
    out = _json(r)
    assert r.returncode == 0
    by_entry = {j["entry"]: j for j in out["jobs"]}
    diags = {name: [(d["code"], d["line"]) for d in by_entry[name]["diagnostics"]]
             for name in by_entry}
    assert diags["broken.py"] == [("PF002", 3)]      # where the unclosed "(" opens
    assert diags["empty.py"] == []
    assert [c for c, _ in diags["latin1.py"]] == ["PF001"]
    assert diags["latin1.py"][0][1] == 2
    assert [c for c, _ in diags["binary.py"]] == ["PF001"]
    assert by_entry["good.py"]["facts"]["optimizer"]["value"] == "sgd_momentum"
    assert by_entry["good.py"]["facts"]["micro_batch"]["source"] == "good.py:17:60"
    # a 5 MB .py is generated code or data: reported at line 1, not analysed
    assert [(d["code"], d["severity"], d["line"]) for d in by_entry["big.py"]["diagnostics"]] \
        == [("PF001", "info", 1)]


def test_text_output_has_no_traceback_on_syntax_error(tmp_path):
    (tmp_path / "broken.py").write_text("import torch\ndef f(:\n")
    r = run_cli("check", "broken.py", cwd=str(tmp_path))
    assert r.returncode == 1
    assert "broken.py:2:" in r.stdout and "PF002" in r.stdout
    assert "Traceback" not in r.stderr
