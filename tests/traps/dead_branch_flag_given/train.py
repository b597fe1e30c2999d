import argparse

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--use_fp16", action="store_true")
parser.add_argument("--use_bf16", action="store_true")
parser.add_argument("--batch", type=int, default=8)
args = parser.parse_args()

model = torch.nn.Linear(512, 512).cuda()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
if args.use_fp16:
    amp = torch.autocast("cuda", dtype=torch.float16)
elif args.use_bf16:
    amp = torch.autocast("cuda", dtype=torch.bfloat16)
for step in range(100):
    x = torch.randn(args.batch, 512, device="cuda")
    with amp:
        loss = model(x).square().mean()
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
