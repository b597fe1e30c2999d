import torch
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.nn.parallel import DistributedDataParallel as DDP

from settings import load_settings   # read from a file at run time

cfg = load_settings()
model = torch.nn.Linear(4096, 4096).cuda()
if cfg.strategy == "ddp":
    model = DDP(model)
elif cfg.strategy == "fsdp":
    model = FSDP(model, sharding_strategy=cfg.sharding)
optimizer = torch.optim.AdamW(model.parameters())
for step in range(10):
    loss = model(torch.randn(8, 4096, device="cuda")).square().mean()
    loss.backward()
    optimizer.step()
