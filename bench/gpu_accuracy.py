"""Accuracy benchmark: preflight's three predicted tiers against one real training step,
over GPT-2 small/medium and llama-like 0.5–3B decoders at random init.

Each configuration runs `bench/train_lm.py` under `preflight dryrun` (one optimizer step,
a fresh process, allocator counters and the process's device memory per phase). The
prediction is `preflight.physics.estimate(plan)` for the same facts, tier by tier:

- tensors tier (the largest phase of the step) against `max_memory_allocated`;
- reserved tier against `max_memory_reserved`;
- process tier against the process's device memory read through NVML (nvidia-smi's
  figure: context, cuBLAS workspaces, reserved segments), its largest reading.

The predicted phase of the peak is set beside the dry run's phase with the largest peak.

    python bench/gpu_accuracy.py                 # on a GPU: all 16 configurations
    python bench/gpu_accuracy.py --smoke         # on CPU: tiny shapes, end to end
    python bench/gpu_accuracy.py --only 0,3      # a subset

Prints a time estimate first, then one line per configuration; writes
bench/results/gpu_accuracy[-smoke].json and .md after every configuration (an error column
per tier, median and max |error| per tier, under-estimates by more than 5 % counted per
tier, the environment: torch, CUDA, GPU, driver, allocator and cuBLAS settings).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from preflight.dryrun import run_dryrun  # noqa: E402

SCRIPT = os.path.join(ROOT, "bench", "train_lm.py")

MODELS = {
    "gpt2-small": dict(arch="gpt2", layers=12, hidden=768, heads=12, vocab=50257),
    "gpt2-medium": dict(arch="gpt2", layers=24, hidden=1024, heads=16, vocab=50257),
    # llama-like at random init: ~0.5B (Qwen2-0.5B shape), ~1.2B, ~3B (Llama-3.2 shapes)
    "llama-0.5b": dict(arch="llama", layers=24, hidden=896, heads=14, kv_heads=2, ffn=4864,
                       vocab=151936),
    "llama-1b": dict(arch="llama", layers=16, hidden=2048, heads=32, kv_heads=8, ffn=8192,
                     vocab=128256),
    "llama-3b": dict(arch="llama", layers=28, hidden=3072, heads=24, kv_heads=8, ffn=8192,
                     vocab=128256),
}

#: (model, precision, optimizer, checkpointing, attention, batch, seq) — 16 configurations
#: covering fp32 / bf16-mixed / pure bf16, AdamW / SGD, checkpointing on / off,
#: eager / sdpa and two batch × sequence sizes.
CONFIGS = [
    ("gpt2-small", "fp32", "adamw", "none", "eager", 4, 512),
    ("gpt2-small", "bf16-mixed", "adamw", "none", "eager", 8, 1024),
    ("gpt2-small", "bf16-mixed", "adamw", "none", "sdpa", 8, 1024),
    ("gpt2-small", "bf16", "sgd", "none", "sdpa", 4, 512),
    ("gpt2-medium", "bf16-mixed", "adamw", "full", "sdpa", 8, 1024),
    ("gpt2-medium", "fp32", "sgd", "none", "sdpa", 4, 512),
    ("gpt2-medium", "bf16-mixed", "adamw", "none", "eager", 4, 512),
    ("llama-0.5b", "bf16-mixed", "adamw", "none", "sdpa", 4, 512),
    ("llama-0.5b", "bf16-mixed", "adamw", "full", "sdpa", 8, 2048),
    ("llama-0.5b", "bf16", "adamw", "none", "eager", 4, 512),
    ("llama-1b", "bf16-mixed", "adamw", "none", "sdpa", 4, 1024),
    ("llama-1b", "bf16-mixed", "sgd", "full", "sdpa", 8, 2048),
    ("llama-1b", "fp32", "adamw", "full", "sdpa", 4, 1024),
    ("llama-3b", "bf16-mixed", "adamw", "full", "sdpa", 4, 1024),
    ("llama-3b", "bf16", "adamw", "none", "sdpa", 2, 1024),
    ("llama-3b", "bf16", "sgd", "full", "eager", 4, 1024),
]

SMOKE_MODELS = {
    "gpt2-tiny": dict(arch="gpt2", layers=2, hidden=64, heads=4, vocab=512),
    "llama-tiny": dict(arch="llama", layers=2, hidden=64, heads=4, kv_heads=2, ffn=192,
                       vocab=512),
}
SMOKE_CONFIGS = [
    ("gpt2-tiny", "bf16-mixed", "adamw", "none", "eager", 2, 32),
    ("gpt2-tiny", "fp32", "sgd", "full", "sdpa", 2, 64),
    ("llama-tiny", "bf16", "adamw", "none", "sdpa", 2, 32),
    ("llama-tiny", "bf16-mixed", "adamw", "full", "eager", 2, 64),
]


def script_args(model: dict, precision, optimizer, ckpt, attention, batch, seq) -> list[str]:
    args = []
    for k, v in model.items():
        args += [f"--{k.replace('_', '-')}", str(v)]
    args += ["--precision", precision, "--optimizer", optimizer, "--ckpt", ckpt,
             "--attention", attention, "--batch", str(batch), "--seq", str(seq)]
    return args


def plan_values(model: dict, precision, optimizer, ckpt, attention, batch, seq, params):
    """The facts preflight would extract from this job (param count: the measured one — the
    benchmark tests the memory model, not parameter counting)."""
    return {
        "params": params, "trainable_params": params, "layers": model["layers"],
        "hidden": model["hidden"], "heads": model["heads"],
        "kv_heads": model.get("kv_heads", model["heads"]),
        "ffn_hidden": model.get("ffn", 4 * model["hidden"]), "vocab": model["vocab"],
        "param_dtype": "bf16" if precision == "bf16" else "fp32",
        "mixed_precision": "bf16" if precision == "bf16-mixed" else "none",
        "optimizer": optimizer, "micro_batch": batch, "seq_len": seq, "grad_accum": 1,
        "world_size": 1, "nodes": 1, "gpus_per_node": 1, "zero_stage": 0,
        "activation_checkpointing": ckpt, "attention": attention,
        # train_lm's GPT-2 block uses nn.GELU (fused), as nanoGPT does, not gelu_new
        "model": "llama" if model["arch"] == "llama" else "nanogpt",
        "family": "llama" if model["arch"] == "llama" else "gpt2",
    }


def predict(values: dict):
    """Predicted per-GPU bytes by ledger key, or None when the estimator is unavailable."""
    try:
        from preflight.models.param_tensors import with_catalogue_tensors
        from preflight.physics import estimate
        from preflight.plan import TrainingPlan
        est = estimate(with_catalogue_tensors(TrainingPlan.from_values(values)), None, 0.2)
        led = est.ledger
        out = led.per_gpu_bytes()
        # the three tiers and the phase that sets the peak (compared with
        # max_memory_allocated, max_memory_reserved and the process's device memory)
        out["tiers"] = {"tensors": led.tensors_peak, "reserved": led.reserved_peak,
                        "process": led.process_peak}
        out["peak_phase"] = led.peak_phase
        out["phases"] = led.phase_bytes()
        # what autograd keeps (comparable with the measured saved tensors): the activation
        # lines alive from the forward to their backward (saved tensors, the logits the loss
        # keeps), not a moment's (logit gradients, a recomputed layer, a layer's backward)
        out["activations_saved"] = sum(ln.bytes or 0 for ln in est.ledger.lines
                                       if ln.key == "activations"
                                       and ln.lifetime in ("saved", "logits"))
        return out, None
    except Exception as e:  # noqa: BLE001
        return None, f"{type(e).__name__}: {e}"


#: the tiers: (name, what it is measured against, measured key, predicted key, error key)
TIERS = (("tensors", "max_memory_allocated", "peak", "predicted_peak", "error"),
         ("reserved", "max_memory_reserved", "reserved", "predicted_reserved", "reserved_error"),
         ("process", "NVML process memory", "process", "predicted_process", "process_error"))
#: an under-estimate users pay for: predicted below measured by more than this
UNDER = 0.05

#: the time estimate (seconds): a fresh process that imports torch, starts CUDA (context,
#: cuBLAS) and builds the model on the device, plus one step's compute at a conservative
#: achieved rate — an H200 runs bf16 matmuls near 10^15 FLOP/s, fp32 far slower
STARTUP_S = 15.0
FLOPS = {"fp32": 30e12, "bf16-mixed": 150e12, "bf16": 150e12}


def param_estimate(model: dict) -> int:
    """Parameters from the shapes (for the time estimate only; the comparison uses the
    count the dry run measured)."""
    h, L, V = model["hidden"], model["layers"], model["vocab"]
    if model["arch"] == "gpt2":
        return L * 12 * h * h + 2 * V * h
    kv = h // model["heads"] * model.get("kv_heads", model["heads"])
    return L * (2 * h * h + 2 * h * kv + 3 * h * model.get("ffn", 4 * h)) + 2 * V * h


def config_seconds(model: dict, precision, ckpt, batch, seq) -> float:
    """Expected wall time of one configuration on an H200-class GPU."""
    flops = (8 if ckpt == "full" else 6) * param_estimate(model) * batch * seq
    return STARTUP_S + flops / FLOPS[precision]


def run_one(i, cfg, models, device: str, timeout: float) -> dict:
    name, precision, optimizer, ckpt, attention, batch, seq = cfg
    model = models[name]
    args = script_args(model, precision, optimizer, ckpt, attention, batch, seq)
    t0 = time.time()
    res = run_dryrun(SCRIPT, args, device=device, timeout=timeout)
    row = {"id": i, "model": name, "precision": precision, "optimizer": optimizer,
           "checkpointing": ckpt, "attention": attention, "batch": batch, "seq": seq,
           "status": res.status, "message": res.message, "wall_s": round(time.time() - t0, 1)}
    if not res.ranks:
        return row
    r = res.ranks[0]
    row.update(params=r.param_count, measured={
        "params": r.params, "grads": r.grads, "optimizer": r.optimizer,
        "master": r.master, "activations": r.activations,
        "loss_activations": r.loss_activations,
        "autocast_copies": r.autocast_copies}, peak=r.peak,
        phases=[m.model_dump() for m in r.memory],
        process_source=r.process_source, process_unavailable=r.process_unavailable,
        process_baseline=r.process_baseline)
    reserved = [m.reserved for m in r.memory if m.reserved]
    row["reserved"] = max(reserved) if reserved else None
    row["process"] = r.process_peak
    # the measured phase of the peak: the dry run's phase with the largest peak
    phased = [m for m in r.memory if m.peak is not None]
    if phased:
        row["measured_peak_phase"] = max(phased, key=lambda m: m.peak).phase
    pred, why = predict(plan_values(model, precision, optimizer, ckpt, attention,
                                    batch, seq, r.param_count))
    row["predicted"] = pred
    if why:
        row["predict_error"] = why
    if pred:
        compare_row(row, r, pred)
    return row


def compare_row(row: dict, r, pred: dict) -> None:
    """Each tier against what measures it; the model states and saved activations."""
    row["predicted_peak"] = pred["tiers"]["tensors"]
    row["predicted_reserved"] = pred["tiers"]["reserved"]
    row["predicted_process"] = pred["tiers"]["process"]
    row["predicted_peak_phase"] = pred["peak_phase"]
    tier_errors(row)
    meas_states = r.params + r.grads + r.optimizer + r.master
    keys = ("params", "grads", "optimizer", "master")
    if all(pred.get(k) is not None for k in keys):
        ps = sum(pred[k] for k in keys)
        row["states_error"] = round(ps / meas_states - 1, 4) if meas_states else None
    saved = r.activations + r.loss_activations + r.autocast_copies
    if pred.get("activations_saved") and saved:
        row["activations_error"] = round(pred["activations_saved"] / saved - 1, 4)


def tier_errors(row: dict) -> None:
    """predicted / measured − 1 of each tier the row has both numbers of (4 decimals)."""
    for _, _, meas, predk, err in TIERS:
        if row.get(meas) and row.get(predk):
            row[err] = round(row[predk] / row[meas] - 1, 4)


def summary(rows) -> dict:
    """Per tier: how many rows it was compared on, median and max |error|, and how many
    predictions fell more than 5 % under the measurement."""
    out = {"configs": len(rows), "ok": sum(r["status"] == "ok" for r in rows), "tiers": {}}
    for tier, against, _, _, err in TIERS:
        errs = [r[err] for r in rows if r.get(err) is not None]
        out["tiers"][tier] = {
            "against": against, "compared": len(errs),
            "abs_error_median": round(statistics.median(abs(e) for e in errs), 4) if errs else None,
            "abs_error_max": round(max(abs(e) for e in errs), 4) if errs else None,
            "under_5pct": sum(e < -UNDER for e in errs)}
    # the tensors tier under the names it had before the other tiers were compared
    out["peak_abs_error_median"] = out["tiers"]["tensors"]["abs_error_median"]
    out["peak_abs_error_max"] = out["tiers"]["tensors"]["abs_error_max"]
    act = [abs(r["activations_error"]) for r in rows if r.get("activations_error") is not None]
    out["activations_abs_error_median"] = statistics.median(act) if act else None
    out["activations_abs_error_max"] = max(act) if act else None
    return out


ENV_VARS = ("PYTORCH_CUDA_ALLOC_CONF", "CUBLAS_WORKSPACE_CONFIG")


def environment(device: str) -> dict:
    """What the figures depend on: torch and CUDA versions, the GPU and its driver, the
    allocator's and cuBLAS's settings (None: not set / no GPU). CUDA is not initialised
    here: the parent would hold a context on the GPU the children measure."""
    env: dict = {"device": device}
    try:
        # here: only the version strings; the benchmark's comparison itself needs no torch
        import torch
        env["torch"], env["cuda"] = torch.__version__, torch.version.cuda
    except ImportError:
        env["torch"] = env["cuda"] = None
    env["gpu"], env["driver"] = gpu_and_driver() if device == "cuda" else (None, None)
    for v in ENV_VARS:
        env[v] = os.environ.get(v)
    return env


def gpu_and_driver() -> tuple:
    """The first GPU's name and the driver version: NVML, else nvidia-smi, else None."""
    try:
        # here: nvidia-ml-py is optional (the `dryrun` extra) and only asked on a GPU
        import pynvml
        pynvml.nvmlInit()
        h = pynvml.nvmlDeviceGetHandleByIndex(0)
        name, drv = pynvml.nvmlDeviceGetName(h), pynvml.nvmlSystemGetDriverVersion()
        return tuple(v.decode() if isinstance(v, bytes) else str(v) for v in (name, drv))
    except Exception:  # noqa: BLE001 - not installed, no driver: ask nvidia-smi
        pass
    try:
        cp = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version",
                             "--format=csv,noheader"], capture_output=True, text=True,
                            timeout=20)
        first = cp.stdout.strip().splitlines()[0]
        name, drv = (x.strip() for x in first.split(",", 1))
        return name, drv
    except Exception:  # noqa: BLE001
        return None, None


def _gib(n) -> str:
    return "—" if n is None else f"{n / 2**30:.2f}"


def _pct(e) -> str:
    return "—" if e is None else f"{e:+.1%}"


def markdown(rows, summ, env: dict) -> str:
    """The results table: measured and predicted GiB and the error of each tier per
    configuration, then median / max |error| and under-estimates per tier."""
    lines = [f"device: {env.get('device')}", ""]
    lines += [f"- {k}: {env.get(k) if env.get(k) is not None else 'not set' if k in ENV_VARS else '—'}"
              for k in ("torch", "cuda", "gpu", "driver") + ENV_VARS]
    lines += ["", "| # | model | precision | opt | ckpt | attn | b×s | status | wall s "
                  "| allocated GiB | tensors GiB | tensors error "
                  "| reserved GiB | predicted GiB | reserved error "
                  "| process GiB | predicted GiB | process error | activations error |",
              "|" + "---|" * 19]
    for r in rows:
        cells = [r["id"], r["model"], r["precision"], r["optimizer"], r["checkpointing"],
                 r["attention"], f"{r['batch']}×{r['seq']}", r["status"],
                 "—" if r.get("wall_s") is None else f"{r['wall_s']:.1f}"]
        for _, _, meas, pred, err in TIERS:
            cells += [_gib(r.get(meas)), _gib(r.get(pred)), _pct(r.get(err))]
        cells.append(_pct(r.get("activations_error")))
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    lines += ["", "| tier | against | compared | median \\|error\\| | max \\|error\\| "
                  "| under by > 5 % |", "|---|---|---|---|---|---|"]
    for tier, t in summ["tiers"].items():
        lines.append(f"| {tier} | {t['against']} | {t['compared']} | "
                     f"{_pct(t['abs_error_median']).lstrip('+')} | "
                     f"{_pct(t['abs_error_max']).lstrip('+')} | {t['under_5pct']} |")
    src = sorted({r.get("process_source") or f"none: {r.get('process_unavailable')}"
                  for r in rows if r["status"] == "ok"})
    if src:
        lines += ["", "process memory read by: " + "; ".join(src)]
    return "\n".join(lines)


def write(stem: str, rows, summ, env) -> str:
    with open(stem + ".json", "w") as f:
        json.dump({"device": env["device"], "environment": env, "summary": summ,
                   "rows": rows}, f, indent=1)
    md = markdown(rows, summ, env)
    with open(stem + ".md", "w") as f:
        f.write(md + "\n")
    return md


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smoke", action="store_true", help="tiny shapes on CPU (no GPU needed)")
    ap.add_argument("--device", default=None, help="default: cuda, or cpu with --smoke")
    ap.add_argument("--timeout", type=float, default=120.0, help="per configuration")
    ap.add_argument("--budget", type=float, default=540.0,
                    help="seconds for the whole run: a configuration whose estimate would "
                         "pass it is not started (status not_run)")
    ap.add_argument("--only", default=None, help="comma-separated configuration ids")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results"))
    ns = ap.parse_args(argv)
    device = ns.device or ("cpu" if ns.smoke else "cuda")
    configs, models = (SMOKE_CONFIGS, SMOKE_MODELS) if ns.smoke else (CONFIGS, MODELS)
    only = {int(x) for x in ns.only.split(",")} if ns.only else None
    todo = [(i, c) for i, c in enumerate(configs) if only is None or i in only]
    est = {i: config_seconds(models[c[0]], c[1], c[3], c[5], c[6]) for i, c in todo}
    print(f"{len(todo)} configurations, estimated {sum(est.values()) / 60:.1f} min on an "
          f"H200-class GPU (about {STARTUP_S:.0f} s each to start a process, CUDA and the "
          f"model, plus one step; the budget is {ns.budget:.0f} s)", flush=True)
    for i, c in todo:
        print(f"  #{i} {c[0]} {c[1]} {c[2]} ckpt={c[3]} {c[4]} {c[5]}x{c[6]}: "
              f"~{est[i]:.0f} s", flush=True)
    env = environment(device)
    os.makedirs(ns.out, exist_ok=True)
    stem = os.path.join(ns.out, "gpu_accuracy" + ("-smoke" if ns.smoke else ""))
    t0, rows = time.time(), []
    for i, cfg in todo:
        if time.time() - t0 + est[i] > ns.budget:
            rows.append({"id": i, "model": cfg[0], "precision": cfg[1], "optimizer": cfg[2],
                         "checkpointing": cfg[3], "attention": cfg[4], "batch": cfg[5],
                         "seq": cfg[6], "status": "not_run",
                         "message": f"its estimate would pass the {ns.budget:.0f} s budget"})
            continue
        row = run_one(i, cfg, models, device, ns.timeout)
        rows.append(row)
        print(json.dumps({k: row.get(k) for k in (
            "id", "model", "precision", "status", "wall_s", "error", "reserved_error",
            "process_error", "predicted_peak_phase", "measured_peak_phase")}), flush=True)
        summ = summary(rows)
        summ["wall_s"] = round(time.time() - t0, 1)
        write(stem, rows, summ, env)         # after each one: a cut-off run keeps its rows
    summ = summary(rows)
    summ["wall_s"] = round(time.time() - t0, 1)
    print(write(stem, rows, summ, env))
    return 1 if any(r["status"] != "ok" for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
