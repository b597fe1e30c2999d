import torch

from nets import Transformer, TransformerConfig   # the repository's own model code

config = TransformerConfig(n_layer=12, n_embd=768, n_head=12)
model = Transformer(config).cuda()
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
for step in range(100):
    x = torch.zeros(8, 1024, dtype=torch.long, device="cuda")
    loss = model(x).mean()
    loss.backward()
    optimizer.step()
