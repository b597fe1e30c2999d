import argparse

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--precision", default="bf16", choices=["fp32", "fp16", "bf16"])
args = parser.parse_args()

model = torch.nn.Linear(2048, 2048).cuda()
optimizer = torch.optim.AdamW(model.parameters())
match args.precision:
    case "fp16":
        amp = torch.autocast("cuda", dtype=torch.float16)
    case "bf16":
        amp = torch.autocast("cuda", dtype=torch.bfloat16)
    case _:
        amp = torch.autocast("cuda", enabled=False)
for step in range(10):
    with amp:
        loss = model(torch.randn(8, 2048, device="cuda")).square().mean()
    loss.backward()
    optimizer.step()
