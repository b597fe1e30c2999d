# The same fine-tune, with the model states sharded by DeepSpeed ZeRO-3 over 8 GPUs.
from datasets import load_dataset
from transformers import AutoModelForCausalLM, AutoTokenizer, Trainer, TrainingArguments

max_seq_length = 2048

model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf")
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
