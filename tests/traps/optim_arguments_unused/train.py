import torch
from torch.utils.data import DataLoader, TensorDataset
from transformers import AutoModelForCausalLM, HfArgumentParser, TrainingArguments

# the arguments dataclass is parsed for its batch size and output dir only; no Trainer runs
(training_args,) = HfArgumentParser(TrainingArguments).parse_args_into_dataclasses()
model = AutoModelForCausalLM.from_pretrained("gpt2")
optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
loader = DataLoader(TensorDataset(torch.zeros(512, 1024, dtype=torch.long)),
                    batch_size=training_args.per_device_train_batch_size)
for (ids,) in loader:
    loss = model(input_ids=ids, labels=ids).loss
    loss.backward()
    optimizer.step()
