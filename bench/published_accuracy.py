"""Accuracy against published GPU measurements: `preflight estimate` on every row of
`bench/published/*.yaml` (bench/published/README.md gives the format), compared in the tier
that matches what the source measured:

    allocated   (torch.cuda.max_memory_allocated)  → tiers.tensors
    reserved    (torch.cuda.max_memory_reserved)   → tiers.reserved
    nvidia-smi  (the process's device memory)      → tiers.process

Each row becomes `preflight estimate` flags (a subprocess of the CLI, `--format json`); a
row whose configuration cannot be said in flags, or whose estimate leaves the tier unknown,
is listed with the reason, never dropped. Peer estimators come from `bench/peers.py` when it
exists: `peer_columns(row) -> {name: (bytes or None, reason)}`, one column each.

    python bench/published_accuracy.py                       # bench/published/
    python bench/published_accuracy.py --rows DIR --rows DIR2 --out bench/results/x

Writes bench/results/published_accuracy.md and .json; bench/results/published_accuracy.notes.md
(why rows disagree) is appended to the table.
"""

from __future__ import annotations

import argparse
import glob
import importlib.util
import json
import os
import re
import statistics
import subprocess
import sys
from typing import Any, Callable, Optional

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from preflight.facts.spellings import OPTIMIZER_NAMES  # noqa: E402
TIER_OF = {"allocated": "tensors", "reserved": "reserved", "nvidia-smi": "process"}
UNITS = {"GB": 10**9, "GiB": 2**30, "MB": 10**6, "MiB": 2**20}
#: an under-estimate of a reserved / nvidia-smi figure beyond this share is a failure
UNDER = 5.0
#: what a published figure spans (a row's `scope:`, bench/published/README.md): only `step`
#: rows measure what the estimate's ledger covers, a training step; the others also hold
#: the load, the save or a whole process, and are listed apart, never in the summary
SCOPES = ("step", "run-with-load", "run-with-save", "whole-process")

#: precisions as sources write them → `--precision`. Lightning / litgpt's "bf16-mixed" and
#: the HF Trainer's `bf16=True` keep fp32 weights under torch.autocast; "-true" is pure.
PRECISIONS = {
    "fp32": "fp32", "32": "fp32", "32-true": "fp32", "tf32": "fp32",
    "bf16": "bf16", "bf16-true": "bf16", "pure-bf16": "bf16", "fp16": "fp16",
    "fp16-true": "fp16", "16-true": "fp16",
    "bf16-autocast": "bf16-autocast", "amp-bf16": "bf16-autocast",
    "fp16-autocast": "fp16-autocast", "amp-fp16": "fp16-autocast", "16-mixed": "fp16-autocast",
    "fp16-amp": "fp16-autocast", "bf16-amp": "bf16-autocast",
}
#: "bf16-mixed" / "fp16-mixed" mean autocast over fp32 weights in these frameworks, 16-bit
#: weights with an fp32 master copy in DeepSpeed / Megatron (the estimator's spelling)
AUTOCAST_MIXED = ("litgpt", "lightning", "hf-trainer", "transformers", "accelerate", "peft",
                  "torchtune", "trl", "unsloth", "liger-kernel")
#: a row's optimizer spelling → the estimator's name: the product's own spelling table
OPTIMIZERS = {k: v for k, v in OPTIMIZER_NAMES.items() if v != "other"}
#: config fields → a flag taking the value as written
PLAIN = {"micro_batch": "--micro-batch", "seq_len": "--seq-len", "grad_accum": "--grad-accum",
         "world_size": "--world-size", "nodes": "--nodes", "gpus_per_node": "--gpus-per-node",
         "tp": "--tp", "pp": "--pp", "zero_stage": "--zero",
         "vocab": "--vocab", "layers": "--layers", "hidden": "--hidden", "heads": "--heads",
         "kv_heads": "--kv-heads", "ffn_hidden": "--ffn-hidden", "params": "--params",
         "lora_r": "--lora-r", "lora_dropout": "--lora-dropout",
         "lora_adapter_dtype": "--lora-adapter-dtype", "dropout": "--dropout",
         "ep": "--ep", "bitsandbytes": "--bitsandbytes"}
#: CPU offload as sources write it → `--offload`: FSDP's CPUOffload(offload_params=True)
#: keeps the parameters, their gradients and the optimizer step on the host
OFFLOAD = {"true": "optimizer", "optimizer": "optimizer", "params": "optimizer+params",
           "optimizer+params": "optimizer+params"}
#: attention kernels as sources write them → `--attention`: xformers' memory-efficient
#: kernel and FlexAttention keep a log-sum-exp per row, as sdpa's do, and no s² matrix
ATTENTION = {"eager": "eager", "sdpa": "sdpa", "flash": "flash", "xformers": "sdpa",
             "flex": "sdpa"}
#: activation checkpointing as sources write it → `--checkpointing`
CHECKPOINTING = {True: "full", False: "none", "full": "full", "none": "none",
                 "selective": "selective", "true": "full", "false": "none",
                 # op-level selective checkpointing (torchtitan's selective_ac_option = 'op')
                 "selective-op": "selective_op", "selective_op": "selective_op"}


class NotSized(Exception):
    """A row that cannot be put to the estimator; the message says why."""


def load_rows(dirs: list[str]) -> list[dict]:
    """Every row of every `*.yaml` under `dirs`, with its source and file attached; a file
    that does not read is a row of its own whose reason says so."""
    rows: list[dict] = []
    for d in dirs:
        for path in sorted(glob.glob(os.path.join(d, "*.yaml"))):
            try:
                with open(path, encoding="utf-8") as f:
                    doc = yaml.safe_load(f) or {}
                src = doc.get("source") or {}
                for r in doc.get("rows") or []:
                    rows.append({**r, "_source": src, "_file": os.path.basename(path)})
            except (OSError, yaml.YAMLError, AttributeError, TypeError) as e:
                rows.append({"id": os.path.basename(path), "_source": {}, "_file":
                             os.path.basename(path), "_error": f"file does not read: {e}"})
    return rows


def _val(cfg: dict, name: str) -> Any:
    v = cfg.get(name)
    return v.get("value") if isinstance(v, dict) else v


def measured_bytes(row: dict) -> int:
    unit = row.get("unit")
    if unit not in UNITS:
        raise NotSized(f"unit {unit!r} is not one of {', '.join(UNITS)}")
    try:
        return round(float(row["value"]) * UNITS[unit])
    except (KeyError, TypeError, ValueError):
        raise NotSized(f"value {row.get('value')!r} is not a number") from None


def _precision(cfg: dict) -> str:
    p = str(_val(cfg, "precision") or "").strip().lower()
    fw = str(_val(cfg, "framework") or "").strip().lower()
    if p in ("bf16-mixed", "fp16-mixed", "16-mixed-bf16"):
        if fw in AUTOCAST_MIXED:
            return ("bf16" if p.startswith("bf16") else "fp16") + "-autocast"
        return p
    if p not in PRECISIONS:
        raise NotSized(f"precision {p or '(none)'!r} not understood")
    return PRECISIONS[p]


def module_loading(cfg: dict, source: Optional[dict] = None) -> str:
    """"eager" when the row says so, or its torch is older than 1.13 or its CUDA older than
    11.7 (lazy loading is CUDA 11.7's, torch's default from 1.13), as the row's config or
    its source states them; else "lazy"."""
    said = str(_val(cfg, "cuda_module_loading") or "").lower()
    if said in ("lazy", "eager"):
        return said
    src = source or {}
    text = json.dumps([cfg.get("torch_version"), cfg.get("cuda"), src.get("torch_version"),
                       src.get("cuda")])
    m = re.search(r"CUDA (\d+)\.(\d+)", text)
    if m and (int(m.group(1)), int(m.group(2))) < (11, 7):
        return "eager"
    m = re.match(r"(\d+)\.(\d+)", str(_val(cfg, "torch_version") or ""))
    if m and (int(m.group(1)), int(m.group(2))) < (1, 13):
        return "eager"
    return "lazy"


def row_flags(row: dict) -> list[str]:
    """The `preflight estimate` flags that say the row's configuration (NotSized when a fact
    it depends on cannot be said)."""
    if row.get("_error"):
        raise NotSized(row["_error"])
    if row.get("measured") not in TIER_OF:
        raise NotSized(f"measured {row.get('measured')!r} is not allocated, reserved or "
                       "nvidia-smi")
    cfg = row.get("config") or {}
    flags: list[str] = []
    model = _val(cfg, "model")
    if model:
        flags += ["--model", str(model)]
    elif _val(cfg, "params") is None:
        raise NotSized("no model and no params")
    method = str(_val(cfg, "method") or "full").lower()
    quant = str(_val(cfg, "quantization") or "").lower()
    if method in ("lora", "qlora"):
        if _val(cfg, "lora_r") is None:
            raise NotSized("LoRA rank not given")
        bits = 4 if method == "qlora" or quant in ("nf4", "fp4", "4bit") else (
            8 if quant in ("int8", "8bit") else 16)
        flags += ["--lora-base-bits", str(bits)]
        t = _val(cfg, "lora_targets")
        if t:
            flags += ["--lora-targets", ",".join(t) if isinstance(t, list) else str(t)]
        said = json.dumps([cfg.get("method"), row.get("published"), row.get("notes")]).lower()
        if _val(cfg, "use_dora") or "dora" in said:
            raise NotSized("DoRA: its magnitude vectors and weight-norm activations are not "
                           "modelled")
    elif method != "full":
        raise NotSized(f"method {method!r} is not modelled (full, lora, qlora)")
    flags += ["--precision", _precision(cfg)]
    opt = str(_val(cfg, "optimizer") or "").lower()
    if opt:
        if opt not in OPTIMIZERS:
            raise NotSized(f"optimizer {opt!r} not known to the estimator")
        flags += ["--optimizer", OPTIMIZERS[opt]]
    ck = _val(cfg, "grad_ckpt")
    if ck is not None:
        if ck not in CHECKPOINTING:
            raise NotSized(f"activation checkpointing {ck!r} is not modelled (none, selective "
                           "as Megatron drops the attention scores, op-level selective, full)")
        flags += ["--checkpointing", CHECKPOINTING[ck]]
    fsdp = _val(cfg, "fsdp")
    if fsdp:
        flags += ["--fsdp", "full_shard" if fsdp is True else str(fsdp)]
    off = _val(cfg, "cpu_offload")
    if off and str(off).lower() not in ("none", "false"):
        flags += ["--offload", OFFLOAD.get(str(off).lower(), str(off))]
    att = _val(cfg, "attention")
    if att is not None:
        if str(att).lower() not in ATTENTION:
            raise NotSized(f"attention {att!r} is not one the estimator models")
        flags += ["--attention", ATTENTION[str(att).lower()]]
    for name, flag in PLAIN.items():
        v = _val(cfg, name)
        if v is not None and not (name in ("lora_r", "lora_dropout", "lora_adapter_dtype")
                                     and method == "full"):
            flags += [flag, str(v)]
    if _val(cfg, "compile"):
        raise NotSized("torch.compile: its graph pools and fused kernels are not modelled")
    if _val(cfg, "float8"):
        raise NotSized("float8 training is not modelled")
    if str(_val(cfg, "framework") or "").lower() == "litgpt":
        # litgpt trains its own GPT class: the activation tables of its implementation
        flags += ["--implementation", "litgpt"]
    lk = str(_val(cfg, "loss_kernel") or "none").lower()
    liger = _val(cfg, "liger_kernels")
    if lk == "chunked" and str(_val(cfg, "framework") or "").lower() == "litgpt":
        flags += ["--loss-kernel", "chunked"]
    elif lk == "fused" and isinstance(liger, list) and "fused_linear_cross_entropy" in liger:
        # Liger-Kernel: its fused linear cross-entropy, the layer kernels the row says
        # took effect, the release it ran
        layers = [k for k in liger if k != "fused_linear_cross_entropy"]
        flags += ["--loss-kernel", "liger", "--liger-layers", ",".join(layers) or "none"]
        if _val(cfg, "liger_release") is not None:
            flags += ["--liger-release", str(_val(cfg, "liger_release"))]
    elif lk not in ("none", "false", "standard"):
        raise NotSized(f"loss kernel {lk!r}: only the standard, litgpt's chunked and "
                       "Liger-Kernel's fused linear cross-entropy are modelled")
    if "expandable" in str(_val(cfg, "allocator") or "").lower():
        flags.append("--expandable-segments")
    if module_loading(cfg, row.get("_source")) == "eager":
        flags += ["--cuda-module-loading", "eager"]
    gpu = row.get("gpu")
    if gpu:
        flags += ["--gpu", str(gpu)]
    return flags


def run_estimate(flags: list[str]) -> dict:
    """The first job of `preflight estimate … --format json` (NotSized with the CLI's own
    one-line error when it refuses the flags)."""
    cmd = [sys.executable, "-m", "preflight", "estimate", *flags, "--format", "json"]
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=120)
    # exit 1: the job was sized and has findings (it does not fit the GPU, say); only
    # another exit, or no JSON, is a refusal
    if p.returncode not in (0, 1) or not p.stdout.strip().startswith("{"):
        lines = (p.stderr or p.stdout).strip().splitlines()
        raise NotSized("estimate refused the flags: " + (lines[-1] if lines else f"exit "
                                                         f"{p.returncode}"))
    return json.loads(p.stdout)["jobs"][0]


def err_pct(pred: Optional[int], meas: int) -> Optional[float]:
    return None if pred is None or not meas else 100.0 * (pred - meas) / meas


def load_peers(path: Optional[str] = None) -> Optional[Callable]:
    """`peer_columns` of bench/peers.py, None when the file does not exist."""
    path = path or os.path.join(ROOT, "bench", "peers.py")
    if not os.path.exists(path):
        return None
    spec = importlib.util.spec_from_file_location("bench_peers", path)
    mod = importlib.util.module_from_spec(spec)          # type: ignore[arg-type]
    spec.loader.exec_module(mod)                          # type: ignore[union-attr]
    return getattr(mod, "peer_columns", None)


def size_row(row: dict, peers: Optional[Callable] = None,
             estimate: Callable[[list[str]], dict] = run_estimate) -> dict:
    """One row's result: measured and predicted bytes, the tier, the signed error, the
    peers' columns, or the reason it was not sized."""
    src = row.get("_source") or {}
    out: dict[str, Any] = {"id": row.get("id"), "source": src.get("project", "?"),
                           "file": row.get("_file"), "measured": row.get("measured"),
                           "gpu": row.get("gpu"), "tier": TIER_OF.get(row.get("measured")),
                           "scope": row.get("scope", "step")}
    if row.get("scope_how"):
        out["scope_how"] = row["scope_how"]
    try:
        if out["scope"] not in SCOPES:
            raise NotSized(f"scope {out['scope']!r} is not one of {', '.join(SCOPES)}")
        out["measured_bytes"] = measured_bytes(row)
        flags = row_flags(row)
        out["flags"] = flags
        try:
            job = estimate(flags)
        except NotSized as e:
            if "--gpu" not in flags or "unknown GPU" not in str(e):
                raise
            # the card only sets the capacity and cuBLAS's workspace: sized without it
            i = flags.index("--gpu")
            flags = flags[:i] + flags[i + 2:]
            out["flags"], out["gpu_note"] = flags, f"GPU {row.get('gpu')!r} not in the " \
                "catalogue: sized without it (Hopper's cuBLAS workspace assumed)"
            job = estimate(flags)
        tiers = job["ledger"]["tiers"]
        pred = tiers.get(out["tier"])
        if pred is None:
            unk = job["ledger"].get("unknown") or []
            raise NotSized(f"the {out['tier']} tier is unknown (needs "
                           f"{', '.join(unk) or 'a fact the ledger lacks'})")
        out.update(predicted_bytes=pred, tiers=tiers, error_pct=err_pct(pred, out["measured_bytes"]),
                   peak_phase=job["ledger"].get("peak_phase"))
    except NotSized as e:
        out["not_sized"] = str(e)
    if peers is not None:
        cols: dict[str, dict] = {}
        try:
            got = peers(row) or {}
        except Exception as e:                 # a peer's failure is its column's reason
            got = {"peers": (None, f"peer_columns raised {type(e).__name__}: {e}")}
        for name, (b, why) in got.items():
            cols[name] = {"bytes": b, "reason": why,
                          "error_pct": err_pct(b, out.get("measured_bytes") or 0)}
        out["peers"] = cols
    return out


def _stats(errs: list[float]) -> dict:
    a = [abs(e) for e in errs]
    return {"n": len(a), "median_abs_pct": statistics.median(a) if a else None,
            "max_abs_pct": max(a) if a else None}


def summarise(results: list[dict]) -> dict:
    """The targets (median, max, under-estimates per tier and source, the peers) over the
    rows whose figure is a training step; rows of another scope are counted and listed with
    their errors under `other_scopes`, apart from the targets."""
    step = [r for r in results if r.get("scope", "step") == "step"]
    sized = [r for r in step if r.get("error_pct") is not None]
    by = lambda key: {k: _stats([r["error_pct"] for r in sized if r[key] == k])  # noqa: E731
                      for k in sorted({r[key] for r in sized})}
    under = [r["id"] for r in sized if r["tier"] in ("reserved", "process")
             and r["error_pct"] < -UNDER]
    peers: dict[str, dict] = {}
    names = sorted({n for r in step for n in r.get("peers", {})})
    for n in names:
        e = [r["peers"][n]["error_pct"] for r in step
             if r.get("peers", {}).get(n, {}).get("error_pct") is not None]
        peers[n] = _stats(e)
        # preflight and the peer on the very rows both sized, for a like-for-like comparison
        both = [r for r in sized if r.get("peers", {}).get(n, {}).get("error_pct") is not None]
        peers[n]["preflight_same_rows"] = _stats([r["error_pct"] for r in both])
        peers[n]["peer_same_rows"] = _stats([r["peers"][n]["error_pct"] for r in both])
    said = [r.get("scope", "step") for r in results]
    scopes = {k: said.count(k) for k in [*SCOPES, *sorted(set(said) - set(SCOPES))]}
    other = [{"id": r["id"], "scope": r["scope"], "tier": r["tier"],
              "error_pct": r.get("error_pct"), "why": r.get("scope_how", "")}
             for r in results if r.get("scope", "step") != "step"]
    return {"rows": len(results), "step_rows": len(step), "sized": len(sized),
            "scopes": scopes, "overall": _stats([r["error_pct"] for r in sized]),
            "per_tier": by("tier"), "per_source": by("source"),
            "under_beyond_5pct": under, "other_scopes": other, "not_sized": [
                {"id": r["id"], "reason": r["not_sized"]} for r in results
                if "not_sized" in r], "peers": peers}


def _gb(b: Optional[int]) -> str:
    return "—" if b is None else f"{b / 1e9:.2f}"


def _pct(e: Optional[float]) -> str:
    return "—" if e is None else f"{e:+.1f} %"


def _st(s: dict) -> str:
    if not s.get("n"):
        return "0 rows"
    return f"{s['n']} rows, median {s['median_abs_pct']:.1f} %, max {s['max_abs_pct']:.1f} %"


def _scopes(summary: dict) -> str:
    return ", ".join(f"{k}: {n}" for k, n in summary["scopes"].items())


def render(results: list[dict], summary: dict, notes: str = "") -> str:
    peers = sorted(summary["peers"])
    head = ["row", "source", "measured", "tier", "measured GB", "preflight GB", "error"]
    head += [f"{p} GB (error)" for p in peers]
    out = ["# preflight estimate against published GPU measurements", "",
           "Generated by `python bench/published_accuracy.py`: each row of "
           "`bench/published/*.yaml` sized by `preflight estimate` and compared in the tier "
           "that matches what was measured (allocated → tensors, reserved → reserved, "
           "nvidia-smi → process). Error = (predicted − measured) / measured; GB = 10⁹ B.",
           "", f"Rows: {summary['rows']} ({_scopes(summary)}); step rows sized: "
           f"{summary['sized']}. Overall, over the step rows: {_st(summary['overall'])}. "
           "A row whose figure spans more than a training step (its `scope`) keeps its "
           "error in the table, marked with its scope, and is summarised apart below.", "",
           "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in results:
        cells = [str(r["id"]), str(r["source"]), str(r["measured"]), str(r["tier"]),
                 _gb(r.get("measured_bytes")), _gb(r.get("predicted_bytes")),
                 (_pct(r.get("error_pct")) if "not_sized" not in r else "not sized")
                 + ("" if r.get("scope", "step") == "step" else f" ({r['scope']})")]
        for p in peers:
            c = r.get("peers", {}).get(p)
            cells.append("—" if c is None else (
                f"{_gb(c['bytes'])} ({_pct(c['error_pct'])})" if c["bytes"] is not None
                else f"— ({c['reason']})"))
        out.append("| " + " | ".join(cells) + " |")
    out += ["", "## Per tier (step rows)", ""]
    out += [f"- {k}: {_st(s)}" for k, s in summary["per_tier"].items()]
    out += ["", "## Per source (step rows)", ""]
    out += [f"- {k}: {_st(s)}" for k, s in summary["per_source"].items()]
    out += ["", "## Under-estimates of a reserved or nvidia-smi figure beyond 5 %", "",
            f"{len(summary['under_beyond_5pct'])}: "
            + (", ".join(summary["under_beyond_5pct"]) or "none")]
    if peers:
        out += ["", "## Peers on the same rows", ""]
        for p in peers:
            s = summary["peers"][p]
            out.append(f"- {p}: {_st(s)}; on the rows both sized: {p} "
                       f"{_st(s['peer_same_rows'])}, preflight {_st(s['preflight_same_rows'])}")
    out += ["", "## Rows whose figure spans more than a training step", "",
            "Not comparable with the estimate of one training step, so not in the figures "
            "above: the published peak also holds what the row's `scope` names.", ""]
    out += [f"- {o['id']} ({o['scope']}, {o['tier']}): {_pct(o['error_pct'])}"
            + (f"; {o['why']}" if o["why"] else "") for o in summary["other_scopes"]] \
        or ["none"]
    out += ["", "## Rows not sized", ""]
    out += [f"- {n['id']}: {n['reason']}" for n in summary["not_sized"]] or ["none"]
    if notes:
        out += ["", notes.rstrip()]
    return "\n".join(out) + "\n"


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", action="append", help="a folder of *.yaml rows (repeatable; "
                    "default bench/published)")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results",
                                                  "published_accuracy"),
                    help="output path without extension (.md and .json are written)")
    ap.add_argument("--peers", help="a peers module (default bench/peers.py if it exists)")
    ap.add_argument("--notes", help="a Markdown file appended to the results (why rows "
                    "disagree; default: OUT.notes.md when it exists)")
    a = ap.parse_args(argv)
    dirs = a.rows or [os.path.join(ROOT, "bench", "published")]
    peers = load_peers(a.peers)
    results = [size_row(r, peers) for r in load_rows(dirs)]
    summary = summarise(results)
    notes = ""
    path = a.notes or a.out + ".notes.md"
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            notes = f.read()
    os.makedirs(os.path.dirname(a.out) or ".", exist_ok=True)
    with open(a.out + ".json", "w", encoding="utf-8") as f:
        json.dump({"summary": summary, "rows": results}, f, indent=1)
    with open(a.out + ".md", "w", encoding="utf-8") as f:
        f.write(render(results, summary, notes))
    print(f"{summary['rows']} rows ({_scopes(summary)}); {summary['sized']}/"
          f"{summary['step_rows']} step rows sized; overall {_st(summary['overall'])}; "
          f"under > 5 %: {len(summary['under_beyond_5pct'])}")
    for k, s in summary["per_tier"].items():
        print(f"  {k}: {_st(s)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
