"""Peak accuracy on CPU: preflight's predicted tensors peak against an independent
measurement of one real training step, for `estimate` (flags) and `check` (a script that
builds the same model), over tiny models built from configs (no weights downloaded).

The instrument is `bench/live_storage.py`: a TorchDispatchMode that records every live
tensor storage and samples the live total after every op. It shares nothing with the
estimator or the dry run. Each configuration runs two steps (the first creates the
optimizer state); the peak of the second, steady-state step is compared with the ledger's
tensors tier (`tiers.tensors`: the largest phase of the step), and the measured model
states between steps (weights, registered buffers, optimizer state with torch.optim's
`step` counters, master weights) with the ledger's states: "exact" means equal to the
byte, the error column beside it. Both paths say the job runs on the CPU (`--device cpu`;
the script moves its model with `.to(device)`), where torch.optim's host-side `step`
counters are device memory, and that a bf16 model is a cast fp32 one (`--model-cast`;
`model.to(torch.bfloat16)` casts the rotary tables with the weights).

The optimizer is built with `foreach=True`, the CUDA default the estimator models (on CPU
torch defaults to the per-tensor loop). Dropout is 0 in every model: CPU stores dropout
masks in the input dtype where CUDA stores bytes, so masks are the one thing this CPU
instrument cannot check. Autocast runs on the CPU, and both paths say so: the script
writes `torch.autocast('cpu', …)`, the flags `--autocast-device cpu` (CPU autocast keeps
`pow` in bf16 where CUDA runs it in fp32, which changes what gelu_new saves).

    python bench/peak_accuracy.py              # all configurations, ~ a few minutes
    python bench/peak_accuracy.py --only 0,3

Writes bench/results/peak_accuracy.md and .json.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench"))

import torch  # noqa: E402

from live_storage import LiveStorages  # noqa: E402

# ------------------------------------------------------------------ the models
#: name → (transformers config class, model class, config kwargs, estimate flags)
GPT2 = ("GPT2Config", "GPT2LMHeadModel",
        dict(n_layer=2, n_embd=128, n_head=4, vocab_size=1000,
             resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0),
        ["--model", "gpt2", "--layers", "2", "--hidden", "128", "--heads", "4",
         "--vocab", "1000"])
LLAMA = ("LlamaConfig", "LlamaForCausalLM",
         dict(num_hidden_layers=2, hidden_size=128, num_attention_heads=4,
              num_key_value_heads=2, intermediate_size=344, vocab_size=1000,
              max_position_embeddings=256),
         ["--model", "meta-llama/Llama-2-7b-hf", "--layers", "2", "--hidden", "128", "--heads", "4",
          "--kv-heads", "2", "--ffn-hidden", "344", "--vocab", "1000"])
QWEN = ("Qwen2Config", "Qwen2ForCausalLM",
        dict(num_hidden_layers=2, hidden_size=128, num_attention_heads=4,
             num_key_value_heads=2, intermediate_size=320, vocab_size=1000,
             max_position_embeddings=256, tie_word_embeddings=True),
        ["--model", "Qwen/Qwen2.5-0.5B", "--layers", "2", "--hidden", "128", "--heads", "4",
         "--kv-heads", "2", "--ffn-hidden", "320", "--vocab", "1000"])
MIXTRAL = ("MixtralConfig", "MixtralForCausalLM",
           dict(num_hidden_layers=2, hidden_size=128, num_attention_heads=4,
                num_key_value_heads=2, intermediate_size=192, vocab_size=1000,
                num_local_experts=4, num_experts_per_tok=2, max_position_embeddings=256),
           ["--model", "mistralai/Mixtral-8x7B-v0.1", "--layers", "2", "--hidden", "128", "--heads", "4",
            "--kv-heads", "2", "--ffn-hidden", "192", "--vocab", "1000", "--experts", "4",
            "--top-k", "2"])
BERT = ("BertConfig", "BertForMaskedLM",
        dict(num_hidden_layers=2, hidden_size=128, num_attention_heads=4,
             intermediate_size=512, vocab_size=1000,
             hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0),
        ["--model", "bert-base-uncased", "--layers", "2", "--hidden", "128", "--heads", "4",
         "--ffn-hidden", "512", "--vocab", "1000"])

MLP_SRC = '''
class MLP(nn.Module):
    def __init__(self, d_in=512, width=1024, depth=3, classes=10):
        super().__init__()
        layers = [nn.Linear(d_in, width), nn.ReLU()]
        for _ in range(depth - 1):
            layers += [nn.Linear(width, width), nn.ReLU()]
        layers.append(nn.Linear(width, classes))
        self.net = nn.Sequential(*layers)

    def forward(self, x):
        return self.net(x)
'''
CNN_SRC = '''
class CNN(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 32, 3, padding=1)
        self.conv2 = nn.Conv2d(32, 64, 3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(64 * 8 * 8, classes)

    def forward(self, x):
        x = self.pool(torch.relu(self.conv1(x)))
        x = self.pool(torch.relu(self.conv2(x)))
        return self.fc(x.flatten(1))
'''

#: (id, model, precision, optimizer, attention, checkpointing, lora_r, grad_accum, batch, seq)
CONFIGS = [
    ("gpt2-fp32-adamw-eager", GPT2, "fp32", "adamw", "eager", False, None, 1, 4, 128),
    ("gpt2-fp32-adamw-sdpa", GPT2, "fp32", "adamw", "sdpa", False, None, 1, 4, 128),
    ("gpt2-bf16-adamw-sdpa", GPT2, "bf16", "adamw", "sdpa", False, None, 1, 4, 128),
    ("gpt2-autocast-adamw-sdpa", GPT2, "autocast", "adamw", "sdpa", False, None, 1, 4, 128),
    ("gpt2-fp32-sgdm-ckpt", GPT2, "fp32", "sgd_momentum", "sdpa", True, None, 1, 4, 128),
    ("gpt2-fp32-adamw-accum2", GPT2, "fp32", "adamw", "sdpa", False, None, 2, 4, 128),
    ("gpt2-fp32-lora8", GPT2, "fp32", "adamw", "sdpa", False, 8, 1, 4, 128),
    ("llama-fp32-adamw-sdpa", LLAMA, "fp32", "adamw", "sdpa", False, None, 1, 4, 128),
    ("llama-bf16-adamw-eager", LLAMA, "bf16", "adamw", "eager", False, None, 1, 4, 128),
    ("llama-autocast-adamw-sdpa", LLAMA, "autocast", "adamw", "sdpa", False, None, 1, 4, 128),
    ("llama-fp32-adafactor-sdpa", LLAMA, "fp32", "adafactor", "sdpa", False, None, 1, 4, 128),
    ("llama-fp32-adamw-ckpt", LLAMA, "fp32", "adamw", "sdpa", True, None, 1, 4, 128),
    ("llama-bf16-sgdm-accum4", LLAMA, "bf16", "sgd_momentum", "sdpa", False, None, 4, 4, 128),
    ("llama-fp32-lora8", LLAMA, "fp32", "adamw", "sdpa", False, 8, 1, 4, 128),
    ("qwen2-fp32-adamw-sdpa", QWEN, "fp32", "adamw", "sdpa", False, None, 1, 4, 128),
    ("qwen2-bf16-adamw-ckpt", QWEN, "bf16", "adamw", "sdpa", True, None, 1, 4, 128),
    ("mixtral-fp32-adamw-sdpa", MIXTRAL, "fp32", "adamw", "sdpa", False, None, 1, 4, 128),
    ("bert-fp32-adamw-sdpa", BERT, "fp32", "adamw", "sdpa", False, None, 1, 4, 128),
    ("bert-fp32-sgdm-eager", BERT, "fp32", "sgd_momentum", "eager", False, None, 1, 4, 128),
    ("mlp-fp32-adamw", "MLP", "fp32", "adamw", None, False, None, 1, 64, None),
    ("mlp-bf16-adafactor", "MLP", "bf16", "adafactor", None, False, None, 1, 64, None),
    ("cnn-fp32-sgdm", "CNN", "fp32", "sgd_momentum", None, False, None, 1, 32, None),
]

#: a configuration's checkpointing (False, True: full, "op": op-level selective) as the flag
CHECKPOINTING = {False: "none", True: "full", "op": "selective_op"}
PRECISION_FLAG = {"fp32": "fp32", "bf16": "bf16", "autocast": "bf16-autocast"}


# ------------------------------------------------------------------ measurement
#: the ops whose outputs op-level selective checkpointing saves, as torchtitan lists them
#: (torchtitan/parallelisms/parallelize_llama.py@9dec370, `_save_list`, float8's abs/max
#: and the distributed reduce-scatter left out), with the CPU's flash kernel standing in
#: for the CUDA ones
OP_SAC_SAVE = {torch.ops.aten.mm.default,
               torch.ops.aten._scaled_dot_product_flash_attention.default,
               torch.ops.aten._scaled_dot_product_efficient_attention.default,
               torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default}


def op_sac_context():
    """`context_fn` for `torch.utils.checkpoint`: torchtitan's op-level policy — save the
    outputs of the listed ops except every second `aten.mm` of a forward (one counter for
    the forward, one for the recompute), recompute everything else."""
    from collections import defaultdict
    from torch.utils.checkpoint import CheckpointPolicy, create_selective_checkpoint_contexts
    count: dict = defaultdict(int)

    def policy(ctx, func, *args, **kwargs):
        key = "recompute" if ctx.is_recompute else "forward"
        if func == torch.ops.aten.mm.default:
            count[key] += 1
        save = func in OP_SAC_SAVE and not (func == torch.ops.aten.mm.default
                                             and count[key] % 2 == 0)
        return CheckpointPolicy.MUST_SAVE if save else CheckpointPolicy.PREFER_RECOMPUTE

    return create_selective_checkpoint_contexts(policy)


def _build(model, precision, attention, ckpt, lora_r):
    if isinstance(model, str):
        ns: dict = {}
        exec("import torch\nfrom torch import nn\n" + (MLP_SRC if model == "MLP" else CNN_SRC), ns)
        m = ns[model]()
    else:
        import transformers
        cfg_cls, model_cls, kw, _ = model
        cfg = getattr(transformers, cfg_cls)(**kw)
        cfg._attn_implementation = attention
        m = getattr(transformers, model_cls)(cfg)
        if ckpt:
            # ckpt "op": torchtitan's op-level selective policy on each decoder layer
            kw = {"use_reentrant": False}
            if ckpt == "op":
                kw.update(context_fn=op_sac_context, preserve_rng_state=False)
            m.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kw)
    if precision == "bf16":
        m = m.to(torch.bfloat16)
    if lora_r:
        from peft import LoraConfig, get_peft_model
        targets = ["c_attn"] if model is GPT2 else ["q_proj", "k_proj", "v_proj", "o_proj"]
        m = get_peft_model(m, LoraConfig(r=lora_r, lora_alpha=16, target_modules=targets,
                                         lora_dropout=0.0))
    m.train()
    return m


def _optimizer(name, params):
    if name == "adamw":
        return torch.optim.AdamW(params, lr=1e-4, foreach=True)
    if name == "sgd_momentum":
        return torch.optim.SGD(params, lr=1e-3, momentum=0.9, foreach=True)
    return torch.optim.Adafactor(params, lr=1e-3, foreach=True)


def _batch(model, batch, seq, precision="fp32"):
    dt = torch.bfloat16 if precision == "bf16" else torch.float32
    if model == "MLP":
        return torch.randn(batch, 512, dtype=dt), torch.randint(0, 10, (batch,))
    if model == "CNN":
        return torch.randn(batch, 3, 32, 32, dtype=dt), torch.randint(0, 10, (batch,))
    ids = torch.randint(0, 1000, (batch, seq))
    return ids, ids


def _loss(model, m, x, y):
    if isinstance(model, str):
        return torch.nn.functional.cross_entropy(m(x), y)
    return m(input_ids=x, labels=y).loss


def measure(cfg) -> dict:
    name, model, precision, opt, attention, ckpt, lora_r, accum, batch, seq = cfg
    torch.manual_seed(0)
    if lora_r:
        # imported outside the measurement: peft's modules create tensors at import time
        # (default arguments such as `scale=torch.tensor(1)`), which are not the job's
        import peft  # noqa: F401
    t = LiveStorages()
    with t:
        m = _build(model, precision, attention, ckpt, lora_r)
        params = [p for p in m.parameters() if p.requires_grad]
        o = _optimizer(opt, params)
        n_params = sum(p.numel() for p in m.parameters())
        n_train = sum(p.numel() for p in params)
        for step in range(2):
            if step == 1:
                gc.collect()
                states = t.current
                t.reset_peak()
            for _ in range(accum):
                x, y = _batch(model, batch, seq, precision)
                t.phase = "forward"
                with torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "autocast"):
                    loss = _loss(model, m, x, y)
                t.phase = "backward"
                loss.backward()
                del loss, x, y
            t.phase = "optimizer step"
            o.step()
            o.zero_grad(set_to_none=True)
            t.phase = "between steps"
    meas = {"peak": t.peak, "peak_phase": t.peak_phase, "phases": dict(t.phase_peaks),
            "states": states, "params": n_params, "trainable": n_train}
    del m, o, params
    gc.collect()
    return meas


# ------------------------------------------------------------------ the two paths
def _cli(args: list[str]) -> dict:
    r = subprocess.run([sys.executable, "-m", "preflight", *args, "--format", "json"],
                       capture_output=True, text=True, cwd=ROOT, timeout=300)
    try:
        return json.loads(r.stdout)
    except json.JSONDecodeError:
        return {"error": (r.stderr or r.stdout).strip().splitlines()[-1:] or ["no output"]}


def model_file(model: str) -> str:
    """For `estimate`: a file that builds a custom module and applies it to one example
    input (flags cannot describe its layers; the file gives them, the flags the rest)."""
    example = "torch.randn(1, 512)" if model == "MLP" else "torch.randn(1, 3, 32, 32)"
    return ("import torch\nfrom torch import nn\n" + textwrap.dedent(
        MLP_SRC if model == "MLP" else CNN_SRC) + f"\nmodel = {model}()\nmodel({example})\n")


def estimate_args(cfg, meas: dict, model_path: str = "") -> list[str]:
    name, model, precision, opt, attention, ckpt, lora_r, accum, batch, seq = cfg
    # the job runs on the CPU (torch.optim's host-side step counts are device memory there)
    args = ["estimate", "--precision", PRECISION_FLAG[precision], "--optimizer", opt,
            "--micro-batch", str(batch), "--grad-accum", str(accum), "--device", "cpu"]
    if precision == "bf16":
        # the measured model is cast with .to(torch.bfloat16), its fp32 buffers with it
        args.append("--model-cast")
    if isinstance(model, str):
        # the layers come from the model's file (`preflight estimate model.py --flags`)
        args.insert(1, model_path)
    else:
        # every model here has dropout 0 (see the module docstring), as its config says
        args += model[3] + ["--seq-len", str(seq), "--attention", attention,
                            "--checkpointing", CHECKPOINTING[ckpt], "--dropout", "0"]
    if precision == "autocast":
        # measured under CPU autocast, whose op lists differ from CUDA's (pow in bf16)
        args += ["--autocast-device", "cpu"]
    if lora_r:
        args += ["--lora-r", str(lora_r),
                 "--lora-targets", "c_attn" if model is GPT2 else "q_proj,k_proj,v_proj,o_proj"]
    return args


def script(cfg) -> str:
    """A plain training script building the same model (what a user would write)."""
    name, model, precision, opt, attention, ckpt, lora_r, accum, batch, seq = cfg
    lines = ["import torch", "from torch import nn"]
    if isinstance(model, str):
        lines.append(textwrap.dedent(MLP_SRC if model == "MLP" else CNN_SRC))
        lines.append(f"model = {model}()")
        data = ("torch.randn(batch_size, 512" if model == "MLP"
                else "torch.randn(batch_size, 3, 32, 32")
        data += ", dtype=torch.bfloat16)" if precision == "bf16" else ")"
    else:
        cfg_cls, model_cls, kw, _ = model
        lines.append(f"from transformers import {cfg_cls}, {model_cls}")
        args = ", ".join(f"{k}={v!r}" for k, v in kw.items())
        lines.append(f"config = {cfg_cls}({args}, attn_implementation={attention!r})")
        lines.append(f"model = {model_cls}(config)")
        if ckpt:
            lines.append("model.gradient_checkpointing_enable()")
        data = "torch.randint(0, 1000, (batch_size, block_size))"
    if precision == "bf16":
        lines.append("model = model.to(torch.bfloat16)")
    lines += ['device = "cpu"', "model = model.to(device)"]
    if lora_r:
        targets = ["c_attn"] if model is GPT2 else ["q_proj", "k_proj", "v_proj", "o_proj"]
        lines.append("from peft import LoraConfig, get_peft_model")
        lines.append(f"model = get_peft_model(model, LoraConfig(r={lora_r}, lora_alpha=16, "
                     f"target_modules={targets!r}))")
    lines.append(f"batch_size = {batch}")
    if seq:
        lines.append(f"block_size = {seq}")
    lines.append(f"gradient_accumulation_steps = {accum}")
    lines.append({"adamw": "optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)",
                  "sgd_momentum": "optimizer = torch.optim.SGD(model.parameters(), lr=1e-3, "
                                  "momentum=0.9)",
                  "adafactor": "optimizer = torch.optim.Adafactor(model.parameters(), lr=1e-3)"}[opt])
    body = [f"x = {data}"]
    if isinstance(model, str):
        body += ["y = torch.randint(0, 10, (batch_size,))",
                 "loss = nn.functional.cross_entropy(model(x), y)"]
    else:
        body += ["loss = model(input_ids=x, labels=x).loss"]
    body += ["(loss / gradient_accumulation_steps).backward()"]
    lines.append("for step in range(100):")
    lines.append("    for micro in range(gradient_accumulation_steps):")
    if precision == "autocast":
        lines.append("        with torch.autocast('cpu', dtype=torch.bfloat16):")
        lines += ["            " + b for b in body[:-1]]
        lines.append("        " + body[-1])
    else:
        lines += ["        " + b for b in body]
    lines += ["    optimizer.step()", "    optimizer.zero_grad()"]
    return "\n".join(lines) + "\n"


def predicted(j: dict) -> dict:
    if "error" in j:
        return {"failed": " ".join(j["error"])}
    jobs = j.get("jobs") or []
    if not jobs:
        return {"failed": "no job"}
    led = (jobs[0].get("estimate") or jobs[0]).get("ledger") or {}
    tiers = led.get("tiers") or {}
    b = led.get("per_gpu_bytes") or {}
    # between steps the gradients are None (zero_grad sets them so): what lives is the
    # weights, the optimizer state and the master copy
    states = None
    if all(b.get(k) is not None for k in ("params", "optimizer", "master")):
        states = b["params"] + b["optimizer"] + b["master"]
    return {"tensors": tiers.get("tensors"), "peak_phase": led.get("peak_phase"),
            "phases": led.get("phases"), "states": states, "unknown": led.get("unknown")}


def run(only=None) -> list[dict]:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "bench_models.py"), "w") as f:
            f.write("import torch\nfrom torch import nn\n" + MLP_SRC + CNN_SRC)
        for i, cfg in enumerate(CONFIGS):
            if only is not None and i not in only:
                continue
            t0 = time.time()
            meas = measure(cfg)
            path = os.path.join(tmp, f"train_{i}.py")
            with open(path, "w") as f:
                f.write(script(cfg))
            mpath = ""
            if isinstance(cfg[1], str):
                mpath = os.path.join(tmp, f"model_{i}.py")
                with open(mpath, "w") as f:
                    f.write(model_file(cfg[1]))
            est = predicted(_cli(estimate_args(cfg, meas, mpath)))
            chk = predicted(_cli(["estimate", path]))
            row = {"id": i, "name": cfg[0], "measured": meas, "estimate": est, "check": chk,
                   "wall_s": round(time.time() - t0, 1)}
            for k in ("estimate", "check"):
                p = row[k]
                if p.get("tensors"):
                    p["error"] = round(p["tensors"] / meas["peak"] - 1, 4)
                if p.get("states") is not None:
                    # "exact" is equal to the byte; the error is shown beside it
                    p["states_diff"] = p["states"] - meas["states"]
                    p["states_error"] = round(p["states"] / meas["states"] - 1, 6)
            rows.append(row)
            print(json.dumps({"id": i, "name": cfg[0], "peak": meas["peak"],
                              "phase": meas["peak_phase"],
                              "estimate": est.get("error", est.get("failed")),
                              "check": chk.get("error", chk.get("failed")),
                              "phases": meas["phases"], "est_phases": est.get("phases"),
                              "chk_phases": chk.get("phases")}), flush=True)
    return rows


def summary(rows) -> dict:
    out = {"configs": len(rows)}
    for k in ("estimate", "check"):
        errs = [abs(r[k]["error"]) for r in rows if r[k].get("error") is not None]
        st = [r[k]["states_diff"] for r in rows if r[k].get("states_diff") is not None]
        out[k] = {"sized": len(errs),
                  "median_abs_error": round(statistics.median(errs), 4) if errs else None,
                  "max_abs_error": round(max(errs), 4) if errs else None,
                  "states_exact": sum(1 for e in st if e == 0),
                  "states_max_abs_diff": max((abs(e) for e in st), default=None),
                  "phase_agrees": sum(1 for r in rows if r[k].get("peak_phase")
                                      and _same_phase(r[k]["peak_phase"],
                                                      r["measured"]["peak_phase"]))}
    return out


def _same_phase(predicted_phase: str, measured_phase: str) -> bool:
    if measured_phase == "backward":
        return predicted_phase in ("loss backward", "recompute", "backward end")
    return predicted_phase == measured_phase


def markdown(rows, summ) -> str:
    def kib(n):
        return "—" if n is None else f"{n / 1024:,.0f}"

    def err(p):
        if p.get("error") is None:
            return "not sized" + (f" ({p['failed']})" if p.get("failed") else "")
        return f"{p['error']:+.1%}"

    lines = [f"torch {torch.__version__}, CPU; instrument: bench/live_storage.py "
             "(live storages sampled after every op); steady-state step (the second).", "",
             "| # | configuration | measured peak KiB | phase | estimate KiB | error | states | "
             "phase | check KiB | error | states | phase |", "|" + "---|" * 13]
    for r in rows:
        m, e, c = r["measured"], r["estimate"], r["check"]

        def st(p):
            if p.get("states_diff") is None:
                return "—"
            d = p["states_diff"]
            return "exact" if d == 0 else f"{d:+,} B ({p['states_error']:+.3%})"
        lines.append(
            f"| {r['id']} | {r['name']} | {kib(m['peak'])} | {m['peak_phase']} | "
            f"{kib(e.get('tensors'))} | {err(e)} | {st(e)} | {e.get('peak_phase') or '—'} | "
            f"{kib(c.get('tensors'))} | {err(c)} | {st(c)} | {c.get('peak_phase') or '—'} |")
    lines.append("")
    for k in ("estimate", "check"):
        s = summ[k]
        med = "—" if s["median_abs_error"] is None else f"{s['median_abs_error']:.1%}"
        mx = "—" if s["max_abs_error"] is None else f"{s['max_abs_error']:.1%}"
        lines.append(f"- `{k}`: {s['sized']} of {summ['configs']} sized; median |error| {med}, "
                     f"max {mx}; states exact to the byte in {s['states_exact']}; peak phase "
                     f"agrees in "
                     f"{s['phase_agrees']}")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default=None, help="comma-separated configuration ids")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results"))
    ns = ap.parse_args(argv)
    only = {int(x) for x in ns.only.split(",")} if ns.only else None
    t0 = time.time()
    rows = run(only)
    summ = summary(rows)
    summ["wall_s"] = round(time.time() - t0, 1)
    md = markdown(rows, summ)
    if only is None:
        os.makedirs(ns.out, exist_ok=True)
        with open(os.path.join(ns.out, "peak_accuracy.json"), "w") as f:
            json.dump({"summary": summ, "rows": rows}, f, indent=1)
        with open(os.path.join(ns.out, "peak_accuracy.md"), "w") as f:
            f.write("# Peak accuracy on CPU\n\n" + md)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
