"""A launch command that runs a shell launcher (`bash run.sh`) is read like the launcher given
as a file; LoRA turned on by `--lora_enable` and a base loaded at `--bits 4` on a Hugging Face
Trainer command line."""

import pytest

from preflight.assemble import assemble
from preflight.discover.jobs import discover, shell_launcher
from preflight.extract import extract_file

TRAIN = ("from dataclasses import dataclass, field\n"
         "import transformers\n\n"
         "@dataclass\n"
         "class Args(transformers.TrainingArguments):\n"
         "    lora_enable: bool = False\n"
         "    lora_r: int = 8\n"
         "    bits: int = field(default=16)\n\n"
         "def main():\n"
         "    (args,) = transformers.HfArgumentParser(Args).parse_args_into_dataclasses()\n"
         "    model = transformers.AutoModelForCausalLM.from_pretrained('gpt2')\n"
         "    transformers.Trainer(model=model, args=args).train()\n\n"
         "main()\n")


@pytest.fixture
def proj(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text("[project]\nname='x'\n")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text(TRAIN)
    (tmp_path / "runs").mkdir()
    return tmp_path


def plan_of(command):
    specs, diags = discover([], command)
    assert [d.code for d in diags if d.code == "PF006"] == []
    (spec,) = specs
    return assemble(spec, {}).plan


def test_bash_of_a_launcher_reads_its_lines_from_the_working_folder(proj):
    (proj / "runs" / "go.sh").write_text(
        "#!/bin/bash\n"
        "python src/train.py \\\n"
        "    --output_dir out \\\n"
        "    --per_device_train_batch_size 3 \\\n"
        "    --gradient_accumulation_steps 5\n")
    for command in (["bash", "runs/go.sh"], ["sh", "runs/go.sh"], ["runs/go.sh"]):
        p = plan_of(command)
        assert (p.value("micro_batch"), p.fact("micro_batch").origin.value,
                str(p.source("micro_batch"))) == (3, "cli", "runs/go.sh:4:5")
        assert (p.value("grad_accum"), str(p.source("grad_accum"))) == (5, "runs/go.sh:5:5")
        assert p.value("world_size") == 1


def test_a_launcher_with_arguments_is_not_read_as_a_file(proj):
    (proj / "runs" / "go.sh").write_text("python src/train.py --per_device_train_batch_size $1\n")
    assert shell_launcher(["bash", "runs/go.sh", "8"]) is None
    assert shell_launcher(["bash", "runs/missing.sh"]) is None
    assert shell_launcher(["bash", "runs/go.sh"]) == "runs/go.sh"


def test_lora_enable_and_bits_on_the_command_line(proj):
    (proj / "runs" / "lora.sh").write_text(
        "python src/train.py --output_dir out \\\n"
        "    --lora_enable True --lora_r 32 --lora_alpha 64 --bits 4\n")
    p = plan_of(["bash", "runs/lora.sh"])
    f = p.fact("lora")
    assert (f.value["r"], f.value["alpha"], f.value["base_bits"]) == (32, 64.0, 4)
    assert (f.origin.value, str(f.source)) == ("cli", "runs/lora.sh:1:1")


def test_lora_enable_false_turns_no_adapter_on(proj):
    (proj / "runs" / "full.sh").write_text(
        "python src/train.py --output_dir out --lora_enable False --lora_r 32 --bits 4\n")
    p = plan_of(["bash", "runs/full.sh"])
    assert not p.value("lora")


SWITCHED = ("from dataclasses import dataclass\n"
            "import transformers\n"
            "from transformers import Trainer\n"
            "from peft import LoraConfig, get_peft_model\n\n"
            "@dataclass\n"
            "class Args(transformers.TrainingArguments):\n"
            "    use_lora: bool = False\n"
            "    optim: str = 'adamw_torch'\n\n"
            "def main():\n"
            "    (args,) = transformers.HfArgumentParser(Args).parse_args_into_dataclasses()\n"
            "    model = transformers.AutoModelForCausalLM.from_pretrained('gpt2')\n"
            "    if args.use_lora:\n"
            "        config = LoraConfig(r=16, lora_alpha=32, target_modules=['c_attn'])\n"
            "        model = get_peft_model(model, config)\n"
            "    trainer = Trainer(model=model, args=args)\n"
            "    trainer.train()\n\n"
            "main()\n")


def test_an_adapter_built_and_applied_only_under_a_switch_left_off_is_no_adapter(proj):
    (proj / "src" / "train.py").write_text(SWITCHED)
    (f,) = [f for n, f in extract_file("src/train.py").facts if n == "lora"]
    assert (f.value, f.origin.value, f.source.line) == (None, "default", 16)
    assert "`args.use_lora` is false (line 14)" in f.reason
    (proj / "runs" / "full.sh").write_text("python src/train.py --output_dir out\n")
    assert plan_of(["bash", "runs/full.sh"]).value("lora") is False


def test_the_same_switch_turned_on_reads_the_adapter(proj):
    (proj / "src" / "train.py").write_text(SWITCHED)
    (proj / "runs" / "lora.sh").write_text("python src/train.py --output_dir out --use_lora True\n")
    f = plan_of(["bash", "runs/lora.sh"]).fact("lora")
    assert (f.value["r"], f.value["targets"], str(f.source)) == (16, ["c_attn"], "src/train.py:15:18")


COMPUTED_TARGETS = ("from dataclasses import dataclass\n"
                    "import transformers\n"
                    "from peft import LoraConfig, get_peft_model\n\n"
                    "@dataclass\n"
                    "class Args(transformers.TrainingArguments):\n"
                    "    use_lora: bool = False\n"
                    "    lora_r: int = 8\n\n"
                    "def linear_names(model):\n"
                    "    return sorted({n.split('.')[-1] for n, m in model.named_modules()})\n\n"
                    "def main():\n"
                    "    (args,) = transformers.HfArgumentParser(Args).parse_args_into_dataclasses()\n"
                    "    model = transformers.AutoModelForCausalLM.from_pretrained('gpt2')\n"
                    "    config = LoraConfig(r=args.lora_r, target_modules=linear_names(model))\n"
                    "    model = get_peft_model(model, config)\n"
                    "    transformers.Trainer(model=model, args=args).train()\n\n"
                    "main()\n")


def test_targets_the_script_computes_are_unknown_beside_a_rank_on_the_command_line(proj):
    (proj / "src" / "train.py").write_text(COMPUTED_TARGETS)
    (proj / "runs" / "lora.sh").write_text("python src/train.py --output_dir out --use_lora True --lora_r 16\n")
    p = plan_of(["bash", "runs/lora.sh"])
    assert p.value("lora")["r"] == 16
    f = p.fact("trainable_params")
    assert (f.known, f.reason) == (False, "the LoRA target modules are not known")


def test_a_rank_on_the_command_line_alone_keeps_the_library_default_targets(proj):
    (proj / "runs" / "lora.sh").write_text("python src/train.py --output_dir out --use_lora True --lora_r 16\n")
    f = plan_of(["bash", "runs/lora.sh"]).fact("trainable_params")
    # gpt2's default LoRA target, c_attn: 12 blocks × 16 × (768 + 2304)
    assert (f.value, f.origin.value) == (12 * 16 * (768 + 2304), "derived")
