import torch

from low_rank_optim import ProjectedAdamW   # a package installed beside the job

model = torch.nn.Sequential(*[torch.nn.Linear(2048, 2048) for _ in range(12)]).cuda()
optimizer = ProjectedAdamW(model.parameters(), lr=1e-3, rank=128)
for step in range(100):
    loss = model(torch.randn(8, 2048, device="cuda")).square().mean()
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
