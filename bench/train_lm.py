"""A plain training script for the accuracy benchmark: a GPT-2-style or llama-style
decoder at random init, trained with the real torch.autocast / SDPA / dropout kernels of
the device (no emulation). `bench/gpu_accuracy.py` runs it under `preflight dryrun`.

    python bench/train_lm.py --arch llama --layers 16 --hidden 2048 --heads 32 \
        --kv-heads 8 --ffn 8192 --vocab 128256 --precision bf16-mixed --optimizer adamw \
        --ckpt none --attention sdpa --batch 4 --seq 1024
"""

from __future__ import annotations

import argparse
import os
import sys

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from preflight.dryrun.calibrate import GPT2Block, LlamaBlock, Policy, RMSNorm  # noqa: E402


def parse(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--arch", choices=("gpt2", "llama"), default="gpt2")
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--hidden", type=int, default=768)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--kv-heads", type=int, default=None)
    ap.add_argument("--ffn", type=int, default=None)
    ap.add_argument("--vocab", type=int, default=50257)
    ap.add_argument("--precision", choices=("fp32", "bf16-mixed", "bf16"), default="bf16-mixed")
    ap.add_argument("--optimizer", choices=("adamw", "sgd"), default="adamw")
    ap.add_argument("--ckpt", choices=("none", "full"), default="none")
    ap.add_argument("--attention", choices=("eager", "sdpa"), default="sdpa")
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--dropout", type=float, default=0.0)
    ap.add_argument("--steps", type=int, default=3)
    return ap.parse_args(argv)


class LM(nn.Module):
    def __init__(self, a, pol: Policy):
        super().__init__()
        self.a = a
        self.emb = nn.Embedding(a.vocab, a.hidden)
        if a.arch == "gpt2":
            self.pos = nn.Embedding(a.seq, a.hidden)
            self.blocks = nn.ModuleList(GPT2Block(a.hidden, a.heads, pol, a.attention, a.dropout)
                                        for _ in range(a.layers))
            self.norm = nn.LayerNorm(a.hidden)
        else:
            self.pos = None
            ffn = a.ffn or 256 * ((int(8 * a.hidden / 3) + 255) // 256)
            self.blocks = nn.ModuleList(LlamaBlock(a.hidden, a.heads, a.kv_heads or a.heads,
                                                   ffn, pol, a.attention)
                                        for _ in range(a.layers))
            self.norm = RMSNorm(a.hidden)
        self.head = nn.Linear(a.hidden, a.vocab, bias=False)

    def forward(self, idx):
        x = self.emb(idx)
        if self.pos is not None:
            x = x + self.pos(torch.arange(idx.shape[1], device=idx.device))
        for blk in self.blocks:
            if self.a.ckpt == "full" and self.training:
                x = torch.utils.checkpoint.checkpoint(blk, x, use_reentrant=False)
            else:
                x = blk(x)
        return self.head(self.norm(x))


def main(argv=None):
    a = parse(argv)
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(0)
    pol = Policy(a.precision, native=True)
    # built where it trains and in the dtype it trains in: a model built in fp32 and then
    # cast holds both copies for a moment, which would set the peak of model init
    prev = torch.get_default_dtype()
    if a.precision == "bf16":
        torch.set_default_dtype(torch.bfloat16)
    with torch.device(dev):
        model = LM(a, pol)
    torch.set_default_dtype(prev)
    if a.optimizer == "adamw":
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    else:
        opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    model.train()
    for step in range(a.steps):
        idx = torch.randint(0, a.vocab, (a.batch, a.seq), device=dev)
        with torch.autocast(dev, dtype=torch.bfloat16, enabled=a.precision == "bf16-mixed"):
            logits = model(idx)
        loss = F.cross_entropy(logits.float().view(-1, a.vocab), idx.view(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        print(f"step {step} loss {loss.item():.3f}", flush=True)


if __name__ == "__main__":
    main()
