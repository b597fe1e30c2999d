"""peft and bitsandbytes: `LoraConfig(r=, lora_alpha=, target_modules=)` however the targets
are written (a list, one name, a regex, `all-linear`, a comma list or `'[q_proj,v_proj]'`
from a command line), `get_peft_model`, `prepare_model_for_kbit_training` (which turns
gradient checkpointing on by default), and 4 / 8-bit loading (`BitsAndBytesConfig(
load_in_4bit=True, bnb_4bit_use_double_quant=…)`, `load_in_8bit=True`).
"""

from __future__ import annotations

from preflight.frameworks import Example, Framework

_QLORA = """\
import torch
from peft import LoraConfig, get_peft_model, prepare_model_for_kbit_training
from transformers import AutoModelForCausalLM, BitsAndBytesConfig

bnb = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4",
                         bnb_4bit_compute_dtype=torch.bfloat16)
model = AutoModelForCausalLM.from_pretrained("mistralai/Mistral-7B-v0.1", quantization_config=bnb)
model = prepare_model_for_kbit_training(model)
config = LoraConfig(r=64, lora_alpha=16, target_modules=["q_proj", "k_proj", "v_proj", "o_proj"])
model = get_peft_model(model, config)
optimizer = torch.optim.AdamW(model.parameters(), lr=2e-4)
"""


class Peft(Framework):
    name = "peft"
    title = "peft / bitsandbytes"
    reads = (
        "`LoraConfig(r=, lora_alpha=, target_modules=, modules_to_save=)`, TRL's "
        "`get_peft_config(model_args)`, `--lora_r` / `--lora_target_modules` flags (lists, "
        "comma lists, `'[q_proj,v_proj]'`, `all-linear`)",
        "`BitsAndBytesConfig(load_in_4bit=, load_in_8bit=, bnb_4bit_use_double_quant=)`, "
        "`from_pretrained(load_in_4bit=True)`",
        "`prepare_model_for_kbit_training(model)`: gradient checkpointing on unless "
        "`use_gradient_checkpointing=False`",
    )
    not_read = ("adapters loaded from a saved `adapter_config.json` (`PeftModel.from_pretrained`)",
                "DoRA / AdaLoRA / IA3 extra parameters")


_FIRE = """\
import fire
from peft import LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM


def train(base_model: str = "huggyllama/llama-7b", lora_r: int = 8, lora_alpha: int = 16,
          lora_target_modules: list = ["q_proj", "v_proj"]):
    model = AutoModelForCausalLM.from_pretrained(base_model)
    config = LoraConfig(r=lora_r, lora_alpha=lora_alpha, target_modules=lora_target_modules)
    model = get_peft_model(model, config)


if __name__ == "__main__":
    fire.Fire(train)
"""

#: int8 LoRA with the Trainer: the preparation turns checkpointing on and the Trainer's
#: `gradient_checkpointing=False` default leaves it on; the tokenizer closure reads the
#: function's `cutoff_len`
_INT8 = """\
import fire
import transformers
from peft import LoraConfig, get_peft_model, prepare_model_for_int8_training


def train(base_model: str = "huggyllama/llama-7b", micro_batch_size: int = 4,
          cutoff_len: int = 256):
    model = transformers.AutoModelForCausalLM.from_pretrained(base_model, load_in_8bit=True)
    tokenizer = transformers.AutoTokenizer.from_pretrained(base_model)

    def tokenize(prompt):
        return tokenizer(prompt, truncation=True, max_length=cutoff_len)

    model = prepare_model_for_int8_training(model)
    model = get_peft_model(model, LoraConfig(r=8, lora_alpha=16, target_modules=["q_proj", "v_proj"]))
    trainer = transformers.Trainer(
        model=model,
        args=transformers.TrainingArguments(per_device_train_batch_size=micro_batch_size,
                                            fp16=True, output_dir="out"),
    )
    trainer.train()


if __name__ == "__main__":
    fire.Fire(train)
"""

ADAPTER = Peft()
Peft.EXAMPLES = [
    Example(title="a LoRA target list written as a list-like string on a fire command line",
            files={"finetune.py": _FIRE},
            command="python finetune.py --lora_r 16 --lora_target_modules '[q_proj,k_proj,v_proj,o_proj]'",
            facts={"lora": ({"r": 16, "alpha": 16, "targets": ["q_proj", "k_proj", "v_proj", "o_proj"],
                             "base_bits": 16}, "finetune.py:9", "cli")}),
    Example(title="QLoRA: 4-bit base, kbit preparation, LoRA on the attention projections",
            files={"qlora.py": _QLORA},
            command="python qlora.py",
            facts={"model": ("mistralai/Mistral-7B-v0.1", "qlora.py:7"),
                   "param_dtype": ("int4", "qlora.py:5"),
                   "lora": ({"r": 64, "alpha": 16, "targets": ["q_proj", "k_proj", "v_proj", "o_proj"],
                             "base_bits": 4, "modules_to_save": []}, "qlora.py:9"),
                   "activation_checkpointing": ("full", "qlora.py:8", "default"),
                   "optimizer": ("adamw", "qlora.py:11")}),
    Example(title="int8 preparation keeps checkpointing on under the Trainer's default; a "
                  "nested tokenizer reads the length from its enclosing function",
            files={"finetune.py": _INT8},
            command="python finetune.py --cutoff_len 512",
            facts={"activation_checkpointing": ("full", "finetune.py:14", "default"),
                   "seq_len": (512, "finetune.py:6", "cli"),
                   "param_dtype": ("int8", "finetune.py:8"),
                   "micro_batch": (4, "finetune.py:6", "default")}),
]
