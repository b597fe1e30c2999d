import torch

from settings import load_settings   # read from a file at run time

cfg = load_settings()
model = torch.nn.Linear(512, 512).cuda()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
if cfg.precision == "fp16":
    amp = torch.autocast("cuda", dtype=torch.float16)
elif cfg.precision == "bf16":
    amp = torch.autocast("cuda", dtype=torch.bfloat16)
for step in range(100):
    x = torch.randn(8, 512, device="cuda")
    with amp:
        loss = model(x).square().mean()
    loss.backward()
    optimizer.step()
