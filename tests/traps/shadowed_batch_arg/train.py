import argparse
import os

import torch
from torch.utils.data import DataLoader, TensorDataset

parser = argparse.ArgumentParser()
parser.add_argument("--batch_size", type=int, default=256, help="global batch size")
parser.add_argument("--seq_len", type=int, default=1024)
args = parser.parse_args()

world_size = int(os.environ.get("WORLD_SIZE", "1"))
args.batch_size = args.batch_size // world_size     # per-process share of the global batch

model = torch.nn.Embedding(50257, 768).cuda()
optimizer = torch.optim.AdamW(model.parameters(), lr=6e-4)
data = TensorDataset(torch.zeros(10_000, args.seq_len, dtype=torch.long))
loader = DataLoader(data, batch_size=args.batch_size)
for (x,) in loader:
    loss = model(x.cuda()).square().mean()
    loss.backward()
    optimizer.step()
