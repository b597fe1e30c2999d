import argparse

import torch
from transformers import AutoModelForCausalLM

parser = argparse.ArgumentParser()
parser.add_argument("--model", default="gpt2")
parser.add_argument("--gradient_checkpointing", action="store_true")
parser.add_argument("--batch_size", type=int, default=4)
args = parser.parse_args()

model = AutoModelForCausalLM.from_pretrained(args.model)
if args.gradient_checkpointing:
    model.gradient_checkpointing_enable()
optimizer = torch.optim.AdamW(model.parameters(), lr=5e-5)
for step in range(10):
    ids = torch.zeros(args.batch_size, 1024, dtype=torch.long)
    loss = model(input_ids=ids, labels=ids).loss
    loss.backward()
    optimizer.step()
