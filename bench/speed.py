"""Speed of the Python extractor against a bare libcst parse of the same files.

    python bench/speed.py                 # 60 generated training scripts in a temp dir
    python bench/speed.py -n 200          # more of them
    python bench/speed.py DIR_OR_FILES…   # your own scripts (read only)

Reports files/s and wall time for (a) `libcst.parse_module` alone, (b) the extraction that
`preflight check` runs per Python file (pre-check + analysis + the libcst Module it hands
on), (c) the whole `preflight check` pipeline in-process, and (d) one `preflight check`
subprocess over all files (interpreter start included). Best of --repeat runs.
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

# --------------------------------------------------------------------------- generator

_HELPERS = '''

def {name}(batch, tokenizer, max_len={n}):
    """Tokenize and pack one batch of examples ({name})."""
    texts = [ex["text"].strip() for ex in batch if ex.get("text")]
    out = tokenizer(texts, truncation=True, padding="max_length", max_length=max_len)
    labels = []
    for ids in out["input_ids"]:
        row = list(ids)
        for i, t in enumerate(row):
            if t == tokenizer.pad_token_id:
                row[i] = -100
        labels.append(row)
    out["labels"] = labels
    if len(labels) % {m} == 0:
        logger.info("packed %d rows into %d", len(texts), len(labels) // {m})
    return out
'''

_HF = '''import os
import logging
from dataclasses import dataclass, field
from typing import Optional

import torch
import transformers
from transformers import AutoModelForCausalLM, AutoTokenizer, Trainer, HfArgumentParser
{peft_import}
logger = logging.getLogger(__name__)
DEFAULT_MODEL = "{model}"


@dataclass
class ModelArguments:
    model_name_or_path: Optional[str] = field(default=DEFAULT_MODEL)
    use_lora: bool = field(default={use_lora})
    lora_r: int = field(default={r})


@dataclass
class DataArguments:
    data_path: str = field(default=None, metadata={{"help": "Path to the training data."}})


@dataclass
class TrainingArguments(transformers.TrainingArguments):
    model_max_length: int = field(default={seq})
    optim: str = field(default="{optim}")
{helpers}

def train():
    parser = HfArgumentParser((ModelArguments, DataArguments, TrainingArguments))
    model_args, data_args, training_args = parser.parse_args_into_dataclasses()
    model = AutoModelForCausalLM.from_pretrained(
        model_args.model_name_or_path,
        torch_dtype=torch.bfloat16,
        attn_implementation="{attn}",
    )
    tokenizer = AutoTokenizer.from_pretrained(model_args.model_name_or_path,
                                              model_max_length=training_args.model_max_length)
    if model_args.use_lora:
        cfg = LoraConfig(r=model_args.lora_r, lora_alpha=2 * model_args.lora_r,
                         target_modules=["q_proj", "k_proj", "v_proj", "o_proj"])
        model = get_peft_model(model, cfg)
    if training_args.gradient_checkpointing:
        model.gradient_checkpointing_enable()
    trainer = Trainer(model=model, tokenizer=tokenizer, args=training_args)
    trainer.train()
    trainer.save_state()


if __name__ == "__main__":
    train()
'''

_LOOP = '''"""Plain PyTorch training loop ({name})."""
import argparse
import math
import os
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader
{extra_import}

BLOCK_SIZE = {seq}
N_LAYER = {layers}
N_EMBD = {hidden}


class Block(nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        self.ln = nn.LayerNorm(n_embd)
        self.qkv = nn.Linear(n_embd, 3 * n_embd)
        self.proj = nn.Linear(n_embd, n_embd)
        self.n_head = n_head

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.qkv(self.ln(x)).split(C, dim=2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        {attn_line}
        return x + self.proj(y.transpose(1, 2).contiguous().view(B, T, C))


class Model(nn.Module):
    def __init__(self, vocab, n_layer=N_LAYER, n_embd=N_EMBD, n_head={heads}):
        super().__init__()
        self.emb = nn.Embedding(vocab, n_embd)
        self.blocks = nn.ModuleList([Block(n_embd, n_head) for _ in range(n_layer)])
        self.head = nn.Linear(n_embd, vocab, bias=False)

    def forward(self, idx):
        x = self.emb(idx)
        for b in self.blocks:
            x = b(x)
        return self.head(x)
{helpers}

def main():
    p = argparse.ArgumentParser()
    p.add_argument("--batch-size", type=int, default={mb})
    p.add_argument("--grad-accum", type=int, default={ga})
    p.add_argument("--lr", type=float, default=3e-4)
    p.add_argument("--amp", action="store_true")
    p.add_argument("--epochs", type=int, default=1)
    args = p.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = Model(vocab={vocab}).to(device)
    opt = {optimizer}
    loader = DataLoader(range(1000), batch_size=args.batch_size, shuffle=True)
    scaler = torch.cuda.amp.GradScaler(enabled=args.amp)
    for epoch in range(args.epochs):
        for step, batch in enumerate(loader):
            with torch.autocast("cuda", dtype=torch.{dtype}, enabled=args.amp):
                loss = model(batch).mean() / args.grad_accum
            scaler.scale(loss).backward()
            if (step + 1) % args.grad_accum == 0:
                scaler.step(opt)
                scaler.update()
                opt.zero_grad(set_to_none=True)


if __name__ == "__main__":
    main()
'''

_DS = '''import json
import os

import deepspeed
import torch
from transformers import AutoModelForCausalLM
{helpers}

def main(stage={stage}, micro_batch={mb}):
    ds_config = {{
        "train_micro_batch_size_per_gpu": micro_batch,
        "gradient_accumulation_steps": {ga},
        "bf16": {{"enabled": True}},
        "optimizer": {{"type": "AdamW", "params": {{"lr": 2e-5}}}},
        "zero_optimization": {{
            "stage": stage,
            "offload_optimizer": {{"device": "{off}"}},
        }},
    }}
    model = AutoModelForCausalLM.from_pretrained("{model}")
    engine, optimizer, _, _ = deepspeed.initialize(model=model, config=ds_config,
                                                   model_parameters=model.parameters())
    world = int(os.environ.get("WORLD_SIZE", 1))
    for step in range(100):
        loss = engine(torch.zeros(1, {seq}, dtype=torch.long)).loss
        engine.backward(loss)
        engine.step()


if __name__ == "__main__":
    main()
'''

MODELS = ["meta-llama/Llama-2-7b-hf", "Qwen/Qwen2-0.5B", "mistralai/Mistral-7B-v0.1",
          "gpt2", "EleutherAI/pythia-1b", "meta-llama/Meta-Llama-3-8B"]
OPTS = ["torch.optim.AdamW(model.parameters(), lr=args.lr)",
        "torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)",
        "torch.optim.Adam(model.parameters(), lr=args.lr)",
        "bnb.optim.AdamW8bit(model.parameters(), lr=args.lr)"]


def generate(folder: str, n: int, seed: int = 0) -> list[str]:
    rnd = random.Random(seed)
    paths = []
    for i in range(n):
        helpers = "".join(_HELPERS.format(name=f"collate_{i}_{j}", n=rnd.choice([256, 512]),
                                          m=rnd.choice([2, 4, 8]))
                          for j in range(rnd.randint(2, 14)))
        kind = i % 3
        if kind == 0:
            text = _HF.format(model=rnd.choice(MODELS), use_lora=rnd.choice([True, False]),
                              r=rnd.choice([8, 16, 64]), seq=rnd.choice([512, 2048, 4096]),
                              optim=rnd.choice(["adamw_torch", "paged_adamw_8bit", "adafactor"]),
                              attn=rnd.choice(["sdpa", "flash_attention_2", "eager"]),
                              helpers=helpers,
                              peft_import="from peft import LoraConfig, get_peft_model")
        elif kind == 1:
            opt = rnd.choice(OPTS)
            text = _LOOP.format(name=f"run{i}", seq=rnd.choice([256, 1024]),
                                layers=rnd.choice([6, 12]), hidden=rnd.choice([384, 768]),
                                heads=rnd.choice([6, 12]), mb=rnd.choice([8, 16, 32]),
                                ga=rnd.choice([1, 4]), vocab=rnd.choice([50304, 32000]),
                                optimizer=opt, dtype=rnd.choice(["bfloat16", "float16"]),
                                attn_line=rnd.choice([
                                    "y = F.scaled_dot_product_attention(q, k, v, is_causal=True)",
                                    "y = F.softmax(q @ k.transpose(-2, -1) / math.sqrt(k.size(-1)), dim=-1) @ v"]),
                                extra_import="import bitsandbytes as bnb" if "bnb" in opt else "",
                                helpers=helpers.replace("logger.info", "print"))
        else:
            text = _DS.format(stage=rnd.choice([1, 2, 3]), mb=rnd.choice([1, 2, 4]),
                              ga=rnd.choice([1, 8]), off=rnd.choice(["cpu", "none"]),
                              model=rnd.choice(MODELS), seq=rnd.choice([512, 2048]),
                              helpers=helpers.replace("logger.info", "print"))
        p = os.path.join(folder, f"train_{i:03d}.py")
        with open(p, "w", encoding="utf-8") as fh:
            fh.write(text)
        paths.append(p)
    return paths


# --------------------------------------------------------------------------- timing

def best(fn, repeat: int) -> tuple[float, float]:
    """(wall, cpu) seconds, the best of `repeat` runs. CPU time of this process is far less
    disturbed than wall time by other work on a busy machine."""
    walls, cpus = [], []
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - t)
        cpus.append(time.process_time() - c)
    return min(walls), min(cpus)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="*")
    ap.add_argument("-n", type=int, default=60, help="generated scripts (default 60)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-subprocess", action="store_true")
    a = ap.parse_args(argv)

    import libcst as cst

    from preflight import pipeline
    from preflight.extract import extract_file

    tmp = None
    if a.paths:
        files = []
        for p in a.paths:
            if os.path.isdir(p):
                for root, _, names in os.walk(p):
                    files += [os.path.join(root, x) for x in names if x.endswith(".py")]
            else:
                files.append(p)
        files.sort()
    else:
        tmp = tempfile.mkdtemp(prefix="preflight-bench-")
        files = generate(tmp, a.n)
    texts = []
    for p in files:
        with open(p, "rb") as fh:
            texts.append(fh.read().decode("utf-8", "replace"))
    lines = sum(t.count("\n") for t in texts)

    def parse_all():
        for t in texts:
            try:
                cst.parse_module(t)
            except Exception:  # noqa: BLE001 - a file libcst rejects still costs its time
                pass

    def extract_all():
        # under the garbage-collection policy `preflight check` runs its extraction with
        with pipeline.gc_paused():
            for p in files:
                extract_file(p)

    def check_all():
        pipeline.run(files)

    def parse_all_gc_paused():
        gc.disable()
        try:
            parse_all()
        finally:
            gc.enable()

    parse_all()
    extract_all()          # warm imports
    fns = {"parse": parse_all, "parse_nogc": parse_all_gc_paused, "extract": extract_all,
           "check": check_all}
    times: dict[str, list[tuple[float, float]]] = {k: [] for k in fns}
    for _ in range(a.repeat):          # interleaved, so load on the machine hits all alike
        for k, fn in fns.items():
            gc.collect()
            times[k].append(best(fn, 1))
    t = {k: min(w for w, _ in v) for k, v in times.items()}
    c = {k: min(x for _, x in v) for k, v in times.items()}
    t_parse = t["parse"]
    n = len(files)
    print(f"{n} files, {lines} lines" + (f" (generated in {tmp})" if tmp else ""))
    print(f"{'':38s}{'wall s':>9s}{'files/s':>10s}{'× parse':>9s}{'cpu s':>9s}{'× parse':>9s}")
    for label, k in (("libcst.parse_module (bare)", "parse"),
                     ("libcst.parse_module (bare, gc paused)", "parse_nogc"),
                     ("python extraction (check per file)", "extract"),
                     ("preflight check (pipeline, in-process)", "check")):
        print(f"{label:38s}{t[k]:9.3f}{n / t[k]:10.1f}{t[k] / t_parse:9.2f}"
              f"{c[k]:9.3f}{c[k] / c['parse']:9.2f}")
    if not a.no_subprocess:
        t0 = time.perf_counter()
        r = subprocess.run([sys.executable, "-m", "preflight", "check", "--format", "json",
                            "--exit-zero", *files], capture_output=True, text=True)
        ts = time.perf_counter() - t0
        print(f"{'preflight check (subprocess, 1 run)':38s}{ts:9.3f}{n / ts:10.1f}"
              f"{ts / t_parse:9.2f}  rc={r.returncode}")
    print(f"check / bare parse: {t['check'] / t['parse']:.2f}x wall, "
          f"{c['check'] / c['parse']:.2f}x cpu (against a parse with gc paused too: "
          f"{c['check'] / c['parse_nogc']:.2f}x cpu)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
