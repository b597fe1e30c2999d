import torch
from torch.optim import Optimizer
from transformers import AutoModelForCausalLM, Trainer, TrainingArguments


class Sophia(Optimizer):
    def __init__(self, params, lr=1e-4):
        super().__init__(params, dict(lr=lr))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                if not state:
                    state["exp_avg"] = torch.zeros_like(p)
                    state["hessian"] = torch.zeros_like(p)
                p.add_(state["exp_avg"] / state["hessian"].clamp(min=1e-12), alpha=-group["lr"])


model = AutoModelForCausalLM.from_pretrained("gpt2")
optimizer = Sophia(model.parameters(), lr=2e-4)
args = TrainingArguments(output_dir="out", per_device_train_batch_size=8, optim="adamw_torch",
                         bf16=True)
trainer = Trainer(model=model, args=args, optimizers=(optimizer, None))
trainer.train()
