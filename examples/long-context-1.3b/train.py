# OPT-1.3B on 16k-token documents, ZeRO-3 over 8 GPUs: the activations are the problem.
from datasets import load_dataset
from transformers import AutoModelForCausalLM, AutoTokenizer, Trainer, TrainingArguments

max_seq_length = 16384

model = AutoModelForCausalLM.from_pretrained("facebook/opt-1.3b", attn_implementation="sdpa")
tokenizer = AutoTokenizer.from_pretrained(model.name_or_path)
data = load_dataset("json", data_files="train.jsonl")["train"]
data = data.map(lambda r: tokenizer(r["text"], truncation=True, max_length=max_seq_length))

args = TrainingArguments(
    output_dir="out",
    per_device_train_batch_size=4,
    gradient_accumulation_steps=1,
    bf16=True,
    optim="adamw_torch",
    deepspeed="ds_zero3.json",
    learning_rate=2e-5,
    max_steps=1000,
)
Trainer(model=model, args=args, train_dataset=data).train()
