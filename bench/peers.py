"""Peer estimators on the published rows, one column each, beside preflight's.

`peer_columns(row)` → {peer: (predicted per-GPU bytes or None, reason)} for one row of
`bench/published/*.yaml`; `PEERS` names the columns in a stable order, `PEERS_NOT_RUN` the
estimators looked for that could not be run, with why. Each peer is installed from the
package index, at the version pinned in `PACKAGES`, into its own virtual environment under
`bench/.peers-venv/<peer>` (created on first use, never the project's), and is called as a
subprocess there, so its imports (deepspeed, accelerate, an older transformers) never
touch preflight's. The row's model shape comes from preflight's offline catalogue
(`preflight.models.catalog`), written as the config.json each peer reads; the peers
cannot reach the Hub from here, and each is given that local file the way it takes one.

What each is given and what its figure stands for is in `peer_inputs.py` (pure mapping)
and bench/published/README.md ("Peers"). Results are cached in
bench/results/peers_cache.json under "<row id>@<hash of the peer's pinned version, its
exact input and the model config>", so a rerun (or a machine without the peers'
environments) reads them back, and a changed input runs the peer again.

    python bench/peers.py --row litgpt-llama-2-7b-lora      # every peer on one row
    python bench/peers.py --all                             # every row, then the errors
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from typing import Optional

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)          # loaded by file path (bench/published_accuracy.py, tests)
import peer_inputs as pin  # noqa: E402

ROOT = os.path.dirname(HERE)
VENVS = os.path.join(HERE, ".peers-venv")
RUNNERS = os.path.join(HERE, "peer_runners")
CACHE = os.path.join(HERE, "results", "peers_cache.json")

PEERS: list[str] = ["accelerate", "deepspeed", "llm-analysis", "fitcheck-llm",
                    "torch-preflight", "ftuneai"]

#: what each peer's environment installs, in order (torch first, from this machine's
#: CPU wheel, so no CUDA build is ever resolved); the pins are the versions that ran
PACKAGES: dict[str, list[list[str]]] = {
    "accelerate": [["torch==2.13.0"], ["accelerate==1.16.0", "transformers==5.25.0"]],
    "deepspeed": [["torch==2.13.0"], ["deepspeed==0.19.8", "transformers==5.25.0"]],
    "llm-analysis": [["llm-analysis==0.2.2"]],
    "fitcheck-llm": [["fitcheck-llm==0.3.1"]],
    "torch-preflight": [["torch-preflight==0.5.0"]],
    "ftuneai": [["ftuneai==0.4.1"]],
}

#: peers that look the model up by name in a database of their own (no config.json input)
OWN_MODELS = {"torch-preflight", "ftuneai"}

PEERS_NOT_RUN: dict[str, str] = {
    "gpu-poor": "no such package on the package index (the 'gpu_poor' calculator is a web "
                "page, not an installable estimator)",
    "vram-calculator": "no such package on the package index",
    "gpu-estimator 0.2.0": "its model is a parameter count, one of its predefined names or "
                           "a Hub id it fetches online (--huggingface-model); it has no "
                           "LoRA, quantization or sharding input; not wired here",
    "qmemcalc 0.1.1": "reads the model with AutoConfig.from_pretrained (a local directory "
                      "would do) and takes batch, sequence, precision, LoRA rank and 4/8-bit "
                      "quantization, but no world size or sharding; not wired here",
    "alloc 0.0.16": "its `ghost` estimate reads a training script or a bare parameter "
                    "count, and its calibration (`run`) needs a GPU (pynvml); no "
                    "configuration input to give a published row",
}

_TIMEOUT_S = 300


# ---- environments and runs --------------------------------------------------------------

def venv_python(peer: str) -> str:
    """The peer's interpreter, building its environment first when it is missing."""
    env = os.path.join(VENVS, peer)
    py = os.path.join(env, "bin", "python")
    if os.path.exists(os.path.join(env, ".installed")):
        return py
    subprocess.run([sys.executable, "-m", "venv", env], check=True)
    extra = {"DS_BUILD_OPS": "0"}                       # DeepSpeed without its C++/CUDA ops
    for group in PACKAGES[peer]:
        subprocess.run([py, "-m", "pip", "install", "-q", *group], check=True,
                       env={**os.environ, **extra})
    open(os.path.join(env, ".installed"), "w").write(json.dumps(PACKAGES[peer]))
    return py


def _run(argv: list[str], env: Optional[dict] = None, timeout: int = _TIMEOUT_S) -> str:
    cp = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                        env={**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
                             **(env or {})})
    out = cp.stdout + ("\n" + cp.stderr if cp.stderr else "")
    if cp.returncode not in (0, 1) or not cp.stdout.strip():
        raise RuntimeError(f"exit {cp.returncode}: {out.strip().splitlines()[-1:]}")
    return cp.stdout


# ---- the row's model config -------------------------------------------------------------

def model_config(model: str) -> Optional[tuple[str, dict]]:
    """(catalogue entry name, config.json dict) for the row's model, None when the
    catalogue does not hold it."""
    from preflight.models import catalog        # imported where used: the CLI's --help stays light
    hit = catalog.lookup_entry(model)
    if hit is None:
        return None
    name, arch, cfg = hit
    return name, {"model_type": arch, **cfg}


def _first(cfg: dict, *keys: str, default=None):
    return next((cfg[k] for k in keys if cfg.get(k) is not None), default)


def llm_analysis_model(name: str, cfg: dict) -> Optional[dict]:
    """llm-analysis's own model-config JSON (its `ModelConfig` fields) for a catalogue
    config: its MLP is two matrices, so a gated (SwiGLU) MLP of width I is given as
    1.5·I, which makes its parameter count the model's. None for MoE configs."""
    from preflight.models.formulas import activation_family   # where used: see model_config
    if any(k in cfg for k in ("num_experts", "num_local_experts", "n_routed_experts")):
        return None
    hidden = _first(cfg, "hidden_size", "n_embd", "d_model")
    heads = _first(cfg, "num_attention_heads", "n_head", "num_heads")
    layers = _first(cfg, "num_hidden_layers", "n_layer", "num_layers")
    if not (hidden and heads and layers and cfg.get("vocab_size")):
        return None
    ffn = _first(cfg, "intermediate_size", "ffn_dim", "d_ff", "n_inner", default=4 * hidden)
    if activation_family(cfg["model_type"], cfg) == "llama":
        ffn = int(ffn * 3 // 2)
    kv = 1 if cfg.get("multi_query") else _first(cfg, "num_key_value_heads", "num_kv_heads",
                                                  default=heads)
    return {"name": name.replace("/", "_"), "num_layers": layers, "n_head": heads,
            "hidden_dim": hidden, "vocab_size": cfg["vocab_size"],
            "max_seq_len": cfg.get("max_position_embeddings"), "num_key_value_heads": kv,
            "ffn_embed_dim": ffn, "expansion_ratio": ffn / hidden,
            "model_type": cfg["model_type"]}


def _hub_cache(root: str, repo: str, cfg: dict) -> None:
    """A Hugging Face cache holding only `repo`'s config.json (fitcheck reads the Hub
    through it when HF_HUB_OFFLINE=1)."""
    base = os.path.join(root, "hub", "models--" + repo.replace("/", "--"))
    rev = "0" * 40
    os.makedirs(os.path.join(base, "snapshots", rev), exist_ok=True)
    os.makedirs(os.path.join(base, "refs"), exist_ok=True)
    open(os.path.join(base, "refs", "main"), "w").write(rev)
    json.dump(cfg, open(os.path.join(base, "snapshots", rev, "config.json"), "w"))


# ---- parsing what each peer prints (pure) -----------------------------------------------

_UNITS = {"bytes": 1, "KB": 1024, "MB": 1024 ** 2, "GB": 1024 ** 3, "TB": 1024 ** 4}


def parse_accelerate(text: str, dtype: str) -> tuple[int, str]:
    """Bytes of the 'Training using Adam' cell of `dtype`'s row of accelerate's table
    (its `convert_bytes` steps by 1024 and writes KB/MB/GB)."""
    for line in text.splitlines():
        cells = [c.strip() for c in re.split(r"[│|]", line) if c.strip()]
        if len(cells) == 4 and cells[0] == dtype:
            num, unit = cells[3].split()
            return round(float(num) * _UNITS[unit]), line.strip()
    raise ValueError(f"no {dtype} row in accelerate's table")


def parse_deepspeed(text: str, offload_params: bool, offload_optimizer: bool) -> tuple[int, str]:
    """Bytes of the per-GPU column of DeepSpeed's table, on the line of the row's offload
    options (its figures are GiB: `/2**30`, printed as "GB")."""
    want_par = "cpu" if offload_params else "none"
    want_opt = "cpu" if offload_optimizer else "none"
    for line in text.splitlines():
        m = re.match(r"\s*([\d.]+)GB \|\s*([\d.]+)GB \| (.*)$", line)
        if not m:
            continue
        opts = dict(re.findall(r"(\w+)=(\S+?)(?:,|$)", m.group(3)))
        par = opts.get("offload_param", "none")
        got_par = "none" if par == "none" else "cpu"
        got_opt = "none" if opts.get("offload_optimizer") == "none" else "cpu"
        if (got_par, got_opt) == (want_par if "offload_param" in opts else "none", want_opt):
            return round(float(m.group(2)) * 2 ** 30), line.strip()
    raise ValueError("no matching option line in DeepSpeed's table")


def _json_tail(text: str) -> dict:
    start = text.find("\n{") + 1 if not text.lstrip().startswith("{") else text.find("{")
    return json.loads(text[start:])


def parse_llm_analysis(text: str) -> tuple[Optional[int], str]:
    doc = _json_tail(text)
    if "error" in doc:
        return None, f"llm-analysis refuses: {doc['error']}"
    key = "(weight+op_state+grad+act)_memory_per_gpu"
    return round(float(doc[key])), f"{key}: {doc[key]}"


def parse_fitcheck(text: str) -> tuple[int, str]:
    mem = _json_tail(text)["memory_mib"]
    return round(mem["total"] * 2 ** 20), f"memory_mib: {json.dumps(mem)}"


def parse_torch_preflight(text: str) -> tuple[Optional[int], str]:
    doc = _json_tail(text)
    if not doc.get("resolved"):
        return None, "torch-preflight: " + " ".join(doc.get("notes") or ["model not resolved"])
    return int(doc["total_bytes"]), f"total_bytes: {doc['total_bytes']} ({doc.get('band')})"


def parse_ftuneai(text: str) -> tuple[Optional[int], str]:
    """ftuneai's MemoryBreakdown: total_gb is GiB (its BYTES_TO_GB = 1 / 1024**3)."""
    doc = _json_tail(text)
    if "error" in doc:
        return None, f"ftuneai: {doc['error']}"
    return round(doc["total_gb"] * 2 ** 30), f"total_gb: {doc['total_gb']}"


# ---- one peer on one row ----------------------------------------------------------------

def _runner_args(peer: str, plan: pin.Plan, model_dir: str) -> list[str]:
    a = plan.args
    if peer == "accelerate":
        return [model_dir, a["dtype"]]
    return [model_dir, str(a["stage"]), str(a["num_gpus_per_node"]), str(a["num_nodes"])]


_RUNNER = {"accelerate": "accelerate_estimate.py", "deepspeed": "deepspeed_estimate.py"}


def _parse(peer: str, plan: pin.Plan, text: str) -> tuple:
    a = plan.args
    if peer == "accelerate":
        return parse_accelerate(text, a["dtype"])
    return parse_deepspeed(text, a["offload_params"], a["offload_optimizer"])


def _call(peer: str, plan: pin.Plan, f: pin.Facts, name: str, cfg: dict) -> tuple:
    py = venv_python(peer)
    with tempfile.TemporaryDirectory() as tmp:
        json.dump(cfg, open(os.path.join(tmp, "config.json"), "w"))
        a = plan.args
        if peer in _RUNNER:
            out = _run([py, os.path.join(RUNNERS, _RUNNER[peer]),
                        *_runner_args(peer, plan, tmp)])
            return _parse(peer, plan, out)
        if peer == "llm-analysis":
            mc = llm_analysis_model(name, cfg)
            if mc is None:
                return None, f"llm-analysis: no dense model config for {name}"
            if mc["max_seq_len"] is None:     # the catalogue states no max_position_embeddings
                mc["max_seq_len"] = f.seq_len
            path = os.path.join(tmp, "model.json")
            json.dump(mc, open(path, "w"))
            out = _run([py, os.path.join(RUNNERS, "llm_analysis_train.py"), path,
                        json.dumps(a)])
            return parse_llm_analysis(out)
        if peer == "fitcheck-llm":
            _hub_cache(tmp, f.model, cfg)
            out = _run([os.path.join(os.path.dirname(py), "fitcheck"), f.model, "--json",
                        *a["argv"]], env={"HF_HOME": tmp})
            return parse_fitcheck(out)
        if peer == "ftuneai":
            out = _run([py, os.path.join(RUNNERS, "ftuneai_estimate.py"), json.dumps(a)])
            return parse_ftuneai(out)
        out = _run([os.path.join(os.path.dirname(py), "torch-preflight"), "estimate",
                    *a["argv"], "-f", "json"])
        return parse_torch_preflight(out)


def prefetch(rows: list[dict]) -> None:
    """Fill the cache for many rows with one process per slow peer (accelerate and
    DeepSpeed import torch and transformers: seconds per process, not per row)."""
    cache = _load_cache()
    with tempfile.TemporaryDirectory() as tmp:
        jobs: dict[str, list] = {p: [] for p in _RUNNER}
        plans: dict[str, pin.Plan] = {}
        for i, row in enumerate(rows):
            f = pin.facts(row)
            found = model_config(f.model)
            for peer in _RUNNER:
                plan = pin.PLANS[peer](f)
                if found is None or isinstance(plan, pin.Skip):
                    continue
                key = cache_key(row["id"], peer, plan, found[1])
                if key in cache.get(peer, {}) or key in plans:
                    continue
                d = os.path.join(tmp, str(i))
                os.makedirs(d, exist_ok=True)
                json.dump(found[1], open(os.path.join(d, "config.json"), "w"))
                jobs[peer].append([key, *_runner_args(peer, plan, d)])
                plans[key] = plan
        for peer, todo in jobs.items():
            if not todo:
                continue
            path = os.path.join(tmp, f"{peer}.json")
            json.dump(todo, open(path, "w"))
            out = _run([venv_python(peer), os.path.join(RUNNERS, _RUNNER[peer]), "--jobs",
                        path], timeout=60 * len(todo) + _TIMEOUT_S)
            for chunk in ("\n" + out).split("\n=== ")[1:]:
                key, _, text = chunk.partition("\n")
                try:
                    got = _parse(peer, plans[key], text)
                except (ValueError, KeyError):
                    continue                    # run again alone, its error the reason
                cache.setdefault(peer, {})[key] = {"bytes": got[0], "output": got[1]}
    _save_cache(cache)


def _load_cache() -> dict:
    try:
        return json.load(open(CACHE))
    except (OSError, ValueError):
        return {}


def cache_key(row_id: str, peer: str, plan: pin.Plan, cfg: dict) -> str:
    """"<row id>@<hash of the peer's pinned packages, its input and the model config>"."""
    blob = json.dumps([PACKAGES[peer], plan.args, cfg], sort_keys=True)
    return f"{row_id}@{hashlib.sha256(blob.encode()).hexdigest()[:16]}"


def peer_columns(row: dict, use_cache: bool = True) -> dict[str, tuple[Optional[int], str]]:
    """For one published row: each peer's predicted per-GPU bytes, or None, with the
    reason (what tier the peer's figure claims, or why it cannot size the row)."""
    f = pin.facts(row)
    found = model_config(f.model)
    cache = _load_cache() if use_cache else {}
    out: dict[str, tuple[Optional[int], str]] = {}
    dirty = False
    for peer in PEERS:
        plan = pin.PLANS[peer](f)
        if isinstance(plan, pin.Skip):
            out[peer] = (None, plan.reason)
            continue
        if peer in OWN_MODELS:                  # the peer reads its own model database
            name, cfg = f.model, {}
        elif found is None:
            out[peer] = (None, f"no model config: {f.model} is not in preflight's catalogue")
            continue
        else:
            name, cfg = found
        key = cache_key(row["id"], peer, plan, cfg)
        hit = cache.get(peer, {}).get(key)
        if hit is None:
            try:
                got, line = _call(peer, plan, f, name, cfg)
                cache.setdefault(peer, {})[key] = {"bytes": got, "output": line}
                dirty = True
            except Exception as e:     # the peer's failure is the column's reason, not cached
                got, line = None, f"{peer} failed: {type(e).__name__}: {e}"
            hit = {"bytes": got, "output": line}
        src = (f"its own model database entry for {name}" if peer in OWN_MODELS else
               f"config.json from preflight's catalogue entry {name}")
        out[peer] = ((hit["bytes"], f"{plan.claims}; {src}; printed {hit['output']}")
                     if hit["bytes"] is not None else (None, hit["output"]))
    if dirty and use_cache:
        _save_cache(cache)
    return out


def _save_cache(cache: dict) -> None:
    os.makedirs(os.path.dirname(CACHE), exist_ok=True)
    with open(CACHE, "w") as fh:
        json.dump(cache, fh, indent=1, sort_keys=True)


# ---- command line -----------------------------------------------------------------------

_UNIT_BYTES = {"GB": 1e9, "GiB": 2 ** 30, "MB": 1e6, "MiB": 2 ** 20}


def measured_bytes(row: dict) -> float:
    return float(row["value"]) * _UNIT_BYTES[row["unit"]]


def load_rows() -> list[dict]:
    import yaml                                 # where used: only the command line reads files
    rows = []
    for path in sorted(glob.glob(os.path.join(HERE, "published", "*.yaml"))):
        rows += (yaml.safe_load(open(path)) or {}).get("rows") or []
    return rows


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--row", help="one row id: print every peer's column")
    ap.add_argument("--all", action="store_true", help="every row; then per-peer errors")
    ap.add_argument("--no-cache", action="store_true", help="rerun the peers")
    a = ap.parse_args(argv)
    rows = load_rows()
    if a.row:
        rows = [r for r in rows if r["id"] == a.row]
        if not rows:
            print(f"no row {a.row}", file=sys.stderr)
            return 2
    elif not a.all:
        ap.print_help()
        return 2
    if a.all and not a.no_cache:
        prefetch(rows)
    errors: dict[str, list[float]] = {p: [] for p in PEERS}
    for r in rows:
        cols = peer_columns(r, use_cache=not a.no_cache)
        meas = measured_bytes(r)
        for p, (b, why) in cols.items():
            if b is not None:
                errors[p].append(100.0 * (b - meas) / meas)
            if a.row:
                shown = f"{b / 1e9:.2f} GB ({100.0 * (b - meas) / meas:+.1f} %)" if b else "—"
                print(f"{p:16} {shown:24} {why}")
    if a.row:
        print(f"{'measured':16} {meas / 1e9:.2f} GB ({r['measured']})")
    for p in PEERS:
        e = errors[p]
        if e:
            print(f"{p:16} rows {len(e):3}  median |err| {statistics.median(map(abs, e)):6.1f} %"
                  f"  max |err| {max(map(abs, e)):7.1f} %  under by >5 %: "
                  f"{sum(x < -5 for x in e)}")
        else:
            print(f"{p:16} rows   0")
    return 0


if __name__ == "__main__":
    sys.exit(main())
