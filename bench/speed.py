"""Speed of `preflight check`: per script against a bare libcst parse, one script in a
cold process, and a whole generated repository cold and with a warm cache.

    python bench/speed.py                 # 50 generated scripts + a 10,000-file repository
    python bench/speed.py -n 200          # more scripts
    python bench/speed.py --repo-files 0  # scripts only
    python bench/speed.py DIR_OR_FILES…   # your own scripts (read only)

Scripts: files/s and wall / CPU time for (a) `libcst.parse_module` alone, (b) the extraction
`preflight check` runs per Python file, (c) the whole `preflight check` pipeline
in-process, and (d) one `preflight check` subprocess over all files (interpreter start
included), best of --repeat runs, with the pipeline's split by stage. The scripts look like
real ones: argparse, DDP / FSDP with AMP, DeepSpeed dicts, the HF Trainer, and
parameter-count prints (`sum(p.numel() for p in model.parameters())`).

Repository (`generate_repo`): 50 training scripts with their launchers among library
modules, Markdown, data JSON, model / data YAML, tests, docs, CI workflows, a Makefile,
a .gitignore'd data folder and a virtual environment; `preflight check .` cold (no cache
folder) and warm, wall / CPU / max RSS, the jobs it reports, and the split by stage.
"""

from __future__ import annotations

import argparse
import gc
import json
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
    n_params = sum(p.numel() for p in model.parameters())
    logger.info(f"model has {{n_params / 1e6:.1f}}M parameters")
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
    print("number of parameters: %.2fM" % (sum(p.numel() for p in model.parameters()) / 1e6,))
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

_DDP = '''"""DDP / FSDP training with automatic mixed precision ({name})."""
import argparse
import logging
import math
import os
import time
from contextlib import nullcontext

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler
from transformers import AutoModelForCausalLM, AutoTokenizer

logger = logging.getLogger(__name__)


def get_args():
    parser = argparse.ArgumentParser(description="fine-tune a causal LM")
    parser.add_argument("--model_name", type=str, default="{model}")
    parser.add_argument("--batch_size", type=int, default={mb})
    parser.add_argument("--gradient_accumulation_steps", type=int, default={ga})
    parser.add_argument("--max_seq_len", type=int, default={seq})
    parser.add_argument("--lr", type=float, default=2e-5)
    parser.add_argument("--weight_decay", type=float, default=0.0)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--fsdp", action="store_true")
    parser.add_argument("--amp", type=str, default="{amp}", choices=["bf16", "fp16", "none"])
    parser.add_argument("--gradient_checkpointing", action="store_true")
    parser.add_argument("--output_dir", type=str, default="out")
    parser.add_argument("--log_every", type=int, default=10)
    return parser.parse_args()


def setup():
    dist.init_process_group("nccl")
    rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(rank)
    return rank
{helpers}

def count_parameters(model):
    total = sum(p.numel() for p in model.parameters())
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    return total, trainable


def main():
    args = get_args()
    rank = setup()
    tokenizer = AutoTokenizer.from_pretrained(args.model_name)
    model = AutoModelForCausalLM.from_pretrained(args.model_name)
    if args.gradient_checkpointing:
        model.gradient_checkpointing_enable()
    total, trainable = count_parameters(model)
    if rank == 0:
        print(f"total params: {{total:,}} trainable: {{trainable:,}}")
        print(f"fp32 weights: {{sum(p.numel() for p in model.parameters()) * 4 / 2**30:.1f}} GiB")
    model = model.cuda()
    if args.fsdp:
        model = FSDP(model)
    else:
        model = DDP(model, device_ids=[rank])
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    scaler = torch.cuda.amp.GradScaler(enabled=args.amp == "fp16")
    dtype = {{"bf16": torch.bfloat16, "fp16": torch.float16}}.get(args.amp, torch.float32)
    ctx = torch.autocast("cuda", dtype=dtype) if args.amp != "none" else nullcontext()
    dataset = list(range(10000))
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=args.batch_size, sampler=sampler)
    step = 0
    t0 = time.time()
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        for batch in loader:
            input_ids = torch.randint(0, tokenizer.vocab_size, (args.batch_size, args.max_seq_len)).cuda()
            with ctx:
                loss = model(input_ids=input_ids, labels=input_ids).loss
                loss = loss / args.gradient_accumulation_steps
            scaler.scale(loss).backward()
            if (step + 1) % args.gradient_accumulation_steps == 0:
                scaler.unscale_(optimizer)
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                scaler.step(optimizer)
                scaler.update()
                optimizer.zero_grad(set_to_none=True)
            if rank == 0 and step % args.log_every == 0:
                dt = time.time() - t0
                logger.info("step %d loss %.4f %.2fs", step, loss.item(), dt)
                t0 = time.time()
            step += 1
    dist.destroy_process_group()


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
        kind = i % 4
        if kind == 3:
            text = _DDP.format(name=f"run{i}", model=rnd.choice(MODELS), mb=rnd.choice([1, 2, 4, 8]),
                               ga=rnd.choice([1, 4, 16]), seq=rnd.choice([512, 1024, 2048]),
                               amp=rnd.choice(["bf16", "fp16"]),
                               helpers=helpers.replace("logger.info", "print"))
        elif kind == 0:
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


# --------------------------------------------------------------------------- a repository

_LIB = '''"""{doc}"""
import math
from typing import Optional

import torch
import torch.nn as nn
import torch.nn.functional as F


class {cls}(nn.Module):
    def __init__(self, dim: int = {dim}, hidden: Optional[int] = None, dropout: float = 0.0):
        super().__init__()
        hidden = hidden or 4 * dim
        self.up = nn.Linear(dim, hidden)
        self.down = nn.Linear(hidden, dim)
        self.norm = nn.LayerNorm(dim)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.up(self.norm(x))
        h = F.gelu(h)
        return x + self.dropout(self.down(h))


def {fn}(x: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """Normalise the last dimension ({fn})."""
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)


def init_weights(module: nn.Module, std: float = 0.02) -> None:
    for m in module.modules():
        if isinstance(m, nn.Linear):
            nn.init.normal_(m.weight, std=std)
            if m.bias is not None:
                nn.init.zeros_(m.bias)
        elif isinstance(m, nn.Embedding):
            nn.init.normal_(m.weight, std=std / math.sqrt(2))
{tail}'''

_LIB_MAIN = '''

if __name__ == "__main__":
    block = {cls}()
    print(block(torch.zeros(2, 8, {dim})).shape)
'''

_LAUNCH = {
    "torchrun": '''#!/bin/bash
set -euo pipefail
NPROC=${{NPROC:-{gpus}}}
torchrun --nnodes 1 --nproc_per_node $NPROC {script} {args}
''',
    "deepspeed": '''#!/bin/bash
deepspeed --num_gpus {gpus} {script} --deepspeed {config} {args}
''',
    "accelerate": '''#!/bin/bash
accelerate launch --config_file {config} {script} {args}
''',
}
_DS_JSON = '''{{
  "train_micro_batch_size_per_gpu": {mb},
  "gradient_accumulation_steps": {ga},
  "bf16": {{"enabled": true}},
  "zero_optimization": {{"stage": {stage}, "overlap_comm": true}}
}}
'''
_ACCEL_YAML = '''compute_environment: LOCAL_MACHINE
distributed_type: MULTI_GPU
mixed_precision: bf16
num_machines: 1
num_processes: {gpus}
'''


def generate_repo(folder: str, total: int = 10_000, jobs: int = 50, seed: int = 0) -> dict:
    """A repository of `total` files like a real research codebase: `jobs` training
    scripts each with its launcher (torchrun, deepspeed + DeepSpeed JSON, accelerate +
    accelerate YAML), a library package, Markdown, data JSON / JSONL, model and data YAML,
    tests and docs, CI workflows, package.json, mkdocs.yml, a Makefile of install / test
    recipes, a .gitignore'd data folder and a virtual environment."""
    rnd = random.Random(seed)
    written = 0

    def put(rel: str, text: str) -> None:
        nonlocal written
        p = os.path.join(folder, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w", encoding="utf-8") as fh:
            fh.write(text)
        written += 1

    put(".gitignore", "outputs/\nwandb/\n*.log\ndata/raw/\n__pycache__/\n")
    put("pyproject.toml", '[project]\nname = "research"\nversion = "0.1.0"\n\n'
                          '[tool.preflight]\ngpu = "H100-80GB"\n')
    put("README.md", "# research\n\nTraining code for our models.\n")
    put("Makefile", "install:\n\tpython -m venv .venv\n\t.venv/bin/pip install -e .\n\n"
                    "test:\n\tpytest -q tests\n\nlint:\n\truff check .\n")
    put("package.json", '{"name": "research-site", "version": "1.0.0", "scripts": '
                        '{"build": "vite build", "dev": "vite"}, "devDependencies": {"vite": "^5.0.0"}}\n')
    put("mkdocs.yml", "site_name: research\nnav:\n  - Home: index.md\n  - Training: training.md\n"
                      "theme:\n  name: material\n")
    put(".github/workflows/ci.yml", "name: ci\non: [push, pull_request]\njobs:\n  test:\n"
                                    "    runs-on: ubuntu-latest\n    steps:\n      - uses: actions/checkout@v4\n"
                                    "      - run: pip install -e . && pytest -q\n")
    put(".github/workflows/release.yml", "name: release\non:\n  push:\n    tags: ['v*']\njobs:\n"
                                         "  build:\n    runs-on: ubuntu-latest\n    steps:\n"
                                         "      - run: python -m build\n")
    scripts = generate(tempfile.mkdtemp(prefix="preflight-bench-src-"), jobs, seed)
    n_pkgs = 40
    put("src/mylib/__init__.py", "")
    for k in range(n_pkgs):
        put(f"src/mylib/pkg_{k:02d}/__init__.py", f'"""Package {k}."""\n')
        put(f"src/mylib/pkg_{k:02d}/core.py", _LIB.format(doc="Shared blocks.", cls=f"Core{k}", dim=512,
                                                          fn=f"norm_{k}", tail=""))
    for i, src in enumerate(scripts):
        d = f"experiments/exp_{i:03d}"
        with open(src, encoding="utf-8") as fh:
            text = fh.read()
        text = f"from mylib.pkg_{rnd.randrange(n_pkgs):02d}.core import init_weights\n" + text
        put(f"{d}/train.py", text)
        gpus = rnd.choice([2, 4, 8])
        args = rnd.choice(["", "--epochs 1", "--lr 1e-4"])
        if "deepspeed.initialize" in text:
            put(f"{d}/ds_config.json", _DS_JSON.format(mb=rnd.choice([1, 2, 4]), ga=rnd.choice([1, 8]),
                                                       stage=rnd.choice([2, 3])))
            put(f"{d}/launch.sh", _LAUNCH["deepspeed"].format(gpus=gpus, script=f"{d}/train.py",
                                                             config=f"{d}/ds_config.json", args=args))
        elif "Trainer(" in text and i % 2:
            put(f"{d}/accelerate.yaml", _ACCEL_YAML.format(gpus=gpus))
            put(f"{d}/launch.sh", _LAUNCH["accelerate"].format(gpus=gpus, script=f"{d}/train.py",
                                                              config=f"{d}/accelerate.yaml", args=args))
        else:
            put(f"{d}/launch.sh", _LAUNCH["torchrun"].format(gpus=gpus, script=f"{d}/train.py", args=args))
        put(f"{d}/README.md", f"# experiment {i}\n\nRun `bash {d}/launch.sh`.\n")
        put(f"{d}/meta.json", '{"owner": "team", "tags": ["sft"], "status": "done"}\n')
    for j in range(200):        # ignored by .gitignore
        put(f"data/raw/shard_{j:04d}.json", '[{"text": "hello"}, {"text": "world"}]\n')
    for j in range(150):        # a virtual environment (pyvenv.cfg) and node_modules
        put(f"venv/lib/python3.11/site-packages/pkg_{j}/__init__.py", "import torch\n")
    put("venv/pyvenv.cfg", "home = /usr/bin\n")
    for j in range(100):
        put(f"node_modules/dep_{j}/package.json", '{"name": "dep", "version": "1.0.0"}\n')
    for j in range(150):
        put(f"tests/test_mod_{j:03d}.py", "import torch\n\ndef test_ok():\n    assert torch.zeros(1).sum() == 0\n")
        put(f"docs/page_{j:03d}.md", f"# page {j}\n\nSee the training guide.\n")
    # the rest: the library, its docs and configs, and data files
    kinds = ["py"] * 9 + ["md"] * 4 + ["json"] * 3 + ["yaml"] * 2 + ["txt"]
    n = 0
    while written < total:
        k = kinds[n % len(kinds)]
        pkg, idx = n % n_pkgs, n // n_pkgs
        base = f"src/mylib/pkg_{pkg:02d}"
        if k == "py":
            tail = _LIB_MAIN.format(cls=f"Block{idx}", dim=rnd.choice([256, 512])) if idx % 7 == 0 else ""
            put(f"{base}/mod_{idx:03d}.py", _LIB.format(doc=f"Building blocks, part {idx}.", cls=f"Block{idx}",
                                                        dim=rnd.choice([256, 512, 1024]), fn=f"rms_{idx}", tail=tail))
        elif k == "md":
            put(f"{base}/NOTES_{idx:03d}.md", f"# notes {idx}\n\nThe block uses a pre-norm residual.\n")
        elif k == "json":
            put(f"data/processed/part_{n:05d}.json",
                json.dumps([{"instruction": f"q{n}-{r}", "output": "a"} for r in range(5)]) + "\n")
        elif k == "yaml":
            if n % 2:
                put(f"configs/model/m_{n:05d}.yaml", f"hidden_size: {rnd.choice([768, 1024])}\nnum_layers: 12\n"
                                                     "num_heads: 12\nvocab_size: 32000\n")
            else:
                put(f"configs/data/d_{n:05d}.yaml", f"path: data/processed/part_{n:05d}.json\nsplit: train\n"
                                                    "shuffle: true\n")
        else:
            put(f"{base}/LICENSE_{idx:03d}.txt", "Apache-2.0\n")
        n += 1
        if idx >= 999:
            break
    return {"files": written, "jobs": jobs}


# --------------------------------------------------------------------------- timing

def best(fn, repeat: int) -> tuple[float, float]:
    """(wall, cpu) seconds, the best of `repeat` runs; cpu includes the worker processes a
    check forks. CPU time is far less disturbed than wall time by other work on a busy
    machine."""
    import resource

    def children() -> float:          # forked workers (jobs, files), once they are joined
        r = resource.getrusage(resource.RUSAGE_CHILDREN)
        return r.ru_utime + r.ru_stime

    walls, cpus = [], []
    for _ in range(repeat):
        t, c, k = time.perf_counter(), time.process_time(), children()
        fn()
        walls.append(time.perf_counter() - t)
        cpus.append(time.process_time() - c + children() - k)
    return min(walls), min(cpus)


def _env() -> dict[str, str]:
    """The environment of a timed `preflight` process: as installed, with bytecode. An
    installed package has its .pyc files; PYTHONDONTWRITEBYTECODE (set on some CI and dev
    machines) would make every process compile preflight and its dependencies from source
    again, a cost no user pays. Progress is off: the output is piped anyway."""
    env = {**os.environ, "PREFLIGHT_NO_PROGRESS": "1"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def _subprocess(args: list[str], cwd: str) -> tuple[float, float, float, str]:
    """(wall s, cpu s, max RSS MB, stdout) of one `preflight …` process."""
    import resource
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "preflight", *args], cwd=cwd, capture_output=True,
                       text=True, env=_env())
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, after.ru_maxrss / 1024, r.stdout


def bench_repo(total: int, repeat: int, parse=None) -> None:
    """`preflight check .` on a generated repository, cold (no cache folder) and warm.
    `parse()`: the bare libcst parse of the generated scripts, timed beside each cold run (the
    machine's speed drifts by a third from one hour to the next: the ratio does not)."""
    import shutil

    from preflight import timing
    from preflight.extract import stats

    folder = tempfile.mkdtemp(prefix="preflight-bench-repo-")
    made = generate_repo(folder, total=total)
    os.makedirs(os.path.join(folder, ".git"), exist_ok=True)
    cache = os.path.join(folder, ".preflight_cache")
    print(f"\nrepository: {made['files']} files, {made['jobs']} training jobs (generated in {folder}); "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    runs: dict[str, list[tuple[float, float, float]]] = {"cold": [], "warm": []}
    parses: list[float] = []
    jobs = None
    # untimed: writes the bytecode of every module a check imports (an installed package
    # ships it), so that the cold runs below are cold for the cache, not for Python
    _subprocess(["check", "--no-cache", "--exit-zero", "experiments/exp_000"], folder)
    for _ in range(repeat):
        shutil.rmtree(cache, ignore_errors=True)
        if parse is not None:
            gc.collect()
            parses.append(best(parse, 1)[0])
        for k in ("cold", "warm"):
            w, c, rss, out = _subprocess(["check", ".", "--format", "json", "--exit-zero"], folder)
            runs[k].append((w, c, rss))
            jobs = len(json.loads(out)["jobs"]) if out.strip() else None
    print(f"{'preflight check . (subprocess)':38s}{'wall s':>9s}{'cpu s':>9s}{'max RSS MB':>12s}")
    for k in ("cold", "warm"):
        w = min(x[0] for x in runs[k])
        c = min(x[1] for x in runs[k])
        m = max(x[2] for x in runs[k])
        print(f"{'  ' + k + (' (stored result)' if k == 'warm' else ' (no cache folder)'):38s}{w:9.3f}{c:9.3f}{m:12.0f}")
    print(f"  jobs reported: {jobs} (expected {made['jobs']})")
    if parses:
        ratios = sorted(c[0] / p for c, p in zip(runs["cold"], parses))
        print(f"  bare libcst parse of the generated scripts beside each cold run: best {min(parses):.3f} s; "
              f"cold / parse: best {min(x[0] for x in runs['cold']) / min(parses):.2f}, "
              f"median of the pairs {ratios[len(ratios) // 2]:.2f}")
    # the split by stage, in-process (imports excluded): what `preflight check` runs,
    # fixes attached to the jobs that do not fit included. The API keeps no stored run
    # result, so "warm" here is the per-file cache alone. With job workers, the stages
    # after extraction are summed over the worker processes.
    import preflight
    from preflight import job_pool
    cwd = os.getcwd()
    os.chdir(folder)
    try:
        for k in ("cold", "warm"):
            if k == "cold":
                shutil.rmtree(cache, ignore_errors=True)
            stats.clear()
            t0 = time.perf_counter()
            preflight.check(["."], cache=True)
            total_s = time.perf_counter() - t0
            split = ", ".join(f"{s} {v:.3f} ({timing.cpu_timings[s]:.3f} cpu)"
                              for s, v in timing.timings.items())
            print(f"  in-process {k} (per-file cache; {job_pool.workers_for(made['jobs'], None)} job "
                  f"workers): {total_s:.3f} s wall = {split}; "
                  f"extractions {stats['extractions']}, cache hits {stats['cache_hits']}, "
                  f"libcst parses {stats['libcst_parses']}, "
                  f"ast re-parses for the model counter {stats['ast_reparses']}")
    finally:
        os.chdir(cwd)


def bench_one_script(folder: str) -> None:
    """One script, cold process: interpreter start and imports included, no cache."""
    one = os.path.join(folder, "one")
    os.makedirs(one, exist_ok=True)
    src = generate(one, 4)[3]          # the DDP / AMP script with parameter-count prints
    walls, cpus = [], []
    for _ in range(3):
        w, c, _, _ = _subprocess(["check", "--no-cache", "--exit-zero", os.path.basename(src)], one)
        walls.append(w)
        cpus.append(c)
    w0, c0, _, _ = _subprocess(["--version"], one)
    print(f"\none script, cold process (preflight check train.py, --no-cache): {min(walls):.3f} s wall, "
          f"{min(cpus):.3f} s cpu (of which interpreter + `preflight --version`: {w0:.3f} s)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="*")
    ap.add_argument("-n", type=int, default=50, help="generated scripts (default 50)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-subprocess", action="store_true")
    ap.add_argument("--repo-files", type=int, default=10_000,
                    help="files of the generated repository (0: skip that part)")
    a = ap.parse_args(argv)

    import libcst as cst

    from preflight import pipeline, timing
    from preflight.options import CheckOptions
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
        pipeline.run(files, CheckOptions(fixes=False))

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
                            "--exit-zero", *files], capture_output=True, text=True, env=_env())
        ts = time.perf_counter() - t0
        print(f"{'preflight check (subprocess, 1 run)':38s}{ts:9.3f}{n / ts:10.1f}"
              f"{ts / t_parse:9.2f}  rc={r.returncode}")
    print(f"check / bare parse: {t['check'] / t['parse']:.2f}x wall, "
          f"{c['check'] / c['parse']:.2f}x cpu (against a parse with gc paused too: "
          f"{c['check'] / c['parse_nogc']:.2f}x cpu)")
    pipeline.run(files, CheckOptions(fixes=False))
    print("  check in-process by stage, wall (cpu) s: " + ", ".join(
        f"{k} {v:.3f} ({timing.cpu_timings[k]:.3f})" for k, v in timing.timings.items()))
    if not a.paths and not a.no_subprocess:
        bench_one_script(tmp)
    if not a.paths and a.repo_files:
        bench_repo(a.repo_files, a.repeat, parse_all if not a.paths else None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
