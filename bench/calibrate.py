"""Calibration table: activations one transformer block saves for backward, measured on CPU
with CUDA-layout emulation (preflight.dryrun.calibrate), against the estimator's per-layer
prediction (preflight.physics.activations.layer_activation_bytes) and Korthikanti's
s·b·h·(34 + 5·a·s/h).

    python bench/calibrate.py [--out bench/results] [--quick]

Writes calibration.json and calibration.md under --out and prints the table. Rows whose
measured / predicted ratio is off by more than 10 % are flagged.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from preflight.dryrun.calibrate import BlockSpec, coefficients, reference_bytes  # noqa: E402

#: (name, spec kwargs, b, s) — GPT-2-small-like and a llama-like 0.5B-class block with GQA
SHAPES = {
    "gpt2": dict(kind="gpt2", hidden=768, heads=12, dropout=0.1),
    "llama": dict(kind="llama", hidden=1024, heads=16, kv_heads=4, ffn=2816),
}
QUICK = {
    "gpt2": dict(kind="gpt2", hidden=256, heads=4, dropout=0.1),
    "llama": dict(kind="llama", hidden=256, heads=4, kv_heads=2, ffn=768),
}


def predicted(spec: BlockSpec, b: int, s: int):
    """The estimator's per-layer bytes, or None with the reason when it is not available."""
    try:
        from preflight.physics.activations import Shape, layer_activation_bytes
    except Exception as e:  # noqa: BLE001 - the estimator may not be installed yet
        return None, f"estimator not available ({type(e).__name__})"
    d = 4 if spec.precision == "fp32" else 2
    sh = Shape(s=s, b=b, h=spec.hidden, a=spec.heads,
               f=spec.ffn or (4 * spec.hidden if spec.kind == "gpt2" else 0),
               k=spec.kv_heads or spec.heads, d=d, autocast=spec.precision == "bf16-mixed")
    if spec.kind == "llama" and not spec.ffn:
        from preflight.dryrun.calibrate import _llama_ffn
        sh = Shape(**{**sh.__dict__, "f": _llama_ffn(spec.hidden)})
    try:
        la = layer_activation_bytes(spec.kind, sh, attention=spec.attention,
                                    checkpointing=spec.checkpointing)
        return la.total, la.coefficient
    except Exception as e:  # noqa: BLE001
        return None, f"estimator failed: {type(e).__name__}: {e}"


def rows(quick: bool = False, b: int = 1, s: int = 512):
    shapes = QUICK if quick else SHAPES
    if quick:
        b, s = 1, 64
    out = []
    for kind, kw in shapes.items():
        for precision in ("bf16", "bf16-mixed", "fp32"):
            for attention in ("eager", "sdpa"):
                for ckpt in ("none", "full"):
                    if precision == "fp32" and ckpt == "full":
                        continue
                    spec = BlockSpec(**kw, attention=attention, checkpointing=ckpt,
                                     precision=precision)
                    c1, c2, _, m = coefficients(spec, b=b, s1=s // 2, s2=s)
                    pred, formula = predicted(spec, b, s)
                    ref = reference_bytes(spec, b, s) if kind == "gpt2" else None
                    sbh = s * b * spec.hidden
                    out.append({
                        "block": kind, "precision": precision, "attention": attention,
                        "checkpointing": ckpt, "b": b, "s": s, "h": spec.hidden,
                        "a": spec.heads, "kv_heads": spec.kv_heads, "ffn": spec.ffn,
                        "measured": m.saved, "autocast_copies": m.copies,
                        "measured_per_sbh": round(m.saved / sbh, 3),
                        "fit_c1": round(c1, 3), "fit_c2": round(c2, 3),
                        "predicted": pred, "predicted_formula": formula,
                        "ratio": round(m.saved / pred, 4) if pred else None,
                        "korthikanti": ref,
                        "ratio_korthikanti": round(m.saved / ref, 4) if ref else None,
                    })
    return out


def markdown(table) -> str:
    head = ("| block | precision | attention | ckpt | measured B/layer | per s·b·h | "
            "fit c1 + c2·as/h | predicted B/layer | measured/predicted | Korthikanti ratio |")
    lines = [head, "|" + "---|" * 10]
    for r in table:
        flag = " ⚠" if r["ratio"] and abs(r["ratio"] - 1) > 0.10 else ""
        pred = f"{r['predicted']:,}" if r["predicted"] else "—"
        ratio = f"{r['ratio']:.3f}{flag}" if r["ratio"] else "—"
        kr = f"{r['ratio_korthikanti']:.3f}" if r["ratio_korthikanti"] else "—"
        lines.append(f"| {r['block']} | {r['precision']} | {r['attention']} | "
                     f"{r['checkpointing']} | {r['measured']:,} | {r['measured_per_sbh']} | "
                     f"{r['fit_c1']} + {r['fit_c2']}·as/h | {pred} | {ratio} | {kr} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results"))
    ap.add_argument("--quick", action="store_true", help="small shapes (tests)")
    ns = ap.parse_args(argv)
    t0 = time.time()
    table = rows(quick=ns.quick)
    os.makedirs(ns.out, exist_ok=True)
    suffix = "-quick" if ns.quick else ""
    with open(os.path.join(ns.out, f"calibration{suffix}.json"), "w") as f:
        json.dump({"emulation": "CPU, CUDA layout (1-byte dropout masks, flash-style SDPA, "
                                "CUDA autocast op lists by hand)", "rows": table}, f, indent=1)
    md = markdown(table)
    with open(os.path.join(ns.out, f"calibration{suffix}.md"), "w") as f:
        f.write(md + "\n")
    print(md)
    print(f"\n{len(table)} rows in {time.time() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
