"""bench/gpu_accuracy.py's table: an error column per tier (tensors against
max_memory_allocated, reserved against max_memory_reserved, process against NVML's process
memory), median and max |error| per tier, and under-estimates by more than 5 % counted per
tier — from a fixture result with known numbers."""
import importlib.util
import json
import os

from tests.conftest import ROOT

FIXTURE = os.path.join(ROOT, "tests", "fixtures", "gpu_accuracy", "three_tiers.json")


def bench():
    spec = importlib.util.spec_from_file_location(
        "gpu_accuracy", os.path.join(ROOT, "bench", "gpu_accuracy.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_errors_medians_and_under_estimates_per_tier():
    g = bench()
    d = json.load(open(FIXTURE))
    rows = d["rows"]
    for r in rows:
        g.tier_errors(r)
    assert [(r.get("error"), r.get("reserved_error"), r.get("process_error")) for r in rows] == [
        (0.05, -0.0833, 0.03), (-0.05, 0.02, -0.1667), (0.1, 0.0, 0.05), (None, None, None)]
    s = g.summary(rows)
    assert s["tiers"] == {
        "tensors": {"against": "max_memory_allocated", "compared": 3, "abs_error_median": 0.05,
                    "abs_error_max": 0.1, "under_5pct": 0},     # −5.0 % is not more than 5 %
        "reserved": {"against": "max_memory_reserved", "compared": 3,
                     "abs_error_median": 0.02, "abs_error_max": 0.0833, "under_5pct": 1},
        "process": {"against": "NVML process memory", "compared": 3,
                    "abs_error_median": 0.05, "abs_error_max": 0.1667, "under_5pct": 1}}
    assert (s["peak_abs_error_median"], s["peak_abs_error_max"]) == (0.05, 0.1)
    md = g.markdown(rows, s, d["environment"]).splitlines()
    assert md[:9] == ["device: cuda", "", "- torch: 2.13.0+cu128", "- cuda: 12.8",
                      "- gpu: NVIDIA H200", "- driver: 570.124.06",
                      "- PYTORCH_CUDA_ALLOC_CONF: expandable_segments:True",
                      "- CUBLAS_WORKSPACE_CONFIG: not set", ""]
    table = {line.split(" | ")[0]: line for line in md if line.startswith("| ")}
    # 10000 / 10500 MiB = 9.77 / 10.25 GiB; 12000 / 11000 = 11.72 / 10.74; 10000 / 10300
    assert table["| 0"] == ("| 0 | llama-1b | bf16-mixed | adamw | none | sdpa | 4×1024 | ok | "
                            "12.5 | 9.77 | 10.25 | +5.0% | 11.72 | 10.74 | -8.3% | 9.77 | "
                            "10.06 | +3.0% | — |")
    assert table["| 1"].endswith("| 19.53 | 18.55 | -5.0% | 19.53 | 19.92 | +2.0% | 23.44 | "
                                 "19.53 | -16.7% | — |")
    assert table["| 3"] == ("| 3 | llama-1b | bf16-mixed | adamw | none | sdpa | 4×1024 | oom | "
                            "15.5 | — | — | — | — | — | — | — | — | — | — |")
    assert table["| tensors"] == "| tensors | max_memory_allocated | 3 | 5.0% | 10.0% | 0 |"
    assert table["| reserved"] == "| reserved | max_memory_reserved | 3 | 2.0% | 8.3% | 1 |"
    assert table["| process"] == "| process | NVML process memory | 3 | 5.0% | 16.7% | 1 |"
    assert md[-1] == "process memory read by: nvml_process"


def test_time_estimate_fits_a_ten_minute_slot():
    g = bench()
    est = [g.config_seconds(g.MODELS[c[0]], c[1], c[3], c[5], c[6]) for c in g.CONFIGS]
    assert len(g.CONFIGS) == 16
    # every configuration starts a process (STARTUP_S) and adds one step's compute
    assert all(e > g.STARTUP_S for e in est)
    assert sum(est) < 8 * 60
    # llama-3b, bf16 autocast, checkpointing, 4×1024: 8 · N · tokens at 150 TFLOP/s
    n = g.param_estimate(g.MODELS["llama-3b"])
    assert n == 28 * (2 * 3072**2 + 2 * 3072 * 1024 + 3 * 3072 * 8192) + 2 * 128256 * 3072
    assert est[13] == g.STARTUP_S + 8 * n * 4 * 1024 / 150e12
