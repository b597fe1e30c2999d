# OPT-1.3B on 16k-token documents with ZeRO-3 over 8 GPUs: the activations are the problem.
from datasets import load_dataset
from transformers import (AutoModelForCausalLM, AutoTokenizer, HfArgumentParser, Trainer,
                          TrainingArguments)

max_seq_length = 16384

parser = HfArgumentParser(TrainingArguments)
(args,) = parser.parse_args_into_dataclasses()
model = AutoModelForCausalLM.from_pretrained("facebook/opt-1.3b", attn_implementation="sdpa")
tokenizer = AutoTokenizer.from_pretrained(model.name_or_path)
data = load_dataset("json", data_files="train.jsonl")["train"]
data = data.map(lambda r: tokenizer(r["text"], truncation=True, max_length=max_seq_length))
Trainer(model=model, args=args, train_dataset=data).train()
