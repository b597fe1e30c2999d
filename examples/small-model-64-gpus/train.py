# GPT-2 small (124M) pre-training on 64 GPUs with one 512-token sequence per GPU.
from datasets import load_dataset
from transformers import AutoModelForCausalLM, AutoTokenizer, Trainer, TrainingArguments

max_seq_length = 512

model = AutoModelForCausalLM.from_pretrained("gpt2", attn_implementation="sdpa")
tokenizer = AutoTokenizer.from_pretrained(model.name_or_path)
data = load_dataset("json", data_files="train.jsonl")["train"]
data = data.map(lambda r: tokenizer(r["text"], truncation=True, max_length=max_seq_length))

args = TrainingArguments(
    output_dir="out",
    per_device_train_batch_size=1,
    gradient_accumulation_steps=1,
    bf16=True,
    optim="adamw_torch",
    learning_rate=2e-5,
    max_steps=1000,
)
Trainer(model=model, args=args, train_dataset=data).train()
