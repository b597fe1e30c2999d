"""Idioms of the Unsloth, ms-swift, diffusers, timm, nanotron and Oumi adapters that their
EXAMPLES do not pin: what is never read as a fact (an image's resolution as a sequence
length, a model's display name as the model), values the launch cannot fix, and the
defaults that give way to what the job states."""

from __future__ import annotations

from preflight.frameworks import Example
from tests.test_frameworks import run_example


def _job(tmp_path, monkeypatch, files, command=None, paths=None):
    ex = Example(files=files, facts={}, command=command, paths=paths)
    report = run_example(ex, tmp_path, monkeypatch)
    assert len(report.jobs) == 1
    return report.jobs[0].job.plan.facts


def _at(f) -> str:
    return f"{f.source.path}:{f.source.line}" if f.source else ""


def test_diffusers_resolution_is_no_sequence_length(tmp_path, monkeypatch):
    facts = _job(tmp_path, monkeypatch, {"t.sh": (
        "accelerate launch train_text_to_image.py --pretrained_model_name_or_path=org/pipe \\\n"
        "  --resolution=1024 --train_batch_size=2 --mixed_precision=bf16\n")}, paths=["t.sh"])
    assert facts["micro_batch"].value == 2
    assert "seq_len" not in facts or not facts["seq_len"].known
    assert not facts["params"].known          # a pipeline's denoiser is not in the catalogue


def test_diffusers_lora_script_without_rank_uses_its_default(tmp_path, monkeypatch):
    facts = _job(tmp_path, monkeypatch, {"t.sh": (
        "accelerate launch train_text_to_image_lora.py --pretrained_model_name_or_path=org/pipe \\\n"
        "  --resolution=512 --train_batch_size=1 --mixed_precision=fp16\n")}, paths=["t.sh"])
    assert facts["lora"].value["r"] == 4
    assert (facts["param_dtype"].value, facts["param_dtype"].origin.value) == ("fp16", "default")


def test_swift_config_file_with_a_flag_over_it(tmp_path, monkeypatch):
    facts = _job(tmp_path, monkeypatch, {"sft.yaml": (
        "model: Qwen/Qwen2.5-7B-Instruct\n"
        "train_type: lora\n"
        "lora_rank: 16\n"
        "dataset: AI-ModelScope/alpaca-gpt4-data-en\n"
        "per_device_train_batch_size: 2\n"
        "max_length: 4096\n")},
        command="swift sft sft.yaml --per_device_train_batch_size 4")
    assert (facts["model"].value, _at(facts["model"])) == ("Qwen/Qwen2.5-7B-Instruct", "sft.yaml:1")
    assert (facts["seq_len"].value, _at(facts["seq_len"])) == (4096, "sft.yaml:6")
    assert (facts["micro_batch"].value, facts["micro_batch"].origin.value) == (4, "cli")
    assert facts["lora"].value["r"] == 16 and facts["lora"].value["alpha"] == 32


def test_swift_process_count_from_an_unknown_variable_is_unknown(tmp_path, monkeypatch):
    facts = _job(tmp_path, monkeypatch, {"run.sh": (
        "NPROC_PER_NODE=$GPUS swift sft --model Qwen/Qwen2.5-1.5B --dataset d\n")}, paths=["run.sh"])
    assert not facts["gpus_per_node"].known
    assert not facts["grad_accum"].known       # ⌈16 / (micro × world)⌉ needs the world


def test_swift_model_name_flag_is_not_the_model(tmp_path, monkeypatch):
    facts = _job(tmp_path, monkeypatch, {}, command=(
        "swift sft --model Qwen/Qwen2.5-1.5B --dataset d --model_name robot --model_author me"))
    assert facts["model"].value == "Qwen/Qwen2.5-1.5B"


def test_timm_short_batch_after_a_switch(tmp_path, monkeypatch):
    facts = _job(tmp_path, monkeypatch, {}, command=(
        "torchrun --nproc_per_node=2 train.py --model vit_base_patch16_224 --amp -b 64 "
        "--opt adamw --sched cosine"))
    assert (facts["micro_batch"].value, facts["micro_batch"].origin.value) == (64, "cli")
    assert facts["mixed_precision"].value == "fp16"
    assert facts["optimizer"].value == "adamw"


def test_timm_defaults_when_the_line_leaves_them_out(tmp_path, monkeypatch):
    facts = _job(tmp_path, monkeypatch, {}, command="python train.py --model resnet50 --opt sgd --sched step")
    assert (facts["micro_batch"].value, facts["micro_batch"].origin.value) == (128, "default")
    assert facts["optimizer"].value == "sgd_momentum"
    assert facts["mixed_precision"].value == "none"


def test_oumi_override_from_an_unknown_variable_is_unknown(tmp_path, monkeypatch):
    facts = _job(tmp_path, monkeypatch, {
        "cfg.yaml": ("model:\n  model_name: Qwen/Qwen2.5-1.5B\n  torch_dtype_str: bfloat16\n"
                     "training:\n  trainer_type: TRL_SFT\n  gradient_accumulation_steps: 4\n"),
        "run.sh": "oumi train -c cfg.yaml --training.gradient_accumulation_steps $GA\n"},
        paths=["run.sh"])
    assert not facts["grad_accum"].known


def test_unsloth_full_finetuning_has_no_adapter_and_no_4bit_base(tmp_path, monkeypatch):
    facts = _job(tmp_path, monkeypatch, {"ft.py": (
        "from unsloth import FastModel\n"
        "from trl import SFTConfig, SFTTrainer\n"
        "model, tok = FastModel.from_pretrained(model_name='Qwen/Qwen2.5-1.5B-Instruct',\n"
        "                                       full_finetuning=True)\n"
        "SFTTrainer(model=model, args=SFTConfig(per_device_train_batch_size=1, output_dir='o')).train()\n")})
    assert facts["lora"].value is False
    assert facts["param_dtype"].value == "bf16"


def test_unsloth_trainer_length_given_wins_over_the_model_default(tmp_path, monkeypatch):
    facts = _job(tmp_path, monkeypatch, {"t.py": (
        "from unsloth import FastLanguageModel\n"
        "from trl import SFTConfig, SFTTrainer\n"
        "model, tok = FastLanguageModel.from_pretrained('unsloth/Qwen2.5-7B-bnb-4bit')\n"
        "args = SFTConfig(max_seq_length=512, per_device_train_batch_size=1, output_dir='o')\n"
        "SFTTrainer(model=model, args=args).train()\n")})
    assert (facts["seq_len"].value, _at(facts["seq_len"])) == (512, "t.py:4")
    assert facts["param_dtype"].value == "int4"


def test_nanotron_all_reduce_tp_keeps_full_activations(tmp_path, monkeypatch):
    facts = _job(tmp_path, monkeypatch, {"c.yaml": (
        "parallelism:\n  dp: 2\n  tp: 2\n  pp: 2\n  tp_mode: ALL_REDUCE\n"
        "tokens:\n  micro_batch_size: 1\n  sequence_length: 8192\n")},
        command="torchrun --nproc_per_node=8 run_train.py --config-file c.yaml")
    assert facts["sp"].value is False
    assert (facts["world_size"].value, facts["world_size"].origin.value) in ((8, "derived"), (8, "cli"))


def test_swift_grpo_accumulates_once_by_default(tmp_path, monkeypatch):
    facts = _job(tmp_path, monkeypatch, {}, command=(
        "NPROC_PER_NODE=8 swift rlhf --rlhf_type grpo --model Qwen/Qwen2.5-7B --dataset d "
        "--per_device_train_batch_size 4 --num_generations 8 --use_vllm true"))
    assert (facts["grad_accum"].value, facts["grad_accum"].origin.value) == (1, "default")
    assert facts["model"].value == "Qwen/Qwen2.5-7B"


def test_timm_launcher_run_by_bash(tmp_path, monkeypatch):
    facts = _job(tmp_path, monkeypatch, {}, command=(
        "bash distributed_train.sh 4 --model resnet50 -b 32 --amp --opt adamw"))
    assert (facts["gpus_per_node"].value, facts["micro_batch"].value) == (4, 32)


def test_a_repository_launcher_of_the_same_name_is_not_taken_for_timm(tmp_path, monkeypatch):
    from preflight.frameworks import get

    (tmp_path / "distributed_train.sh").write_text(
        "#!/bin/bash\npython -m torch.distributed.launch --nproc_per_node=2 main.py --cfg \"$1\"\n")
    assert get("timm").launch("distributed_train.sh", ["cfg.yaml"], None, str(tmp_path)) is None


def test_a_script_sharing_timms_augmentation_flags_is_not_timms_train_py(tmp_path, monkeypatch):
    # its own parser: `--accum_iter`, autocast always on; timm's defaults are not its own
    (tmp_path / "main_ft.py").write_text(
        "import argparse\nimport torch\n"
        "p = argparse.ArgumentParser()\n"
        "p.add_argument('--model', default='vit_base_patch16')\n"
        "p.add_argument('--batch_size', type=int, default=64)\n"
        "p.add_argument('--accum_iter', type=int, default=1)\n"
        "for k in ('--drop_path', '--mixup', '--cutmix', '--reprob'):\n"
        "    p.add_argument(k, type=float, default=0.0)\n"
        "args = p.parse_args()\n"
        "opt = torch.optim.AdamW([], lr=1e-3)\n"
        "with torch.cuda.amp.autocast():\n"
        "    pass\n")
    facts = _job(tmp_path, monkeypatch, {}, command=(
        "torchrun --nproc_per_node=8 main_ft.py --model vit_base_patch16 --batch_size 32 "
        "--accum_iter 4 --drop_path 0.1 --mixup 0.8 --cutmix 1.0 --reprob 0.25"))
    assert (facts["micro_batch"].value, facts["micro_batch"].origin.value) == (32, "cli")
    assert (facts["mixed_precision"].value, facts["mixed_precision"].origin.value) == ("fp16", "default")
    assert str(facts["mixed_precision"].source) == "main_ft.py:11:6"
    assert facts["optimizer"].value == "adamw"
    # `--accum_iter` is the script's own accumulation flag
    assert (facts["grad_accum"].value, facts["grad_accum"].origin.value) == (4, "cli")


def test_accelerators_precision_left_to_the_launcher_is_not_the_scripts_none(tmp_path, monkeypatch):
    # `Accelerator(mixed_precision=None)` takes `accelerate launch`'s setting: a cast to a
    # dtype chosen from `accelerator.mixed_precision` is not fp32 for certain
    (tmp_path / "train.py").write_text(
        "import argparse\nimport torch\nfrom accelerate import Accelerator\n"
        "from diffusers import UNet2DConditionModel\n"
        "p = argparse.ArgumentParser()\n"
        "p.add_argument('--mixed_precision', default=None)\n"
        "args = p.parse_args()\n"
        "acc = Accelerator(mixed_precision=args.mixed_precision)\n"
        "unet = UNet2DConditionModel.from_pretrained('org/pipe', subfolder='unet')\n"
        "weight_dtype = torch.float32\n"
        "if acc.mixed_precision == 'fp16':\n"
        "    weight_dtype = torch.float16\n"
        "unet.to(acc.device, dtype=weight_dtype)\n"
        "opt = torch.optim.AdamW(unet.parameters())\n")
    facts = _job(tmp_path, monkeypatch, {}, command="accelerate launch --mixed_precision fp16 train.py")
    assert (facts["mixed_precision"].value, facts["mixed_precision"].origin.value) == ("fp16", "cli")
    assert not facts["param_dtype"].known
    assert str(facts["param_dtype"].source) == "train.py:13:1"
