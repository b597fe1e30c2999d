import torch

model = torch.nn.Linear(512, 512).cuda()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
# the GPU decides: bf16 on Ampere and newer, fp16 before
amp_dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
for step in range(100):
    x = torch.randn(8, 512, device="cuda")
    with torch.autocast("cuda", dtype=amp_dtype):
        loss = model(x).square().mean()
    loss.backward()
    optimizer.step()
