"""Accuracy benchmark: preflight's predicted peak against the peak allocated by one real
training step, over GPT-2 small/medium and llama-like 0.5–3B decoders at random init.

Each configuration runs `bench/train_lm.py` under `preflight dryrun` (one optimizer step,
fresh process, allocator counters per phase). The prediction is
`preflight.physics.estimate(plan)` for the same facts, tier by tier: the tensors tier (the
largest phase of the step) against `max_memory_allocated`, the reserved tier against
`max_memory_reserved`; the predicted phase of the peak is set beside the dry run's phase
with the largest peak.

    python bench/gpu_accuracy.py                 # on a GPU: all configurations
    python bench/gpu_accuracy.py --smoke         # on CPU: tiny shapes, end to end
    python bench/gpu_accuracy.py --only 0,3      # a subset

Writes bench/results/gpu_accuracy[-smoke].json and .md (median and max |error|).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
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
        # lines without the transient ones (logit gradients at the start of backward, the
        # working set of a layer being recomputed)
        out["activations_saved"] = sum(ln.bytes or 0 for ln in est.ledger.lines
                                       if ln.key == "activations"
                                       and "transient" not in ln.label
                                       and "while it is recomputed" not in ln.label)
        return out, None
    except Exception as e:  # noqa: BLE001
        return None, f"{type(e).__name__}: {e}"


def run(configs, models, device: str, timeout: float, only=None):
    out = []
    for i, (name, precision, optimizer, ckpt, attention, batch, seq) in enumerate(configs):
        if only is not None and i not in only:
            continue
        model = models[name]
        args = script_args(model, precision, optimizer, ckpt, attention, batch, seq)
        t0 = time.time()
        res = run_dryrun(SCRIPT, args, device=device, timeout=timeout)
        row = {"id": i, "model": name, "precision": precision, "optimizer": optimizer,
               "checkpointing": ckpt, "attention": attention, "batch": batch, "seq": seq,
               "status": res.status, "message": res.message, "wall_s": round(time.time() - t0, 1)}
        if res.ranks:
            r = res.ranks[0]
            row.update(params=r.param_count, measured={
                "params": r.params, "grads": r.grads, "optimizer": r.optimizer,
                "master": r.master, "activations": r.activations,
                "loss_activations": r.loss_activations,
                "autocast_copies": r.autocast_copies}, peak=r.peak,
                phases=[m.model_dump() for m in r.memory])
            pred, why = predict(plan_values(model, precision, optimizer, ckpt, attention,
                                            batch, seq, r.param_count))
            row["predicted"] = pred
            if why:
                row["predict_error"] = why
            if pred:
                keys = ("params", "grads", "optimizer", "master", "activations")
                # tier 1 (the largest phase) against max_memory_allocated
                row["predicted_peak"] = pred["tiers"]["tensors"]
                row["predicted_peak_phase"] = pred["peak_phase"]
                if r.peak and row.get("predicted_peak"):
                    row["error"] = round(row["predicted_peak"] / r.peak - 1, 4)
                # tier 2 against max_memory_reserved (the largest reserved of any phase)
                reserved = [m.reserved for m in r.memory if m.reserved]
                if reserved and pred["tiers"]["reserved"]:
                    row["reserved"] = max(reserved)
                    row["reserved_error"] = round(pred["tiers"]["reserved"] / max(reserved) - 1, 4)
                # the measured phase of the peak: the dry run's phase with the largest peak
                phased = [m for m in r.memory if m.peak is not None]
                if phased:
                    row["measured_peak_phase"] = max(phased, key=lambda m: m.peak).phase
                meas_states = r.params + r.grads + r.optimizer + r.master
                if all(pred.get(k) is not None for k in keys[:4]):
                    ps = sum(pred[k] for k in keys[:4])
                    row["states_error"] = round(ps / meas_states - 1, 4) if meas_states else None
                saved = r.activations + r.loss_activations + r.autocast_copies
                if pred.get("activations_saved") and saved:
                    row["activations_error"] = round(pred["activations_saved"] / saved - 1, 4)
        out.append(row)
        print(json.dumps({k: row.get(k) for k in ("id", "model", "precision", "status",
                                                  "peak", "predicted_peak", "error",
                                                  "predicted_peak_phase", "measured_peak_phase",
                                                  "reserved_error", "wall_s")}), flush=True)
    return out


def summary(rows) -> dict:
    errs = [abs(r["error"]) for r in rows if r.get("error") is not None]
    act = [abs(r["activations_error"]) for r in rows if r.get("activations_error") is not None]
    return {"configs": len(rows), "ok": sum(r["status"] == "ok" for r in rows),
            "peak_abs_error_median": statistics.median(errs) if errs else None,
            "peak_abs_error_max": max(errs) if errs else None,
            "activations_abs_error_median": statistics.median(act) if act else None,
            "activations_abs_error_max": max(act) if act else None}


def markdown(rows, summ, device) -> str:
    def gib(n):
        return "—" if n is None else f"{n / 2**30:.2f}"
    lines = [f"device: {device}", "",
             "| # | model | precision | opt | ckpt | attn | b×s | status | measured peak GiB | "
             "predicted GiB | error | activations error |", "|" + "---|" * 12]
    for r in rows:
        e = "—" if r.get("error") is None else f"{r['error']:+.1%}"
        ae = "—" if r.get("activations_error") is None else f"{r['activations_error']:+.1%}"
        lines.append(f"| {r['id']} | {r['model']} | {r['precision']} | {r['optimizer']} | "
                     f"{r['checkpointing']} | {r['attention']} | {r['batch']}×{r['seq']} | "
                     f"{r['status']} | {gib(r.get('peak'))} | {gib(r.get('predicted_peak'))} | "
                     f"{e} | {ae} |")
    lines += ["", f"median |error| of predicted peak: {summ['peak_abs_error_median']}; "
                  f"max: {summ['peak_abs_error_max']}"]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smoke", action="store_true", help="tiny shapes on CPU (no GPU needed)")
    ap.add_argument("--device", default=None, help="default: cuda, or cpu with --smoke")
    ap.add_argument("--timeout", type=float, default=120.0, help="per configuration")
    ap.add_argument("--only", default=None, help="comma-separated configuration ids")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results"))
    ns = ap.parse_args(argv)
    device = ns.device or ("cpu" if ns.smoke else "cuda")
    configs, models = (SMOKE_CONFIGS, SMOKE_MODELS) if ns.smoke else (CONFIGS, MODELS)
    only = {int(x) for x in ns.only.split(",")} if ns.only else None
    t0 = time.time()
    rows = run(configs, models, device, ns.timeout, only)
    summ = summary(rows)
    summ["wall_s"] = round(time.time() - t0, 1)
    os.makedirs(ns.out, exist_ok=True)
    stem = os.path.join(ns.out, "gpu_accuracy" + ("-smoke" if ns.smoke else ""))
    with open(stem + ".json", "w") as f:
        json.dump({"device": device, "summary": summ, "rows": rows}, f, indent=1)
    md = markdown(rows, summ, device)
    with open(stem + ".md", "w") as f:
        f.write(md + "\n")
    print(md)
    bad = [r for r in rows if r["status"] != "ok"]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
