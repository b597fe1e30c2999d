import torch
from torch.optim import Optimizer


class SignAdam(Optimizer):
    """Adam with a sign update: two moments per parameter."""

    def __init__(self, params, lr=1e-4, betas=(0.9, 0.99)):
        super().__init__(params, dict(lr=lr, betas=betas))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(p)
                    state["exp_avg_sq"] = torch.zeros_like(p)
                state["step"] += 1
                state["exp_avg"].lerp_(p.grad, 1 - group["betas"][0])
                p.add_(state["exp_avg"].sign(), alpha=-group["lr"])


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.up = torch.nn.Linear(1024, 4096)
        self.down = torch.nn.Linear(4096, 1024)

    def forward(self, x):
        return self.down(torch.relu(self.up(x)))


model = Net().cuda()
optimizer = SignAdam(model.parameters(), lr=3e-4)
for step in range(100):
    x = torch.randn(16, 1024, device="cuda")
    loss = model(x).square().mean()
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
