import deepspeed
import torch
from transformers import AutoModelForCausalLM

policy = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf", torch_dtype=torch.bfloat16)
ref_model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf", torch_dtype=torch.bfloat16)
ref_model.requires_grad_(False)

train_config = {
    "train_micro_batch_size_per_gpu": 2,
    "gradient_accumulation_steps": 8,
    "bf16": {"enabled": True},
    "zero_optimization": {"stage": 2},
    "optimizer": {"type": "AdamW", "params": {"lr": 1e-6}},
}
# the frozen reference model only runs forward passes: kept on the host between them
ref_config = {
    "train_micro_batch_size_per_gpu": 2,
    "bf16": {"enabled": True},
    "zero_optimization": {"stage": 3, "offload_param": {"device": "cpu"}},
}

engine, optimizer, _, _ = deepspeed.initialize(model=policy, config=train_config,
                                               model_parameters=policy.parameters())
ref_engine, *_ = deepspeed.initialize(model=ref_model, config=ref_config)
ref_engine.eval()

for step in range(10):
    ids = torch.zeros(2, 1024, dtype=torch.long, device=engine.device)
    with torch.no_grad():
        ref_logits = ref_engine(input_ids=ids).logits
    loss = engine(input_ids=ids, labels=ids).loss
    engine.backward(loss)
    engine.step()
