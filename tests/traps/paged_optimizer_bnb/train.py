import bitsandbytes as bnb
import torch
from transformers import AutoModelForCausalLM

model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf", torch_dtype=torch.bfloat16)
model.gradient_checkpointing_enable()
optimizer = bnb.optim.AdamW(model.parameters(), lr=1e-5, is_paged=True)   # paged, 32-bit state
for batch in range(10):
    loss = model(input_ids=torch.zeros(2, 2048, dtype=torch.long)).loss
    loss.backward()
    optimizer.step()
