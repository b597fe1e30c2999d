"""Findings and reports quote the activations alive at the phase that sets the peak, not
every activation line added up (lines alive in different phases are never all there)."""

import json

from tests.conftest import run_cli


def _check_json(path: str) -> dict:
    r = run_cli("check", path, "--format", "json")
    assert r.returncode == 1, r.stderr
    return json.loads(r.stdout)


def test_at_peak_bytes_add_up_to_the_peak():
    job = _check_json("examples/long-context-1.3b")["jobs"][0]
    led = job["ledger"]
    at = led["at_peak_bytes"]
    assert sum(at.values()) == led["peak_bytes"]
    # every activation line added up is more than the peak itself: the logits while the
    # loss is computed and the logit gradients never coexist
    assert led["per_gpu_bytes"]["activations"] > led["peak_bytes"] > at["activations"]
    lines = [ln for ln in led["lines"] if ln["key"] == "activations"]
    alive = ("saved", "logits", "loss") if led["peak_phase"] == "loss backward" else ()
    assert led["peak_phase"] == "loss backward"
    assert at["activations"] == sum(ln["bytes"] for ln in lines if ln["lifetime"] in alive)


def test_pf106_and_pf107_quote_the_activations_at_the_peak():
    out = _check_json("examples/long-context-1.3b")
    led = out["jobs"][0]["ledger"]
    act = led["at_peak_bytes"]["activations"]
    found = {d["code"]: d for j in out["jobs"] for d in j["diagnostics"]}
    found.update({d["code"]: d for d in out["diagnostics"]})
    assert (f"activations: {act / 2**30:.1f} GiB per GPU of a {led['peak_bytes'] / 2**30:.1f} "
            f"GiB peak (loss backward)") in found["PF106"]["message"]
    assert f"activations need {act / 2**30:.1f} GiB" in found["PF107"]["message"]
    assert "at the peak (loss backward)" in found["PF107"]["message"]


def test_markdown_table_rows_add_up_to_the_predicted_peak():
    r = run_cli("check", "examples/long-context-1.3b", "--format", "markdown")
    rows = [ln for ln in r.stdout.splitlines() if ln.startswith("| ")]
    assert rows[0] == "| per GPU at the peak (loss backward) | GiB | bytes | of capacity |"
    body = {ln.split(" | ")[0][2:]: int(ln.split(" | ")[2].replace(",", ""))
            for ln in rows[1:] if ln.split(" | ")[2].replace(",", "").isdigit()}
    parts = ("parameters", "gradients", "optimizer state", "master weights", "activations",
             "communication buffers", "runtime overhead")
    assert sum(body[p] for p in parts) == body["**predicted peak**"]
