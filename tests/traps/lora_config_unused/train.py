import argparse

import torch
from peft import LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM

parser = argparse.ArgumentParser()
parser.add_argument("--use_lora", action="store_true")
args = parser.parse_args()

model = AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-0.5B", torch_dtype=torch.bfloat16)
lora_config = LoraConfig(r=16, lora_alpha=32, target_modules=["q_proj", "v_proj"])
if args.use_lora:
    model = get_peft_model(model, lora_config)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)
for step in range(10):
    ids = torch.zeros(4, 2048, dtype=torch.long)
    loss = model(input_ids=ids, labels=ids).loss
    loss.backward()
    optimizer.step()
