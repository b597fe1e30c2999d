import argparse

import torch
from torch.optim import Optimizer

parser = argparse.ArgumentParser()
parser.add_argument("--optimizer", default="adamw")   # logged, never used to build one
parser.add_argument("--lr", type=float, default=1e-3)
args = parser.parse_args()


class Lion(Optimizer):
    def __init__(self, params, lr=1e-4):
        super().__init__(params, dict(lr=lr))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                if "exp_avg" not in state:
                    state["exp_avg"] = torch.zeros_like(p)
                update = state["exp_avg"].lerp(p.grad, 0.1).sign_()
                p.add_(update, alpha=-group["lr"])


print(f"optimizer: {args.optimizer}")
model = torch.nn.Linear(4096, 4096).cuda()
optimizer = Lion(model.parameters(), lr=args.lr)
for step in range(100):
    loss = model(torch.randn(4, 4096, device="cuda")).square().mean()
    loss.backward()
    optimizer.step()
