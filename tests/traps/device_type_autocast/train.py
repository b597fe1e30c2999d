import torch

model = torch.nn.Linear(2048, 2048)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
device = torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")
model.to(device)
for step in range(10):
    x = torch.randn(8, 2048, device=device)
    with torch.autocast(device_type=device.type,
                        dtype=torch.bfloat16 if device.type in ("cuda", "cpu") else torch.float16):
        loss = model(x).square().mean()
    loss.backward()
    optimizer.step()
