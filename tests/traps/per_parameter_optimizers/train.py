import bitsandbytes as bnb
import torch

from low_rank_optim import ProjectedAdamW8bit   # a package installed beside the job

model = torch.nn.Sequential(*[torch.nn.Linear(2048, 2048) for _ in range(12)]).cuda()
low_rank = {id(m.weight) for m in model if isinstance(m, torch.nn.Linear)}
per_param = {}
for p in model.parameters():
    if id(p) in low_rank:
        per_param[p] = ProjectedAdamW8bit([p], lr=1e-3, rank=128)
    else:
        per_param[p] = bnb.optim.Adam8bit([p], lr=1e-3)


def hook(p):
    per_param[p].step()
    per_param[p].zero_grad()


for p in model.parameters():
    p.register_post_accumulate_grad_hook(hook)
for step in range(100):
    loss = model(torch.randn(8, 2048, device="cuda")).square().mean()
    loss.backward()
