import argparse

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset

parser = argparse.ArgumentParser()
parser.add_argument("--total_batch_size", type=int, default=512)
parser.add_argument("--grad_accum", type=int, default=4)
args = parser.parse_args()

dist.init_process_group("nccl")
world = dist.get_world_size()
micro = args.total_batch_size // (world * args.grad_accum)

model = torch.nn.Linear(1024, 1024).cuda()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
loader = DataLoader(TensorDataset(torch.randn(100_000, 1024)), batch_size=micro)
for i, (x,) in enumerate(loader):
    loss = model(x.cuda()).square().mean() / args.grad_accum
    loss.backward()
    if (i + 1) % args.grad_accum == 0:
        optimizer.step()
        optimizer.zero_grad()
