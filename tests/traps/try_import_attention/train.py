import torch
from transformers import AutoModelForCausalLM

try:
    import flash_attn  # noqa: F401
    attn = "flash_attention_2"
except ImportError:
    attn = "sdpa"

model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf", attn_implementation=attn,
                                             torch_dtype=torch.bfloat16)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)
for step in range(10):
    ids = torch.zeros(1, 4096, dtype=torch.long)
    loss = model(input_ids=ids, labels=ids).loss
    loss.backward()
    optimizer.step()
