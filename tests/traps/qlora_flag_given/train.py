import argparse

import torch
from peft import LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM, BitsAndBytesConfig

parser = argparse.ArgumentParser()
parser.add_argument("--model_name_or_path", default="meta-llama/Llama-2-7b-hf")
parser.add_argument("--use_qlora", action="store_true")
parser.add_argument("--per_device_batch", type=int, default=1)
args = parser.parse_args()

if args.use_qlora:
    quant = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4",
                               bnb_4bit_compute_dtype=torch.bfloat16)
    model = AutoModelForCausalLM.from_pretrained(args.model_name_or_path,
                                                 quantization_config=quant,
                                                 torch_dtype=torch.bfloat16)
    model = get_peft_model(model, LoraConfig(r=16, lora_alpha=32, target_modules=["q_proj", "v_proj"]))
else:
    model = AutoModelForCausalLM.from_pretrained(args.model_name_or_path,
                                                 torch_dtype=torch.bfloat16)

if args.use_qlora:
    from bitsandbytes.optim import AdamW
    optimizer = AdamW(model.parameters(), lr=2e-4, optim_bits=32, is_paged=True)
else:
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5)

for batch in range(10):
    loss = model(input_ids=torch.zeros(args.per_device_batch, 1024, dtype=torch.long)).loss
    loss.backward()
    optimizer.step()
