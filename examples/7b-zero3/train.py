# The same fine-tune; the launcher shards the model states with DeepSpeed ZeRO-3.
from datasets import load_dataset
from transformers import (AutoModelForCausalLM, AutoTokenizer, HfArgumentParser, Trainer,
                          TrainingArguments)

max_seq_length = 2048

parser = HfArgumentParser(TrainingArguments)
(args,) = parser.parse_args_into_dataclasses()
model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf")
tokenizer = AutoTokenizer.from_pretrained(model.name_or_path)
data = load_dataset("json", data_files="train.jsonl")["train"]
data = data.map(lambda r: tokenizer(r["text"], truncation=True, max_length=max_seq_length))
Trainer(model=model, args=args, train_dataset=data).train()
