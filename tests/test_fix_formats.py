"""Each file editor changes the value at the fact's line and nothing else: comments, key
order, quoting and layout survive (exact text after the edit)."""

import pytest

from preflight.fix.edits import FactEdit, FileEdit, Unspellable
from preflight.fix.json_file import edit_json
from preflight.fix.python_file import edit_python
from preflight.fix.shell_file import edit_shell
from preflight.fix.toml_file import edit_toml
from preflight.fix.yaml_file import edit_yaml
from preflight.plan import Source


def at(line, col=1, path="f"):
    return Source(path=path, line=line, col=col)


ACCELERATE = """\
# accelerate config: one node, 8 GPUs
compute_environment: LOCAL_MACHINE
distributed_type: FSDP   # sharded data parallel
fsdp_config:
  fsdp_sharding_strategy: SHARD_GRAD_OP   # ZeRO-2 like
  fsdp_offload_params: false
gradient_accumulation_steps: 1
mixed_precision: bf16
num_processes: 8
"""


def test_yaml_keeps_comments_and_order():
    new, _ = edit_yaml(ACCELERATE, [FactEdit("fsdp", "full_shard", at(5)),
                                    FactEdit("grad_accum", 4, at(7))])
    # ruamel keeps each comment at its column
    assert new == ACCELERATE.replace("SHARD_GRAD_OP   #", "FULL_SHARD      #").replace(
        "gradient_accumulation_steps: 1", "gradient_accumulation_steps: 4")


RECIPE = """\
# torchtune-style recipe
batch_size: 8  # per device
gradient_accumulation_steps: 2
optimizer:
  _component_: torch.optim.AdamW
  lr: 2e-5
enable_activation_checkpointing: False
dataset:
  - _component_: first
    split: "train"
  - _component_: second
"""


def test_yaml_recipe_with_lists_and_switches():
    new, _ = edit_yaml(RECIPE, [FactEdit("micro_batch", 4, at(2)),
                                FactEdit("grad_accum", 4, at(3)),
                                FactEdit("activation_checkpointing", "full", at(7))])
    assert new == (RECIPE.replace("batch_size: 8", "batch_size: 4")
                   .replace("accumulation_steps: 2", "accumulation_steps: 4")
                   .replace("checkpointing: False", "checkpointing: True"))


def test_yaml_value_a_key_cannot_say_is_refused():
    with pytest.raises(Unspellable):
        edit_yaml(RECIPE, [FactEdit("activation_checkpointing", "selective", at(7))])


TITAN = """\
# llama3 8b
[job]
dump_folder = "./outputs"

[training]
local_batch_size = 8   # per GPU
seq_len = 8192

[activation_checkpoint]
mode = "selective"  # or "full"
"""


def test_toml_keeps_comments():
    new, _ = edit_toml(TITAN, [FactEdit("micro_batch", 4, at(6)),
                               FactEdit("activation_checkpointing", "full", at(10))])
    assert new == TITAN.replace("local_batch_size = 8", "local_batch_size = 4").replace(
        'mode = "selective"', 'mode = "full"')


DS = """\
{
  "train_micro_batch_size_per_gpu": "auto",
  "gradient_accumulation_steps": 4,
  "zero_optimization": {
    "stage": 2,
    "overlap_comm": true
  }
}
"""


def test_json_value_replaced_and_member_inserted():
    new, notes = edit_json(DS, [FactEdit("zero_stage", 3, at(5, 5)),
                                FactEdit("grad_accum", 8, at(3, 3)),
                                FactEdit("offload", "optimizer", at(4, 3))])
    assert new == DS.replace('"stage": 2', '"stage": 3').replace(
        '"gradient_accumulation_steps": 4', '"gradient_accumulation_steps": 8').replace(
        '"zero_optimization": {\n', '"zero_optimization": {\n    "offload_optimizer": '
        '{"device": "cpu"},\n')
    assert "offload_optimizer" in notes[0]
    import json
    assert json.loads(new)["zero_optimization"]["offload_optimizer"] == {"device": "cpu"}


ARGPARSE = """\
import argparse

p = argparse.ArgumentParser()
p.add_argument("--batch_size", type=int, default=16)  # per GPU
p.add_argument('--optim', default='adamw_torch')
args = p.parse_args()
"""


def test_python_argparse_defaults_keep_quotes_and_comments():
    new, _, later = edit_python(ARGPARSE, [FactEdit("micro_batch", 4, at(4, 50)),
                                           FactEdit("optimizer", "adamw_8bit", at(5, 35))])
    assert not later
    assert new == ARGPARSE.replace("default=16", "default=4").replace(
        "default='adamw_torch'", "default='adamw_bnb_8bit'")


def test_python_not_a_literal_is_refused():
    with pytest.raises(Unspellable):
        edit_python("x = f(4)\n", [FactEdit("micro_batch", 2, at(1, 5))])


def test_shell_flag_forms():
    text = ("#SBATCH --nodes=8\n"
            "torchrun --nnodes 8 --nproc_per_node=8 train.py \\\n"
            "    --lr 1e-4  # tuned\n")
    new, _ = edit_shell(text, [FactEdit("nodes", 4, at(1, 9)), FactEdit("nodes", 4, at(2, 10)),
                               FactEdit("gpus_per_node", 4, at(2, 21)),
                               FactEdit("grad_accum", 2, at(2), old="--gradient_accumulation_steps",
                                        new_key=True)])
    assert new == ("#SBATCH --nodes=4\n"
                   "torchrun --nnodes 4 --nproc_per_node=4 train.py \\\n"
                   "    --lr 1e-4  # tuned --gradient_accumulation_steps 2\n") or new == (
        "#SBATCH --nodes=4\n"
        "torchrun --nnodes 4 --nproc_per_node=4 train.py \\\n"
        "    --lr 1e-4 --gradient_accumulation_steps 2  # tuned\n")


def test_file_edit_hunks_and_diff():
    fe = FileEdit(path="a.yaml", before="a: 1\nb: 2\n", after="a: 1\nb: 3\n")
    (h,) = fe.hunks()
    assert (h.start, h.end, h.old, h.new) == (2, 2, ["b: 2\n"], ["b: 3\n"])
    assert fe.diff() == "--- a/a.yaml\n+++ b/a.yaml\n@@ -1,2 +1,2 @@\n a: 1\n-b: 2\n+b: 3\n"


TRAINER = """\
# réglages: un seul nœud
args = TrainingArguments(
    output_dir="out",  # où écrire
    per_device_train_batch_size=8,
)
"""


def test_python_keyword_added_to_a_call_whose_literal_is_also_replaced():
    # the replaced literal lies inside the call that gains a keyword; columns are the
    # parser's (UTF-8 bytes), on a file with non-ASCII comments
    new, notes, later = edit_python(TRAINER, [
        FactEdit("micro_batch", 4, at(4, 33)),
        FactEdit("grad_accum", 2, at(2, 8), new_key=True)])
    assert not later
    assert new == TRAINER.replace("size=8,\n", "size=4,\n    gradient_accumulation_steps=2,\n")
    assert notes == ["gradient_accumulation_steps=2 added to TrainingArguments(...) at line 2: "
                     "nothing set it, TrainingArguments read its default"]


def test_python_string_keeps_its_quotes_and_concatenation_is_refused():
    text = "optim = 'adamw_torch'\nname = 'a' 'b'\n"
    new, _, _ = edit_python(text, [FactEdit("optimizer", "adamw_8bit", at(1, 9))])
    assert new == "optim = 'adamw_bnb_8bit'\nname = 'a' 'b'\n"
    with pytest.raises(Unspellable):
        edit_python(text, [FactEdit("model", "gpt2", at(2, 8))])


def test_shell_default_the_launcher_implies_is_refused_not_a_crash():
    # no ZeRO under a plain torchrun line: a default with no flag to change
    with pytest.raises(Unspellable):
        edit_shell("torchrun --nproc_per_node 8 train.py\n",
                   [FactEdit("zero_stage", 3, at(1), old=0, new_key=True)])
