"""Path-sensitive evaluation and clean facts, through the real CLI on small jobs written in
the idioms real repositories use: alternatives stay unknown with every value shown,
conditions on the launcher's environment are decided, calls are followed into the
repository's own modules, and no internal representation or control character reaches a
fact or a message."""

import json

import pytest

from tests.conftest import run_cli


def job_of(tmp_path, *args):
    r = run_cli("check", "--format", "json", "--exit-zero", *args, cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    return data, data["jobs"][0]


def line_of(text, snippet):
    hits = [i for i, ln in enumerate(text.splitlines(), 1) if snippet in ln]
    assert len(hits) == 1, (snippet, hits)
    return hits[0]


TRY_FLASH = """\
import torch
from transformers import AutoModelForCausalLM

try:
    import flash_attn  # noqa: F401
    attn = "flash_attention_2"
except ImportError:
    attn = "sdpa"
model = AutoModelForCausalLM.from_pretrained("gpt2", attn_implementation=attn)
opt = torch.optim.AdamW(model.parameters())
"""


def test_try_except_values_are_alternatives_not_the_handlers(tmp_path):
    (tmp_path / "train.py").write_text(TRY_FLASH)
    _, job = job_of(tmp_path, "train.py")
    att = job["facts"]["attention"]
    assert att["origin"] == "unknown" and att["value"] is None
    assert att["default"] == {"alternatives": ["flash_attention_2", "sdpa"]}
    assert "'flash_attention_2' if it does not, 'sdpa' on ImportError" in att["reason"]


MATCH = """\
import argparse
import torch
from transformers import AutoModelForCausalLM

p = argparse.ArgumentParser()
p.add_argument("--size", default="small")
args = p.parse_args()
match args.size:
    case "small":
        name, bs = "gpt2", 16
    case "large":
        name, bs = "gpt2-large", 4
model = AutoModelForCausalLM.from_pretrained(name)
opt = torch.optim.AdamW(model.parameters())
loader = torch.utils.data.DataLoader(range(8), batch_size=bs)
"""


def test_match_on_a_known_argument_takes_its_case(tmp_path):
    (tmp_path / "train.py").write_text(MATCH)
    _, job = job_of(tmp_path, "--", "python", "train.py", "--size", "large")
    assert job["facts"]["model"]["value"] == "gpt2-large"
    assert job["facts"]["micro_batch"]["value"] == 4


def test_match_on_an_unknown_subject_lists_the_cases(tmp_path):
    (tmp_path / "train.py").write_text(MATCH.replace("match args.size:", "match input():"))
    _, job = job_of(tmp_path, "train.py")
    mb = job["facts"]["micro_batch"]
    assert mb["origin"] == "unknown" and mb["default"] == {"alternatives": [16, 4]}


#: build-nanogpt's idiom: is this a DDP run? then the world size from the environment
DDP_ENV = """\
import os
import torch
from torch.nn.parallel import DistributedDataParallel as DDP
from transformers import AutoModelForCausalLM

ddp = int(os.environ.get("RANK", -1)) != -1
if ddp:
    torch.distributed.init_process_group(backend="nccl")
    ddp_world_size = int(os.environ["WORLD_SIZE"])
else:
    ddp_world_size = 1
total_batch_size = 524288
B = 16
T = 1024
grad_accum_steps = total_batch_size // (B * T * ddp_world_size)
model = AutoModelForCausalLM.from_pretrained("gpt2")
if ddp:
    model = DDP(model)
opt = torch.optim.AdamW(model.parameters())
loader = torch.utils.data.DataLoader(range(8), batch_size=B)
"""


@pytest.mark.parametrize("launch,accum,origin", [
    (["torchrun", "--nproc_per_node", "8", "train.py"], 4, "derived"),   # 524288 // (16·1024·8)
    (["torchrun", "--nnodes", "2", "--nproc_per_node", "8", "train.py"], 2, "derived"),
    (["python", "train.py"], 32, "literal"),          # RANK unset: the `else` branch's 1
])
def test_launcher_environment_decides_the_script(tmp_path, launch, accum, origin):
    (tmp_path / "train.py").write_text(DDP_ENV)
    _, job = job_of(tmp_path, "--", *launch)
    ga = job["facts"]["grad_accum"]
    assert (ga["value"], ga["origin"]) == (accum, origin)
    assert ga["source"].startswith(f"train.py:{line_of(DDP_ENV, 'grad_accum_steps =')}:")


MODEL_PY = """\
import torch
import torch.nn as nn


class GPT(nn.Module):
    def __init__(self, config):
        super().__init__()

    def configure_optimizers(self, weight_decay, learning_rate):
        groups = [{"params": list(self.parameters()), "weight_decay": weight_decay}]
        return torch.optim.AdamW(groups, lr=learning_rate, fused=True)
"""
UTILS_PY = """\
from peft import LoraConfig


def lora_config(rank=16):
    return LoraConfig(r=rank, lora_alpha=2 * rank, target_modules=["q_proj", "v_proj"])
"""
FOLLOW = """\
import torch
from model import GPT
from utils import lora_config

model = GPT(dict(n_layer=12))
optimizer = model.configure_optimizers(0.1, 3e-4)
peft_config = lora_config(8)
loader = torch.utils.data.DataLoader(range(10), batch_size=4)
for b in loader:
    model(b).backward()
    optimizer.step()
"""


def test_calls_are_followed_into_the_repositorys_modules(tmp_path):
    (tmp_path / "model.py").write_text(MODEL_PY)
    (tmp_path / "utils.py").write_text(UTILS_PY)
    (tmp_path / "train.py").write_text(FOLLOW)
    _, job = job_of(tmp_path, "train.py")
    f = job["facts"]
    assert (f["optimizer"]["value"], f["optimizer"]["source"]) == (
        "adamw", f"model.py:{line_of(MODEL_PY, 'torch.optim.AdamW')}:16")
    assert f["lora"]["value"]["r"] == 8 and f["lora"]["value"]["alpha"] == 16
    assert f["lora"]["value"]["targets"] == ["q_proj", "v_proj"]
    assert f["lora"]["source"].startswith("utils.py:")
    assert f["model"]["value"] == "GPT"


def test_calls_are_followed_into_a_src_layout_package(tmp_path):
    # scripts/train.py imports `mypkg.utils`, which lives at src/mypkg/utils.py
    (tmp_path / "src" / "mypkg").mkdir(parents=True)
    (tmp_path / "src" / "mypkg" / "__init__.py").write_text("")
    (tmp_path / "src" / "mypkg" / "utils.py").write_text(UTILS_PY)
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "train.py").write_text(FOLLOW.replace(
        "from model import GPT\nfrom utils import lora_config\n",
        "from mypkg.utils import lora_config\n").replace(
        "model = GPT(dict(n_layer=12))\noptimizer = model.configure_optimizers(0.1, 3e-4)\n",
        "model = torch.nn.Linear(8, 8)\noptimizer = torch.optim.AdamW(model.parameters())\n"))
    _, job = job_of(tmp_path, "scripts/train.py")
    f = job["facts"]
    assert f["lora"]["value"]["r"] == 8 and f["lora"]["value"]["alpha"] == 16
    assert f["lora"]["source"].startswith("src/mypkg/utils.py:")


SAMPLE_PY = """\
import torch
import lightning as L


def sample(model, idx):
    return model(idx)


def main(checkpoint: str = "ckpt.pth"):
    precision = "bf16-true" if torch.cuda.is_bf16_supported() else "32-true"
    fabric = L.Fabric(devices=1, precision=precision)
"""
USES_SAMPLE = """\
import torch
import lightning as L
from sample import sample

fabric = L.Fabric(devices=1, precision="bf16-mixed")
model = torch.nn.Linear(8, 8)
optimizer = torch.optim.AdamW(model.parameters())
loader = torch.utils.data.DataLoader(range(10), batch_size=4)
for b in loader:
    fabric.backward(sample(model, b).sum())
    optimizer.step()
"""


def test_uncalled_functions_of_an_imported_module_are_not_read_as_the_scripts(tmp_path):
    # sample.py's main() is never called by train.py: its precision is not the job's, and
    # nothing of it is reported at train.py's lines
    (tmp_path / "sample.py").write_text(SAMPLE_PY)
    (tmp_path / "train.py").write_text(USES_SAMPLE)
    data, job = job_of(tmp_path, "train.py")
    assert (job["facts"]["mixed_precision"]["value"], job["facts"]["mixed_precision"]["source"]) == (
        "bf16", f"train.py:{line_of(USES_SAMPLE, 'bf16-mixed')}:40")
    assert not [d for d in job["diagnostics"] if "32-true" in d["message"]]


GC_UNDER_FLAG = """\
import torch
from transformers import AutoModelForCausalLM

def main(cfg):
    model = AutoModelForCausalLM.from_pretrained("gpt2")
    if cfg.grad_ckpt:
        model.gradient_checkpointing_enable()
    opt = torch.optim.AdamW(model.parameters())

if __name__ == "__main__":
    main(load_settings())
"""


def test_checkpointing_enabled_under_an_unknown_condition_is_unknown(tmp_path):
    (tmp_path / "train.py").write_text(GC_UNDER_FLAG)
    _, job = job_of(tmp_path, "train.py")
    f = job["facts"]["activation_checkpointing"]
    assert f["origin"] == "unknown" and f["value"] is None
    assert "`cfg.grad_ckpt` is true" in f["reason"]
    assert f["source"] == f"train.py:{line_of(GC_UNDER_FLAG, 'gradient_checkpointing_enable')}:9"


def test_a_library_is_not_followed_even_inside_its_repository(tmp_path):
    (tmp_path / "transformers").mkdir()
    (tmp_path / "transformers" / "__init__.py").write_text(
        "import torch\n\ndef get_optimizer(p):\n    return torch.optim.SGD(p, lr=0.1)\n")
    (tmp_path / "train.py").write_text(
        "import torch\nfrom transformers import get_optimizer\n"
        "model = torch.nn.Linear(8, 8)\nopt = get_optimizer(model.parameters())\n")
    _, job = job_of(tmp_path, "train.py")
    assert job["facts"]["optimizer"]["value"] != "sgd"


FROM_CONFIG = """\
import torch
from transformers import AutoModelForCausalLM, LlamaConfig

config = LlamaConfig(hidden_size=512, num_hidden_layers=4, num_attention_heads=8)
model = AutoModelForCausalLM.from_config(config)
opt = torch.optim.AdamW(model.parameters())
"""


def test_model_is_the_model_class_never_its_config(tmp_path):
    (tmp_path / "train.py").write_text(FROM_CONFIG)
    _, job = job_of(tmp_path, "train.py")
    assert job["facts"]["model"]["value"] == "LlamaForCausalLM"


def test_no_internal_object_in_a_fact(tmp_path):
    (tmp_path / "train.py").write_text(
        "import torch\nfrom transformers import AutoModelForCausalLM, TrainingArguments\n"
        "model = AutoModelForCausalLM.from_pretrained('gpt2')\n"
        "args = TrainingArguments(output_dir='o', per_device_train_batch_size=pick_batch())\n")
    data, job = job_of(tmp_path, "train.py")
    text = json.dumps(data)
    assert '"call"' not in text


DS_ARG = """\
#!/bin/bash
CONFIG=$1
deepspeed --num_gpus 8 train.py --deepspeed "$CONFIG/ds_config.json"
"""


def test_a_path_from_the_scripts_own_arguments_is_not_a_missing_file(tmp_path):
    (tmp_path / "train.py").write_text(
        "import torch\nfrom transformers import AutoModelForCausalLM\n"
        "model = AutoModelForCausalLM.from_pretrained('gpt2')\n"
        "opt = torch.optim.AdamW(model.parameters())\n")
    (tmp_path / "run.sh").write_text(DS_ARG)
    r = run_cli("check", "--format", "json", "--exit-zero", "run.sh", cwd=str(tmp_path))
    data = json.loads(r.stdout)
    diags = data["diagnostics"] + [d for j in data["jobs"] for d in j["diagnostics"]]
    assert not [d for d in diags if d["code"] == "PF006"]
    pf003 = [d for d in diags if d["code"] == "PF003" and "config path" in d["message"]]
    assert pf003 and "<?>/ds_config.json" in pf003[0]["message"]
    for d in diags:
        assert not any(ord(c) < 32 and c not in "\n\t" for c in d["message"]), d


@pytest.mark.parametrize("line,world", [
    ("mpirun -np 16 python train.py", 16),
    ("srun -n 4 python train.py", 4),
])
def test_mpirun_and_srun_process_counts(tmp_path, line, world):
    (tmp_path / "train.py").write_text(
        "import torch\nmodel = torch.nn.Linear(8, 8)\nopt = torch.optim.AdamW(model.parameters())\n")
    (tmp_path / "run.sh").write_text(f"#!/bin/bash\n{line}\n")
    _, job = job_of(tmp_path, "run.sh")
    assert job["facts"]["world_size"]["value"] == world


ACC_YAML = """\
compute_environment: LOCAL_MACHINE
distributed_type: MULTI_GPU
mixed_precision: bf16
num_machines: 1
num_processes: 8
"""
ACC_TRAIN = """\
import torch
from accelerate import Accelerator
from transformers import AutoModelForCausalLM
accelerator = Accelerator()
model = AutoModelForCausalLM.from_pretrained("gpt2")
opt = torch.optim.AdamW(model.parameters())
"""


def test_accelerate_flags_override_the_config_file_without_a_conflict(tmp_path):
    (tmp_path / "acc.yaml").write_text(ACC_YAML)
    (tmp_path / "train.py").write_text(ACC_TRAIN)
    data, job = job_of(tmp_path, "--", "accelerate", "launch", "--config_file", "acc.yaml",
                       "--num_processes", "4", "--mixed_precision", "fp16", "train.py")
    assert job["facts"]["world_size"]["value"] == 4
    assert job["facts"]["mixed_precision"]["value"] == "fp16"
    assert not [d for d in job["diagnostics"] if d["code"] == "PF402"]


SPAWN = """\
import argparse
import torch
import torch.multiprocessing as mp
import torchvision.models as models

parser = argparse.ArgumentParser()
parser.add_argument("--momentum", default=0.9, type=float)
parser.add_argument("-b", "--batch-size", default=256, type=int)


def main():
    args = parser.parse_args()
    ngpus_per_node = torch.cuda.device_count()
    mp.spawn(main_worker, nprocs=ngpus_per_node, args=(ngpus_per_node, args))


def main_worker(gpu, ngpus_per_node, args):
    model = models.resnet50()
    optimizer = torch.optim.SGD(model.parameters(), 0.1, momentum=args.momentum)
    args.batch_size = int(args.batch_size / ngpus_per_node)
    loader = torch.utils.data.DataLoader(range(10), batch_size=args.batch_size)


if __name__ == "__main__":
    main()
"""


def test_spawned_worker_gets_the_call_sites_arguments(tmp_path):
    (tmp_path / "main.py").write_text(SPAWN)
    _, job = job_of(tmp_path, "main.py")
    assert job["facts"]["optimizer"]["value"] == "sgd_momentum"      # momentum=args.momentum
    # the batch is divided by the GPU count at run time: unknown, not the option's default
    mb = job["facts"]["micro_batch"]
    assert mb["origin"] == "unknown"
    assert mb["source"].startswith(f"main.py:{line_of(SPAWN, 'args.batch_size = int(')}:")


def test_a_class_holding_something_about_the_model_is_not_the_model(tmp_path):
    (tmp_path / "train.py").write_text(
        "import torch\n\n\nclass SentencePieceTok:\n    pass\n\n\nclass Net(torch.nn.Module):\n"
        "    pass\n\n\ntokenizer_model = SentencePieceTok()\nmodel = Net()\n"
        "opt = torch.optim.AdamW(model.parameters())\n")
    _, job = job_of(tmp_path, "train.py")
    assert job["facts"]["model"]["value"] == "Net"
